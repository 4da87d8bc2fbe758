"""`make package`: a versioned chart archive whose version and appVersion come from Chart.yaml, and
that renders with plain `helm template` (as Argo CD and Flux render charts) under both Helm majors."""

from __future__ import annotations

import shutil
import subprocess
import tarfile
from pathlib import Path

import pytest
import yaml

from generator.pinned_tools import CHART_DIR, REPO
from tests.support.helm import HELMS, PLAIN_VALUES, docs, run_helm

SCRIPT = REPO / "hack" / "package.sh"


def chart_meta(path: Path = CHART_DIR / "Chart.yaml") -> dict:
    return yaml.safe_load(path.read_text())


@pytest.fixture(scope="module")
def archive() -> Path:
    proc = subprocess.run(["make", "-s", "package"], cwd=REPO, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    path = Path(proc.stdout.strip().splitlines()[-1])
    assert path == REPO / "dist" / f"dockyard-{chart_meta()['version']}.tgz" and path.is_file()
    return path


def test_archive_carries_the_one_version(archive):
    with tarfile.open(archive) as tar:
        meta = yaml.safe_load(tar.extractfile("dockyard/Chart.yaml").read())
        names = tar.getnames()
    assert meta["version"] == meta["appVersion"] == chart_meta()["version"]
    assert "dockyard/values.schema.json" in names and "dockyard/templates/_helpers.tpl" in names


@pytest.mark.parametrize("helm", list(HELMS), ids=list(HELMS))
def test_packaged_chart_renders_with_plain_helm_template(archive, helm):
    from_archive = run_helm(helm, "template", "dockyard", archive, "-f", PLAIN_VALUES).stdout
    from_folder = run_helm(helm, "template", "dockyard", CHART_DIR, "-f", PLAIN_VALUES).stdout
    assert docs(from_archive) == docs(from_folder) and len(docs(from_archive)) >= 4
    assert f"helm.sh/chart: \"dockyard-{chart_meta()['version']}\"" in from_archive


def _copy(tmp_path: Path) -> Path:
    """The script and Chart.yaml in a scratch tree of the same layout (bump edits Chart.yaml)."""
    (tmp_path / "hack").mkdir()
    shutil.copy(SCRIPT, tmp_path / "hack" / "package.sh")
    (tmp_path / "charts" / "dockyard").mkdir(parents=True)
    shutil.copy(CHART_DIR / "Chart.yaml", tmp_path / "charts" / "dockyard" / "Chart.yaml")
    return tmp_path / "charts" / "dockyard" / "Chart.yaml"


@pytest.mark.parametrize("part, expect", [("major", (1, 0, 0)), ("minor", (0, 1, 0)), ("patch", (0, 0, 1))])
def test_bump_moves_version_and_app_version_together(tmp_path, part, expect):
    chart = _copy(tmp_path)
    before = [int(x) for x in chart_meta(chart)["version"].split(".")]
    proc = subprocess.run(["bash", tmp_path / "hack" / "package.sh", "bump", part], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    after = chart_meta(chart)
    want = [before[0] + expect[0], 0 if expect[0] else before[1] + expect[1],
            0 if expect[0] or expect[1] else before[2] + expect[2]]
    assert after["version"] == after["appVersion"] == ".".join(map(str, want))
    assert after["kubeVersion"] == chart_meta()["kubeVersion"]  # nothing else touched


def test_a_drifted_app_version_is_refused(tmp_path):
    chart = _copy(tmp_path)
    chart.write_text(chart.read_text().replace('appVersion: "', 'appVersion: "9'))
    proc = subprocess.run(["bash", tmp_path / "hack" / "package.sh"], capture_output=True, text=True)
    assert proc.returncode == 2
    assert "appVersion" in proc.stderr and "differs from version" in proc.stderr and "bump" in proc.stderr


@pytest.mark.parametrize("helm", list(HELMS), ids=list(HELMS))
def test_the_charts_readme_travels_in_the_archive(tmp_path, helm):
    """`helm show readme` prints the chart's README (its values table included), from the folder and from the
    archive `helm package` writes: .helmignore must not leave it out."""
    readme = (CHART_DIR / "README.md").read_text()
    assert "| `sandbox.backend` |" in readme
    run_helm(helm, "package", CHART_DIR, "--destination", tmp_path)
    (archive,) = tmp_path.glob("dockyard-*.tgz")
    with tarfile.open(archive) as tar:
        assert tar.extractfile("dockyard/README.md").read().decode() == readme
    for chart in (CHART_DIR, archive):
        assert run_helm(helm, "show", "readme", chart).stdout.strip() == readme.strip()
