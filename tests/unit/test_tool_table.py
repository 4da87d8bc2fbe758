"""The table of tools (generator/tool_table.toml) is the one place a tool, its pin, its build and who needs it are
written: hack/tools.sh, hack/suite.py, generator/pinned_tools.py, `check --help` and docs/versions.md read it."""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest

from generator import tool_table
from generator.maint import supported_versions
from generator.pinned_tools import REPO, TOOLS_TABLE
from tests.support.tool_table import table_with_new_row

SCRIPT = REPO / "hack" / "tools.sh"
# Where a pin used to be written beside the table (or where one would be read instead of the table).
READERS = ["hack/tools.sh", "hack/suite.py", "hack/suite_run.py", "Makefile", "generator/pinned_tools.py",
           "generator/cli.py",
           "generator/tool_table.py", "generator/playground/control_plane.py", "generator/playground/node/hooks.py",
           "generator/inputs/models/kuberay.py"]
# A row no reader knows: a KubeRay minor older than every pin, built like the others.


def _pins() -> dict[str, str]:
    return tool_table.load().pins


def test_no_reader_writes_a_pin_of_its_own():
    """No version the table pins is written in a file that reads the table, nor in the docs that describe the
    pins (README's fresh-machine and supported-versions sections, docs/fresh-machine.md and docs/versions.md,
    outside their generated tables; docs/playground.md's table of what runs)."""
    texts = {name: (REPO / name).read_text() for name in READERS}
    readme = (REPO / "README.md").read_text()
    texts["README.md (On a fresh machine)"] = readme.split("## On a fresh machine", 1)[1].split("\n## ", 1)[0]
    texts["docs/fresh-machine.md"] = (REPO / "docs" / "fresh-machine.md").read_text()
    supported = readme.split("## Supported versions", 1)[1].split("\n## ", 1)[0]
    texts["README.md (Supported versions)"] = re.sub(re.escape(supported_versions.BEGIN) + ".*?" +
                                                     re.escape(supported_versions.END), "", supported, flags=re.S)
    playground = (REPO / "docs" / "playground.md").read_text()
    texts["docs/playground.md (What runs)"] = playground.split("## What runs", 1)[1].split("\n## ", 1)[0]
    versions = (REPO / "docs" / "versions.md").read_text()
    texts["docs/versions.md"] = re.sub(re.escape(tool_table.DOCS_BEGIN) + ".*?" + re.escape(tool_table.DOCS_END), "",
                                       versions, flags=re.S)
    found = []
    for name, version in _pins().items():
        if "." not in version:  # NODE_IMAGES_VERSION=1: a counter, not a findable literal
            continue
        literal = re.compile(r"(?<![\w.])v?" + re.escape(version.lstrip("v")) + r"(?![\w.])")
        found += [f"{where}: {version} ({name})" for where, text in texts.items() if literal.search(text)]
    assert found == []


def test_a_row_added_to_the_table_reaches_every_reader(tmp_path):
    """One row (and its pin) added to a copy of the table: hack/tools.sh builds it by default, hack/suite.py's
    stream and offline part include it, generator.pinned_tools offers its KubeRay minor, and `check --help` says so."""
    table = table_with_new_row(tmp_path)
    env = dict(os.environ, DOCKYARD_TOOLS_TABLE=table)
    keys = subprocess.run(["bash", str(SCRIPT), "--key"], capture_output=True, text=True, check=True, env=env).stdout
    assert "kuberay-crds v1.3.2 " in keys
    probe = ("import importlib.util, sys; from generator import pinned_tools\n"
             "spec = importlib.util.spec_from_file_location('suite', 'hack/suite.py')\n"
             "s = sys.modules['suite'] = importlib.util.module_from_spec(spec); spec.loader.exec_module(s)\n"
             "offline = next(p for p in s.PARTS if p.name == 'offline')\n"
             "print(list(pinned_tools.KUBERAY_PINS), pinned_tools.kuberay_range(), 'kuberay-crds-1.3' in s.STREAMS[1],"
             " 'kuberay-crds-1.3' in offline.needs, pinned_tools.kuberay_pin('1.3'))")
    out = subprocess.run([sys.executable, "-c", probe], cwd=REPO, capture_output=True, text=True, env=env)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split("\n")[0] == "['1.3', '1.4', '1.5', '1.6'] v1.3-v1.6 True True v1.3.2"
    helptext = subprocess.run([sys.executable, "-m", "generator", "check", "--help"], cwd=REPO, capture_output=True,
                              text=True, env=dict(env, COLUMNS="400")).stdout
    assert "(1.3, 1.4, 1.5, 1.6; default: the pinned" in helptext, helptext


