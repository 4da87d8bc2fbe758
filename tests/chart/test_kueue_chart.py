"""Kueue in the chart: launch.queue and launch.priorityClass label the queued object — the
RayJob (rayjob) or the RayCluster (bringup), never a pod template — and no RayJob or RayCluster the
chart renders holds a `suspend` key: Kueue's webhook sets it, and a helm upgrade must not flip it."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from tests.conftest import chart_values, deep_merge, render_values

QUEUE = "kueue.x-k8s.io/queue-name"
PRIORITY = "kueue.x-k8s.io/priority-class"
KIND = {"rayjob": "RayJob", "bringup": "RayCluster"}


def _keys(node: Any, where: str = "") -> list[str]:
    """Every mapping key inside `node`, as a path."""
    if isinstance(node, dict):
        return [p for k, v in node.items() for p in [f"{where}.{k}", *_keys(v, f"{where}.{k}")]]
    if isinstance(node, list):
        return [p for i, v in enumerate(node) for p in _keys(v, f"{where}[{i}]")]
    return []


def _pod_template_labels(obj: dict[str, Any]) -> list[dict[str, str]]:
    spec = obj["spec"]
    cluster = spec.get("rayClusterSpec", spec)
    templates = [cluster["headGroupSpec"]["template"], *(g["template"] for g in cluster["workerGroupSpecs"])]
    if "submitterPodTemplate" in spec:
        templates.append(spec["submitterPodTemplate"])
    return [t.get("metadata", {}).get("labels", {}) for t in templates]


@pytest.mark.parametrize("mode", ["rayjob", "bringup"])
def test_queue_and_priority_label_the_queued_object_not_its_pods(mode):
    out = render_values(chart_values(launch={"mode": mode, "queue": "training", "priorityClass": "high"}))
    obj = out.one(KIND[mode])
    labels = obj["metadata"]["labels"]
    assert (labels[QUEUE], labels[PRIORITY]) == ("training", "high")
    assert labels["app.kubernetes.io/component"] == "ray"  # the chart's own labels stay
    templates = _pod_template_labels(obj)
    assert len(templates) == (4 if mode == "rayjob" else 3)  # head, trainer, inference (+ the submitter)
    for pod_labels in templates:
        assert not [k for k in pod_labels if k.startswith("kueue.x-k8s.io/")], pod_labels
    others = [d for d in out.docs if d is not obj]
    assert not any("kueue.x-k8s.io/" in str(d) for d in others)  # the sandbox pool is not queued


def test_queue_without_priority_class_renders_the_queue_label_alone():
    labels = render_values(chart_values(launch={"queue": "team-a.training"})).one("RayJob")["metadata"]["labels"]
    assert labels[QUEUE] == "team-a.training" and PRIORITY not in labels


@pytest.mark.parametrize("mode", ["rayjob", "bringup"])
def test_no_queue_no_kueue_label(mode):
    out = render_values(chart_values(launch={"mode": mode}))
    assert "kueue.x-k8s.io" not in out.text


def test_a_queued_bringup_cluster_is_not_held_to_a_rayjobs_shutdown():
    """shutdownAfterJobFinishes is a RayJob's: Kueue's rule on it does not reach a bare RayCluster, and bringup
    refuses the key as one it ignores (generator.inputs.mode_keys)."""
    out = render_values(chart_values(launch={"mode": "bringup", "queue": "training"}))
    assert out.one("RayCluster")["metadata"]["labels"][QUEUE] == "training"
    with pytest.raises(ValidationError, match="launch.mode bringup ignores launch.shutdownAfterJobFinishes"):
        chart_values(launch={"mode": "bringup", "queue": "training", "shutdownAfterJobFinishes": False})


@pytest.mark.parametrize("queue", [None, "training"], ids=["no queue", "queued"])
@pytest.mark.parametrize("mode", ["rayjob", "bringup"])
def test_no_rayjob_or_raycluster_has_a_suspend_key(mode, queue):
    out = render_values(chart_values(launch={"mode": mode, "queue": queue}))
    obj = out.one(KIND[mode])
    assert not [p for p in _keys(obj) if p.endswith(".suspend")], obj


def test_a_null_suspend_from_plain_helm_values_is_not_rendered():
    """values.yaml and -f files keep their nulls: kuberay.spec.suspend: null passes the schema, and the
    chart leaves it out (Helm 4's server-side apply would otherwise own the field)."""
    for mode in KIND:
        values = deep_merge(chart_values(launch={"mode": mode, "queue": "training"}),
                            {"kuberay": {"spec": {"suspend": None}}})
        obj = render_values(values).one(KIND[mode])
        assert not [p for p in _keys(obj) if p.endswith(".suspend")], obj


# launch.topology: Kueue's Topology Aware Scheduling annotations on exactly the trainer and inference templates.
TOPOLOGY_KEYS = ("kueue.x-k8s.io/podset-required-topology", "kueue.x-k8s.io/podset-preferred-topology",
                 "kueue.x-k8s.io/podset-group-name")


def _annotations(obj: dict[str, Any]) -> dict[str, dict[str, str]]:
    """Each pod template's annotations by role (head, trainer, inference, submitter)."""
    spec = obj["spec"]
    cluster = spec.get("rayClusterSpec", spec)
    out = {"head": cluster["headGroupSpec"]["template"]}
    out.update({g["groupName"]: g["template"] for g in cluster["workerGroupSpecs"]})
    if "submitterPodTemplate" in spec:
        out["submitter"] = spec["submitterPodTemplate"]
    return {role: t.get("metadata", {}).get("annotations", {}) for role, t in out.items()}


@pytest.mark.parametrize("groups", ["each", "together"])
@pytest.mark.parametrize("placement", ["required", "preferred"])
@pytest.mark.parametrize("mode", ["rayjob", "bringup"])
def test_topology_annotates_exactly_the_trainer_and_inference_templates(mode, placement, groups):
    topology = {"level": "cloud.provider.com/topology-rack", "mode": placement, "groups": groups}
    out = render_values(chart_values(launch={"mode": mode, "queue": "training", "topology": topology}))
    by_role = _annotations(out.one(KIND[mode]))
    level_key = f"kueue.x-k8s.io/podset-{placement}-topology"
    for fleet in ("trainer", "inference"):
        expected = {level_key: "cloud.provider.com/topology-rack"}
        if groups == "together":
            expected["kueue.x-k8s.io/podset-group-name"] = "gpu-fleets"  # the same group on both: one domain
        assert {k: v for k, v in by_role[fleet].items() if k in TOPOLOGY_KEYS} == expected, by_role
    # the head and the submitter are not placed (no weight sync; Kueue's PodSet group holds two pod sets)
    assert set(by_role) == ({"head", "trainer", "inference"} | ({"submitter"} if mode == "rayjob" else set()))
    for role in set(by_role) - {"trainer", "inference"}:
        assert not [k for k in by_role[role] if k.startswith("kueue.x-k8s.io/")], (role, by_role[role])
    # nothing else carries them: the queue label stays on the object, the sandbox pool is not placed
    assert out.text.count(level_key) == 2


def test_topology_keeps_the_overlays_own_annotations_and_without_it_the_overlay_places_itself():
    overlay = {"workerGroupSpecs": [{"groupName": "trainer", "template": {"metadata": {"annotations": {
        "team": "rl", "kueue.x-k8s.io/podset-preferred-topology": "example.com/block"}}}}]}
    plain = _annotations(render_values(chart_values(launch={"queue": "training"}, kuberay={"spec": overlay}))
                         .one("RayJob"))
    assert plain["trainer"] == {"team": "rl", "kueue.x-k8s.io/podset-preferred-topology": "example.com/block"}
    assert plain["inference"] == {}
    overlay["workerGroupSpecs"][0]["template"]["metadata"]["annotations"] = {"team": "rl"}
    placed = _annotations(render_values(chart_values(
        launch={"queue": "training", "topology": {"level": "example.com/rack"}}, kuberay={"spec": overlay}))
        .one("RayJob"))
    assert placed["trainer"] == {"team": "rl", "kueue.x-k8s.io/podset-required-topology": "example.com/rack"}
    assert placed["inference"] == {"kueue.x-k8s.io/podset-required-topology": "example.com/rack"}


def test_the_chart_places_the_fleets_as_the_generator_says():
    """The chart's annotations are generator/inputs/topology_rules.py's, for every choice."""
    from generator.inputs import topology_rules

    for topology in ({"level": "a.io/rack"}, {"level": "a.io/rack", "mode": "preferred", "groups": "together"}):
        full = {"mode": "required", "groups": "each", **topology}
        by_role = _annotations(render_values(chart_values(launch={"queue": "q", "topology": topology}))
                               .one("RayJob"))
        assert by_role["trainer"] == by_role["inference"] == topology_rules.pod_annotations(full)
