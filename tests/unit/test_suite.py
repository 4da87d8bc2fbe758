"""hack/suite.py (`make test`, `make tools`): its streams and parts come from the table of tools, every test module
is in one part, pytest's closing lines are counted, and the real node's parts are decided up front: skipped
loudly, or counted as failed, where the machine cannot host the real node."""

from __future__ import annotations

import subprocess
import sys

import pytest

from generator import tool_table
from generator.pinned_tools import REPO


def _suite():
    """hack/suite.py as a module (a script, not part of the package)."""
    import importlib.util

    if "dockyard_suite" not in sys.modules:
        spec = importlib.util.spec_from_file_location("dockyard_suite", REPO / "hack" / "suite.py")
        sys.modules["dockyard_suite"] = module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    return sys.modules["dockyard_suite"]


def test_the_streams_and_the_parts_needs_are_the_tables():
    """Every row with a stream is built once, in its stream, in the table's order; each part waits for the rows
    that name it, all of them built by a stream; the parts the table names are the suite's."""
    suite, table = _suite(), tool_table.load()
    assert suite.STREAMS == [[t for t, row in table.tools.items() if row.stream == i] for i in (1, 2)]
    assert len(set(suite.ALL_TOOLS)) == len(suite.ALL_TOOLS)
    assert [p.name for p in suite.PARTS] == list(tool_table.PARTS)
    names = [p.name for p in suite.PARTS]
    for i, part in enumerate(suite.PARTS):
        assert part.needs == table.needed_by(part.name) and part.needs, part.name
        assert set(part.needs) <= set(suite.ALL_TOOLS), part.name
        assert part.after is None or part.after in names[:i], part.name
    assert [p.name for p in suite.PARTS if p.real_node] == ["real node", "real Ray", "real sandbox"]


def test_the_kubernetes_tools_follow_the_control_plane_in_its_stream():
    """kube-validate and kubelet/kube-proxy are built from the control plane's Kubernetes module: after it in the
    same stream they reuse its compiled packages; beside it (the other stream) both would compile them."""
    suite = _suite()
    (stream,) = [s for s in suite.STREAMS if "kubernetes" in s]
    for tool in ("kube-validate", "kubernetes-node"):
        assert tool in stream and stream.index(tool) > stream.index("kubernetes"), tool


def test_the_suite_line_counts_pytests_closing_lines():
    counts = _suite()._run.counts
    assert counts("....\n== 2 failed, 1705 passed in 413.02s (0:06:53) ==\n") == {"failed": 2, "passed": 1705}
    assert counts("1 passed, 42 deselected in 7.76s\n") == {"passed": 1}
    assert counts("3 errors in 1.00s\n") == {"error": 3}
    assert counts("12 passed, 1 skipped, 1 error in 9.1s\n") == {"passed": 12, "skipped": 1, "error": 1}
    assert counts("no tests ran in 0.01s\n") == {}
    assert counts("Traceback (most recent call last):\n") == {}


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
    in_real_parts = {a for part in suite.PARTS if part.real_node for a in part.args if not a.startswith("-")}
    assert in_real_parts == set(suite.REAL_NODE_MODULES)


def test_a_module_that_marks_itself_real_node_is_found_without_a_list(tmp_path):
    """The real node's modules are the ones that say so; a new one needs no list kept elsewhere (and a plain live
    module is not one)."""
    suite = _suite()
    live = tmp_path / "tests" / "live"
    live.mkdir(parents=True)
    (live / "test_new_real.py").write_text(f"import pytest\n\n{suite.REAL_NODE_MARK}\n")
    (live / "test_plain.py").write_text("import pytest\n# pytestmark = pytest.mark.real_node would mark it\n")
    assert suite.real_node_modules(tmp_path) == ["tests/live/test_new_real.py"]
    assert "tests/live/test_real_pull.py" in suite.REAL_NODE_MODULES


