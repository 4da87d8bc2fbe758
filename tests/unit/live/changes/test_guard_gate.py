"""The training-loss gate before every path that deletes or replaces live Ray objects (recovery of an
interrupted run, `run` over a failed-only release, rollback, uninstall's announcement), offline; the
live twins are in tests/live/test_live_guard.py (releases made by hand with plain helm)."""

from __future__ import annotations

import base64
import gzip
import json
from types import SimpleNamespace

import pytest
import yaml

from generator.errors import CheckFailed
from generator.live.doctor.capacity import Room, gpu_rows
from generator.live.helm.records import live_manifest, upgrade_base
from generator.live.state.pods import container_gpus

RUNNING_JOB = {"metadata": {}, "status": {"jobDeploymentStatus": "Running", "rayClusterName": "small-x1"}}


def rayjob(gpus=8):
    return {"kind": "RayJob", "metadata": {"name": "small"},
            "spec": {"rayClusterSpec": {"workerGroupSpecs": [{"groupName": "trainer", "template": {"gpus": gpus}}]}}}


def record(version: int, status: str, *objs) -> dict:
    raw = gzip.compress(json.dumps({"manifest": yaml.safe_dump_all(list(objs))}).encode())
    return {"data": {"release": base64.b64encode(base64.b64encode(raw)).decode()},
            "metadata": {"labels": {"version": str(version), "status": status}}}


class Cluster:
    """What the gate reads (live Ray objects) and what recovery asks of Helm, recorded."""

    def __init__(self, **live):
        self.live, self.helm_calls = live, []

    def get_ray(self, plural, namespace, name):
        return self.live.get(f"{plural}/{name}")

    def rollback(self, release, namespace, revision, *, timeout):
        self.helm_calls.append(("rollback", revision))

    def uninstall(self, release, namespace, *, timeout):
        self.helm_calls.append(("uninstall",))


def _recover(cluster: Cluster, records, replace=False) -> list[str]:
    import time

    from generator.live.changes.install import _recover

    said: list[str] = []
    p = SimpleNamespace(release="small", namespace="ns")
    _recover(cluster, cluster, p, records, SimpleNamespace(say=said.append), replace, time.monotonic() + 30)
    return said


def test_the_manifest_judged_is_the_one_helm_acts_on():
    deployed, failed = record(1, "deployed", rayjob(8)), record(2, "failed", rayjob(4))
    assert "gpus: 4" in live_manifest([deployed, failed])  # rollback and uninstall act on the newest
    assert "gpus: 8" in upgrade_base([deployed, failed])  # upgrade diffs against the deployed one
    assert "gpus: 4" in upgrade_base([record(1, "failed", rayjob(4))])  # ... else the newest failed one
    assert live_manifest([]) is None and live_manifest([record(1, "uninstalled", rayjob())]) is None


def test_recovering_a_pending_first_install_refuses_to_delete_running_training():
    cluster = Cluster(**{"rayjobs/small": RUNNING_JOB})
    with pytest.raises(CheckFailed) as err:
        _recover(cluster, [record(1, "pending-install", rayjob())])
    assert "left pending-install by an interrupted first install, and recovering it means removing it" in str(err.value)
    assert "RayJob small (jobDeploymentStatus Running" in str(err.value) and "--replace" in str(err.value)
    assert cluster.helm_calls == []
    _recover(cluster, [record(1, "pending-install", rayjob())], replace=True)
    assert cluster.helm_calls == [("uninstall",)]


def test_recovering_with_nothing_running_removes_or_rolls_back_as_before():
    cluster = Cluster()
    _recover(cluster, [record(1, "pending-install", rayjob())])
    _recover(cluster, [record(1, "deployed", rayjob()), record(2, "pending-upgrade", rayjob(4))])
    assert cluster.helm_calls == [("uninstall",), ("rollback", 1)]


def test_rolling_back_a_pending_upgrade_is_judged_against_the_pending_manifest():
    cluster = Cluster(**{"rayjobs/small": RUNNING_JOB})
    with pytest.raises(CheckFailed, match="KubeRay #1776"):
        _recover(cluster, [record(1, "deployed", rayjob(8)), record(2, "pending-upgrade", rayjob(4))])
    assert cluster.helm_calls == []


def test_a_failed_only_release_is_upgraded_over_not_removed():
    cluster = Cluster(**{"rayjobs/small": RUNNING_JOB})
    said = _recover(cluster, [record(1, "failed", rayjob())])
    assert cluster.helm_calls == []
    assert said == ["release small has no deployed revision (last: failed): upgrading over it"]


def _room(*gpus_per_node, used=0.0) -> Room:
    nodes = {f"gpu-{i}": {"nvidia.com/gpu": float(g)} for i, g in enumerate(gpus_per_node)}
    return Room(alloc=nodes, used={n: {"nvidia.com/gpu": used} for n in nodes})


def _cluster(trainer, inference, gpus=8):
    return SimpleNamespace(trainer=SimpleNamespace(nodes=trainer, gpusPerNode=gpus),
                           inference=SimpleNamespace(nodes=inference, gpusPerNode=gpus))


def test_never_fits_is_judged_on_an_empty_cluster_not_a_busy_one():
    busy = _room(8, 8, used=8.0)  # two 8-GPU nodes, both full now
    assert [r.mark for r in gpu_rows(busy, _cluster(1, 1))][-1] == "✗"  # doctor: does not fit now
    assert all(r.mark == "✓" for r in gpu_rows(busy, _cluster(1, 1), empty=True))  # but it can, later
    never = gpu_rows(_room(8, 8), _cluster(3, 1), empty=True)
    assert [r.check for r in never if r.mark == "✗"] == ["GPU capacity: trainer", "GPU capacity: gang"]
    gang = never[-1]
    assert gang.detail.startswith("2/4 worker pods fit in the allocatable GPUs if no other pod used any (32 wanted, "
                                  "16 allocatable on 2 node(s))")
    assert gang.remedy == "add GPU nodes, or shrink cluster.trainer/inference"


def test_gpus_are_counted_one_way():
    both = {"resources": {"limits": {"nvidia.com/gpu": "0"}, "requests": {"nvidia.com/gpu": "1"}}}
    assert container_gpus(both) == 1  # the request is what the scheduler places
    assert container_gpus({"resources": {"limits": {"nvidia.com/gpu": 2}}}) == 2  # requests default to limits
    assert container_gpus({}) == 0


def test_the_snapshot_takes_the_release_s_rayjob_never_another():
    from generator.live.state.snapshot import Snapshot, _read_ray

    snap = Snapshot("small", "ns")
    other = {"metadata": {"name": "small-smoke"}, "status": {"jobDeploymentStatus": "Running"}, "spec": {}}
    assert _read_ray(snap, [other], []) is None and snap.rayjob is None
    mine = {"metadata": {"name": "small"}, "status": {"jobDeploymentStatus": "Running"}, "spec": {}}
    _read_ray(snap, [other, mine], [])
    assert snap.rayjob["name"] == "small"
