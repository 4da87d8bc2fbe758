"""The training-loss guard, the ownership rule and the lock's evidence rule, offline (the live tests in
tests/live/test_trust_live.py prove the same on the playground)."""

from __future__ import annotations

import base64
import gzip
import json

import pytest
import yaml

from generator.errors import CheckFailed
from generator.live.changes.guard import impact
from generator.live.helm.ownership import foreign_chart, require_ours


class RayObjects:
    """Live RayJobs/RayClusters by (plural, name): what impact() reads from the cluster."""

    def __init__(self, **objs):
        self.objs = objs

    def get_ray(self, plural, namespace, name):
        return self.objs.get(f"{plural}/{name}")


def manifest(*objs) -> str:
    return yaml.safe_dump_all(list(objs))


def rayjob(gpus=8, name="small"):
    return {"kind": "RayJob", "metadata": {"name": name},
            "spec": {"rayClusterSpec": {"workerGroupSpecs": [{"groupName": "trainer", "replicas": 1,
                                                              "template": {"gpus": gpus}}]}}}


def raycluster(name="small"):
    return {"kind": "RayCluster", "metadata": {"name": name}, "spec": {"workerGroupSpecs": [{"replicas": 2}]}}


def recipe(steps):
    return {"kind": "ConfigMap", "metadata": {"name": "small-recipe"}, "data": {"recipe.yaml": f"steps: {steps}\n"}}


RUNNING_JOB = {"status": {"jobDeploymentStatus": "Running", "rayClusterName": "small-x1"}}
READY_CLUSTER = {"spec": {"workerGroupSpecs": [{"replicas": 2}]}, "status": {"state": "ready"}}


def test_bringup_to_rayjob_loses_the_cluster():
    hit = impact(RayObjects(**{"rayclusters/small": READY_CLUSTER}), "ns", manifest(raycluster()), manifest(rayjob()))
    assert hit.lost == ["RayCluster small (state ready, 2 workers) would be deleted"]
    with pytest.raises(CheckFailed, match="`run` would lose running training"):
        hit.refuse_unless(False, "run")
    hit.refuse_unless(True, "run")


def test_rayjob_spec_change_is_a_loss_to_replace():
    hit = impact(RayObjects(**{"rayjobs/small": RUNNING_JOB}), "ns", manifest(rayjob(8)), manifest(rayjob(4)))
    assert len(hit.lost) == 1 and "KubeRay #1776" in hit.lost[0] and "gpus: 8 -> 4" in hit.lost[0]
    assert "RayCluster small-x1" in hit.lost[0]
    assert hit.replace == [("rayjobs", "small")]


def test_a_field_the_server_pruned_is_no_change_when_a_new_render_leaves_it_out():
    """Installed on a KubeRay whose RayJob lacks preRunningDeadlineSeconds, the release's manifest has the default
    but the live RayJob does not (the API server pruned it); `run` now leaves it out there: nothing changes. Where
    the live RayJob has it, dropping it is a change of a running job's spec (the control)."""
    deployed = rayjob(8)
    deployed["spec"]["preRunningDeadlineSeconds"] = 3600
    pruned = {**RUNNING_JOB, "spec": {"rayClusterSpec": deployed["spec"]["rayClusterSpec"], "suspend": False}}
    hit = impact(RayObjects(**{"rayjobs/small": pruned}), "ns", manifest(deployed), manifest(rayjob(8)))
    assert hit.lost == [] and hit.replace == []
    served = {**pruned, "spec": {**pruned["spec"], "preRunningDeadlineSeconds": 3600}}
    hit = impact(RayObjects(**{"rayjobs/small": served}), "ns", manifest(deployed), manifest(rayjob(8)))
    assert len(hit.lost) == 1 and "preRunningDeadlineSeconds: 3600 -> " in hit.lost[0], hit.lost


@pytest.mark.parametrize("status", ["Complete", "Failed"])
def test_finished_jobs_are_not_running_training(status):
    live = {"status": {"jobDeploymentStatus": status}}
    hit = impact(RayObjects(**{"rayjobs/small": live}), "ns", manifest(rayjob()), manifest(raycluster()))
    assert hit.lost == [] and hit.replace == []


