"""One source of truth: every generated schema and values.yaml match the models."""

from __future__ import annotations

import json

import jsonschema
import pytest
import yaml
from pydantic import ValidationError

from generator.inputs.models import ChartValues, InfraSpec
from generator.maint import schema_export
from generator.pinned_tools import CHART_DIR, REPO


@pytest.mark.parametrize("path", list(schema_export.outputs()), ids=lambda p: str(p.relative_to(REPO)))
def test_committed_file_is_current(path):
    expected = schema_export.outputs()[path]
    assert path.exists(), f"{path} is missing: run `make schema`"
    assert path.read_text() == expected, f"{path.relative_to(REPO)} is stale: run `make schema`"


def _walk(node, where=""):
    if isinstance(node, dict):
        yield where, node
        for key, value in node.items():
            yield from _walk(value, f"{where}/{key}")
    elif isinstance(node, list):
        for i, value in enumerate(node):
            yield from _walk(value, f"{where}/{i}")


@pytest.mark.parametrize("name", ["values", "recipe", "infra"])
def test_schema_is_draft07_with_descriptions(name):
    path = CHART_DIR / "values.schema.json" if name == "values" else REPO / "schema" / f"{name}.schema.json"
    schema = json.loads(path.read_text())
    assert schema["$schema"] == "http://json-schema.org/draft-07/schema#"
    jsonschema.Draft7Validator.check_schema(schema)
    assert "$defs" not in json.dumps(schema)
    for where, node in _walk(schema):
        props = node.get("properties")
        if not isinstance(props, dict) or where.endswith("/properties"):
            continue
        if any(part in ("if", "then", "not", "allOf", "anyOf") for part in where.split("/")):
            continue  # conditional constraints, not field declarations
        for prop, sub in props.items():
            target = sub
            if "$ref" in sub and not sub.get("description"):
                target = schema["definitions"][sub["$ref"].rsplit("/", 1)[1]]
            assert target.get("description"), f"{name}: {where}/properties/{prop} has no description"


def test_models_forbid_unknown_keys_in_the_schema():
    schema = json.loads((CHART_DIR / "values.schema.json").read_text())
    free_form = {"RayClusterSpecOverlay", "WorkerGroupOverlay"}
    for name, definition in schema["definitions"].items():
        if name in free_form:
            continue
        assert definition.get("additionalProperties") is False, name
    assert schema["additionalProperties"] is False


def test_values_yaml_equals_model_defaults_and_passes_the_schema():
    values = yaml.safe_load((CHART_DIR / "values.yaml").read_text())
    assert values == ChartValues().model_dump(mode="json", by_alias=True)
    schema = json.loads((CHART_DIR / "values.schema.json").read_text())
    jsonschema.Draft7Validator(schema).validate(values)


def test_schema_has_patterns_for_quantities_cidrs_and_names():
    text = (REPO / "schema" / "infra.schema.json").read_text()
    from generator.inputs.models import types as t

    for pattern in (t.QUANTITY_RE, t.CIDR_RE, t.DNS1123_LABEL_RE, t.DNS1123_SUBDOMAIN_RE):
        assert json.dumps(pattern) in text


def test_infra_schema_validates_the_examples():
    schema = json.loads((REPO / "schema" / "infra.schema.json").read_text())
    for path in (REPO / "values-examples").glob("*.infra.yaml"):
        jsonschema.Draft7Validator(schema).validate(yaml.safe_load(path.read_text()))
        InfraSpec.model_validate(yaml.safe_load(path.read_text()))


# Kueue's rules: the JSON Schema twins refuse what the models refuse, in an infra spec as
# written (no defaults filled: what an editor checks), in the fast path and in the chart values.
_IMAGE = {"repository": "ghcr.io/dockyard-rl/ubuntu-swe", "tag": "vllm"}
KUEUE_INFRA = [
    ("queued rayjob", {"launch": {"queue": "training", "priorityClass": "high"}}, True),
    ("queued, mode left to its default", {"launch": {"queue": "training", "ttlSecondsAfterFinished": 60}}, True),
    ("queued bringup", {"launch": {"mode": "bringup", "queue": "training"}}, True),
    ("queued, autoscaling off", {"launch": {"queue": "q"}, "kuberay": {"spec": {"enableInTreeAutoscaling": False}}},
     True),
    ("autoscaling without a queue", {"kuberay": {"spec": {"enableInTreeAutoscaling": True}}}, True),
    ("unqueued rayjob keeping its cluster", {"launch": {"shutdownAfterJobFinishes": False}}, True),
    ("queued rayjob keeping its cluster",
     {"launch": {"mode": "rayjob", "queue": "q", "shutdownAfterJobFinishes": False}}, False),
    ("queued, mode left out, keeping its cluster", {"launch": {"queue": "q", "shutdownAfterJobFinishes": False}},
     False),
    ("queued attach", {"launch": {"mode": "attach", "clusterName": "c", "queue": "q"}}, False),
    ("queued with autoscaling", {"launch": {"queue": "q"}, "kuberay": {"spec": {"enableInTreeAutoscaling": True}}},
     False),
    ("queued bringup with autoscaling",
     {"launch": {"mode": "bringup", "queue": "q"}, "kuberay": {"spec": {"enableInTreeAutoscaling": True}}}, False),
    ("priority class alone", {"launch": {"priorityClass": "high"}}, False),
    ("suspend", {"kuberay": {"spec": {"suspend": False}}}, False),
    ("queue of 64 characters", {"launch": {"queue": "q" * 64}}, False),
    ("queue of 63, with dots", {"launch": {"queue": "team-a." + "q" * 56}}, True),
]


@pytest.mark.parametrize("over, ok", [c[1:] for c in KUEUE_INFRA], ids=[c[0] for c in KUEUE_INFRA])
def test_kueue_rules_twins_agree(over, ok):
    from generator.inputs import schema_check

    infra = {"infra": {"image": _IMAGE}, **over}
    try:
        InfraSpec.model_validate(infra)
        models = True
    except ValidationError:
        models = False
    schema = json.loads((REPO / "schema" / "infra.schema.json").read_text())
    written = jsonschema.Draft7Validator(schema).is_valid(infra)
    try:
        schema_check.check("infra", infra)
        fast = True
    except schema_check.Refused:
        fast = False
    assert (models, written, fast) == (ok, ok, ok)
    values = {key: over[key] for key in ("launch", "kuberay") if key in over}
    chart = json.loads((CHART_DIR / "values.schema.json").read_text())
    full = {**ChartValues().model_dump(mode="json", by_alias=True), "recipe": {"name": "grpo-swe"}}
    for key, value in values.items():
        full[key] = {**full[key], **value}
    assert jsonschema.Draft7Validator(chart).is_valid(full) is ok  # values.yaml's nulls in, as Helm sees them
