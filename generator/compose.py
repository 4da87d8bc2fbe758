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


def load_inputs(recipe_path: str | Path, infra_path: str | Path, overrides: list[str] | None = None) -> Inputs:
    """Parse and validate both files; every problem of both is reported at once."""
    problems: list[Problem] = []
    recipe = infra = None
    recipe_doc = infra_doc = None
    try:
        recipe_doc = load(recipe_path)
        apply_overrides(recipe_doc, overrides or [])
        recipe = _validate(Recipe, recipe_doc)
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


def values_yaml(values: ChartValues) -> str:
    return yaml.safe_dump(values_dict(values), sort_keys=False, allow_unicode=True, width=120)
