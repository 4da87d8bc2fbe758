"""status's pool and hpa lines (generator/live/state/pool.py) from the objects' JSON as the API serves them."""

from __future__ import annotations

from generator.live.state import pool


class _Kube:
    def __init__(self, items):
        self.items, self.paths = items, []

    def list(self, path, label_selector=None, field_selector=None):
        self.paths.append((path, label_selector))
        return self.items


HPA = {"metadata": {"name": "small-sandbox", "labels": {"app.kubernetes.io/component": "sandbox"}},
       "spec": {"minReplicas": 2, "maxReplicas": 10,
                "metrics": [{"type": "Resource", "resource": {"name": "cpu", "target": {
                    "type": "Utilization", "averageUtilization": 70}}},
                            {"type": "Resource", "resource": {"name": "memory", "target": {
                                "type": "Utilization", "averageUtilization": 80}}}]},
       "status": {"currentReplicas": 3, "desiredReplicas": 5,
                  "currentMetrics": [{"type": "Resource", "resource": {"name": "cpu", "current": {
                      "averageUtilization": 118, "averageValue": "118m"}}}],
                  "conditions": [{"type": "AbleToScale", "status": "True"},
                                 {"type": "ScalingActive", "status": "True"}]}}


def test_the_hpa_line_shows_replicas_bounds_and_each_metric_current_over_target():
    kube = _Kube([HPA])
    got = pool.read_hpa(kube, "ns", "small")
    assert kube.paths == [("/apis/autoscaling/v2/namespaces/ns/horizontalpodautoscalers",
                           "app.kubernetes.io/instance=small")]
    counts = {"desired": 5, "updated": 3, "ready": 3, "available": 2}
    assert pool.lines(counts, got) == [
        "pool       sandbox  desired 5  updated 3  ready 3  available 2",
        "hpa        small-sandbox  replicas 3 (wants 5, min 2, max 10)  cpu 118%/70%  memory <unknown>/80%"]


def test_an_hpa_that_cannot_scale_says_why_and_none_is_no_line():
    stuck = {**HPA, "status": {"currentReplicas": 2, "conditions": [
        {"type": "ScalingActive", "status": "False", "reason": "FailedGetResourceMetric",
         "message": "unable to get metrics for resource cpu"}]}}
    line = pool.lines(None, pool.read_hpa(_Kube([stuck]), "ns", "small"))[0]
    assert line.endswith("cpu <unknown>/70%  memory <unknown>/80%  — not scaling: FailedGetResourceMetric: "
                         "unable to get metrics for resource cpu"), line
    assert pool.read_hpa(_Kube([]), "ns", "small") is None and pool.lines(None, None) == []


def test_replicas_counts_a_deployment_with_no_status_yet_as_zero():
    assert pool.replicas({"spec": {"replicas": 4}}) == {"desired": 4, "updated": 0, "ready": 0, "available": 0}


def test_an_hpa_list_rbac_forbids_is_a_line_not_a_crash():
    from kubernetes.client.exceptions import ApiException

    class Forbidden(_Kube):
        def list(self, path, label_selector=None, field_selector=None):
            raise ApiException(status=403, reason="Forbidden")

    got = pool.read_hpa(Forbidden([]), "ns", "small")
    assert pool.lines(None, got) == ["hpa        not readable: RBAC forbids listing horizontalpodautoscalers here"]
    assert pool.renders_hpa([{"data": {"release": "not base64 gzip json"}}]) is False  # unreadable record: no read
