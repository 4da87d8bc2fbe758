"""Evidence about a run lock's holder that needs no other host's clock: which process on this host it is
(/proc), and when this host first saw a lease record unchanged (its own monotonic clock, kept across runs).

A process is named by `<boot id>/<pid namespace>/<start time>`: the boot and pid namespace say whether
its pid means anything here (two containers may share a hostname, a host may have rebooted), the start
time (clock ticks since boot, /proc/<pid>/stat field 22) tells a reused pid from the holder.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any


def _read(path: str) -> str | None:
    try:
        return Path(path).read_text().strip()
    except OSError:
        return None


def _stat(pid: int) -> list[str] | None:
    """/proc/<pid>/stat from field 3 (state) on; the command name in field 2 may hold spaces and ')'."""
    text = _read(f"/proc/{pid}/stat")
    return text.rpartition(")")[2].split() if text else None


def _ns(kind: str) -> str | None:
    try:
        return os.readlink(f"/proc/self/ns/{kind}").partition("[")[2].rstrip("]") or None
    except OSError:
        return None


def machine() -> str | None:
    """`<boot id>/<pid namespace>`: where a pid means the same process as here; None without /proc."""
    boot, pidns = _read("/proc/sys/kernel/random/boot_id"), _ns("pid")
    return f"{boot}/{pidns}" if boot and pidns else None


def process(pid: int) -> str | None:
    """This host's name for process `pid` (see the module text), None when it does not exist (or is a
    zombie: it died and only waits to be reaped)."""
    where, stat = machine(), _stat(pid)
    if not where or not stat or len(stat) < 20 or stat[0] in ("Z", "X"):
        return None
    return f"{where}/{stat[19]}"


def pid_alive(pid: int) -> bool:
    """Whether a process with this pid exists (one owned by another user counts)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def hidden(pid: int) -> bool:
    """Whether process `pid` exists but /proc does not show it (mounted hidepid): it may be the holder."""
    return not Path(f"/proc/{pid}").exists() and pid_alive(pid)


def stopped(pid: int) -> bool:
    """Whether the process is stopped (SIGSTOP, a debugger): alive, but not renewing anything."""
    stat = _stat(pid)
    return stat is not None and bool(stat) and stat[0] in ("T", "t")


def _clock_id() -> str | None:
    """What makes time.monotonic() of two processes comparable: the same boot and time namespace."""
    boot, timens = _read("/proc/sys/kernel/random/boot_id"), _ns("time")
    return f"{boot}/{timens or '-'}" if boot else None


def _store() -> Path:
    from generator.pinned_tools import state_dir

    return state_dir() / "lease-observations.json"


def first_seen(key: str, record: list[Any], now: float) -> float:
    """The monotonic time this host first saw `record` as the lease `key` (now, if it is new here).

    One-shot runs share what they saw: a holder that stopped renewing is judged from the first time any
    run on this host saw its last record, so a dead holder does not look alive afresh at every run. Best
    effort: an unreadable store only makes the wait start now (longer, never shorter)."""
    clock, path = _clock_id(), _store()
    try:
        seen = json.loads(path.read_text())
    except (OSError, ValueError):
        seen = {}
    entry = seen.get(key) if isinstance(seen, dict) else None
    if (isinstance(entry, dict) and entry.get("record") == record and entry.get("clock") == clock
            and isinstance(entry.get("seen"), int | float) and entry["seen"] <= now):
        return float(entry["seen"])
    if not clock:
        return now
    keep = {k: v for k, v in (seen.items() if isinstance(seen, dict) else ())
            if isinstance(v, dict) and v.get("clock") == clock and isinstance(v.get("seen"), int | float)
            and now - v["seen"] < 86400}
    keep[key] = {"record": record, "clock": clock, "seen": now}
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
        tmp.write_text(json.dumps(keep))
        os.replace(tmp, path)
    except OSError:
        pass  # not kept: the next run watches from its own start, which only waits longer
    return now
