"""The one start-up path of every playground process, control plane and real node alike: spawn it
detached, record it in the state file at once (so `down` finds it even when `up` dies next), and
wait for it against a deadline."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

from generator.playground import processes as procs
from generator.playground import restarts, supervise
from generator.playground.errors import UpError
from generator.playground.state import PlaygroundState, Process

Check = Callable[[], tuple[bool, str]]  # (ready, what is still missing)


def start(state: PlaygroundState, state_dir: Path, table: dict[str, Process], key: str, name: str,
          argv: list[str], env: dict[str, str] | None = None, supervised: bool = False) -> Process:
    """Spawn `argv` as `name` (log: logs/<name with '/' as '-'>.log), record it as table[key], save the state.

    `supervised`: spawn its supervisor (supervise.py) instead, which runs `argv` and restarts it when it exits;
    the supervisor is what table[key] records, and its own record (restarts.py) names the child."""
    log = state_dir / "logs" / f"{name.replace('/', '-')}.log"
    if supervised:
        record = restarts.path(state_dir, name)
        argv = supervise.command(name, record, argv)
    rec = procs.spawn(name, argv, log, cwd=state_dir, env=env)
    table[key] = rec
    state.save(state_dir)
    if supervised:
        wait(f"{name}'s supervisor to start it", lambda: _child_started(state_dir, rec), time.monotonic() + 15, name)
    return rec


def _child_started(state_dir: Path, rec: Process) -> tuple[bool, str]:
    if restarts.of(state_dir, rec) is not None:
        return True, "started"
    if not procs.is_running(rec):
        raise UpError(f"{rec.name}'s supervisor exited during start-up", rec.name)
    return False, f"no record at {restarts.path(state_dir, rec.name)} yet"


def wait(what: str, check: Check, deadline: float, component: str | None = None,
         error: type[UpError] = UpError, interval: float = 0.2) -> None:
    """Poll `check` until it is ready; past `deadline` raise `error` with its last detail."""
    detail = ""
    while time.monotonic() < deadline:
        ok, detail = check()
        if ok:
            return
        procs.reap()
        time.sleep(interval)
    raise error(f"timed out waiting for {what}: {detail}", component)
