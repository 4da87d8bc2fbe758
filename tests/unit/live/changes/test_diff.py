"""changes/diff.py: the RayJob diff `run` prints names each changed path, worker groups and containers indexed by
name (not by position)."""

from __future__ import annotations

from generator.live.changes.diff import diff_paths


def test_rayjob_diff_indexes_groups_and_containers():
    def pod(image):
        return {"spec": {"containers": [{"name": "ray-worker", "image": image}]}}

    old = {"rayClusterSpec": {"workerGroupSpecs": [
        {"groupName": "trainer", "replicas": 1, "template": pod("a")},
        {"groupName": "inference", "replicas": 1}]}}
    new = {"rayClusterSpec": {"workerGroupSpecs": [
        {"groupName": "inference", "replicas": 1},
        {"groupName": "trainer", "replicas": 2, "template": pod("b")}]}}
    assert diff_paths(old, new) == [
        "rayClusterSpec.workerGroupSpecs[trainer].replicas: 1 -> 2",
        "rayClusterSpec.workerGroupSpecs[trainer].template.spec.containers[ray-worker].image: 'a' -> 'b'",
    ]
    assert diff_paths(old, old) == []
