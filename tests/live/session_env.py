"""Where the live-test session's playground lives, and what the user had before the session began.

Imported by conftest.py before any fixture runs, so USER_ENV is the user's environment, not the
session's (the `playground` fixture points KUBECONFIG and $DOCKYARD_PLAYGROUND_DIR at its own).
"""

from __future__ import annotations

import os
from pathlib import Path

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
