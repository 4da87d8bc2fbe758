"""Strict types in every model field: a YAML 1.1 boolean (`yes`, `on`) is not an
integer, an integer is not a boolean, a quoted number is not a number, and `.inf`/`.nan` are
refused anywhere in the infra spec (free-form overlays included) — exit 2 naming the key.

The fields are found by walking the models, so a field added later is covered too."""

from __future__ import annotations

import math
import typing
from typing import Any

import pytest
import yaml
from pydantic import BaseModel

from generator.cli import main
from generator.inputs.models import InfraSpec, Recipe
from generator.inputs.models.infra import WorkerGroupOverlay
from generator.inputs.models.placement import NodeSelectorRequirement, PreferredSchedulingTerm
from generator.inputs.models.scheduling import Toleration, TopologySpreadConstraint
from generator.inputs.models.types import model_in
from tests.conftest import EXAMPLES, RECIPE, write

INFRA = EXAMPLES / "grpo_swe.infra.yaml"
# The smallest valid item of a list of models, so a field inside one can be reached.
LIST_ITEM = {
    TopologySpreadConstraint: {"topologyKey": "kubernetes.io/hostname"},
    Toleration: {"key": "gpu", "operator": "Exists"},
    WorkerGroupOverlay: {"groupName": "trainer"},
    PreferredSchedulingTerm: {"weight": 1, "preference": {}},
    NodeSelectorRequirement: {"key": "a", "operator": "Exists"},
}


def _origin(annotation: Any) -> Any:
    """typing.get_origin, through `X | None` (an optional list of models is a list)."""
    args = [a for a in typing.get_args(annotation) if a is not type(None)]
    if typing.get_origin(annotation) is not None and type(annotation).__name__ == "UnionType" and len(args) == 1:
        return typing.get_origin(args[0])
    return typing.get_origin(annotation)


def _kinds(annotation: Any) -> set[str]:
    """The scalar kinds a field takes: int, bool, number (a Quantity: int | float | str)."""
    args = set(typing.get_args(annotation)) or {annotation}
    found = set()
    for arg in args:
        if typing.get_origin(arg) is typing.Annotated:
            found |= _kinds(typing.get_args(arg)[0])
        elif arg is bool:
            found.add("bool")
        elif arg is int:
            found.add("int")
        elif arg is float:
            found.add("number")
        elif typing.get_origin(arg) is typing.Union or type(arg).__name__ == "UnionType":
            found |= _kinds(arg)
    return {"number"} if "number" in found else found


def scalar_fields(model: type[BaseModel], path: tuple[Any, ...] = ()) -> list[tuple[tuple[Any, ...], str]]:
    """(key path, kind) of every int, bool and number field reachable from `model`."""
    out = []
    for name, field in model.model_fields.items():
        key = field.alias or name
        sub = model_in(field.annotation)
        origin = _origin(field.annotation)
        if sub is not None and origin is list:
            out += [((*path, key, 0, *rest), kind) for rest, kind in scalar_fields(sub)]
        elif sub is not None and origin is not dict:
            out += scalar_fields(sub, (*path, key))
        elif origin is dict:  # e.g. resourceQuota.hard: a value under some key
            out += [((*path, key, "pods"), kind) for kind in sorted(_kinds(typing.get_args(field.annotation)[1]))]
        else:
            out += [((*path, key), kind) for kind in sorted(_kinds(field.annotation))]
    return out


def with_value(data: dict[str, Any], path: tuple[Any, ...], value: Any,
               item_models: dict[tuple[Any, ...], type]) -> dict[str, Any]:
    data = yaml.safe_load(yaml.safe_dump(data))
    node: Any = data
    for i, part in enumerate(path[:-1]):
        nxt = path[i + 1]
        if isinstance(nxt, int):
            node = node.setdefault(part, [])
            if not node:
                node.append(dict(LIST_ITEM.get(item_models.get(path[: i + 1]), {})))
        elif isinstance(part, int):
            node = node[part]
        else:
            child = node.get(part)
            node[part] = child = child if isinstance(child, dict) else {}
            node = child
    node[path[-1]] = value
    return data


