"""doctor's version rows (Kubernetes and KubeRay) offline: the server's version against the supported range
(on the recorded answers of the playground, and the verdict for the versions the playground cannot report),
and the CRD-fields row where the recorded cluster can answer: nothing of ray.io rendered, or the CRDs not
served (no request is made then). The dry run itself is tested live (tests/live/test_live_versions.py)."""

from __future__ import annotations

import pytest

from generator import pinned_tools
from generator.live.client.kube import Kube
from generator.live.doctor import versions
from generator.live.doctor.rows import FAIL, OK, WARN
from generator.pinned_tools import KUBE_MINORS, kube_range
from tests.support.fake_cluster import install


def test_the_recorded_servers_version_is_in_range(monkeypatch, tmp_path):
    install(monkeypatch, tmp_path, "doctor_admin")
    row = versions.kubernetes_version_row(Kube())
    pinned = pinned_tools.versions()["KUBERNETES_VERSION"]  # recorded from the pinned control plane (`make record`)
    assert (row.mark, row.check, row.detail) == (OK, "Kubernetes version", f"{pinned} (supported {kube_range()})")


def test_an_unreachable_servers_version_is_unknown(monkeypatch, tmp_path):
    install(monkeypatch, tmp_path, "errors")
    row = versions.kubernetes_version_row(Kube())
    assert row.mark == WARN and row.detail.startswith("unknown: cannot reach the Kubernetes API")


@pytest.mark.parametrize("minor", KUBE_MINORS)
def test_every_claimed_minor_is_ok(minor):
    assert versions.kubernetes_version_verdict(f"v1.{minor}.2-eks-1234").mark == OK


def test_the_charts_kube_version_floor_is_the_oldest_claimed_minor():
    """Chart.yaml's kubeVersion says the range the project claims: helm refuses a server older than the oldest
    minor, and sets no ceiling (a newer minor is doctor's ! row, not a refusal)."""
    assert versions._chart_kube_floor() == KUBE_MINORS[0]


@pytest.mark.parametrize("version, mark, words", [
    (f"v1.{KUBE_MINORS[0] - 1}.9", FAIL, (f"the chart requires Kubernetes >= 1.{KUBE_MINORS[0]}",
                                          "helm install refuses")),
    (f"v1.{KUBE_MINORS[-1] + 1}.0", WARN, ("newer than the supported", f"--kube-version 1.{KUBE_MINORS[-1]}")),
    ("v1.28.15", FAIL, (f"the chart requires Kubernetes >= 1.{KUBE_MINORS[0]}", "helm install refuses")),
    ("v2.0.0", WARN, ("newer than the supported",)),
    ("weird", WARN, ("not v1.N",)),
])
def test_a_version_outside_the_range_names_the_range(version, mark, words):
    row = versions.kubernetes_version_verdict(version)
    assert row.mark == mark, row
    text = row.detail + " " + row.remedy
    assert kube_range() in text and all(w in text for w in words), row


def test_no_crd_row_without_ray_objects(monkeypatch, tmp_path):
    fake = install(monkeypatch, tmp_path, "doctor_admin")
    assert versions.kuberay_fields_rows(Kube(), [{"apiVersion": "apps/v1", "kind": "Deployment"}], "rec") == []
    assert fake.requests == []  # attach renders no RayJob/RayCluster: nothing asked


def test_no_crd_row_when_the_crds_are_not_served(monkeypatch, tmp_path):
    install(monkeypatch, tmp_path, "crd_missing")
    rayjob = {"apiVersion": "ray.io/v1", "kind": "RayJob", "metadata": {"name": "small"}, "spec": {}}
    assert versions.kuberay_fields_rows(Kube(), [rayjob], "rec") == []  # kuberay_crds_row says ✗
