"""Where things live outside the repo: the pinned tools, ${XDG_CACHE_HOME:-~/.cache}/dockyard-k8s/<tool>-<version>/,
and the local playground's state (its kubeconfig is the live verbs' last default)."""

from __future__ import annotations

import os
from functools import cache
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
VERSIONS_FILE = REPO / "tools" / "versions.env"
CHART_DIR = REPO / "charts" / "dockyard"


PLAYGROUND_DIR_ENV = "DOCKYARD_PLAYGROUND_DIR"


def playground_state_dir() -> Path:
    """`$DOCKYARD_PLAYGROUND_DIR`, else `${XDG_STATE_HOME:-~/.local/state}/dockyard-k8s/playground`. Here and
    not in generator.playground: the product reads the playground's kubeconfig without depending on the dev
    cluster's package (which imports this)."""
    env = os.environ.get(PLAYGROUND_DIR_ENV)
    if env:
        return Path(env).expanduser()
    base = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(base) / "dockyard-k8s" / "playground"


class ToolMissing(RuntimeError):
    """A pinned tool is not built yet."""


@cache
def versions() -> dict[str, str]:
    out: dict[str, str] = {}
    for line in VERSIONS_FILE.read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if "=" in line:
            key, value = line.split("=", 1)
            out[key.strip()] = value.strip()
    return out


def cache_dir() -> Path:
    env = os.environ.get("DOCKYARD_TOOLS_CACHE")
    if env:
        return Path(env)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "dockyard-k8s"


# Tools whose version is another tool's pin.
_VERSION_OF = {"kuberay-crds": "KUBERAY_VERSION", "kube-validate": "KUBERNETES_VERSION"}


def tool_dir(tool: str) -> Path:
    """The cache folder of a tool: helm, kubeconform, kubernetes, etcd, kwok, kuberay, kuberay-crds, kube-validate."""
    key = _VERSION_OF.get(tool, tool.upper() + "_VERSION")
    return cache_dir() / f"{tool}-{versions()[key]}"


def binary(name: str, tool: str | None = None) -> str:
    """Path of a pinned binary; falls back to PATH only when the cache lacks it."""
    path = tool_dir(tool or name) / name
    if path.is_file():
        return str(path)
    import shutil

    found = shutil.which(name)
    if found:
        return found
    raise ToolMissing(f"{name} is not built; run `make tools` (expected {path})")
