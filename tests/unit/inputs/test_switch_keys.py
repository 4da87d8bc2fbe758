"""generator.inputs.switch_keys: a key another key switches off is refused, and only such a key.

The table is proven by rendering (the real helm): where a case holds, the key changes nothing; and every switch of
the models (a boolean or a choice) is walked against the keys of its own block, so that a key it silences and the
table misses fails here. Refused: by the infra spec's model (exit 2, naming both keys), the infra schema as an editor
applies it, the chart values' model and values.schema.json (Helm), and schema_check; a block switched off and
written with its defaults is accepted by all of them.
"""

from __future__ import annotations

import json
import subprocess
import typing
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import jsonschema
import pytest
from pydantic import ValidationError

from generator.cli import main
from generator.inputs import schema_check
from generator.inputs.mode_keys import MODES, USED_BY, entry_of
from generator.inputs.models import ChartValues, InfraSpec
from generator.inputs.switch_keys import SWITCHED, problems, schema_rules
from generator.pinned_tools import CHART_DIR, REPO, binary, versions
from tests.conftest import RECIPE, deep_merge, write
from tests.support.infra_keys import (
    INFRA_IMAGE,
    MODE_CONTEXT,
    REFUSED,
    chart_values,
    field_of,
    infra_leaves,
    nested,
    rendered,
    sample,
)

DEFAULTS = ChartValues.model_construct().model_dump(mode="json", by_alias=True)
INFRA_SCHEMA = json.loads((REPO / "schema" / "infra.schema.json").read_text())
VALUES_SCHEMA = json.loads((CHART_DIR / "values.schema.json").read_text())

# (key, switch, its value): the key renders nothing there, and is accepted on purpose: `restricted` turns it on
# itself, so a true there agrees with the profile (a false is its default).
REDUNDANT = {(f"{block}.{key}", f"{block}.profile", "restricted")
             for block in ("infra.security", "sandbox.security") for key in ("runAsNonRoot", "readOnlyRootFilesystem")}


def parts(key: str) -> tuple[str, ...]:
    return tuple(key.split("."))


def mode_of(key: str) -> str:
    """The first mode that uses `key` (each is walked in one)."""
    return next(m for m in MODES if m in USED_BY[entry_of(parts(key))][0])  # type: ignore[index]


def decided() -> list[tuple[str, str]]:
    """(leaf, entry) for every leaf an entry with cases decides."""
    out = []
    for key in infra_leaves():
        entry = max((e for e in SWITCHED if key == e or key.startswith(e + ".")), key=len, default=None)
        if entry is not None and SWITCHED[entry]:
            out.append((key, entry))
    return out


# what a switch's value needs besides (the models refuse it alone)
NEEDS = {("sandbox.autoscaling.enabled", True): {"sandbox.autoscaling.targetCPUUtilizationPercentage": 70}}


def off(case: Any) -> dict[str, Any]:
    """The switches of a case, each at its first value that turns the key off (with what it needs)."""
    out: dict[str, Any] = {}
    for key, values, _ in case[0]:
        out |= NEEDS.get((key, values[0]), {}) | {key: values[0]}
    return out


def flat_infra(key: str, case: Any, value: Any) -> dict[str, Any]:
    """An infra spec (flat keys) with `case`'s switches off and `key` set to `value`, in the first mode that uses
    it; with the keys its sample needs (its switches but the case's)."""
    mode = mode_of(key)
    _, context = sample(key)
    flat = {**INFRA_IMAGE, "launch.mode": mode, **MODE_CONTEXT[mode], **context, **off(case), key: value}
    return {k: v for k, v in flat.items() if v is not None}  # an unset switch is not written


def verdicts(flat: dict[str, Any]) -> dict[str, bool]:
    """Whether each accepts the infra spec: its model, the infra schema as written, schema_check, and the chart
    values made of it: their model, values.schema.json as Helm sees them (values.yaml's nulls in), schema_check."""
    doc = nested(flat)
    out = {"schema": jsonschema.Draft7Validator(INFRA_SCHEMA).is_valid(doc)}
    blocks = {k: v for k, v in doc.items() if k != "infra"} | {"infra": {k: v for k, v in doc["infra"].items()
                                                                          if k != "namespace"}}
    values = {"recipe": {"name": "grpo-swe"}, **blocks}
    for name, model, data in (("models", InfraSpec, doc), ("values models", ChartValues, values)):
        try:
            model.model_validate(data)
            out[name] = True
        except ValidationError:
            out[name] = False
    for name, which, data in (("schema_check", "infra", doc), ("values schema_check", "values", values)):
        try:
            schema_check.check(which, data)
            out[name] = True
        except schema_check.Refused:
            out[name] = False
    out["helm schema"] = jsonschema.Draft7Validator(VALUES_SCHEMA).is_valid(deep_merge(DEFAULTS, values))
    return out