def test_each_real_node_part_runs_its_modules_alphabetically_and_the_ones_that_down_the_node_last():
    """A part's modules share one start of its real node (tests/live/conftest.py): a module whose tests down it
    (marked downs_real_node) runs after every module that needs it, and one pytest process over all of them,
    alphabetical (`pytest tests/live -m real_node`), meets each part's modules together, so it starts each kind once."""
    suite = _suite()
    assert suite.real_node_order(suite.PARTS) == []
    assert [m for p in suite.PARTS if p.real_node for m in p.args if suite.downs_real_node(m)] == [
        "tests/live/test_real_node_teardown.py"]
    marker = suite.DOWNS_REAL_NODE.removeprefix("@pytest.mark.")
    assert f'"{marker}: ' in (REPO / "pyproject.toml").read_text()  # the marker pytest knows (--strict-markers)


def test_the_order_check_fails_on_a_wrong_order(tmp_path):
    """The negative control of the test above: the check names each way the order can be wrong."""
    suite = _suite()
    downs = {"tests/live/test_real_a_down.py"}

    def part(name, *modules):
        return suite.Part(name, list(modules), real_node=True)

    assert suite.real_node_order([part("one", "tests/live/test_real_a.py", "tests/live/test_real_b.py")],
                                 downs.__contains__) == []
    (wrong,) = suite.real_node_order([part("one", "tests/live/test_real_b.py", "tests/live/test_real_a.py")],
                                     downs.__contains__)
    assert "one: its modules are not in alphabetical order" in wrong
    found = suite.real_node_order([part("one", "tests/live/test_real_a_down.py", "tests/live/test_real_a_up.py")],
                                  downs.__contains__)
    assert found == [("one: a module that downs its real node runs before one that needs it: "
                      "['tests/live/test_real_a_down.py (downs it)', 'tests/live/test_real_a_up.py']")]
    (wrong,) = suite.real_node_order([part("one", "tests/live/test_real_a.py", "tests/live/test_real_c.py"),
                                      part("two", "tests/live/test_real_b.py")], downs.__contains__)
    assert wrong == "the parts' modules interleave alphabetically: ['one', 'two', 'one']"
    live = tmp_path / "tests" / "live"
    live.mkdir(parents=True)
    (live / "test_x.py").write_text(f"{suite.DOWNS_REAL_NODE}  # why\ndef test_it(no_real_node): ...\n")
    (live / "test_y.py").write_text("# @pytest.mark.downs_real_node would mark it\n")
    assert suite.downs_real_node("tests/live/test_x.py", tmp_path)
    assert not suite.downs_real_node("tests/live/test_y.py", tmp_path)


def test_the_real_node_marker_marks_exactly_the_real_node_parts_modules():
    """`pytest -m 'not real_node'` (a plain run without them) leaves out what the suite's real node parts run."""
    suite = _suite()
    out = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider", "-m",
                          "real_node", "tests/live"], cwd=REPO, capture_output=True, text=True).stdout
    files = {line.split("::")[0] for line in out.splitlines() if "::" in line}
    assert files == set(suite.REAL_NODE_MODULES), out[-2000:]


# ---------------------------------------------------------------- the real node's parts, decided up front

LACKS = ["root (namespaces, cgroups and mounts need it)"]


@pytest.mark.parametrize(("mode", "lacks", "ci", "run", "failing", "says"), [
    ("auto", [], False, True, False, ""),
    ("auto", [], True, True, False, ""),
    ("1", [], False, True, False, ""),
    ("0", [], False, False, False, "skipped, as asked (REAL_NODE=0)"),
    ("0", LACKS, True, False, False, "skipped, as asked (REAL_NODE=0)"),
    ("auto", LACKS, False, False, False, "SKIPPED (REAL_NODE=auto): this machine cannot host the real node: it lacks"),
    ("auto", LACKS, True, False, True, "FAILING, under CI"),
    ("1", LACKS, False, False, True, "FAILING, REAL_NODE=1: this machine cannot host the real node: it lacks root"),
])
def test_the_real_node_plan(mode, lacks, ci, run, failing, says):
    plan = _suite().real_node_plan(mode, lacks, ci)
    assert (plan.run, plan.failing) == (run, failing)
    assert says in plan.message if says else plan.message == ""
    if lacks and mode != "0":  # what it needs, and how to run the rest
        assert "cgroup v1" in plan.message and "make test REAL_NODE=0" in plan.message
        assert "-m 'not real_node'" in plan.message


