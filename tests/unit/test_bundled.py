"""generator.bundled: where the chart and the input schemas are read from, in a clone and in an installed package
(a copy of the package's folder laid out as a wheel installs it; tests/unit/test_wheel.py installs the real wheel)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from generator import bundled
from generator.pinned_tools import REPO

PROBE = ("import sys; from generator import bundled as b; "
         "print(b.clone()); print(b.chart_dir()); print(b.schema_path('recipe')); print(b.chart_version()); "
         "b.needs_clone('`playground up`', 'make playground')")


def test_in_the_clone_the_clones_own_files_are_read():
    assert bundled.clone() == str(REPO)
    assert bundled.chart_dir() == REPO / "charts" / "dockyard"
    assert bundled.schema_path("infra") == REPO / "schema" / "infra.schema.json"
    assert bundled.needs_clone("x", "make x") == REPO


def test_the_version_is_the_charts():
    text = (REPO / "charts" / "dockyard" / "Chart.yaml").read_text()
    assert f"\nversion: {bundled.chart_version()}\n" in text


def _installed_copy(tmp_path: Path, with_data: bool) -> Path:
    """The package as a wheel lays it out in site-packages: generator/ with (or, broken, without) _bundle/."""
    site = tmp_path / "site-packages"
    shutil.copytree(REPO / "generator", site / "generator", ignore=shutil.ignore_patterns("__pycache__", "maint"))
    if with_data:
        shutil.copytree(REPO / "charts" / "dockyard", site / "generator" / "_bundle" / "chart")
        shutil.copytree(REPO / "schema", site / "generator" / "_bundle" / "schema")
    return site


def _probe(site: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-I", "-c", f"import sys; sys.path.insert(0, {str(site)!r}); {PROBE}"],
                          capture_output=True, text=True, cwd=site)


def test_installed_the_packaged_copies_are_read_and_a_clone_only_verb_says_so(tmp_path):
    site = _installed_copy(tmp_path, with_data=True)
    run = _probe(site)
    clone, chart, schema, version, *_ = run.stdout.splitlines()
    assert clone == "None"
    assert chart == str(site / "generator" / "_bundle" / "chart")
    assert schema == str(site / "generator" / "_bundle" / "schema" / "recipe.schema.json")
    assert version == bundled.chart_version()
    assert run.returncode == 1 and run.stderr.strip().endswith(
        "NeedsClone: `playground up` needs the repository's scripts, which an installed package does not carry: "
        "run it from a clone of the dockyard-k8s repository: `make playground`")


@pytest.mark.parametrize("beside", [False, True])
def test_installed_without_its_data_names_the_packaged_path_and_never_a_clone_beside_it(tmp_path, beside):
    """A broken install points at its own missing folder; a clone-shaped folder around site-packages is not used
    either way once the package carries its data, and without the data only a real clone layout counts."""
    site = _installed_copy(tmp_path, with_data=False)
    if beside:  # site-packages' parent shaped like a clone: what a clone looks like is all it takes
        (tmp_path / "pyproject.toml").write_text("")
        (tmp_path / "charts" / "dockyard").mkdir(parents=True)
        site = tmp_path
        shutil.move(tmp_path / "site-packages" / "generator", tmp_path / "generator")
    run = _probe(site)
    clone, chart = run.stdout.splitlines()[:2]
    if beside:
        assert clone == str(tmp_path) and chart == str(tmp_path / "charts" / "dockyard")
    else:
        assert clone == "None" and chart == str(site / "generator" / "_bundle" / "chart")
