"""The happy path's validator (`generator.inputs.schema_check`, no pydantic) and the models accept and refuse
exactly the same inputs, and what it returns is the models' dump, key order included.

Inputs: generated from the committed schemas (most break a cross-field rule the generator does not
know, so both sides refuse them), the shipped examples, and mutations of both (a value replaced by
an awkward one, a key dropped, an unknown key or a field's alias added). Derandomized for CI."""

from __future__ import annotations

import copy
import datetime
import json
import math
import subprocess
import sys
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel, ValidationError

from generator.inputs import schema_check
from generator.inputs.compose import _compose_fast, _json_plain, compose, load_inputs, values_dict
from generator.inputs.models import ChartValues, InfraSpec, Recipe
from generator.inputs.models.types import model_in
from generator.inputs.reading import forget_inputs
from tests.conftest import INFRA_EXAMPLES, RECIPE
from tests.support.infra import infra_with_in

MODELS: dict[str, type[BaseModel]] = {"recipe": Recipe, "infra": InfraSpec, "values": ChartValues}
EXAMPLES = {
    "recipe": [yaml.safe_load(RECIPE.read_text())],
    "infra": [yaml.safe_load(p.read_text()) for p in INFRA_EXAMPLES],
    "values": [],
}
EXAMPLES["values"] = [values_dict(compose(load_inputs(RECIPE, p))) for p in INFRA_EXAMPLES[:3]]

# Values a mutation puts anywhere: wrong types, YAML's booleans and non-finite numbers, edge strings,
# the rules' trigger words, non-string keys, a date.
AWKWARD = [None, True, False, 0, 1, -1, 1.0, 0.5, 2**40, float("inf"), float("nan"), "", "x", "1", "1\n", "2Gi",
           "-1", "vllm", "sglang", "ghcr.io/a/sglang", "attach", "rayjob", "labels", "10.1.2.3/16", "10.0.0.0/8",
           "a" * 48, "a" * 60, [], ["x"], [None], {}, {"k": 1}, {"labels": "x"}, {"num-cpus": "1"}, {1: "x"},
           {"k": float("inf")}, datetime.date(2026, 1, 1), {"replicas": None}]


def _model(name: str, data: Any) -> tuple[bool, str]:
    try:
        dumped = MODELS[name].model_validate(data).model_dump(mode="json", by_alias=True, exclude_none=True)
    except ValidationError:
        return False, ""
    return True, repr(dumped)


def _fast(name: str, data: Any) -> tuple[bool, str]:
    try:
        return True, repr(schema_check.check(name, data))
    except schema_check.Refused:
        return False, ""


def _agree(name: str, data: Any) -> None:
    model, fast = _model(name, data), _fast(name, data)
    if not model[0] and not fast[0]:
        return
    if model[0] and fast[0] and not _json_native(data):
        return  # the models' JSON dump rewrites dates and .inf (compose leaves such values to the models)
    assert fast == model, f"{name}: {data!r}"


def _json_native(data: Any) -> bool:
    return _json_plain(data) and all(math.isfinite(v) for v in _leaves(data) if isinstance(v, float))


def _leaves(node: Any) -> list[Any]:
    if isinstance(node, dict):
        return [leaf for v in node.values() for leaf in _leaves(v)]
    if isinstance(node, list):
        return [leaf for v in node for leaf in _leaves(v)]
    return [node]


# Inputs generated from the schemas ----------------------------------------------------------------

_free = st.recursive(st.none() | st.booleans() | st.integers(-3, 3) | st.sampled_from(["a", "labels", "1"]),
                     lambda inner: st.lists(inner, max_size=2)
                     | st.dictionaries(st.sampled_from(["a", "b", "resources"]), inner, max_size=2),
                     max_leaves=4)


