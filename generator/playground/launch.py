"""The one start-up path of every playground process, control plane and real node alike: spawn it
detached, record it in the state file at once (so `down` finds it even when `up` dies next), and
wait for it against a deadline."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

from generator.playground import processes as procs
from generator.playground.errors import UpError
from generator.playground.state import PlaygroundState, Process

Check = Callable[[], tuple[bool, str]]  # (ready, what is still missing)


def start(state: PlaygroundState, state_dir: Path, table: dict[str, Process], key: str, name: str,
          argv: list[str], env: dict[str, str] | None = None) -> Process:
    """Spawn `argv` as `name` (log: logs/<name with '/' as '-'>.log), record it as table[key], save the state."""
    log = state_dir / "logs" / f"{name.replace('/', '-')}.log"
    rec = procs.spawn(name, argv, log, cwd=state_dir, env=env)
    table[key] = rec
    state.save(state_dir)
    return rec


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