def _list_models(model: type[BaseModel], path: tuple[Any, ...] = ()) -> dict[tuple[Any, ...], type]:
    out = {}
    for name, field in model.model_fields.items():
        key = field.alias or name
        sub = model_in(field.annotation)
        if sub is None:
            continue
        if _origin(field.annotation) is list:
            out[(*path, key)] = sub
            out.update(_list_models(sub, (*path, key, 0)))
        elif _origin(field.annotation) is not dict:
            out.update(_list_models(sub, (*path, key)))
    return out


INFRA_FIELDS = scalar_fields(InfraSpec)
RECIPE_FIELDS = scalar_fields(Recipe)
BAD = {  # kind -> values that must be refused
    "int": [True, False, float("inf"), float("nan"), 2.0, "3"],
    "bool": [1, 0, "yes", "true"],
    "number": [True, float("inf"), float("-inf"), float("nan")],
}
CASES = [(target, path, kind, bad) for target, fields in (("infra", INFRA_FIELDS), ("recipe", RECIPE_FIELDS))
         for path, kind in fields for bad in BAD[kind]]


def dotted(path: tuple[Any, ...]) -> str:
    return ".".join(f"[{p}]" if isinstance(p, int) else str(p) for p in path).replace(".[", "[")


def test_the_walk_finds_the_fields_we_know():
    infra = {dotted(p): k for p, k in INFRA_FIELDS}
    recipe = {dotted(p): k for p, k in RECIPE_FIELDS}
    assert recipe == {"cluster.trainer.nodes": "int", "cluster.trainer.gpusPerNode": "int",
                      "cluster.inference.nodes": "int", "cluster.inference.gpusPerNode": "int"}
    for key, kind in [("sandbox.replicas", "int"), ("sandbox.port", "int"), ("launch.backoffLimit", "int"),
                      ("infra.security.runAsUser", "int"), ("sandbox.tolerations[0].tolerationSeconds", "int"),
                      ("sandbox.topologySpreadConstraints[0].maxSkew", "int"), ("kuberay.pdb.minAvailable", "int"),
                      ("sandbox.injectUrls", "bool"), ("sandbox.resources.cpu", "number"),
                      ("infra.limitRange.max.ephemeral-storage", "number"), ("kuberay.head.memory", "number"),
                      ("infra.resourceQuota.hard.pods", "number")]:
        assert infra.get(key) == kind, key
    assert len(CASES) > 250


def _show(value: Any) -> str:
    if isinstance(value, float) and not math.isfinite(value):
        return ".nan" if math.isnan(value) else (".inf" if value > 0 else "-.inf")
    return repr(value)


@pytest.mark.parametrize("target, path, kind, bad", CASES,
                         ids=[f"{t}:{dotted(p)}={_show(b)}" for t, p, _, b in CASES])
def test_every_typed_field_refuses_the_wrong_type(tmp_path, capsys, target, path, kind, bad):
    recipe, infra = RECIPE, INFRA
    if target == "infra":
        infra = write(tmp_path, "i.yaml",
                      with_value(yaml.safe_load(INFRA.read_text()), path, bad, _list_models(InfraSpec)))
    else:
        recipe = write(tmp_path, "r.yaml", with_value(yaml.safe_load(RECIPE.read_text()), path, bad, {}))
    code = main(["values", str(recipe), str(infra)])
    err = capsys.readouterr().err
    assert code == 2, err
    assert "Traceback" not in err
    assert f"{dotted(path)}: " in err, err
    if isinstance(bad, float) and not math.isfinite(bad):
        assert "not a finite number" in err or f"not {_show(bad)}" in err, err


