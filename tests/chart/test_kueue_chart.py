"""Kueue in the chart: launch.queue and launch.priorityClass label the queued object — the
RayJob (rayjob) or the RayCluster (bringup), never a pod template — and no RayJob or RayCluster the
chart renders holds a `suspend` key: Kueue's webhook sets it, and a helm upgrade must not flip it."""

from __future__ import annotations

from typing import Any

import pytest

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


def test_a_queued_bringup_cluster_may_outlive_a_job():
    """shutdownAfterJobFinishes is a RayJob's: Kueue's rule does not reach a bare RayCluster."""
    launch = {"mode": "bringup", "queue": "training", "shutdownAfterJobFinishes": False}
    out = render_values(chart_values(launch=launch))
    assert out.one("RayCluster")["metadata"]["labels"][QUEUE] == "training"


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
