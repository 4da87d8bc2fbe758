"""Where the live-test session's playground lives, and what the user had before the session began.

Imported by conftest.py before any fixture runs, so USER_ENV is the user's environment, not the
session's (the `playground` fixture points KUBECONFIG and $DOCKYARD_PLAYGROUND_DIR at its own).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TextIO

from generator.live.helm.holders import pid_alive

USER_ENV = {k: os.environ.get(k) for k in ("KUBECONFIG", "DOCKYARD_PLAYGROUND_DIR", "XDG_STATE_HOME")}
SESSION_PREFIX = "session-"


def _state_home() -> Path:
    return Path(USER_ENV["XDG_STATE_HOME"] or str(Path.home() / ".local" / "state"))


def user_state_dir() -> Path:
    """The user's default playground folder, as the CLI resolves it outside the test session."""
    if USER_ENV["DOCKYARD_PLAYGROUND_DIR"]:
        return Path(USER_ENV["DOCKYARD_PLAYGROUND_DIR"]).expanduser()
    return _state_home() / "dockyard-k8s" / "playground"


def sessions_root() -> Path:
    """Test sessions' playgrounds: <root>/session-<pid>, never the user's folder."""
    return _state_home() / "dockyard-k8s" / "test-playgrounds"


def exit_code(verb: Callable[..., int], *args: Any, out: TextIO, **kwargs: Any) -> int:
    """A playground verb (generator.playground.lifecycle's up/down/status) as the CLI runs it: its
    return code, or its error printed to `out` as `error: ...` and the CLI's exit code for it."""
    from generator.errors import EXIT_BAD_INPUT, EXIT_FAILED, CheckFailed, InputError

    try:
        return verb(*args, out=out, **kwargs)
    except InputError as exc:
        print(exc, file=out)
        return EXIT_BAD_INPUT
    except CheckFailed as exc:
        print(f"error: {exc}", file=out)
        return EXIT_FAILED


def reap_dead_sessions(root: Path, prefixes: tuple[str, ...] = (SESSION_PREFIX,)) -> None:
    """Stop and remove playgrounds of test sessions that are gone (killed before their teardown):
    folders <prefix><pid> under `root` whose pid is this process or no longer runs."""
    import io

    from generator.playground.lifecycle import down

    for prefix in prefixes:
        for folder in sorted(root.glob(prefix + "*")) if root.is_dir() else []:
            pid = folder.name[len(prefix):]
            if pid.isdigit() and (int(pid) == os.getpid() or not pid_alive(int(pid))):
                exit_code(down, folder, out=io.StringIO())  # best effort: a failure is left for later
        for lock in root.glob(f".{prefix}*.lock") if root.is_dir() else []:
            pid = lock.name[len(prefix) + 1:-len(".lock")]
            if pid.isdigit() and not pid_alive(int(pid)) and not (root / lock.name[1:-len(".lock")]).exists():
                lock.unlink(missing_ok=True)


def wait_for(check: Callable[[], Any], timeout: float, what: str, interval: float = 0.25) -> Any:
    """Poll `check` until it returns a truthy value; fail with `what` after `timeout` seconds."""
    import pytest

    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        last = check()
        if last:
            return last
        time.sleep(interval)
    pytest.fail(f"timed out after {timeout:.0f} s waiting for {what} (last: {last!r})", pytrace=False)
