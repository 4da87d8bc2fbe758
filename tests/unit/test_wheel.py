"""The package as users install it: the sdist and the wheel built from it (`python -m build`), installed in a
virtualenv outside the checkout, runs `values`, `render`, `check` and `--version` in a folder of its own with
the tools of the cache, says in one sentence that `playground up` needs a clone, and names the command that gets a
missing tool; and none of it reaches into the checkout: an audit hook in that virtualenv logs every file under the
checkout it opens, lists or runs (tests/wheel_venv.py), and the last test shows the hook catching a checkout put
back on the path."""

from __future__ import annotations

import re
import shutil
import zipfile

import pytest
import yaml
from wheel_venv import Installed, install

from generator.pinned_tools import REPO, tool_table

pytestmark = pytest.mark.timeout(900)

RECIPE, INFRA = "grpo_swe.recipe.yaml", "grpo_swe.infra.yaml"


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Installed:
    installed = install(tmp_path_factory.mktemp("wheel"))
    work = installed.root / "work"
    shutil.copy(REPO / "values-examples" / "grpo_swe.yaml", work / RECIPE)
    shutil.copy(REPO / "values-examples" / "grpo_swe.infra.yaml", work / INFRA)
    return installed


def _chart_version() -> str:
    return yaml.safe_load((REPO / "charts" / "dockyard" / "Chart.yaml").read_text())["version"]


def test_the_sdist_builds_the_wheel_which_carries_the_chart_and_schemas_and_not_maint(wheel):
    assert "Building wheel from sdist" in wheel.build_output
    names = set(zipfile.ZipFile(wheel.wheel).namelist())
    chart = {p.relative_to(REPO / "charts" / "dockyard").as_posix()
             for p in (REPO / "charts" / "dockyard").rglob("*") if p.is_file() and "__pycache__" not in p.parts}
    assert {f"generator/_bundle/chart/{c}" for c in chart} <= names
    assert {"generator/_bundle/schema/recipe.schema.json", "generator/_bundle/schema/infra.schema.json",
            "generator/_bundle/chart/values.schema.json", "generator/_bundle/chart/files/run_watch.py",
            "generator/tool_table.toml", "generator/tool_table.json", "generator/py.typed"} <= names
    assert not [n for n in names if n.startswith("generator/maint/") or "__pycache__" in n]
    assert wheel.wheel.name == f"dockyard_k8s-{_chart_version()}-py3-none-any.whl"


def test_version_prints_the_package_the_chart_and_the_pins(wheel):
    run = wheel.run("--version")
    assert run.returncode == 0, run.stderr
    pins = tool_table.load().pins
    lines = run.stdout.splitlines()
    assert lines[0] == f"dockyard-k8s {_chart_version()}"
    assert lines[1].startswith(f"chart dockyard {_chart_version()} ({wheel.venv}/lib/"), lines[1]
    assert lines[1].endswith("/site-packages/generator/_bundle/chart)"), lines[1]
    for label, pin in (("Helm", "HELM_VERSION"), ("kubeconform", "KUBECONFORM_VERSION"),
                       ("KubeRay", "KUBERAY_VERSION"), ("Kubernetes", "KUBERNETES_VERSION")):
        assert f"{label} {pins[pin]}" in lines[2]
    assert wheel.reached() == []


def test_values_render_check_run_from_the_installed_wheel(wheel):
    values = wheel.run("values", RECIPE, INFRA, "-o", "values.yaml")
    assert values.returncode == 0, values.stderr
    assert yaml.safe_load((wheel.root / "work" / "values.yaml").read_text())["recipe"]["name"] == "grpo-swe"
    render = wheel.run("render", RECIPE, INFRA)
    assert render.returncode == 0, render.stderr
    kinds = {d["kind"] for d in yaml.safe_load_all(render.stdout) if d}
    assert {"RayJob", "Deployment", "NetworkPolicy"} <= kinds, kinds
    check = wheel.run("check", RECIPE, INFRA)
    assert check.returncode == 0, check.stdout + check.stderr
    assert "kubeconform" in check.stdout and "api validation" in check.stdout, check.stdout
    assert wheel.reached() == []


def test_a_bad_input_is_the_same_one_line_error(wheel):
    (wheel.root / "work" / "bad.infra.yaml").write_text((wheel.root / "work" / INFRA).read_text() + "\nbogus: 1\n")
    run = wheel.run("check", RECIPE, "bad.infra.yaml")
    assert run.returncode == 2 and "bad.infra.yaml" in run.stderr and "bogus" in run.stderr, run.stderr
    assert wheel.reached() == []


def test_playground_up_needs_a_clone_and_says_so_in_one_sentence(wheel):
    # --gpu-nodes -1: should the clone not be asked for first, `up` stops at that usage error (exit 2) and starts
    # nothing (a package without the check, all tools cached, would otherwise bring a playground up)
    run = wheel.run("playground", "up", "--gpu-nodes", "-1", "--state-dir", wheel.root / "playground")
    assert run.returncode == 1 and run.stdout == ""
    assert run.stderr == ("error: `playground up` needs the repository's scripts, which an installed package does "
                          "not carry: run it from a clone of the dockyard-k8s repository: `make playground`\n")
    assert wheel.reached() == []


def test_a_missing_tool_names_the_command_that_gets_it(wheel):
    empty = wheel.root / "empty-cache"
    run = wheel.run("render", RECIPE, INFRA, env=wheel.env(DOCKYARD_TOOLS_CACHE=str(empty)))
    helm = tool_table.load().pins["HELM_VERSION"]
    assert run.returncode == 1 and run.stdout == "", run.stdout
    assert re.fullmatch(
        rf"error: helm is neither in the tool cache \({re.escape(str(empty))}/helm-{helm}/helm\) nor on PATH; build it "
        rf"from a clone of the dockyard-k8s repository with `make tools` \(into {re.escape(str(empty))}, where this "
        rf"install finds it\), or put helm {helm} on PATH\n", run.stderr), run.stderr
    assert wheel.reached() == []


def test_the_audit_catches_the_checkout_put_back_on_the_path(wheel):
    """The negative control: the same CLI with the checkout on PYTHONPATH imports the checkout's package and reads
    its chart; the hook logs both, so the tests above would fail had anything reached the checkout."""
    run = wheel.run("--version", env=wheel.env(PYTHONPATH=str(REPO)))
    assert run.returncode == 0, run.stderr
    reached = wheel.reached()
    assert any(line.endswith(f" sys.path {REPO}") for line in reached), reached
    assert any(f" open {REPO}/generator/" in line for line in reached), reached
    assert any(f" open {REPO}/charts/dockyard/Chart.yaml" in line for line in reached), reached
    helper = wheel.run(str(wheel.venv / "bin" / "python"), "-c", f"import subprocess; subprocess.run(['true', "
                       f"{str(REPO / 'hack' / 'tools.sh')!r}])")
    assert helper.returncode == 0, helper.stderr
    assert [line.split(" ", 1)[1] for line in wheel.reached()] == [f"subprocess.Popen {REPO}/hack/tools.sh"]
