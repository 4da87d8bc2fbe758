"""One source of truth: every generated schema and values.yaml match the models."""

from __future__ import annotations

import json

import jsonschema
import pytest
import yaml

from generator.inputs.models import ChartValues, InfraSpec
from generator.maint import schema_export
from generator.tools import CHART_DIR, REPO


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
