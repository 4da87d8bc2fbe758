"""The fabric's overlay rule: what a trainer or inference overlay may not set (kuberay.network owns it), refused
alike by the models and by their fast path (schema_check), with the path inside the group."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from generator.inputs import schema_check
from generator.inputs.fabric_rules import FABRIC_ENV, fabric_overlay_problem
from generator.inputs.models import InfraSpec
from tests.support.infra import GOOD_INFRA

CASES = [
    ({"template": {"spec": {"hostNetwork": False}}}, ("template", "spec", "hostNetwork")),
    ({"template": {"metadata": {"annotations": {"k8s.v1.cni.cncf.io/networks": "ib"}}}},
     ("template", "metadata", "annotations", "k8s.v1.cni.cncf.io/networks")),
    ({"template": {"metadata": {"labels": {"dockyard.dev/host-network": "true"}}}},
     ("template", "metadata", "labels", "dockyard.dev/host-network")),
    *[({"template": {"spec": {"containers": [{"name": "log"}, {"name": "ray-worker", "env": [
        {"name": "A", "value": "1"}, {"name": name, "value": "x"}]}]}}},
       ("template", "spec", "containers", 1, "env", 1, "name")) for name in FABRIC_ENV],
]
ALLOWED = [
    {},
    {"template": {"spec": {"dnsPolicy": "Default", "containers": [{"name": "ray-worker", "env": [
        {"name": "NCCL_DEBUG", "value": "INFO"}]}]}}},
    {"template": {"metadata": {"annotations": {"other": "x"}}}},
]


def _infra(group: dict) -> dict:
    return {**GOOD_INFRA, "kuberay": {"spec": {"workerGroupSpecs": [{"groupName": "inference", **group}]}}}


@pytest.mark.parametrize("group, where", CASES)
def test_each_fabric_field_in_an_overlay_is_refused_by_both_validators(group, where):
    found = fabric_overlay_problem(group)
    assert found is not None and found[0] == where and "kuberay.network owns it" in found[1]
    with pytest.raises(schema_check.Refused):
        schema_check.check("infra", _infra(group))
    with pytest.raises(ValidationError, match="kuberay.network owns it"):
        InfraSpec.model_validate(_infra(group))


@pytest.mark.parametrize("group", ALLOWED)
def test_other_overlay_fields_and_env_pass_both(group):
    assert fabric_overlay_problem(group) is None
    schema_check.check("infra", _infra(group))
    InfraSpec.model_validate(_infra(group))


def test_the_head_may_use_the_host_network():
    """The head carries no NCCL traffic: the fabric does not own its pod fields."""
    head = {**GOOD_INFRA, "kuberay": {"spec": {"headGroupSpec": {"template": {"spec": {"hostNetwork": True}}}}}}
    schema_check.check("infra", head)
    InfraSpec.model_validate(head)