def _strategy(schema: dict[str, Any], defs: dict[str, Any]) -> st.SearchStrategy[Any]:
    if "$ref" in schema:
        name = schema["$ref"].rsplit("/", 1)[1]
        return st.deferred(lambda: _strategy(defs[name], defs))
    if "anyOf" in schema:
        return st.one_of([_strategy(b, defs) for b in schema["anyOf"]])
    if "enum" in schema:
        return st.sampled_from(schema["enum"])
    kind = schema.get("type")
    if kind == "string":
        s = st.from_regex(schema["pattern"], fullmatch=True) if "pattern" in schema else st.text(max_size=5)
        return s.filter(lambda v: schema.get("minLength", 0) <= len(v) <= schema.get("maxLength", 10**9))
    if kind == "integer":
        return st.integers(schema.get("minimum", -5), min(schema.get("maximum", 2000), schema.get("minimum", 0) + 2000))
    if kind == "number":
        return st.integers(0, 10) | st.floats(0, 10, allow_nan=False, allow_infinity=False)
    if kind == "boolean":
        return st.booleans()
    if kind == "null":
        return st.none()
    if kind == "array":
        return st.lists(_strategy(schema["items"], defs) if "items" in schema else _free, max_size=2)
    if kind == "object":
        props = schema.get("properties", {})
        extra = schema.get("additionalProperties", True)
        if not props:
            if isinstance(extra, dict):
                return st.dictionaries(st.sampled_from(["a", "b", "requests.cpu"]), _strategy(extra, defs), max_size=2)
            return st.dictionaries(st.sampled_from(["a", "rayStartParams", "resources", "replicas"]), _free, max_size=2)
        required = set(schema.get("required", ()))
        return st.fixed_dictionaries({k: _strategy(v, defs) for k, v in props.items() if k in required},
                                     optional={k: _strategy(v, defs) for k, v in props.items() if k not in required})
    return _free


@pytest.fixture(scope="module")
def strategies() -> dict[str, st.SearchStrategy[Any]]:
    out = {}
    for name in MODELS:
        root = json.loads(schema_check.SCHEMAS[name].read_text())
        out[name] = _strategy(root, root.get("definitions", {}))
    return out


def _paths(node: Any, where: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [where]
    if isinstance(node, dict):
        for k, v in node.items():
            out += _paths(v, where + (k,))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            out += _paths(v, where + (i,))
    return out


@st.composite
def mutated(draw: st.DrawFn, base: st.SearchStrategy[Any]) -> Any:
    data = json.loads(json.dumps(draw(base)))
    for _ in range(draw(st.integers(1, 3))):
        paths = _paths(data)
        where = draw(st.sampled_from(paths))
        if not where:
            continue
        *parents, last = where
        node = data
        for p in parents:
            node = node[p]
        how = draw(st.sampled_from(["replace", "drop", "unknown key", "alias"]))
        if how == "replace":
            node[last] = copy.deepcopy(draw(st.sampled_from(AWKWARD)))
        elif how == "drop" and isinstance(node, dict):
            del node[last]
        elif how == "unknown key" and isinstance(node, dict):
            value = copy.deepcopy(draw(st.sampled_from(AWKWARD)))  # drawn first, as before the key
            node[draw(st.sampled_from(["replcas", "x", "ephemeralStorage", "ephemeral-storage", True, 1]))] = value
        elif how == "alias" and isinstance(node, dict) and last == "ephemeral-storage":
            node["ephemeralStorage"] = node[last]
    return data


SETTINGS = settings(max_examples=250, deadline=None, database=None,  # derandomized: the profile (tests/conftest.py)
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much,
                                           HealthCheck.data_too_large])


@pytest.mark.parametrize("name", list(MODELS))
def test_generated_inputs_agree(name, strategies):
    @SETTINGS
    @given(data=strategies[name])
    def run(data: Any) -> None:
        _agree(name, data)

    run()


@pytest.mark.parametrize("name", list(MODELS))
def test_mutated_inputs_agree(name, strategies):
    bases = st.sampled_from(EXAMPLES[name]) if EXAMPLES[name] else strategies[name]

    @SETTINGS
    @given(data=mutated(bases | strategies[name]))
    def run(data: Any) -> None:
        _agree(name, data)

    run()


# Cases written out: each cross-field rule, the strict types, the dump -------------------------------

INFRA = EXAMPLES["infra"][0]


def _infra(path: str, value: Any) -> dict[str, Any]:
    return infra_with_in(INFRA, path, value)