def _run(monkeypatch, mode, lacks, ci=False):
    suite = _suite()
    monkeypatch.setattr(suite.MACHINE, "lacks", lambda commands=True: list(lacks))
    monkeypatch.setattr(suite.signal, "signal", lambda *a: None)  # the test's process keeps its handlers
    monkeypatch.setenv("CI", "true") if ci else monkeypatch.delenv("CI", raising=False)
    return suite.Run(mode)


def test_a_machine_without_root_skips_the_real_node_parts_and_their_tools_and_says_so_first(monkeypatch, capsys):
    table = tool_table.load()
    run = _run(monkeypatch, "auto", LACKS)
    first = capsys.readouterr().out.splitlines()
    assert first and "real node: SKIPPED" in first[0] and "it lacks root" in first[0]
    assert [p.name for p in run.parts] == ["live", "offline"]
    assert [p.name for p in run.left_out] == ["real node", "real Ray", "real sandbox"]
    built = set(run.builds.tools)
    assert not built & (set(table.group("node")) | {"ray-image"})  # only the real node's parts need these
    assert set(table.needed_by("live")) | set(table.needed_by("offline")) <= built


def test_a_machine_that_can_host_the_real_node_runs_every_part_and_says_nothing(monkeypatch, capsys):
    run = _run(monkeypatch, "auto", [], ci=True)
    assert capsys.readouterr().out == ""
    assert run.left_out == [] and run.builds.tools == _suite().ALL_TOOLS


def test_ci_without_the_real_node_builds_everything_and_counts_the_parts_as_failed(monkeypatch, capsys):
    suite = _suite()
    run = _run(monkeypatch, "auto", LACKS, ci=True)
    assert run.builds.tools == suite.ALL_TOOLS and run.real_node.failing
    results = {"live": (0, {"passed": 90}), "offline": (0, {"passed": 1700})}
    line, ok = suite.report(run, results, True, 32)
    assert not ok and line.startswith("suite: 1790 passed, 32 failed "
                                      "(32 tests of real node, real Ray and real sandbox among them")


def test_the_last_line_counts_the_skipped_real_node_tests(monkeypatch, capsys):
    suite = _suite()
    run = _run(monkeypatch, "0", [])
    for p in run.left_out:
        run.timeline.record(f"tests: {p.name}", None, run.real_node.why)
    results = {"live": (0, {"passed": 90, "skipped": 1}), "offline": (0, {"passed": 1700})}
    line, ok = suite.report(run, results, True, 32)
    assert ok and line == ("suite: 1790 passed, 0 failed, 1 skipped, 32 tests of real node, real Ray and real sandbox "
                           "skipped (REAL_NODE=0)")
    table = run.timeline.table()
    assert "tests: real node" in table and "skipped: REAL_NODE=0" in table and "FAILED" not in table


def test_the_lint_gate_is_make_lints():
    """make test's lint gate runs what `make lint` runs (ruff, mypy, the import contracts), with the venv's tools."""
    import re

    gate = _suite().lint_commands(".venv/bin/python")
    make_lint = (REPO / "Makefile").read_text().split("\nlint:", 1)[1].split("\n\n", 1)[0]
    assert list(gate) == ["ruff", "mypy", "lint-imports"]
    assert gate["lint-imports"] == [".venv/bin/lint-imports", "--no-cache"]
    for name in gate:
        assert re.search(rf"\b{name}\b", make_lint), (name, make_lint)