def test_make_test_matrix_runs_the_minors_the_table_builds_for_it(tmp_path):
    """`make test-matrix` loops over the table's rows needed by "matrix" (a KubeRay operator row added to a copy
    reaches it), and every hack/tools.sh target its loops build is a row of the table."""
    table = table_with_new_row(tmp_path)
    with open(table, "a") as f:
        f.write('"kuberay-1.3" = {pin = "KUBERAY_1_3_VERSION", build = "build_kuberay", entry = "kuberay", '
                'needed_by = ["matrix"], what = "an operator minor no reader names"}\n')
    out = subprocess.run(["make", "-n", "--no-print-directory", "test-matrix"], cwd=REPO, capture_output=True,
                         text=True, check=True, env=dict(os.environ, DOCKYARD_TOOLS_TABLE=table)).stdout
    loops = dict(re.findall(r"for (\w) in ([^;]*);", out))
    assert loops == {"v": "1.3 1.4 1.5", "k": "1.33 1.35"}, out
    rows = tool_table.load(tmp_path / "tool_table.toml").tools
    builds = re.findall(r"bash hack/tools\.sh ([^;]+);", out)
    assert len(builds) == len(loops), out
    for var, words in zip(loops, builds, strict=True):
        for minor in loops[var].split():
            targets = words.replace(f"${var}", minor).split()
            assert [t for t in targets if t not in rows] == [], (var, minor, words)


def test_every_row_has_its_build_function_in_tools_sh_and_every_function_a_row():
    text = SCRIPT.read_text()
    defined = set(re.findall(r"^(build_[a-z0-9_]+)\(\) \{", text, re.M))
    used = {t.build for t in tool_table.load().tools.values()}
    assert used <= defined, sorted(used - defined)
    assert defined <= used, f"recipes no row builds: {sorted(defined - used)}"


def test_tools_sh_builds_the_streamed_rows_by_default_and_the_node_group_as_node():
    table = tool_table.load()
    def targets(*args):
        out = subprocess.run(["bash", str(SCRIPT), "--key", *args], capture_output=True, text=True, check=True).stdout
        return [(line.split()[0], line.split()[1]) for line in out.splitlines()]

    streamed = [table.tools[t] for stream in table.streams() for t in stream]
    assert targets() == [(t.entry, t.version) for t in streamed]
    assert targets("node") == [(t, table.tools[t].version) for t in table.group("node")]
    bad = subprocess.run(["bash", str(SCRIPT), "--key", "no-such-tool"], capture_output=True, text=True)
    assert bad.returncode == 2 and "unknown tool: no-such-tool" in bad.stderr
    assert "generator/tool_table.toml" in bad.stderr


def test_the_playgrounds_tools_are_the_tables():
    """The control plane `playground up` needs and the real node's components are the table's rows."""
    from generator.playground.control_plane import TOOLS as CONTROL_PLANE
    from generator.playground.node import hooks

    table = tool_table.load()
    assert list(CONTROL_PLANE) == table.needed_by("playground")
    assert {t: table.tools[t].pin for t in hooks.TOOLS} == hooks.TOOLS
    assert set(hooks.TOOLS) | {"device-plugin"} == set(table.group("node"))  # the device plugin: gpus.py's own


def test_the_docs_table_is_generated_from_the_table():
    current = tool_table.DOCS.read_text()
    assert tool_table.docs_text(current, tool_table.load()) == current, "docs/versions.md is stale: run `make schema`"
    assert all(f"| `{name}` |" in current for name in tool_table.load().tools)


@pytest.mark.parametrize(("change", "says"), [
    (lambda t: t.replace('build = "build_etcd"', 'build = "build_etcd", stram = 1'), "tools.etcd.stram: unknown key"),
    (lambda t: t.replace('pin = "ETCD_VERSION"', 'pin = "ETCD_VERSON"'), "tools.etcd.pin: 'ETCD_VERSON' is not a name"),
    (lambda t: t.replace('ETCD_VERSION = "v3', 'ETCD_VERSION = "v3 $(reboot)'), "pins.ETCD_VERSION"),
    (lambda t: t.replace('"playground", "demo", "real node"', '"playground", "demo", "real nod"', 1),
     "tools.kubernetes.needed_by: 'real nod'"),
    (lambda t: t.replace('stream = 1', 'stream = 3', 1), "tools.kubernetes.stream: 3"),
    (lambda t: t.replace('COREDNS_VERSION = "', 'COREDNS_VERSIO = "'), "pins.COREDNS_VERSIO"),
])
def test_a_malformed_table_is_refused_with_the_key_path(tmp_path, change, says):
    path = tmp_path / "tool_table.toml"
    path.write_text(change(TOOLS_TABLE.read_text()))
    with pytest.raises(tool_table.TableError) as err:
        tool_table.load(path)
    assert str(path) in str(err.value) and says in str(err.value), str(err.value)
    run = subprocess.run(["bash", str(SCRIPT), "--key", "etcd"], capture_output=True, text=True,
                         env=dict(os.environ, DOCKYARD_TOOLS_TABLE=str(path)))
    assert run.returncode != 0 and says in run.stderr and "etcd" not in run.stdout