CASES = [
    ("sandbox.replicas", True), ("sandbox.replicas", 2.0), ("sandbox.resources.cpu", "1\n"),
    ("sandbox.resources.cpu", float("inf")),
    ("sandbox.resources.cpu", -1), ("infra.image.tag", "v1\n"), ("infra.backend", "sglang"),
    ("sandbox.networkPolicy", {"allowEgress": False, "allowedEgressCidrs": ["10.1.2.3/16"]}),
    ("sandbox.networkPolicy", {"allowedEgressCidrs": ["10.0.0.0/8"]}),
    ("launch", {"mode": "attach"}), ("launch", {"mode": "attach", "clusterName": ""}),
    ("infra.resourceQuota", {"enabled": True}), ("infra.resourceQuota", {"enabled": True, "hard": {"pods": 3}}),
    ("infra.limitRange", {"enabled": True, "max": {"ephemeralStorage": "1Gi"}}),
    ("infra.limitRange", {"enabled": True, "max": {"ephemeralStorage": "1Gi", "ephemeral-storage": "1Gi"}}),
    ("kuberay.spec", {"headGroupSpec": {"rayStartParams": {"labels": "x"}}}),
    ("kuberay.spec", {"headGroupSpec": {"rayStartParams": 5}}),
    ("kuberay.spec", {"headGroupSpec": {"rayStartParams": {"num-cpus": "1"}, "resources": {"a": 1}}}),
    ("kuberay.spec", {"workerGroupSpecs": [{"groupName": "trainer", "replicas": None}]}),
    ("kuberay.spec", {"workerGroupSpecs": [{"groupName": "trainer"}, {"groupName": "trainer"}]}),
    ("kuberay.spec", {"workerGroupSpecs": [{"groupName": "trainer", "x": float("nan")}]}),
    ("kuberay.spec", {"workerGroupSpecs": [{"groupName": "trainer", "x": None, "y": {"z": None}}]}),
    ("sandbox.affinity", {"a": None, 1: 2}), ("sandbox.affinity", {"a": [None, {"b": None}]}),
    ("sandbox.nodeSelector", {"a": None}), ("sandbox.topologySpreadConstraints", [{"topologyKey": "k"}]),
    # what the chart refuses, refused by both first
    ("kuberay.spec", {"headGroupSpec": {"rayStartParams": {"resources": "x"}}}),
    ("kuberay.spec", {"headGroupSpec": {"rayStartParams": {"resources": '{"a": 1}'}}}),
    ("kuberay.spec", {"headGroupSpec": {"rayStartParams": {"resources": '{"a": -1}'}}}),
    ("kuberay.spec", {"headGroupSpec": {"rayStartParams": {"resources": ""}}}),
    ("kuberay.spec", {"workerGroupSpecs": [{"groupName": "trainer", "rayStartParams": {"resources": {"a": 1}}}]}),
    ("kuberay.spec", {"workerGroupSpecs": [{"groupName": "trainer", "template": {"spec": {"volumes": "v"}}}]}),
    ("kuberay.spec", {"headGroupSpec": {"template": {"spec": {"containers": [{"resources": {"requests": 1}}]}}}}),
    ("kuberay.spec", {"headGroupSpec": {"template": {"spec": {"containers": [{"name": "x", "resources": 1}]}}}}),
    ("sandbox.nodeSelector", {"<<": "a"}), ("sandbox.nodeSelector", {"a": "b\x85"}),
    ("sandbox.podAnnotations", {"a\u2028": "b"}), ("launch.configMountPath", "/x\x7f"),
    # the sandbox pool's cross-field rules: each side of each
    ("sandbox.autoscaling", {"minReplicas": 5, "maxReplicas": 3}), ("sandbox.autoscaling", {"minReplicas": 3}),
    ("sandbox.autoscaling", {"enabled": True, "targetCPUUtilizationPercentage": None}),
    ("sandbox.autoscaling", {"enabled": True, "targetCPUUtilizationPercentage": None,
                             "targetMemoryUtilizationPercentage": 80}),
    ("sandbox.autoscaling", {"enabled": False, "targetCPUUtilizationPercentage": None}),
    ("sandbox.autoscaling", {"enabled": True, "minReplicas": 1}), ("sandbox.autoscaling", {"enabled": True}),
    ("sandbox.pdb", {"enabled": False}), ("sandbox.rollingUpdate", {"maxSurge": 0}),
    ("sandbox.rollingUpdate", {"maxSurge": "00%", "maxUnavailable": "0%"}),
    ("sandbox.rollingUpdate", {"maxSurge": 0, "maxUnavailable": 1}), ("sandbox.rollingUpdate", {"maxSurge": "1"}),
    ("sandbox.rollingUpdate", {"maxUnavailable": "0%"}), ("sandbox.rollingUpdate", {"maxSurge": True}),
    ("sandbox.preStopSleepSeconds", 300), ("sandbox.preStopSleepSeconds", 299), ("sandbox.preStopSleepSeconds", None),
    ("sandbox.preStopSleepSeconds", 0), ("sandbox.terminationGracePeriodSeconds", 5),
    ("sandbox.autoscaling", {"enabled": True, "targetCPUUtilizationPercentage": 1}),
    # the API's rules beyond a keyword (generator.inputs.api_rules): each side of each
    ("sandbox.podAnnotations", {"a": "x" * (256 * 1024 - 1)}), ("sandbox.podAnnotations", {"a": "x" * (256 * 1024)}),
    ("sandbox.podAnnotations", {"Example.COM/a": "x"}), ("sandbox.podAnnotations", {"a b": "x"}),
    ("sandbox.podLabels", {"a" * 253 + "/b": "x"}), ("sandbox.podLabels", {"a" * 254 + "/b": "x"}),
    ("sandbox.resources", {"cpu": "2", "cpuLimit": "1999m"}), ("sandbox.resources", {"cpu": "2", "cpuLimit": "2000m"}),
    ("sandbox.resources", {"memory": "1Gi", "memoryLimit": 1073741823}),
    ("sandbox.resources", {"ephemeralStorage": "1e3", "ephemeralStorageLimit": "1k"}),
    ("sandbox.topologySpreadConstraints", [{"topologyKey": "a"}, {"topologyKey": "a"}]),
    ("sandbox.topologySpreadConstraints", [{"topologyKey": "a"}, {"topologyKey": "a",
                                                                  "whenUnsatisfiable": "DoNotSchedule"}]),
    ("sandbox.topologySpreadConstraints", [{"topologyKey": "a", "minDomains": 1}]),
    ("sandbox.topologySpreadConstraints",
     [{"topologyKey": "a", "minDomains": 1, "whenUnsatisfiable": "DoNotSchedule"}]),
    ("infra.resourceQuota", {"enabled": True, "hard": {"pods": "1.5"}}),
    ("infra.resourceQuota", {"enabled": True, "hard": {"pods": "1.5k", "nvidia.com/gpu": 2}}),
    ("infra.resourceQuota", {"enabled": True, "hard": {"requests.nvidia.com/gpu": 0.5}}),
    ("infra.resourceQuota", {"enabled": True, "hard": {"example.com/x": 0.5}}),
    ("infra.resourceQuota", {"enabled": True, "hard": {"gpus": 1}}),
    ("infra.limitRange", {"min": {"cpu": "2"}, "max": {"cpu": "1"}}),
    ("infra.limitRange", {"default": {"ephemeral-storage": "2Gi"}, "defaultRequest": {"ephemeral-storage": "3Gi"}}),
    ("infra.limitRange", {"default": {"memory": "2Gi"}, "defaultRequest": {"memory": "2Gi"}, "max": {"memory": "2Gi"}}),
    ("sandbox.rollingUpdate", {"maxUnavailable": "100%"}), ("sandbox.rollingUpdate", {"maxUnavailable": "0101%"}),
    ("sandbox.rollingUpdate", {"maxSurge": "250%"}),
    ("sandbox.extraEnv", [{"name": "A", "valueFrom": {"fieldRef": {"fieldPath": "metadata.labels['a/b']"}}}]),
    ("sandbox.extraEnv", [{"name": "A", "valueFrom": {"fieldRef": None, "secretKeyRef": {"name": "s", "key": "k"}}}]),
]


