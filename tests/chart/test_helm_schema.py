"""Helm itself (values.schema.json) refuses what the models refuse."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from generator.errors import CheckFailed
from generator.inputs.models import ChartValues
from tests.conftest import chart_values, deep_merge, render_values
from tests.support.helm import BAD


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


# What no JSON Schema keyword can say (a sum, a comparison of quantities, a pair in a list): the models refuse
# it, and so does the happy path's validator (generator.inputs.schema_check, through generator.inputs.api_rules);
# Helm's schema cannot, and the apiserver refuses it at install (`check` names it, exit 1).
BEYOND_THE_SCHEMA = [
    ("annotations over 256 KiB", {"sandbox": {"podAnnotations": {"a": "x" * (256 * 1024)}}}),
    ("cpu limit below the request", {"sandbox": {"resources": {"cpu": "2", "cpuLimit": "1"}}}),
    ("spread constraint twice", {"sandbox": {"topologySpreadConstraints": [{"topologyKey": "zone"},
                                                                           {"topologyKey": "zone"}]}}),
    ("quota count not whole", {"infra": {"resourceQuota": {"enabled": True, "hard": {"pods": "1.5"}}}}),
    ("limitRange default above max", {"infra": {"limitRange": {"default": {"cpu": "4"}, "max": {"cpu": "2"}}}}),
    ("cpu divisor 3", {"sandbox": {"extraEnv": [{"name": "CPUS", "valueFrom": {
        "resourceFieldRef": {"resource": "limits.cpu", "divisor": "3"}}}]}}),
    ("memory divisor 1m", {"sandbox": {"extraEnv": [{"name": "MEM", "valueFrom": {
        "resourceFieldRef": {"resource": "requests.memory", "divisor": "1m"}}}]}}),
]


@pytest.mark.parametrize("ref", [{"resource": "limits.cpu", "divisor": "1000m"}, {"resource": "limits.cpu"},
                                 {"resource": "requests.memory", "divisor": "1Mi"},
                                 {"resource": "limits.ephemeral-storage", "divisor": "1000"}])
def test_divisors_the_api_takes_pass(ref):
    """The control for the divisor rows: a divisor equal to one the API lists (1000m is 1) passes both checks."""
    from generator.inputs import schema_check

    env = [{"name": "R", "valueFrom": {"resourceFieldRef": ref}}]
    values = deep_merge(chart_values(), {"sandbox": {"extraEnv": env}})
    ChartValues.model_validate(values)
    schema_check.check("values", values)


@pytest.mark.parametrize("case, over", BEYOND_THE_SCHEMA, ids=[b[0] for b in BEYOND_THE_SCHEMA])
def test_rules_beyond_the_schema_are_refused_by_the_models_and_the_happy_path(case, over):
    from generator.inputs import schema_check

    values = deep_merge(chart_values(), over)
    with pytest.raises(ValidationError):
        ChartValues.model_validate(values)
    with pytest.raises(schema_check.Refused):
        schema_check.check("values", values)
