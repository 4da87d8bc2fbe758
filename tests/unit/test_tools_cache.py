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


def _suite():
    """hack/suite.py as a module (a script, not part of the package)."""
    import importlib.util
    import sys

    if "dockyard_suite" not in sys.modules:
        spec = importlib.util.spec_from_file_location("dockyard_suite", REPO / "hack" / "suite.py")
        sys.modules["dockyard_suite"] = module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    return sys.modules["dockyard_suite"]


def test_the_build_streams_cover_the_default_list_and_every_part_needs_known_tools():
    """hack/suite.py's streams build hack/tools.sh's default list (the node expanded), each entry once; every
    part of the suite waits only for entries some stream builds, and only after parts that exist before it."""
    import re

    from generator.playground.control_plane import TOOLS as PLAYGROUND_TOOLS

    suite = _suite()
    text = (REPO / "hack" / "tools.sh").read_text()
    default = re.search(r"\|\| tools=\(([^)]*)\)", text).group(1).split()
    node = re.search(r"^node_tools=\(([^)]*)\)", text, re.M).group(1).split()
    expanded = [t for d in default for t in (node if d == "node" else [d])]
    assert sorted(suite.ALL_TOOLS) == sorted(expanded)
    assert len(set(suite.ALL_TOOLS)) == len(suite.ALL_TOOLS)
    assert suite.NODE == node
    assert suite.CONTROL_PLANE == list(PLAYGROUND_TOOLS)  # what every playground's `up` refuses to start without
    names = [p.name for p in suite.PARTS]
    for i, part in enumerate(suite.PARTS):
        assert set(part.needs) <= set(suite.ALL_TOOLS), part.name
        assert part.after is None or part.after in names[:i], part.name


def test_the_kubernetes_tools_follow_the_control_plane_in_its_stream():
    """kube-validate and kubelet/kube-proxy are built from the control plane's Kubernetes module: after it in the
    same stream they reuse its compiled packages; beside it (the other stream) both would compile them."""
    suite = _suite()
    (stream,) = [s for s in suite.STREAMS if "kubernetes" in s]
    for tool in ("kube-validate", "kubernetes-node"):
        assert tool in stream and stream.index(tool) > stream.index("kubernetes"), tool


def test_the_suite_line_counts_pytests_closing_lines():
    suite = _suite()
    assert suite._counts("....\n== 2 failed, 1705 passed in 413.02s (0:06:53) ==\n") == {"failed": 2, "passed": 1705}
    assert suite._counts("1 passed, 42 deselected in 7.76s\n") == {"passed": 1}
    assert suite._counts("3 errors in 1.00s\n") == {"error": 3}
    assert suite._counts("12 passed, 1 skipped, 1 error in 9.1s\n") == {"passed": 12, "skipped": 1, "error": 1}
    assert suite._counts("no tests ran in 0.01s\n") == {}
    assert suite._counts("Traceback (most recent call last):\n") == {}


def test_the_suite_parts_together_name_every_test_module_once():
    """The pytest processes of `make test` (its parts) split the suite by path: every test module under tests/ in
    exactly one of them (the live part names tests/live and leaves out the real node's modules)."""
    suite = _suite()
    modules = sorted(p.relative_to(REPO).as_posix() for p in (REPO / "tests").rglob("test_*.py"))
    assert modules

    def parts_of(module):
        found = []
        for part in suite.PARTS:
            paths = [a for a in part.args if not a.startswith("-")]
            ignored = [a.split("=", 1)[1] for a in part.args if a.startswith("--ignore=")]
            if any(module == p or module.startswith(p + "/") for p in paths) and module not in ignored:
                found.append(part.name)
        return found

    assert {m: parts_of(m) for m in modules if len(parts_of(m)) != 1} == {}
    assert all((REPO / m).is_file() for m in suite.REAL_NODE_MODULES)
