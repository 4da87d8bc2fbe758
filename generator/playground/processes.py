"""Local processes: free loopback ports, spawning detached components, and stopping them by PID.

A component is recorded as a `state.Process` {name, pid, start_time, exe, log}. `start_time` is field 22 of
/proc/<pid>/stat (clock ticks since boot): a PID is only treated as ours while that still matches,
so a recycled PID is never signalled.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import time
from contextlib import ExitStack
from pathlib import Path

from generator.playground.state import Process

LOOPBACK = "127.0.0.1"

# Proxy variables are dropped from every component's environment: all traffic is to 127.0.0.1.
_PROXY_VARS = {"http_proxy", "https_proxy", "all_proxy", "ftp_proxy", "grpc_proxy"}


def free_ports(count: int) -> list[int]:
    """`count` distinct free TCP ports on 127.0.0.1 (held open together, then released)."""
    with ExitStack() as stack:
        ports = []
        for _ in range(count):
            s = stack.enter_context(socket.socket(socket.AF_INET, socket.SOCK_STREAM))
            s.bind((LOOPBACK, 0))
            ports.append(s.getsockname()[1])
        return ports


def port_in_use(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.settimeout(0.5)
        return s.connect_ex((LOOPBACK, port)) == 0


def clean_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k.lower() not in _PROXY_VARS}
    env["NO_PROXY"] = env["no_proxy"] = "127.0.0.1,localhost"
    env.update(extra or {})
    return env


def _stat_fields(pid: int) -> list[str] | None:
    try:
        raw = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError, PermissionError):
        return None
    # comm (field 2) may contain spaces and parentheses: split after the last ')'.
    rest = raw[raw.rfind(")") + 2 :].split()
    return rest  # rest[0] is field 3 (state); field 22 is rest[19]


def start_time(pid: int) -> int | None:
    fields = _stat_fields(pid)
    return int(fields[19]) if fields else None


def is_running(rec: Process) -> bool:
    """The recorded process is alive (not a zombie) and is the same process we started."""
    fields = _stat_fields(rec.pid)
    if not fields or fields[0] in ("Z", "X"):
        return False
    return int(fields[19]) == rec.start_time


def age(rec: Process) -> float | None:
    """Seconds the recorded process has run, or None when it is not running (start_time is in clock ticks
    since boot, as /proc/uptime's first field is in seconds)."""
    if not is_running(rec):
        return None
    try:
        uptime = float(Path("/proc/uptime").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return None
    return max(0.0, uptime - rec.start_time / os.sysconf("SC_CLK_TCK"))


def spawn(name: str, argv: list[str], log: Path, cwd: Path, env: dict[str, str] | None = None) -> Process:
    """Start a detached component (own session, stdin closed, output to `log`); return its record."""
    log.parent.mkdir(parents=True, exist_ok=True)
    with open(log, "ab") as out:
        out.write(f"\n==> {time.strftime('%Y-%m-%dT%H:%M:%S%z')} {' '.join(argv)}\n".encode())
        out.flush()
        proc = subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            cwd=cwd,
            env=clean_env(env),
            start_new_session=True,
            close_fds=True,
        )
    st = None
    for _ in range(50):
        st = start_time(proc.pid)
        if st is not None:
            break
        time.sleep(0.01)
    # The Popen object is dropped on purpose: the component outlives this command. Keep it from
    # becoming a zombie of ours if it dies while we still run (e.g. inside a pytest session).
    _orphans.append(proc)
    return Process(name=name, pid=proc.pid, start_time=st or 0, exe=argv[0], log=str(log))


_orphans: list[subprocess.Popen] = []


def reap() -> None:
    """Collect exit statuses of components we spawned that have exited (no-op for others)."""
    for proc in list(_orphans):
        if proc.poll() is not None:
            _orphans.remove(proc)


def _signal(rec: Process, sig: int) -> None:
    try:
        os.kill(rec.pid, sig)
    except ProcessLookupError:
        pass


def _wait_gone(rec: Process, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        reap()
        if not is_running(rec):
            return True
        time.sleep(0.02)
    return not is_running(rec)


STOP_SECONDS = 10.0  # a stopped process's time to go after SIGTERM, before SIGKILL
KILL_SECONDS = 5.0  # and after SIGKILL (so `down` takes at most their sum per process)


def stop(records: list[Process], timeout: float = STOP_SECONDS) -> list[str]:
    """Stop the recorded processes one by one, in the order given (clients before the apiserver,
    the apiserver before etcd: an apiserver whose etcd is gone hangs in shutdown).

    Each gets SIGTERM, then SIGKILL if it is still there after `timeout` seconds. Only a process
    that is still ours (same PID *and* start time) is signalled; nothing is looked up by name.
    Returns the names of the processes that were signalled.
    """
    signalled = []
    for rec in records:
        if not is_running(rec):
            continue
        signalled.append(rec.name)
        _signal(rec, signal.SIGTERM)
        if not _wait_gone(rec, timeout):
            _signal(rec, signal.SIGKILL)
            _wait_gone(rec, KILL_SECONDS)
    reap()
    return signalled


def tail(path: str | Path, lines: int = 25) -> str:
    try:
        text = Path(path).read_text(errors="replace")
    except FileNotFoundError:
        return "(no log)"
    return "\n".join(text.splitlines()[-lines:])
