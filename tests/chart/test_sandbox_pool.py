"""The sandbox pool's scaling and zero-downtime knobs: the HPA, the rolling update, the
grace period, the preStop pause and the readiness probe, each with its default and set."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from tests.conftest import Rendered


def _executor(out: Rendered) -> dict[str, Any]:
    return out.one("Deployment")["spec"]["template"]["spec"]["containers"][0]


def test_defaults_keep_every_replica_serving_through_a_rollout(render):
    out = render()
    spec = out.one("Deployment")["spec"]
    assert spec["replicas"] == 2
    assert spec["strategy"] == {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": "25%", "maxUnavailable": 0}}
    assert spec["minReadySeconds"] == 5
    assert spec["template"]["spec"]["terminationGracePeriodSeconds"] == 300
    ex = _executor(out)
    assert ex["lifecycle"] == {"preStop": {"sleep": {"seconds": 5}}}
    assert ex["readinessProbe"] == {"httpGet": {"path": "/health", "port": "http"}, "periodSeconds": 5,
                                    "failureThreshold": 2}
    assert ex["livenessProbe"]["tcpSocket"] == {"port": "http"}  # a draining executor is not restarted
    assert out.all("HorizontalPodAutoscaler") == []


def test_rollout_and_shutdown_knobs_are_rendered_as_set(render):
    out = render(sandbox={"rollingUpdate": {"maxSurge": 3, "maxUnavailable": "10%"}, "minReadySeconds": 0,
                          "terminationGracePeriodSeconds": 1800, "preStopSleepSeconds": 0})
    spec = out.one("Deployment")["spec"]
    assert spec["strategy"]["rollingUpdate"] == {"maxSurge": 3, "maxUnavailable": "10%"}
    assert spec["minReadySeconds"] == 0
    assert spec["template"]["spec"]["terminationGracePeriodSeconds"] == 1800
    assert _executor(out)["lifecycle"] == {"preStop": {"sleep": {"seconds": 0}}}  # zero is a value: no pause


def test_readiness_probe_path_and_tcp_choice(render):
    http = _executor(render(sandbox={"port": 8080, "readinessProbe": {"path": "/ready", "periodSeconds": 2,
                                                                       "failureThreshold": 1}}))
    assert http["readinessProbe"] == {"httpGet": {"path": "/ready", "port": "http"}, "periodSeconds": 2,
                                      "failureThreshold": 1}
    assert http["ports"][0] == {"name": "http", "containerPort": 8080, "protocol": "TCP"}
    tcp = _executor(render(sandbox={"readinessProbe": {"type": "tcp"}}))
    assert tcp["readinessProbe"] == {"tcpSocket": {"port": "http"}, "periodSeconds": 5, "failureThreshold": 2}


def test_hpa_owns_the_replica_count(render):
    """With autoscaling on, the Deployment renders no replicas: a helm upgrade never resets the HPA's count (and
    sandbox.replicas, which would do nothing then, is refused: generator.inputs.switch_keys)."""
    hpa_on = {"enabled": True, "minReplicas": 3, "maxReplicas": 40, "targetCPUUtilizationPercentage": 70}
    out = render(sandbox={"autoscaling": hpa_on})
    assert "replicas" not in out.one("Deployment")["spec"]
    with pytest.raises(ValidationError, match="sandbox.replicas does nothing with sandbox.autoscaling.enabled true"):
        render(sandbox={"replicas": 7, "autoscaling": hpa_on})
    hpa = out.one("HorizontalPodAutoscaler")
    assert hpa["apiVersion"] == "autoscaling/v2"
    assert hpa["metadata"]["name"] == "grpo-swe-sandbox" and hpa["metadata"]["namespace"] == "dockyard"
    assert hpa["metadata"]["labels"]["app.kubernetes.io/component"] == "sandbox"
    assert hpa["spec"] == {
        "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "grpo-swe-sandbox"},
        "minReplicas": 3, "maxReplicas": 40,
        "metrics": [{"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization",
                                                                                  "averageUtilization": 70}}}],
    }


def test_hpa_memory_target_and_behavior(render):
    behavior = {"scaleDown": {"stabilizationWindowSeconds": 60, "policies": [{"type": "Pods", "value": 1,
                                                                              "periodSeconds": 30}]}}
    hpa = render(sandbox={"autoscaling": {"enabled": True, "targetMemoryUtilizationPercentage": 85,
                                          "behavior": behavior}}
                 ).one("HorizontalPodAutoscaler")["spec"]
    assert hpa["metrics"] == [{"type": "Resource", "resource": {"name": "memory", "target": {
        "type": "Utilization", "averageUtilization": 85}}}]
    assert hpa["behavior"] == behavior


def test_pdb_with_the_hpa_counts_from_the_current_scale(render):
    """maxUnavailable (not a fixed minAvailable) follows the HPA's scale; below minReplicas it keeps one serving."""
    out = render(sandbox={"autoscaling": {"enabled": True, "minReplicas": 2, "targetCPUUtilizationPercentage": 60}})
    pdb = out.one("PodDisruptionBudget")["spec"]
    assert pdb["maxUnavailable"] == 1 and "minAvailable" not in pdb
    pod_labels = out.one("Deployment")["spec"]["template"]["metadata"]["labels"]
    assert pdb["selector"]["matchLabels"].items() <= pod_labels.items()
