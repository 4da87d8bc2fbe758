"""The local playground cluster: a real control plane with simulated (kwok) GPU and CPU nodes.

etcd, kube-apiserver, kube-controller-manager, kube-scheduler, kwok and the KubeRay operator run
as local processes bound to 127.0.0.1; no container runs. See docs/playground.md.

Nothing heavy is imported here: `generator.playground.cli` is loaded at CLI start-up.
"""

from __future__ import annotations

import os
from pathlib import Path

STATE_ENV = "DOCKYARD_PLAYGROUND_DIR"


def default_state_dir() -> Path:
    """`$DOCKYARD_PLAYGROUND_DIR`, else `${XDG_STATE_HOME:-~/.local/state}/dockyard-k8s/playground`."""
    env = os.environ.get(STATE_ENV)
    if env:
        return Path(env).expanduser()
    base = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(base) / "dockyard-k8s" / "playground"