@pytest.mark.parametrize("text, key, line", [
    ("nodes: yes", "cluster.trainer.nodes", 6),
    ("nodes: on", "cluster.trainer.nodes", 6),
    ("nodes: .inf", "cluster.trainer.nodes", 6),
    ("nodes: .NaN", "cluster.trainer.nodes", 6),
    ("nodes: '2'", "cluster.trainer.nodes", 6),
])
def test_yaml_spellings_in_the_recipe(tmp_path, capsys, text, key, line):
    recipe = write(tmp_path, "r.yaml", RECIPE.read_text().replace("trainer:   {nodes: 2,", f"trainer:   {{{text},"))
    code = main(["values", str(recipe), str(INFRA)])
    err = capsys.readouterr().err
    assert code == 2 and err.startswith(f"error: {recipe}:{line}: {key}: "), err


def test_messages_say_what_went_wrong(tmp_path, capsys):
    recipe = write(tmp_path, "r.yaml", RECIPE.read_text().replace("trainer:   {nodes: 2,", "trainer:   {nodes: yes,"))
    main(["values", str(recipe), str(INFRA)])
    err = capsys.readouterr().err
    assert "wrong type: True is a boolean (YAML reads yes/no, on/off, true/false as booleans)" in err
    main(["values", str(RECIPE), str(INFRA), "cluster.trainer.nodes=.inf"])
    assert "error: <command line>: cluster.trainer.nodes: .inf is not a finite number" in capsys.readouterr().err
    main(["values", str(RECIPE), str(INFRA), "cluster.trainer.nodes='4'"])
    assert "wrong type: '4' is a string" in capsys.readouterr().err


@pytest.mark.parametrize("key, value, where", [
    ("kuberay.spec", {"headGroupSpec": {"rayStartParams": {"num-cpus": float("inf")}}},
     "kuberay.spec.headGroupSpec.rayStartParams.num-cpus"),
    ("kuberay.spec", {"workerGroupSpecs": [{"groupName": "trainer", "template": {"x": [1, float("nan")]}}]},
     "kuberay.spec.workerGroupSpecs[0].template.x[1]"),
    ("kuberay.spec", {"enableInTreeAutoscaling": float("-inf")}, "kuberay.spec.enableInTreeAutoscaling"),
    ("sandbox.affinity", {"podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
        {"weight": float("inf"), "podAffinityTerm": {"topologyKey": "zone"}}]}},
     "sandbox.affinity.podAntiAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].weight"),
    ("sandbox.topologySpreadConstraints",
     [{"topologyKey": "zone", "labelSelector": {"matchLabels": {"a": float("nan")}}}],
     "sandbox.topologySpreadConstraints[0].labelSelector.matchLabels.a"),
])
def test_non_finite_numbers_in_free_form_blocks_are_refused_with_their_key_and_line(tmp_path, capsys, key, value,
                                                                                    where):
    data = yaml.safe_load(INFRA.read_text())
    *parents, last = key.split(".")
    node = data
    for p in parents:
        node = node.setdefault(p, {})
    node[last] = value
    infra = write(tmp_path, "i.yaml", data)
    code = main(["values", str(RECIPE), str(infra)])
    err = capsys.readouterr().err
    assert code == 2 and f"{where}: " in err and "is not a finite number" in err, err
    line = int(err.split(f"{infra}:")[1].split(":")[0])
    number_line = infra.read_text().splitlines()[line - 1]
    assert any(n in number_line for n in (".inf", ".nan")), (line, err)  # the line of the number


def test_opaque_recipe_keys_keep_their_values(tmp_path, capsys):
    """The launcher refuses nothing it does not read: the trainer's own `.inf` (e.g. no grad clipping)
    ships as written."""
    recipe = write(tmp_path, "r.yaml", RECIPE.read_text() + "optim:\n  max_grad_norm: .inf\n  flag: yes\n")
    assert main(["values", str(recipe), str(INFRA)]) == 0
    assert "max_grad_norm: .inf" in yaml.safe_load(capsys.readouterr().out)["recipe"]["config"]