def test_the_table_ships_inside_the_package():
    """generator.pinned_tools reads its pins from the table at run time: it is package data, not a repository file (the
    wheel ships every file of the package; tests/unit/test_wheel.py runs the installed wheel)."""
    import tomllib

    pyproject = tomllib.loads((REPO / "pyproject.toml").read_text())
    assert TOOLS_TABLE.parent == REPO / "generator"
    assert pyproject["tool"]["hatch"]["build"]["targets"]["wheel"]["packages"] == ["generator"]  # all its files


# What a Python 3.10 sees: its version, and no tomllib. Runs the script named first with the arguments after it.
AS_PYTHON_3_10 = ("import runpy, sys; sys.version_info = (3, 10, 12, 'final', 0); sys.modules['tomllib'] = None; "
                  "sys.argv = sys.argv[1:]; runpy.run_path(sys.argv[0], run_name='__main__')")


def test_python_problem_names_the_version_needed_and_the_one_found():
    assert tool_table.python_problem((3, 11, 0), "/usr/bin/python3") is None
    assert tool_table.python_problem((3, 13, 1), "/usr/bin/python3") is None
    assert tool_table.python_problem((3, 10, 12), "/usr/bin/python3") == (
        "dockyard-k8s needs Python >= 3.11 (tomllib); found Python 3.10.12 (/usr/bin/python3): "
        "put a newer python3 first on PATH")


@pytest.mark.parametrize("how", ["make test", "make tools", "hack/tools.sh"])
def test_an_old_python_ends_make_test_and_tools_with_one_line_and_exit_2(tmp_path, how):
    """`make test` and `make tools` run `python3 hack/suite.py`, and hack/tools.sh runs `python3
    generator/tool_table.py`, with the machine's python3: on a 3.10 one line says what is needed, no traceback."""
    if how == "hack/tools.sh":
        shim = tmp_path / "python3"  # the machine's python3, a 3.10
        shim.write_text(f'#!/bin/sh\nexec {sys.executable} -c "{AS_PYTHON_3_10}" "$@"\n')
        shim.chmod(0o755)
        env = {**os.environ, "PATH": f"{tmp_path}:{os.environ['PATH']}"}
        argv = ["bash", str(SCRIPT), "--key", "helm"]
    else:
        env, argv = dict(os.environ), [sys.executable, "-c", AS_PYTHON_3_10, str(REPO / "hack" / "suite.py"),
                                       how.split()[1]]
    done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=60, cwd=REPO)
    assert (done.returncode, done.stdout) == (2, ""), done.stderr
    assert done.stderr.splitlines() == [tool_table.python_problem((3, 10, 12), sys.executable)]


def test_the_json_twin_is_read_only_when_made_from_the_same_text(tmp_path):
    """The CLI reads the table's JSON twin (tomllib costs start-up time); a twin made from other text is ignored,
    so a table edited without `make schema` is still read as written."""
    import json

    table = tmp_path / "tool_table.toml"
    table.write_text(tool_table.TABLE.read_text())
    twin = json.loads(tool_table.twin(table))
    twin["document"]["pins"]["HELM_VERSION"] = "v0.0.1"  # what the twin says, unlike the TOML
    (tmp_path / "tool_table.json").write_text(json.dumps(twin))
    assert tool_table.load(table).pins["HELM_VERSION"] == "v0.0.1"  # same text: the twin is read
    edited = tmp_path / "edited" / "tool_table.toml"  # a path of its own: load() reads each path once
    edited.parent.mkdir()
    edited.write_text(table.read_text() + "\n# edited without make schema\n")
    (edited.parent / "tool_table.json").write_text(json.dumps(twin))
    assert tool_table.load(edited).pins["HELM_VERSION"] == tool_table.load().pins["HELM_VERSION"] != "v0.0.1"