@pytest.mark.parametrize("path, value", CASES, ids=[f"{p}={v!r}"[:60] for p, v in CASES])
def test_written_cases_agree(path, value):
    _agree("infra", _infra(path, value))


def test_the_recipe_keeps_what_the_models_keep():
    for data in ({"name": "a", "entrypoint": "x", "opaque": float("inf"), "env": {"a": float("nan")}},
                 {"name": "a", "entrypoint": "x", True: 1}, {"name": "a", "entrypoint": "x", "env": {1: 2}},
                 {"name": "a\n", "entrypoint": "x"}, {"name": "a", "entrypoint": ""}):
        _agree("recipe", data)


def test_every_keyword_of_the_schemas_is_known():
    for path in schema_check.SCHEMAS.values():
        assert schema_check.keywords(json.loads(path.read_text())) <= schema_check.KEYWORDS, path


def _aliases(model: type[BaseModel], seen: set[type[BaseModel]]) -> dict[str, str]:
    out: dict[str, str] = {}
    if model in seen:
        return out
    seen.add(model)
    for name, field in model.model_fields.items():
        if field.alias and field.alias != name:
            out[field.alias] = name
        sub = model_in(field.annotation)
        if sub is not None:
            out |= _aliases(sub, seen)
    return out


def test_aliases_are_the_models_aliases():
    found: dict[str, str] = {}
    for model in MODELS.values():
        found |= _aliases(model, set())
    assert found == schema_check.ALIASES


