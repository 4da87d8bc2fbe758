"""Fake GPUs on the real node: `playground up --real-node --real-node-gpus N` runs the device plugin
(tools/device-plugin, the kubelet's real device-plugin gRPC API) inside the node's namespaces, so the
kubelet advertises N `nvidia.com/gpu` and the chart's GPU worker groups run there as real containers.
Without the flag (N = 0) nothing is started and the node has no GPUs, as before.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable
from pathlib import Path

ENV = "DOCKYARD_REAL_NODE_GPUS"  # set by `playground up --real-node-gpus N`
RESOURCE = "nvidia.com/gpu"
NAME = "device-plugin"
MAX = 64


def requested() -> int:
    raw = os.environ.get(ENV, "0") or "0"
    try:
        n = int(raw)
    except ValueError:
        n = -1
    if not 0 <= n <= MAX:
        from generator.playground.errors import NodeError

        raise NodeError(f"{ENV}={raw!r}: expected a whole number of GPUs 0..{MAX}")
    return n


def tool_dir() -> Path:
    from generator.pinned_tools import cache_dir, versions

    return cache_dir() / f"device-plugin-{versions()['KUBERNETES_VERSION']}"


def ensure_binary(say: Callable[[str], None]) -> Path:
    from generator.pinned_tools import tools_script
    from generator.playground.errors import NodeError

    d = tool_dir()
    if not (d / ".complete").is_file():
        say("  building the real node's device plugin (tools/device-plugin)")
        rc = subprocess.call(["bash", str(tools_script()), NAME])
        if rc != 0:
            raise NodeError(f"building the device plugin failed (hack/tools.sh {NAME} exit {rc})")
    return d / NAME


def argv(binary: Path, count: int) -> list[str]:
    # the kubelet (in the node's mount namespace) serves its registration socket in the default folder
    return [str(binary), f"-count={count}", f"-resource={RESOURCE}"]


def advertised(node: dict, want: int) -> tuple[bool, str]:
    """The Node object's allocatable GPUs against the count the plugin was started with."""
    alloc = ((node.get("status") or {}).get("allocatable") or {}).get(RESOURCE, "0")
    return str(alloc) == str(want), f"{RESOURCE} allocatable {alloc} of {want}"
