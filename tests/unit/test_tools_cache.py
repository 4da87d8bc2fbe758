"""hack/tools.sh's cache: the key covers the pins a recipe reads, and a failed build leaves nothing."""

from __future__ import annotations

import os
import subprocess

from generator.tools import REPO, VERSIONS_FILE

SCRIPT = REPO / "hack" / "tools.sh"


def _versions(tmp_path, **pins) -> str:
    lines = []
    for line in VERSIONS_FILE.read_text().splitlines():
        key = line.split("=", 1)[0]
        lines.append(f"{key}={pins.pop(key)}" if key in pins else line)
    path = tmp_path / f"versions-{len(list(tmp_path.iterdir()))}.env"
    path.write_text("\n".join(lines) + "\n")
    return str(path)


def _keys(versions: str, *tools: str) -> dict[str, str]:
    out = subprocess.run(["bash", str(SCRIPT), "--key", *tools], capture_output=True, text=True, check=True,
                         env=dict(os.environ, DOCKYARD_VERSIONS_ENV=versions)).stdout
    return {line.split()[0]: line.split()[2] for line in out.splitlines()}


def test_a_pin_the_recipe_reads_changes_its_key(tmp_path):
    base = _keys(_versions(tmp_path), "helm", "kubeconform", "kubernetes", "etcd")
    bumped = _keys(_versions(tmp_path, KUBERNETES_VERSION="v1.36.99"), "helm", "kubeconform", "kubernetes", "etcd")
    assert bumped["helm"] != base["helm"]  # helm's default capabilities are baked from KUBERNETES_VERSION
    assert bumped["kubeconform"] == base["kubeconform"] and bumped["etcd"] == base["etcd"]
    # the control plane's entry is named by its version; its recipe (one shared module function) is keyed too
    assert _keys(_versions(tmp_path), "kubernetes") == {"kubernetes": base["kubernetes"]}


def test_a_failed_build_leaves_no_partial_entry(tmp_path):
    cache = tmp_path / "cache"
    env = dict(os.environ, DOCKYARD_VERSIONS_ENV=_versions(tmp_path, KUBECONFORM_VERSION="v9.9.9"),
               DOCKYARD_TOOLS_CACHE=str(cache), GOPROXY="off")
    run = subprocess.run(["bash", str(SCRIPT), "kubeconform"], capture_output=True, text=True, env=env, timeout=120)
    assert run.returncode != 0, run.stderr
    assert "GOPROXY=off" in run.stderr
    left = sorted(p.name for p in cache.iterdir())
    assert left == [".kubeconform-v9.9.9.lock"], left  # no temp entry, no half-built kubeconform-v9.9.9


def test_make_tools_two_streams_cover_the_default_list():
    """`make tools` builds hack/tools.sh's default list in two streams: together exactly that list, once each."""
    import re

    make = (REPO / "Makefile").read_text()
    streams = [re.search(rf"^TOOLS_{x} := (.*)$", make, re.M).group(1).split() for x in "AB"]
    default = re.search(r"\|\| tools=\(([^)]*)\)", (REPO / "hack" / "tools.sh").read_text()).group(1).split()
    assert sorted(streams[0] + streams[1]) == sorted(default)
    assert not set(streams[0]) & set(streams[1])
