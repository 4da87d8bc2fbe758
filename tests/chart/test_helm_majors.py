"""The chart under both Helm majors, driven as users drive helm: plain `helm template` (no
--kube-version: the release build's default capabilities), `helm lint --strict`, values.schema.json
enforcement, and the same manifests from Helm 3 and Helm 4."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from generator.cli import main
from generator.pinned_tools import CHART_DIR, versions
from tests.conftest import INFRA_EXAMPLES, RECIPE, chart_values, deep_merge
from tests.support.helm import BAD, HELMS, PLAIN_VALUES, docs, run_helm

PLAYGROUND_MINOR = int(versions()["KUBERNETES_VERSION"].split(".")[1])

both = pytest.mark.parametrize("helm", list(HELMS), ids=list(HELMS))


@both
def test_plain_template_needs_no_kube_version(helm):
    """The README's `helm template` / `helm install` of the chart folder: the chart's kubeVersion
    (>=1.33) is met by the binary's default capabilities (Helm 3: built with the playground's minor)."""
    out = run_helm(helm, "template", "dockyard", CHART_DIR, "-f", PLAIN_VALUES).stdout
    kinds = [d["kind"] for d in yaml.safe_load_all(out) if d]
    assert "Deployment" in kinds and "Service" in kinds


@both
def test_default_capabilities_kube_version(helm, tmp_path):
    chart = tmp_path / "kv"
    (chart / "templates").mkdir(parents=True)
    (chart / "Chart.yaml").write_text("apiVersion: v2\nname: kv\nversion: 0.0.1\n")
    (chart / "templates" / "kv.yaml").write_text("kube: {{ .Capabilities.KubeVersion.Version }}\n")
    got = yaml.safe_load(run_helm(helm, "template", "x", chart).stdout)["kube"]
    minor = int(got.split(".")[1])
    if helm == "helm3":
        assert got == f"v1.{PLAYGROUND_MINOR}.0"  # the ldflag hack/tools.sh sets
    else:
        assert minor >= PLAYGROUND_MINOR  # Helm 4: its client-go module's minor (no ldflag exists)


@both
def test_lint_strict_is_clean(helm):
    out = run_helm(helm, "lint", "--strict", CHART_DIR).stdout
    assert "1 chart(s) linted, 0 chart(s) failed" in out


@both
@pytest.mark.parametrize("case, over, key", BAD[:6], ids=[b[0] for b in BAD[:6]])
def test_schema_is_enforced(helm, case, over, key, tmp_path):
    values = tmp_path / "values.yaml"
    values.write_text(yaml.safe_dump(deep_merge(chart_values(), over)))
    proc = run_helm(helm, "template", "x", CHART_DIR, "-f", values, check=False)
    assert proc.returncode == 1
    assert "values don't meet the specifications of the schema" in proc.stderr and key in proc.stderr


def _composed_values(infra: Path, tmp_path: Path) -> Path:
    out = tmp_path / f"{infra.stem}.values.yaml"
    assert main(["values", str(RECIPE), str(infra), "-o", str(out)]) == 0
    return out


@pytest.mark.parametrize("values", [*INFRA_EXAMPLES, PLAIN_VALUES], ids=lambda p: p.name)
def test_helm3_and_helm4_render_the_same_manifests(values, tmp_path):
    path = values if values == PLAIN_VALUES else _composed_values(values, tmp_path)
    kube = versions()["KUBERNETES_VERSION"]  # one Kubernetes version for both (their defaults differ)
    h3, h4 = (run_helm(name, "template", "dockyard", CHART_DIR, "-f", path, "-n", "dockyard", "--kube-version",
                       kube).stdout
              for name in HELMS)
    assert docs(h3) == docs(h4)
    assert len(docs(h3)) >= 4