def test_every_entry_and_switch_names_keys():
    keys = infra_leaves()
    named = set(SWITCHED) | {k for cases in SWITCHED.values() for case in cases for k, _, _ in case[0]}
    assert [e for e in named if not any(k == e or k.startswith(e + ".") for k in keys)] == []


def test_where_a_case_holds_the_key_renders_nothing():
    """Each switched leaf, its sample put in past the models with each case's switches off: the same manifests."""
    pairs = []
    for key, entry in decided():
        value, context = sample(key)
        mode = mode_of(key)
        base = chart_values(nested({**INFRA_IMAGE, "launch.mode": mode, **MODE_CONTEXT[mode]}))
        for case in SWITCHED[entry]:
            over = nested({**context, **off(case)})
            a = {"namespace": base["namespace"], "values": deep_merge(base["values"], over)}
            b = {"namespace": base["namespace"], "values": deep_merge(a["values"], nested({key: value}))}
            pairs.append((f"{key} with {off(case)}", a, b))
    with ThreadPoolExecutor(4) as pool:
        out = list(pool.map(lambda p: (p[0], rendered(p[1]), rendered(p[2])), pairs))
    assert [name for name, a, b in out if a != b and not b.startswith(REFUSED)] == []
    assert len(out) > 50 and all(not a.startswith(REFUSED) for _, a, _ in out)


def _switches() -> dict[str, list[Any]]:
    """Every switch of the models: a boolean or a choice (launch.mode is mode_keys')."""
    out = {}
    for key in infra_leaves():
        field = field_of(InfraSpec, parts(key))
        if isinstance(field.default, bool):
            out[key] = [True, False]
        elif typing.get_origin(field.annotation) is typing.Literal and key != "launch.mode":
            out[key] = list(typing.get_args(field.annotation))
    return out


def model_refusals(values: dict[str, Any]) -> list[tuple[str, ...]]:
    """The key paths the chart values' model refuses (by any of its rules: some refuse a switched-off key in their
    own words, e.g. kuberay.network.rdma under another profile)."""
    try:
        ChartValues.model_validate({**values, "recipe": {"name": "grpo-swe"}})
    except ValidationError as exc:
        return [tuple(map(str, e["loc"])) + tuple(map(str, (e.get("ctx") or {}).get("inside", ())))
                for e in exc.errors()]
    return []


def test_every_switch_silences_only_what_the_table_says():
    """The systematic walk: each switch at each of its values, each key of its block set to its sample. Where the
    key's change renders nothing, the table refuses it (or REDUNDANT says why not); where it renders, it does not."""
    keys, jobs = infra_leaves(), []
    for switch, choices in _switches().items():
        parent = switch.rsplit(".", 1)[0]
        for key in (k for k in keys if k.startswith(parent + ".") and k not in (switch, "infra.namespace")):
            value, context = sample(key)
            mode = mode_of(key)
            if mode not in USED_BY[entry_of(parts(switch))][0]:  # type: ignore[index]
                continue
            base = chart_values(nested({**INFRA_IMAGE, "launch.mode": mode, **MODE_CONTEXT[mode]}))
            for choice in choices:
                if switch not in context and choice == field_of(InfraSpec, parts(switch)).default:
                    continue  # the state test_mode_keys renders
                a = deep_merge(base["values"], nested({**context, switch: choice}))
                b = deep_merge(a, nested({key: value}))
                jobs.append((key, switch, choice, {"namespace": base["namespace"], "values": a},
                             {"namespace": base["namespace"], "values": b}))
    unique = {json.dumps(case, sort_keys=True): case for job in jobs for case in job[3:]}
    with ThreadPoolExecutor(4) as pool:
        out = dict(zip(unique, pool.map(rendered, unique.values()), strict=True))
    wrong, compared, excused = [], 0, set()
    for key, switch, choice, a, b in jobs:
        ra, rb = out[json.dumps(a, sort_keys=True)], out[json.dumps(b, sort_keys=True)]
        if ra.startswith(REFUSED) or rb.startswith(REFUSED):
            continue  # the chart refuses the state itself: nothing is silently ignored
        compared += 1
        found = [p for p, _, _ in problems(b["values"], DEFAULTS, mode_of(key))] + model_refusals(b["values"])
        said = [p for p in found if p[: len(parts(key))] == parts(key) or parts(key)[: len(p)] == p]
        if ra == rb and (key, switch, choice) in REDUNDANT:
            excused.add((key, switch, choice))
        silent = ra == rb and (key, switch, choice) not in REDUNDANT
        if silent != bool(said):
            wrong.append(f"{key} with {switch} {choice}: {'renders nothing' if ra == rb else 'renders'}, "
                         f"{'refused' if said else 'accepted'}")
    assert wrong == [], "\n".join(wrong)
    assert compared > 300, compared
    assert excused == REDUNDANT  # the walk finds a silent key the table leaves alone (each would fail without it)


