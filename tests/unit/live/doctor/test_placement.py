"""doctor's placement rows (generator/live/doctor/placement.py): a GPU fleet that tolerates no
taint of the GPU nodes it could use is ✗ with the taint and the key to set; the head and the submitter
are ! when no node takes them. Against the playground's own Node objects (generator/playground/nodes.py:
GPU nodes tainted as a cloud GPU pool is), the chart's rendered pod templates, and the recorded cluster."""

from __future__ import annotations

import pytest

from generator.live.client import selectors
from generator.live.client.kube import Kube
from generator.live.doctor import capacity, placement
from generator.live.doctor.rows import FAIL, OK, WARN
from generator.playground import nodes
from tests.support.doctor import room_of
from tests.support.fake_cluster import install

GPU_TAINT = "nvidia.com/gpu=present:NoSchedule"


PLAYGROUND = room_of(nodes.manifests(nodes.Shape(), "v1.36.3"))  # `playground up`'s default shape
N = nodes.Shape().gpu_nodes  # its GPU nodes


def rows(render, **over) -> dict[str, tuple[str, str, str]]:
    from generator.render.pod_templates import pod_templates

    out = placement.placement_rows(PLAYGROUND, pod_templates(render(**over).docs))
    return {r.check.removeprefix("placement: "): (r.mark, r.detail, r.remedy) for r in out}


def test_the_chart_defaults_fit_the_playground_tainted_gpu_pool(render):
    got = rows(render)
    assert got["trainer"] == got["inference"] == (OK, f"can use {N} of {N} GPU node(s)", "")
    assert got["head"] == got["submitter"] == (OK, "1 node(s) take it, 1 without GPUs", "")


def test_a_fleet_without_the_gpu_toleration_is_refused_naming_the_taint_and_the_key(render):
    got = rows(render, kuberay={"placement": {"trainer": {"tolerations": []}}})
    mark, detail, remedy = got["trainer"]
    assert mark == FAIL
    assert detail.startswith(f"tolerates no taint of the {N} GPU node(s) it could use: {GPU_TAINT} ({N} node(s))")
    assert "ExtendedResourceToleration" in detail
    assert remedy == ("add {key: nvidia.com/gpu, operator: Exists, effect: NoSchedule} to "
                      "kuberay.placement.gpu.tolerations (or kuberay.placement.trainer.tolerations)")
    assert got["inference"][0] == OK  # the other fleet keeps the shared default


def test_a_toleration_in_the_overlay_counts(render):
    ov = {"workerGroupSpecs": [{"groupName": "trainer", "template": {"spec": {"tolerations": [
        {"key": "nvidia.com/gpu", "operator": "Equal", "value": "present", "effect": "NoSchedule"}]}}}]}
    assert rows(render, kuberay={"placement": {"gpu": {"tolerations": []}}, "spec": ov})["trainer"][0] == OK


def test_a_selector_no_gpu_node_matches(render):
    mark, detail, remedy = rows(render, kuberay={"placement": {"gpu": {"nodeSelector": {"pool": "a100"}}}})["trainer"]
    assert mark == FAIL and f"none of the {N} GPU node(s) matches the fleet's nodeSelector {{'pool': 'a100'}}" in detail
    assert "kuberay.placement.trainer.nodeSelector" in remedy
    affinity = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchExpressions": [{"key": "nvidia.com/gpu.count", "operator": "Gt", "values": ["7"]}]}]}}}
    assert rows(render, kuberay={"placement": {"gpu": {"affinity": affinity}}})["inference"][0] == OK


def test_head_sent_to_the_gpu_pool_without_its_toleration_lands_nowhere(render):
    got = rows(render, kuberay={"placement": {"head": {"nodeSelector": {"nvidia.com/gpu.present": "true"}}}})
    assert got["head"][0] == WARN and got["head"][1] == f"no node takes it: taints {GPU_TAINT} ({N} node(s))"
    got = rows(render, kuberay={"placement": {"submitter": {"nodeSelector": {"pool": "none"}}}})
    assert got["submitter"][0] == WARN and "no node matches its nodeSelector {'pool': 'none'}" in got["submitter"][1]


def test_no_submitter_row_in_http_mode(render):
    assert "submitter" not in rows(render, launch={"submissionMode": "HTTPMode"})


@pytest.mark.parametrize("toleration, tolerated", [
    ({"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}, True),
    ({"key": "nvidia.com/gpu", "operator": "Exists"}, True),  # no effect: every effect
    ({"operator": "Exists"}, True),  # no key with Exists: every taint
    ({"key": "nvidia.com/gpu", "operator": "Equal", "value": "present"}, True),
    ({"key": "nvidia.com/gpu", "value": "present"}, True),  # operator defaults to Equal
    ({"key": "nvidia.com/gpu", "operator": "Equal", "value": "true"}, False),
    ({"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoExecute"}, False),
    ({"key": "nvidia.com/gpu.present", "operator": "Exists"}, False),
])
def test_tolerates_as_the_scheduler_does(toleration, tolerated):
    assert selectors.tolerates(toleration, nodes.GPU_TAINT) is tolerated


def test_recorded_cluster_gpu_node_tainted_as_a_cloud_pool(monkeypatch, tmp_path, render):
    """The recorded playground (one GPU node, tainted as a cloud GPU pool is): read_room keeps the nodes'
    labels and taints, and the default placement tolerates the taint."""
    from generator.render.pod_templates import pod_templates

    install(monkeypatch, tmp_path, "doctor_admin")
    room = capacity.read_room(Kube(), "small", "rec")
    assert room.taints == {"cpu-node-0": [], "gpu-node-0": [nodes.GPU_TAINT]}
    assert room.labels["gpu-node-0"]["nvidia.com/gpu.present"] == "true"
    got = {r.check: (r.mark, r.detail) for r in placement.placement_rows(room, pod_templates(render().docs))}
    assert got["placement: trainer"] == (OK, "can use 1 of 1 GPU node(s)")
    assert got["placement: head"] == (OK, "1 node(s) take it, 1 without GPUs")  # not the tainted GPU node


def test_nodes_not_listable(monkeypatch, tmp_path, render):
    from generator.render.pod_templates import pod_templates

    install(monkeypatch, tmp_path, "doctor_alice", namespace="rec")
    room = capacity.read_room(Kube(), "small", "rec")
    got = placement.placement_rows(room, pod_templates(render().docs))
    assert [(r.mark, r.check) for r in got] == [(WARN, f"placement: {role}")
                                                 for role in ("trainer", "inference", "head", "submitter")]
    assert "node taints and labels unknown" in got[0].detail