@pytest.mark.parametrize("infra", INFRA_EXAMPLES, ids=lambda p: p.name)
@pytest.mark.parametrize("overrides", [[], ["cluster.trainer.nodes=3", "grpo.x=on", "name=abc"]])
def test_composed_values_are_the_models_values(infra, overrides):
    forget_inputs()
    fast = _compose_fast(RECIPE, infra, overrides)
    inputs = load_inputs(RECIPE, infra, overrides)
    values = compose(inputs)
    assert fast is not None
    assert json.dumps(fast.values) == json.dumps(values_dict(values))
    assert (fast.release, fast.namespace, fast.mode) == (values.recipe.name, inputs.infra.infra.namespace,
                                                         values.launch.mode)


def test_free_form_dates_go_to_the_models(tmp_path):
    infra = tmp_path / "i.yaml"
    infra.write_text(INFRA_EXAMPLES[0].read_text() + "\n")
    data = yaml.safe_load(infra.read_text())
    data["kuberay"]["spec"] = {"headGroupSpec": {"since": datetime.date(2026, 1, 1)}}  # the free-form overlay
    infra.write_text(yaml.safe_dump(data))
    forget_inputs()
    assert _compose_fast(RECIPE, infra, []) is None  # the models write the date as a string
    assert values_dict(compose(load_inputs(RECIPE, infra)))["kuberay"]["spec"]["headGroupSpec"] == {
        "since": "2026-01-01"}


def test_non_finite_is_a_number_only_in_the_recipe():
    assert not math.isfinite(schema_check.check("recipe", {"name": "a", "entrypoint": "x", "o": float("inf")})["o"])
    with pytest.raises(schema_check.Refused):
        schema_check.check("infra", _infra("kuberay.spec", {"headGroupSpec": {"a": float("inf")}}))


NO_PYDANTIC = """
import sys
from generator.cli import main
code = main(sys.argv[1:])
sys.stdout.flush()
heavy = ("pydantic", "importlib.metadata", "dataclasses", "typing", "tempfile", "gzip", "generator.live.cli",
         "generator.playground.cli")
print("imported: " + " ".join(m for m in heavy if m in sys.modules), file=sys.stderr)
sys.exit(code)
"""


@pytest.mark.parametrize("verb", ["values", "render", "check"])
def test_the_happy_path_never_imports_pydantic(verb):
    """Nor what costs milliseconds at start-up for nothing: importlib.metadata (~40 ms, for one
    version string), dataclasses (inspect, ast: ~7 ms), typing (~3 ms), tempfile, gzip, the other
    command groups."""
    proc = subprocess.run([sys.executable, "-c", NO_PYDANTIC, verb, str(RECIPE), str(INFRA_EXAMPLES[0]),
                           "cluster.trainer.nodes=2"],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr.strip().endswith("imported:")


def test_a_refusal_imports_the_models_to_explain(tmp_path):
    proc = subprocess.run([sys.executable, "-c", NO_PYDANTIC, "values", str(RECIPE), str(INFRA_EXAMPLES[0]),
                           "cluster.trainer.nodes=0"],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2
    assert "cluster.trainer.nodes: 0 is out of range" in proc.stderr and "imported: pydantic" in proc.stderr
