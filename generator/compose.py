"""Recipe + infra spec -> validated chart values."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from generator.errors import InputError, Problem, from_validation
from generator.loader import Document, apply_overrides, load
from generator.models import ChartValues, InfraSpec, Recipe
from generator.models.recipe import MAX_RAYCLUSTER_NAME, MAX_RAYJOB_NAME


@dataclass
class Inputs:
    recipe: Recipe
    infra: InfraSpec
    recipe_doc: Document
    infra_doc: Document


def _validate(model: type, doc: Document) -> Any:
    try:
        return model.model_validate(doc.data)
    except ValidationError as exc:
        raise from_validation(exc, model, [((), doc)]) from None


def _near_misses(recipe: Recipe, doc: Document) -> list[Problem]:
    """The recipe's extra keys are opaque, but one a letter away from a launcher key is a typo."""
    import difflib

    known = list(Recipe.model_fields)
    out = []
    for key in recipe.model_extra or {}:
        close = difflib.get_close_matches(key, known, n=1, cutoff=0.8)
        if close and close[0] not in doc.data:
            out.append(Problem(doc.path, doc.line_of((key,)), key, f"unknown key {key!r} (the launcher reads {close[0]!r})",
                               "one of the launcher keys: " + ", ".join(known) + ", or a dockyard_rl section", close[0]))
    return out


def load_inputs(recipe_path: str | Path, infra_path: str | Path, overrides: list[str] | None = None) -> Inputs:
    """Parse and validate both files; every problem of both is reported at once."""
    problems: list[Problem] = []
    recipe = infra = None
    recipe_doc = infra_doc = None
    try:
        recipe_doc = load(recipe_path)
        apply_overrides(recipe_doc, overrides or [])
        recipe = _validate(Recipe, recipe_doc)
        problems += _near_misses(recipe, recipe_doc)
    except InputError as exc:
        problems += exc.problems
    try:
        infra_doc = load(infra_path)
        infra = _validate(InfraSpec, infra_doc)
    except InputError as exc:
        problems += exc.problems
    if problems:
        raise InputError(problems)
    assert recipe and infra and recipe_doc and infra_doc
    return Inputs(recipe, infra, recipe_doc, infra_doc)


def _recipe_text(doc: Document) -> str:
    """The recipe as shipped: the file unchanged, or re-serialised when overrides changed it."""
    if not doc.overridden:
        return Path(doc.path).read_text()
    return yaml.safe_dump(doc.data, sort_keys=False, allow_unicode=True)


def compose(inputs: Inputs) -> ChartValues:
    recipe, infra = inputs.recipe, inputs.infra
    limit = MAX_RAYJOB_NAME if infra.launch.mode == "rayjob" else MAX_RAYCLUSTER_NAME
    if len(recipe.name) > limit:
        doc = inputs.recipe_doc
        raise InputError([Problem(
            doc.path, doc.line_of(("name",)), "name",
            f"{recipe.name!r} has {len(recipe.name)} characters; KubeRay allows at most {limit} for a "
            f"{'RayJob' if limit == MAX_RAYJOB_NAME else 'RayCluster'}",
            f"a name of at most {limit} characters", recipe.name[:limit].rstrip("-"),
        )])
    infra_block = infra.infra.model_dump(exclude={"namespace"})
    return ChartValues.model_validate({
        "recipe": {
            "name": recipe.name,
            "entrypoint": recipe.entrypoint,
            "cluster": recipe.cluster.model_dump(),
            "config": _recipe_text(inputs.recipe_doc),
        },
        "infra": infra_block,
        "launch": infra.launch.model_dump(),
        "kuberay": infra.kuberay.model_dump(),
        "sandbox": infra.sandbox.model_dump(),
    })


def values_dict(values: ChartValues) -> dict[str, Any]:
    return values.model_dump(mode="json", by_alias=True, exclude_none=True)


class _HelmSafeDumper(yaml.SafeDumper):
    """Quotes strings that Helm's YAML 1.1 parser would read as booleans (y, n, …)."""


def _str(dumper: yaml.SafeDumper, value: str) -> yaml.Node:
    if value in ("y", "Y", "n", "N"):
        return dumper.represent_scalar("tag:yaml.org,2002:str", value, style="'")
    return dumper.represent_str(value)


_HelmSafeDumper.add_representer(str, _str)


def values_yaml(values: ChartValues) -> str:
    return yaml.dump(values_dict(values), Dumper=_HelmSafeDumper, sort_keys=False, allow_unicode=True, width=120)
