"""doctor's KubeRay rows (generator/live/doctor/kuberay.py) on answers recorded from the playground: the CRDs served
(test_access.py's admin test, beside this file) or gone, and the operator (a process on the playground, no
in-cluster Deployment)."""

from __future__ import annotations

from generator.live.client.kube import Kube
from generator.live.doctor import kuberay
from generator.live.doctor.rows import FAIL
from tests.support.fake_cluster import install


def test_crds_gone_row(monkeypatch, tmp_path):
    install(monkeypatch, tmp_path, "crd_missing")
    row = kuberay.kuberay_crds_row(Kube())
    assert (row.mark, row.detail) == (FAIL, "ray.io/v1 does not serve rayjobs, rayclusters")