@pytest.mark.parametrize("key, entry", decided(), ids=[k for k, _ in decided()])
def test_refused_everywhere_and_defaults_written_pass(key, entry):
    for case in SWITCHED[entry]:
        value, _ = sample(key)
        refused = verdicts(flat_infra(key, case, value))
        assert not any(refused.values()), (case, refused)
        named = problems(deep_merge(DEFAULTS, nested(flat_infra(key, case, value))), DEFAULTS, mode_of(key))
        assert any(".".join(p).startswith(key) for p, _, _ in named), named
        default = field_of(InfraSpec, parts(key)).get_default(call_default_factory=True)
        written = {**INFRA_IMAGE, "launch.mode": mode_of(key), **MODE_CONTEXT[mode_of(key)], **off(case)}
        if default is not None:  # (None: the key unset is its default, nothing to write)
            written[key] = json.loads(json.dumps(default, default=lambda m: m.model_dump(mode="json")))
        assert all(verdicts({k: v for k, v in written.items() if v is not None}).values()), (case, written)


def test_without_the_rules_the_schemas_accept_what_the_models_refuse():
    """Negative control: the infra schema less schema_rules accepts a switched-off key the models refuse."""
    rules = schema_rules(DEFAULTS)  # (the chart values' defaults: the same for every switched key)
    bare = {**INFRA_SCHEMA, "allOf": [rule for rule in INFRA_SCHEMA["allOf"] if rule not in rules]}
    assert len(bare["allOf"]) == len(INFRA_SCHEMA["allOf"]) - len(rules)
    flat = {**INFRA_IMAGE, "launch.submissionMode": "HTTPMode", "kuberay.placement.submitter.nodeSelector": {"a": "b"}}
    assert jsonschema.Draft7Validator(bare).is_valid(nested(flat))
    assert not jsonschema.Draft7Validator(INFRA_SCHEMA).is_valid(nested(flat))


def test_the_message_names_both_keys_with_the_line(tmp_path, capsys):
    body = ("infra:\n  image: {repository: ghcr.io/dockyard-rl/ubuntu-swe, tag: '2026.11'}\nlaunch:\n"
            "  submissionMode: HTTPMode\nkuberay:\n  placement:\n    submitter:\n      nodeSelector: {pool: a}\n")
    path = write(tmp_path, "http.infra.yaml", body)
    assert main(["values", str(RECIPE), str(path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(
        f"error: {path}:8: kuberay.placement.submitter.nodeSelector: kuberay.placement.submitter.nodeSelector does "
        "nothing with launch.submissionMode HTTPMode: KubeRay creates no submitter pod"), err
    assert "drop it, or launch.submissionMode: K8sJobMode" in err
    assert err.count("error:") == 1


def test_a_key_the_mode_ignores_is_named_once_in_the_modes_words(tmp_path, capsys):
    """bringup ignores the submitter whatever submissionMode says: one error, mode_keys'."""
    infra = nested({**INFRA_IMAGE, "launch.mode": "bringup", "launch.submissionMode": "HTTPMode",
                    "kuberay.placement.submitter.nodeSelector": {"a": "b"}})
    path = write(tmp_path, "bringup.infra.yaml", infra)
    assert main(["values", str(RECIPE), str(path)]) == 2
    err = capsys.readouterr().err
    assert err.count("error:") == 1 and "launch.mode bringup ignores kuberay.placement.submitter" in err, err


def test_helm_refuses_a_switched_off_key():
    """The values.schema.json twin, in Helm itself; the same values with the switch on pass."""
    def helm(over: dict[str, Any]) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [binary("helm"), "template", "grpo-swe", str(CHART_DIR), "--namespace", "dockyard", "--values", "-",
             "--kube-version", versions()["KUBERNETES_VERSION"]], input=json.dumps(over), capture_output=True,
            text=True)

    placed = {"kuberay": {"placement": {"submitter": {"nodeSelector": {"a": "b"}}}}}
    done = helm({**placed, "launch": {"submissionMode": "HTTPMode"}})
    assert done.returncode == 1 and "values don't meet the specifications of the schema" in done.stderr
    assert helm(placed).returncode == 0
    done = helm({"sandbox": {"networkPolicy": {"enabled": False, "allowEgress": False}}})
    assert done.returncode == 1 and "values don't meet the specifications of the schema" in done.stderr
    assert helm({"sandbox": {"networkPolicy": {"enabled": False}}}).returncode == 0