@pytest.mark.parametrize("status", ["Complete", "Failed"])
def test_an_ended_rayjob_is_recreated_with_replace_and_nothing_is_lost(status):
    # KubeRay never runs an ended RayJob again, even with a new spec (seen on the real node: `run
    # --replace` of a new entrypoint over a SUCCEEDED job followed the old one)
    live = {"status": {"jobDeploymentStatus": status, "jobStatus": "SUCCEEDED"}}
    for target in (rayjob(4), rayjob(8)):
        hit = impact(RayObjects(**{"rayjobs/small": live}), "ns", manifest(rayjob(8)), manifest(target))
        assert hit.lost == [] and hit.replace == [("rayjobs", "small")]
        assert any("RayJob small has ended" in n and "--replace recreates it" in n for n in hit.notes), hit.notes
        hit.refuse_unless(False, "run")  # not refused: no running training


def test_objects_not_live_or_being_deleted_lose_nothing():
    deleting = {"metadata": {"deletionTimestamp": "2026-01-01T00:00:00Z"}, "status": {}}
    assert impact(RayObjects(), "ns", manifest(rayjob()), manifest()).lost == []
    assert impact(RayObjects(**{"rayjobs/small": deleting}), "ns", manifest(rayjob()), manifest()).lost == []
    assert impact(RayObjects(**{"rayjobs/small": RUNNING_JOB}), "ns", None, manifest()).lost == []


def test_recipe_change_under_a_running_job_is_announced_not_refused():
    hit = impact(RayObjects(**{"rayjobs/small": RUNNING_JOB}), "ns",
                 manifest(rayjob(), recipe(1)), manifest(rayjob(), recipe(2)))
    assert hit.lost == []
    assert len(hit.notes) == 1 and "the recipe changes under running RayJob small" in hit.notes[0]
    assert hit.replace == [("rayjobs", "small")]  # only acted on with --replace
    same = impact(RayObjects(**{"rayjobs/small": RUNNING_JOB}), "ns",
                  manifest(rayjob(), recipe(1)), manifest(rayjob(), recipe(1)))
    assert same.notes == [] and same.replace == []


def release_secret(chart: dict) -> dict:
    raw = gzip.compress(json.dumps({"chart": {"metadata": chart}, "manifest": ""}).encode())
    return {"data": {"release": base64.b64encode(base64.b64encode(raw)).decode()}, "metadata": {"labels": {}}}


def test_ownership_needs_the_chart_name_and_our_marker():
    ours = {"name": "dockyard", "version": "0.1.0", "annotations": {"dockyard.dev/launcher": "dockyard-k8s"}}
    assert foreign_chart(release_secret(ours)) is None
    assert foreign_chart(release_secret({"name": "dockyard", "version": "9.9.9"})) == "chart dockyard-9.9.9"
    redis = {"name": "redis", "version": "1.0.0", "annotations": {"dockyard.dev/launcher": "dockyard-k8s"}}
    assert foreign_chart(release_secret(redis)) == "chart redis-1.0.0"
    with pytest.raises(CheckFailed, match="was made by chart redis-1.0.0, not by dockyard-k8s's chart"):
        require_ours([release_secret({"name": "redis", "version": "1.0.0"})], "small", "ns", "uninstall")
    require_ours([], "small", "ns", "run")


def test_the_committed_chart_carries_the_marker():
    from generator.pinned_tools import CHART_DIR

    meta = yaml.safe_load((CHART_DIR / "Chart.yaml").read_text())
    assert foreign_chart(release_secret(meta)) is None


def test_helm_errors_drop_client_go_log_lines():
    from types import SimpleNamespace

    from generator.live.helm.runner import _helm_message

    stderr = (b"E1130 21:40:01.123456   4242 reflector.go:200] failed to list: connection refused\n"
              b"W1130 21:40:02.000001   4242 warnings.go:70] something\n"
              b"Error: UPGRADE FAILED: context deadline exceeded\n")
    assert _helm_message(SimpleNamespace(stderr=stderr)) == "UPGRADE FAILED: context deadline exceeded"
