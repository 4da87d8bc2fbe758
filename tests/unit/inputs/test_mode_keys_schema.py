"""generator.inputs.mode_keys in the infra spec's own JSON Schema (schema/infra.schema.json, `infra_schema_rules`):
over the whole table, every key in every mode, an editor validating the file as written refuses exactly what the
generator refuses (`file_problems`), and so do the models and the happy path's validator (schema_check). Without the
rules, the schema accepts what the generator refuses (the negative control)."""

from __future__ import annotations

import json
from typing import Any

import jsonschema
import pytest
from pydantic import ValidationError

from generator.cli import main
from generator.inputs import schema_check
from generator.inputs.mode_keys import MODES, USED_BY, entry_of, file_problems, infra_schema_rules
from generator.inputs.models import InfraSpec
from generator.pinned_tools import REPO
from tests.conftest import RECIPE, write
from tests.support.infra_keys import INFRA_IMAGE, MODE_CONTEXT, infra_leaves, nested, sample

SCHEMA = json.loads((REPO / "schema" / "infra.schema.json").read_text())


def _uses(mode: str, key: str) -> bool:
    return mode in USED_BY[entry_of(tuple(key.split(".")))][0]  # type: ignore[index]


def minimal(key: str, mode: str, written: bool = True) -> dict[str, Any]:
    """An infra spec of `mode` setting `key` to its sample (with the keys it needs that `mode` uses, or that its own
    entry decides); `written`: launch.mode in the file (else left out: rayjob)."""
    value, context = sample(key) if key != "launch.mode" else (mode, {})
    entry = entry_of(tuple(key.split(".")))
    context = {k: v for k, v in context.items() if _uses(mode, k) or entry_of(tuple(k.split("."))) == entry}
    flat = {**INFRA_IMAGE, **({"launch.mode": mode} if written else {}), **MODE_CONTEXT[mode], **context, key: value}
    return nested(flat)


def verdicts(doc: dict[str, Any], schema: dict[str, Any]) -> dict[str, bool]:
    """Whether each accepts `doc`: the generator's file check, the schema as an editor applies it, the models and
    schema_check."""
    mode = doc.get("launch", {}).get("mode", "rayjob")
    try:
        InfraSpec.model_validate(doc)
        models = True
    except ValidationError:
        models = False
    try:
        schema_check.check("infra", doc)
        fast = True
    except schema_check.Refused:
        fast = False
    return {"file_problems": not file_problems(doc, mode), "schema": jsonschema.Draft7Validator(schema).is_valid(doc),
            "models": models, "schema_check": fast}


def cases() -> list[tuple[str, str, bool, dict[str, Any]]]:
    """(key, mode, used, infra spec) for every key in every mode, and rayjob's again with launch.mode left out."""
    out = []
    for key in infra_leaves():
        for mode in MODES:
            out.append((key, mode, _uses(mode, key), minimal(key, mode)))
        if key != "launch.mode":
            out.append((key, "rayjob (unwritten)", _uses("rayjob", key), minimal(key, "rayjob", written=False)))
    return out


def disagreements(schema: dict[str, Any]) -> list[str]:
    """The cases where the schema, the models or schema_check say otherwise than the table."""
    bad = []
    for key, mode, used, doc in cases():
        said = verdicts(doc, schema)
        if set(said.values()) != {used}:
            bad.append(f"{key} in {mode}: {'used' if used else 'ignored'}, but {said}")
    return bad


def test_the_infra_schema_refuses_what_the_generator_refuses_over_the_whole_table():
    assert disagreements(SCHEMA) == []


def test_without_the_rules_the_schema_accepts_what_the_generator_refuses():
    """Negative control: the committed schema less infra_schema_rules disagrees, where only the mode refuses."""
    rules = infra_schema_rules()
    bare = {**SCHEMA, "allOf": [rule for rule in SCHEMA["allOf"] if rule not in rules]}
    assert len(bare["allOf"]) == len(SCHEMA["allOf"]) - len(rules) and rules
    bad = disagreements(bare)
    assert any(line.startswith("infra.storage.logs in attach: ignored") for line in bad)
    assert any(line.startswith("kuberay.pdb.minAvailable in rayjob (unwritten): ignored") for line in bad)
    assert all("'schema': True" in line and ": ignored," in line for line in bad)


@pytest.mark.parametrize("doc, ok", [
    ({"launch": {"mode": "attach", "clusterName": "c"}, "infra": {"storage": {}}}, False),  # its default, written
    ({"launch": {"mode": "bringup"}, "infra": {"storage": {}}}, True),
    ({"kuberay": {"pdb": {"enabled": False}}}, False),  # no launch.mode: rayjob
    ({"launch": {}, "kuberay": {"pdb": {}}}, False),
    ({"launch": {"mode": "bringup"}, "kuberay": {"pdb": {}}}, True),
    ({"launch": {"backoffLimit": 0}}, True),
])
def test_a_key_written_at_all_is_judged_as_written(doc, ok):
    """The rule looks at the file as written (schema_check too, which otherwise fills defaults in first)."""
    doc = {**doc, "infra": {"image": INFRA_IMAGE["infra.image"], **doc.get("infra", {})}}
    assert verdicts(doc, SCHEMA) == dict.fromkeys(("file_problems", "schema", "models", "schema_check"), ok)


def test_the_user_sees_one_error_per_key(tmp_path, capsys):
    """`check` of an attach infra spec with infra.storage: one error, the mode's, though both the infra schema (the
    happy path) and the models refuse it."""
    infra = nested({**INFRA_IMAGE, "infra.namespace": "dockyard", "launch.mode": "attach", "launch.clusterName": "c",
                    "infra.storage.logs": {"size": "1Gi"}, "launch.backoffLimit": 1})
    path = write(tmp_path, "attach.infra.yaml", infra)
    assert main(["check", str(RECIPE), str(path)]) == 2
    err = capsys.readouterr().err
    errors = [line for line in err.splitlines() if line.startswith("error:")]
    assert len(errors) == 2, err
    assert "attach.infra.yaml:" in errors[0] and "infra.storage: launch.mode attach ignores infra.storage" in errors[0]
    assert "launch.backoffLimit: launch.mode attach ignores launch.backoffLimit" in errors[1]
    assert err.count("infra.storage") == 3  # the key, the message, the expected line: nothing else names it
