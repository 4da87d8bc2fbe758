"""doctor's version rows (Kubernetes and KubeRay) offline: the server's version against the supported range
(on the recorded answers of the playground, and the verdict for the versions the playground cannot report),
and the CRD-fields row on the recorded clusters: nothing of ray.io rendered, or the CRDs not served (no request
is made then); the rendered RayJob dry-run against the pinned KubeRay's RayJob CRD and against KubeRay v1.4's
(the default start deadline left out with a note, a deadline the user set refused by name). The same row on a
playground running each KubeRay minor: tests/live/test_live_versions.py."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
import yaml

from generator import pinned_tools
from generator.inputs.version_rules import PRE_RUNNING_DEADLINE
from generator.live.changes.plan import plan
from generator.live.client.kube import Kube
from generator.live.doctor import versions
from generator.live.doctor.rows import FAIL, OK, WARN
from generator.pinned_tools import KUBE_MINORS, kube_range, targeting
from generator.render import kubeconform
from generator.render.helm import template
from tests.support.doctor import NS, RELEASE
from tests.support.fake_cluster import install
from tests.support.kuberay_crds import older_crds  # noqa: F401 (the fixture: v1.4's CRDs, for the bodies sent)


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


# The rendered RayJob against the KubeRay CRDs the recorder served: the pinned KubeRay's (doctor_admin: doctor of
# small.yaml, its RayJob created in the dry run) and KubeRay v1.4's RayJob CRD put in its place (rayjob_fields_v1_4:
# preRunningDeadlineSeconds refused by name, in strict decoding).
DATA = Path(__file__).resolve().parents[3] / "live" / "data"
CHECK = "KubeRay CRDs accept"
NOTE = "note: the installed KubeRay's RayJob has no preRunningDeadlineSeconds: the default start deadline"


@pytest.fixture(scope="module")
def small_values() -> dict:
    return plan(str(DATA / "small.yaml"), str(DATA / "small.infra.yaml"), [], None, NS).values


def _docs(values: dict) -> list[dict]:
    return [d for d in yaml.safe_load_all(template(values, RELEASE, NS)) if isinstance(d, dict)]


def _fields_rows(values: dict) -> list:
    """kuberay_fields_rows as doctor calls it (generator/live/verbs/doctor.py): the rendered docs, and the render
    of values changed for an older KubeRay."""
    return versions.kuberay_fields_rows(Kube(), _docs(values), NS, values, _docs)


def _sent_rayjobs(monkeypatch, fake) -> list[dict]:
    """The RayJobs the row sends to the fake as dry runs, in order (the replay itself does not read the body)."""
    sent: list[dict] = []
    answer = fake.request

    def spy(method, url, body=None, **kwargs):
        if method == "POST" and url.split("?")[0].endswith("/rayjobs"):
            sent.append(json.loads(body))
        return answer(method, url, body=body, **kwargs)

    monkeypatch.setattr(fake, "request", spy)
    return sent


def _on_kuberay_1_4(monkeypatch, tmp_path) -> list[dict]:
    """doctor_admin's cluster whose RayJob dry run first answers as KubeRay v1.4's CRD did (rayjob_fields_v1_4's
    400: the deadline an unknown field), then as doctor_admin's did (small.yaml's RayJob created). The second
    answer stands for v1.4's CRD accepting the RayJob rendered without the field: the tests check that body
    against v1.4's CRD schema offline (kubeconform), so the replay answers what that CRD answers."""
    fake = install(monkeypatch, tmp_path, "doctor_admin")
    fake.answer_first("rayjob_fields_v1_4")
    return _sent_rayjobs(monkeypatch, fake)


def _on_v1_4_schema(rayjob: dict) -> kubeconform.Result:
    with targeting(kuberay=pinned_tools.versions()["KUBERAY_1_4_VERSION"]):
        (result,) = kubeconform.validate(yaml.safe_dump(rayjob))
    return result


def test_the_pinned_crd_takes_the_default_deadline(monkeypatch, tmp_path, small_values):
    sent = _sent_rayjobs(monkeypatch, install(monkeypatch, tmp_path, "doctor_admin"))
    rows = _fields_rows(copy.deepcopy(small_values))
    assert [(r.mark, r.check) for r in rows] == [(OK, CHECK)], rows
    assert "preRunningDeadlineSeconds" not in rows[0].detail  # no note: nothing left out
    assert [job["spec"].get("preRunningDeadlineSeconds") for job in sent] == [PRE_RUNNING_DEADLINE]  # one dry run


def test_on_kuberay_1_4_the_default_deadline_is_left_out_with_a_note(monkeypatch, tmp_path, small_values):
    sent = _on_kuberay_1_4(monkeypatch, tmp_path)
    rows = _fields_rows(copy.deepcopy(small_values))
    assert [(r.mark, r.check) for r in rows] == [(OK, CHECK)], rows
    detail = rows[0].detail
    assert NOTE in detail and f"({PRE_RUNNING_DEADLINE} s, KubeRay v1.6 and later) is left out" in detail, detail
    first, again = sent  # the render as it stands, refused; then the render for KubeRay 1.5, without the field
    assert first["spec"]["preRunningDeadlineSeconds"] == PRE_RUNNING_DEADLINE
    assert "preRunningDeadlineSeconds" not in again["spec"]
    assert _on_v1_4_schema(again).status == "valid"  # what the replayed creation stands for
    refused = _on_v1_4_schema(first)
    assert refused.status == "invalid" and "preRunningDeadlineSeconds" in refused.message


def test_on_kuberay_1_4_a_deadline_the_user_set_is_refused_by_name(monkeypatch, tmp_path, small_values):
    sent = _on_kuberay_1_4(monkeypatch, tmp_path)
    values = copy.deepcopy(small_values)
    values["launch"]["preRunningDeadlineSeconds"] = 900
    rows = _fields_rows(values)
    assert [(r.mark, r.check) for r in rows] == [(FAIL, CHECK)], rows
    assert rows[0].detail.startswith("launch.preRunningDeadlineSeconds: the installed KubeRay's RayJob lacks it "
                                     "(new in KubeRay v1.6)"), rows[0]
    assert "or 0" in rows[0].remedy and "v1.6" in rows[0].remedy
    assert [job["spec"].get("preRunningDeadlineSeconds") for job in sent] == [900]  # not rendered again
