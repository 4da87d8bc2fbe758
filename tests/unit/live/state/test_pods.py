"""One pod as the reading verbs see it (generator/live/state/pods.py): its fleet by the chart's label first, then
KubeRay's; its GPUs; whether it is ready; why not, in one line. The recorded pods'
reasons are test_snapshot.py's, beside this file."""

from __future__ import annotations

from generator.live.state.pods import container_gpus, fleet_of, pod_gpus, pod_ready, pod_reason


def _pod(labels=None, status=None, deleting=False, containers=()):
    meta = {"name": "p", "labels": labels or {}}
    if deleting:
        meta["deletionTimestamp"] = "2026-12-05T10:00:00Z"
    return {"metadata": meta, "spec": {"containers": list(containers)}, "status": status}


def test_the_fleet_is_the_charts_label_then_kuberays():
    assert fleet_of(_pod({"dockyard.dev/fleet": "sandbox", "ray.io/group": "trainer"})) == "sandbox"
    assert fleet_of(_pod({"ray.io/node-type": "head", "ray.io/group": "headgroup"})) == "head"
    assert fleet_of(_pod({"ray.io/group": "inference"})) == "inference"
    assert fleet_of(_pod({"dockyard.dev/fleet": "critic", "ray.io/group": "critic"})) is None  # no fleet of ours
    assert fleet_of(_pod()) is None


def test_gpus_are_the_requests_or_the_limits_summed_over_containers():
    gpu = {"resources": {"limits": {"nvidia.com/gpu": "4"}}}
    assert container_gpus(gpu) == 4
    assert pod_gpus({"containers": [gpu, {"resources": {"requests": {"nvidia.com/gpu": 2}}}, {}]}) == 6
    assert pod_gpus(None) == 0


def test_ready_needs_running_the_ready_condition_and_no_deletion():
    ready = {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]}
    assert pod_ready(_pod(status=ready))
    assert not pod_ready(_pod(status=ready, deleting=True))
    assert not pod_ready(_pod(status={**ready, "phase": "Pending"}))
    assert not pod_ready(_pod(status={"phase": "Running", "conditions": [{"type": "Ready", "status": "False"}]}))


def test_the_reason_is_the_schedulers_words_then_a_waiting_container_then_the_phase():
    unschedulable = {"phase": "Pending", "conditions": [{
        "type": "PodScheduled", "status": "False", "reason": "Unschedulable",
        "message": "0/3 nodes are available: 3 Insufficient nvidia.com/gpu. preemption: 0/3 nodes are available"}]}
    said = "Unschedulable: 0/3 nodes are available: 3 Insufficient nvidia.com/gpu."  # the preemption part cut
    assert pod_reason(_pod(status=unschedulable)) == said
    waiting = {"phase": "Pending", "containerStatuses": [
        {"state": {"waiting": {"reason": "ImagePullBackOff", "message": "Back-off pulling image \"x\""}}}]}
    assert pod_reason(_pod(status=waiting)) == 'ImagePullBackOff: Back-off pulling image "x"'
    assert pod_reason(_pod(status={"phase": "Pending", "containerStatuses": [
        {"state": {"waiting": {"reason": "ContainerCreating"}}}]})) == "ContainerCreating"
    assert pod_reason(_pod(status={"phase": "Succeeded"})) == "Succeeded"
    assert pod_reason(_pod(status=None)) == "Unknown"
    assert pod_reason(_pod(status=unschedulable, deleting=True)) == "Terminating"
