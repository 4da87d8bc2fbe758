"""generator/playground/node/machine.py: whether this machine can host the real node. One check, made by
`playground up --real-node` (host.missing_features), by `make test` up front (hack/suite.py) and by a plain
pytest run of the real node's tests (tests/live/conftest.py)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

from generator.pinned_tools import REPO
from generator.playground.node import host, machine


def test_without_root_the_machine_lacks_root(monkeypatch):
    monkeypatch.setattr(machine.os, "geteuid", lambda: 1000)
    assert any(m.startswith("root") for m in machine.lacks(commands=False))


def test_with_cgroup_v2_only_the_machine_lacks_cgroup_v1_and_says_why(monkeypatch, tmp_path):
    (tmp_path / "cgroup.controllers").write_text("cpu memory pids\n")  # the unified hierarchy alone
    monkeypatch.setattr(machine, "CGROUP_BASE", tmp_path)
    missing = machine.lacks(commands=False)
    assert "cgroup v1 memory hierarchy at /sys/fs/cgroup/memory (this machine mounts cgroup v2 only)" in missing


def test_without_commands_the_packages_are_named_only_when_asked(monkeypatch):
    monkeypatch.setattr(machine.shutil, "which", lambda cmd: None)
    assert any("`ipset` command (Debian package ipset" in m for m in machine.lacks())
    assert not any("command" in m for m in machine.lacks(commands=False))


def test_playground_up_and_make_test_share_the_check(monkeypatch):
    import importlib.util
    import re

    monkeypatch.setattr(machine, "lacks", lambda commands=True: ["a thing"])
    assert host.missing_features() == ["a thing"]
    spec = importlib.util.spec_from_file_location("suite_for_machine", REPO / "hack" / "suite.py")
    assert spec and spec.loader
    suite = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = suite
    try:
        spec.loader.exec_module(suite)
    finally:
        del sys.modules[spec.name]
    assert suite.MACHINE.__file__ == machine.__file__  # the same file, loaded by its path
    # loadable that way before the virtualenv exists: nothing of the package, nothing outside the stdlib
    assert not re.search(r"^(from|import) (?!__future__|os|shutil|pathlib)", Path(machine.__file__).read_text(), re.M)


PLUGIN = textwrap.dedent("""
    import pytest
    from generator.playground.node import machine

    machine.lacks = lambda commands=True: ["root (namespaces, cgroups and mounts need it)"]

    def pytest_collection_finish(session):
        marked = [i for i in session.items if i.get_closest_marker("real_node")]
        skipped = [i for i in marked if i.get_closest_marker("skip")]
        reasons = {m.kwargs.get("reason", "") for i in skipped for m in i.iter_markers("skip")}
        print(f"\\nMARKED {len(marked)} SKIPPED {len(skipped)} REASONS {sorted(reasons)}")
""")


def _collect(tmp_path, ci: bool) -> str:
    (tmp_path / "no_root_plugin.py").write_text(PLUGIN)
    env = {k: v for k, v in os.environ.items() if k != "CI"}
    if ci:
        env["CI"] = "true"
    env["PYTHONPATH"] = os.pathsep.join([str(tmp_path), env.get("PYTHONPATH", "")])
    out = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider", "-p",
                          "no_root_plugin", "tests/live/test_real_node.py", "tests/live/test_real_ray.py",
                          "tests/live/test_playground.py"], cwd=REPO, capture_output=True, text=True, env=env)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    return next(line for line in out.stdout.splitlines() if line.startswith("MARKED"))


def test_a_plain_pytest_run_on_a_machine_without_root_skips_the_real_node_tests_with_one_reason(tmp_path):
    line = _collect(tmp_path, ci=False)
    marked, skipped = int(line.split()[1]), int(line.split()[3])
    assert marked > 0 and skipped == marked, line  # the real node's tests only: test_playground's are not marked
    assert "this machine cannot host the real node: it lacks root" in line and "-m 'not real_node'" in line


def test_under_ci_they_are_not_skipped(tmp_path):
    line = _collect(tmp_path, ci=True)
    assert int(line.split()[1]) > 0 and line.split()[3] == "0", line
