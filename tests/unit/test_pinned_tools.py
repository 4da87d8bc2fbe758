"""hack/tools.sh's cache: the key covers the pins a recipe reads, and a failed build leaves nothing."""

from __future__ import annotations

import os
import subprocess

from generator.pinned_tools import REPO, TOOLS_TABLE

SCRIPT = REPO / "hack" / "tools.sh"


def _table(tmp_path, **pins) -> str:
    """A copy of the table of tools with `pins` changed."""
    lines = []
    for line in TOOLS_TABLE.read_text().splitlines():
        key = line.split("=", 1)[0].strip()
        lines.append(f'{key} = "{pins.pop(key)}"' if key in pins else line)
    assert not pins, f"no such pins: {pins}"
    path = tmp_path / f"tools-{len(list(tmp_path.iterdir()))}.toml"
    path.write_text("\n".join(lines) + "\n")
    return str(path)


def _keys(table: str, *tools: str) -> dict[str, str]:
    out = subprocess.run(["bash", str(SCRIPT), "--key", *tools], capture_output=True, text=True, check=True,
                         env=dict(os.environ, DOCKYARD_TOOLS_TABLE=table)).stdout
    return {line.split()[0]: line.split()[2] for line in out.splitlines()}


def test_a_pin_the_recipe_reads_changes_its_key(tmp_path):
    base = _keys(_table(tmp_path), "helm", "kubeconform", "kubernetes", "etcd")
    bumped = _keys(_table(tmp_path, KUBERNETES_VERSION="v1.36.99"), "helm", "kubeconform", "kubernetes", "etcd")
    assert bumped["helm"] != base["helm"]  # helm's default capabilities are baked from KUBERNETES_VERSION
    assert bumped["kubeconform"] == base["kubeconform"] and bumped["etcd"] == base["etcd"]
    # the control plane's entry is named by its version; its recipe (one shared module function) is keyed too
    assert _keys(_table(tmp_path), "kubernetes") == {"kubernetes": base["kubernetes"]}


def test_a_failed_build_leaves_no_partial_entry(tmp_path):
    cache = tmp_path / "cache"
    env = dict(os.environ, DOCKYARD_TOOLS_TABLE=_table(tmp_path, KUBECONFORM_VERSION="v9.9.9"),
               DOCKYARD_TOOLS_CACHE=str(cache), GOPROXY="off")
    run = subprocess.run(["bash", str(SCRIPT), "kubeconform"], capture_output=True, text=True, env=env, timeout=120)
    assert run.returncode != 0, run.stderr
    assert "GOPROXY=off" in run.stderr
    left = sorted(p.name for p in cache.iterdir())
    assert left == [".kubeconform-v9.9.9.lock"], left  # no temp entry, no half-built kubeconform-v9.9.9
