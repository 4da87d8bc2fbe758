"""Helm itself (values.schema.json) refuses what the models refuse."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from generator.errors import CheckFailed
from generator.inputs.models import ChartValues
from tests.conftest import chart_values, deep_merge, render_values

BAD = [
    ("unknown key", {"sandbox": {"replcas": 3}}, "replcas"),
    ("negative replicas", {"sandbox": {"replicas": -1}}, "replicas"),
    ("bad quantity", {"sandbox": {"resources": {"cpu": "lots"}}}, "cpu"),
    ("bad cidr", {"sandbox": {"networkPolicy": {"allowEgress": False, "allowedEgressCidrs": ["10.0.0.0/40"]}}},
     "allowedEgressCidrs"),
    ("cidrs with open egress", {"sandbox": {"networkPolicy": {"allowedEgressCidrs": ["10.0.0.0/8"]}}},
     "allowedEgressCidrs"),
    ("unknown mode", {"launch": {"mode": "ray"}}, "mode"),
    ("attach without cluster", {"launch": {"mode": "attach"}}, "clusterName"),
    ("backend contradicts image", {"infra": {"backend": "sglang", "image": {"tag": "2026-vllm"}}}, "image"),
    ("rayjob name too long", {"recipe": {"name": "a" * 48}}, "name"),
    ("bad group name", {"kuberay": {"spec": {"workerGroupSpecs": [{"groupName": "critic"}]}}}, "groupName"),
    ("bad port", {"sandbox": {"port": 0}}, "port"),
    ("bad profile", {"sandbox": {"security": {"profile": "strict"}}}, "profile"),
    ("quota enabled without limits", {"infra": {"resourceQuota": {"enabled": True, "hard": {}}}}, "hard"),
    ("root under restricted", {"sandbox": {"security": {"profile": "restricted", "runAsUser": 0}}}, "runAsUser"),
    ("root under runAsNonRoot", {"infra": {"security": {"runAsNonRoot": True, "runAsUser": 0}}}, "runAsUser"),
    # Kueue (issue 20): its names, its admission rules, suspend left to it
    ("queue not a Kueue name", {"launch": {"queue": "Training_Q"}}, "queue"),
    ("queue longer than a label value", {"launch": {"queue": "q" * 64}}, "queue"),
    ("priority class without a queue", {"launch": {"priorityClass": "high"}}, "queue"),
    ("queue in attach mode", {"launch": {"mode": "attach", "clusterName": "shared", "queue": "training"}}, "mode"),
    ("queued rayjob keeps its cluster", {"launch": {"queue": "training", "shutdownAfterJobFinishes": False}},
     "shutdownAfterJobFinishes"),
    ("queued with in-tree autoscaling",
     {"launch": {"queue": "training"}, "kuberay": {"spec": {"enableInTreeAutoscaling": True}}},
     "enableInTreeAutoscaling"),
    ("suspend in the overlay", {"kuberay": {"spec": {"suspend": False}}}, "/kuberay/spec"),
]


@pytest.mark.parametrize("case, over, key", BAD, ids=[b[0] for b in BAD])
def test_helm_and_models_refuse_the_same_values(case, over, key):
    base = chart_values()
    values = deep_merge(base, over)
    with pytest.raises(ValidationError):
        ChartValues.model_validate(values)
    with pytest.raises(CheckFailed) as err:
        render_values(values)
    assert "values don't meet the specifications of the schema" in str(err.value)
    assert key in str(err.value)


def test_helm_accepts_the_composed_defaults():
    assert render_values(chart_values()).all("Deployment")


def test_sglang_image_with_sglang_backend_is_fine():
    values = chart_values(infra={"backend": "sglang", "image": {"tag": "2026-sglang"}})
    assert render_values(values).all("RayJob")
