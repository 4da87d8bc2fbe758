"""generator/live/changes/served_fields.py on the recorded answers of a real API server (`make record`): the served
RayJob asked whether it has preRunningDeadlineSeconds with the pinned KubeRay's CRD, and with KubeRay v1.4's put in
its place; the values fitted to each, rendered by the chart."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
import yaml
from kubernetes.client.exceptions import ApiException

from generator.errors import CheckFailed
from generator.inputs.version_rules import DEFAULT_KUBERAY_MINOR, PRE_RUNNING_DEADLINE, WITHOUT_PRE_RUNNING
from generator.live.changes.plan import plan
from generator.live.changes.served_fields import FIELD, fit_to_served, served_rayjob_knows
from generator.live.client.kube import Kube
from generator.render.helm import template
from tests.support.fake_cluster import install

DATA = Path(__file__).resolve().parents[3] / "live" / "data"
NAMESPACE = "rec"  # where the recorder asked


@pytest.fixture(scope="module")
def small_values() -> dict:
    return plan(str(DATA / "small.yaml"), str(DATA / "small.infra.yaml"), [], None, NAMESPACE).values


def _values(small_values: dict, **launch) -> dict:
    values = copy.deepcopy(small_values)
    values["launch"].update(launch)
    return values


def _rendered_deadline(values: dict) -> int | None:
    docs = [d for d in yaml.safe_load_all(template(values, "small", NAMESPACE)) if d]
    (job,) = [d for d in docs if d["kind"] == "RayJob"]
    return job["spec"].get(FIELD)


def test_the_pinned_crd_has_the_field_and_the_default_stays(monkeypatch, tmp_path, small_values):
    fake = install(monkeypatch, tmp_path, "rayjob_fields_pinned")
    assert served_rayjob_knows(Kube(), NAMESPACE, FIELD) is True  # created, in the dry run
    assert served_rayjob_knows(Kube(), "absent", FIELD) is True  # decoded, then: no such namespace
    values = _values(small_values)
    assert fit_to_served(Kube(), "rayjob", NAMESPACE, values) is None
    assert values == small_values and values["kuberay"]["version"] == DEFAULT_KUBERAY_MINOR
    assert _rendered_deadline(values) == PRE_RUNNING_DEADLINE
    assert len(fake.requests) == 3


def test_an_older_crd_lacks_it_even_before_the_namespace_exists(monkeypatch, tmp_path):
    """The API server decodes before it looks for the namespace: `run --create-namespace` asks before creating."""
    install(monkeypatch, tmp_path, "rayjob_fields_v1_4")
    assert served_rayjob_knows(Kube(), NAMESPACE, FIELD) is False
    assert served_rayjob_knows(Kube(), "absent", FIELD) is False


def test_on_an_older_crd_the_default_is_left_out_with_a_note(monkeypatch, tmp_path, small_values):
    install(monkeypatch, tmp_path, "rayjob_fields_v1_4")
    values = _values(small_values)
    assert _rendered_deadline(values) == PRE_RUNNING_DEADLINE  # the control: as the plan stands
    note = fit_to_served(Kube(), "rayjob", NAMESPACE, values)
    assert note and note.startswith("note: the installed KubeRay's RayJob has no preRunningDeadlineSeconds"), note
    assert f"({PRE_RUNNING_DEADLINE} s, KubeRay v1.6 and later) is left out" in note
    assert values["kuberay"]["version"] == WITHOUT_PRE_RUNNING[-1]
    assert _rendered_deadline(values) is None


def test_on_an_older_crd_a_deadline_the_user_set_is_refused_by_name(monkeypatch, tmp_path, small_values):
    install(monkeypatch, tmp_path, "rayjob_fields_v1_4")
    values = _values(small_values, preRunningDeadlineSeconds=900)
    with pytest.raises(CheckFailed, match=r"^launch\.preRunningDeadlineSeconds: the installed KubeRay's RayJob "
                                          r"lacks it \(new in KubeRay v1\.6\)") as caught:
        fit_to_served(Kube(), "rayjob", NAMESPACE, values)
    assert "or 0" in str(caught.value) and values["kuberay"]["version"] == DEFAULT_KUBERAY_MINOR


@pytest.mark.parametrize("mode, launch, version", [
    ("rayjob", {"preRunningDeadlineSeconds": 0}, None),  # 0: no deadline rendered
    ("bringup", {}, None),  # no RayJob of the chart's
    ("rayjob", {}, WITHOUT_PRE_RUNNING[0]),  # already for an older KubeRay
])
def test_no_question_when_nothing_would_render_the_field(monkeypatch, tmp_path, small_values, mode, launch, version):
    fake = install(monkeypatch, tmp_path, "rayjob_fields_v1_4")
    values = _values(small_values, **launch)
    if version:
        values["kuberay"]["version"] = version
    before = copy.deepcopy(values)
    assert fit_to_served(Kube(), mode, NAMESPACE, values) is None
    assert values == before and fake.requests == []


@pytest.mark.parametrize("status", [403, 500])
def test_a_server_that_does_not_say_changes_nothing(monkeypatch, tmp_path, small_values, status):
    """Forbidden to create RayJobs (Helm will say so next) or failing: the values stay as planned, with a note."""
    install(monkeypatch, tmp_path, "rayjob_fields_v1_4")

    def refuse(*_args, **_kwargs):
        raise ApiException(status=status, reason="refused")

    monkeypatch.setattr(Kube, "request", refuse)
    values = _values(small_values)
    assert served_rayjob_knows(Kube(), NAMESPACE, FIELD) is None
    note = fit_to_served(Kube(), "rayjob", NAMESPACE, values)
    assert note and "did not say whether its RayJob has preRunningDeadlineSeconds" in note and "doctor" in note
    assert values == small_values
