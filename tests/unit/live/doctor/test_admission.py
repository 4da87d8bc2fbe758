"""doctor's admission row (generator/live/doctor/admission.py): the pod templates sent to the apiserver as a server-side
dry run, on answers recorded from the playground: a namespace enforcing PodSecurity restricted refuses each pod in the
admission's own words, cut to a screen, with the infra key that fixes it."""

from __future__ import annotations

from generator.live.client.kube import Kube
from generator.live.doctor import admission
from generator.live.doctor.rows import FAIL, read_namespace
from tests.support.doctor import NS, templates
from tests.support.fake_cluster import install


def test_pod_security_restricted_refuses_each_pod_with_the_admissions_words(monkeypatch, tmp_path):
    install(monkeypatch, tmp_path, "doctor_restricted")
    kube = Kube()
    ns = read_namespace(kube, f"{NS}-restricted")
    row = admission.pod_security_row(kube, ns, templates(), drop_priority_class=True)
    assert row.mark == FAIL and row.detail.startswith("enforce=restricted: sandbox: pods \"doctor-sandbox-")
    assert 'violates PodSecurity "restricted:latest"' in row.detail
    assert len(row.detail) <= len("enforce=restricted: ") + 600  # cut: five refusals would fill a screen
    assert "infra.security (profile: restricted)" in row.remedy
