"""The scanner gate: checkov finds nothing on the restricted pool, only reasoned skips on the default; the same
of the pod agent-sandbox's SandboxTemplate makes (sandbox.backend agent-sandbox)."""

from __future__ import annotations

import pytest

from generator.render.scan import checkov
from tests.conftest import chart_values, deep_merge, render_values

DIGEST = "sha256:" + "0123456789abcdef" * 4
# Each skip the chart renders on the default pool, and why a reviewer accepts it (see sandbox/_helpers.tpl).
DEFAULT_SKIPS = {"CKV_K8S_43", "CKV_K8S_15", "CKV_K8S_23", "CKV_K8S_40", "CKV_K8S_22"}


def pool(**over) -> str:
    """The sandbox pool alone (attach mode renders no GPU fleet), as `render` writes it."""
    values = chart_values(launch={"mode": "attach", "clusterName": "shared"}, **over)
    return render_values(values, tests=False).text


AGENT = {"backend": "agent-sandbox"}


def _sandbox_pod_findings(findings) -> list:
    return [f for f in findings if f.resource == "Pod.dockyard.grpo-swe-sandbox"]


@pytest.mark.parametrize("backend", [{}, AGENT], ids=["pool", "agent-sandbox"])
def test_default_pool_has_only_reasoned_skips(backend):
    report = checkov(pool(sandbox=backend))
    assert report.failed == [], [(f.check_id, f.name) for f in report.failed]
    assert {f.check_id for f in report.skipped} == DEFAULT_SKIPS
    for f in report.skipped:
        assert len(f.reason) > 40, f"{f.check_id} skipped without a reason a reviewer would accept: {f.reason!r}"
    assert report.passed > 50


@pytest.mark.parametrize("backend", [{}, AGENT], ids=["pool", "agent-sandbox"])
def test_restricted_pool_has_zero_findings(backend):
    report = checkov(pool(sandbox={"security": {"profile": "restricted"}, **backend},
                          infra={"image": {"digest": DIGEST}}))
    assert report.failed == [], [(f.check_id, f.name) for f in report.failed]
    assert report.skipped == []  # every skip is conditional on its control being off


@pytest.mark.parametrize("over, finding", [
    ({"sandbox": {"security": {"enabled": False}}}, "CKV_K8S_20"),  # allowPrivilegeEscalation
    ({"sandbox": {"resources": {"cpuLimit": None}, "security": {"dropCapabilities": []}}},
     "CKV_K8S_37"),  # capabilities
])
def test_the_gate_fails_on_a_new_finding(over, finding):
    report = checkov(pool(**over))
    assert finding in {f.check_id for f in report.failed}
    # the same change under agent-sandbox is found on the pod its template makes
    report = checkov(pool(**deep_merge(over, {"sandbox": AGENT})))
    assert finding in {f.check_id for f in _sandbox_pod_findings(report.failed)}
