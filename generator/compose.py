"""Recipe + infra spec -> validated chart values.

pydantic and the models are imported inside the functions that validate, so `guess_values` (the
model-free composition `check` starts helm with) can run before they are loaded.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from generator.errors import InputError, Problem, from_validation
from generator.loader import Document, apply_overrides, load
from generator.tools import CHART_DIR

if TYPE_CHECKING:
    from generator.models import ChartValues, InfraSpec, Recipe


@dataclass
class Inputs:
    recipe: Recipe
    infra: InfraSpec
    recipe_doc: Document
    infra_doc: Document


def _validate(model: type, doc: Document) -> Any:
    from pydantic import ValidationError

    try:
        return model.model_validate(doc.data)
    except ValidationError as exc:
        raise from_validation(exc, model, [((), doc)]) from None


def _near_misses(recipe: Recipe, doc: Document) -> list[Problem]:
    """The recipe's extra keys are opaque, but one a letter away from a launcher key is a typo."""
    import difflib

    from generator.models import Recipe

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
    from generator.models import InfraSpec, Recipe

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
    """The recipe as shipped: the text read (once: it may have been a pipe), or re-serialised when
    overrides changed it."""
    if not doc.overridden:
        return doc.text
    return yaml.safe_dump(doc.data, sort_keys=False, allow_unicode=True)


def compose(inputs: Inputs) -> ChartValues:
    from generator.models import ChartValues
    from generator.models.recipe import MAX_RAYCLUSTER_NAME, MAX_RAYJOB_NAME

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


def image_reference(image: dict[str, Any] | None, fallback: dict[str, Any] | None = None) -> str:
    """The reference a pod runs, `repository@digest` else `repository:tag`; the chart's
    `dockyard.image` helper applies the same rule. An image that sets any of repository, tag or
    digest is its own reference (its repository defaults to the fallback's, its tag to `latest`);
    only an image that sets none of them takes the fallback's reference, whole: a tag or digest is
    never mixed with another image's."""
    own, fb = image or {}, fallback or {}
    if not any(own.get(k) for k in ("repository", "tag", "digest")):
        own = fb
    repository = own.get("repository") or fb.get("repository")
    if own.get("digest"):
        return f"{repository}@{own['digest']}"
    return f"{repository}:{own.get('tag') or 'latest'}"


def sandbox_image(values: dict[str, Any]) -> str:
    """The sandbox executors' image reference in chart values (`values_dict` form)."""
    return image_reference(values.get("sandbox", {}).get("image"), values.get("infra", {}).get("image"))


def values_dict(values: ChartValues) -> dict[str, Any]:
    return values.model_dump(mode="json", by_alias=True, exclude_none=True)


# A guess at the values without the models ---------------------------------------------------------

@cache
def _chart_defaults() -> dict[str, Any]:
    """The chart's values.yaml: generated from the models' defaults by `make schema`."""
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    return yaml.load((CHART_DIR / "values.yaml").read_text(), Loader=loader)


def _merge(base: Any, over: Any) -> Any:
    if isinstance(base, dict) and isinstance(over, dict):
        return {**base, **{k: _merge(base[k], v) if k in base else v for k, v in over.items()}}
    return over


def _prune(node: Any) -> Any:
    if isinstance(node, dict):
        return {k: _prune(v) for k, v in node.items() if v is not None}
    if isinstance(node, list):
        return [_prune(v) for v in node]
    return node


def guess_values(recipe_path: str | Path, infra_path: str | Path,
                 overrides: list[str] | None = None) -> tuple[dict[str, Any], str, str] | None:
    """What `values_dict(compose(load_inputs(...)))`, the release and the namespace most likely are,
    without pydantic: the raw input sections merged over the chart's defaults. Only a guess (the
    models add defaults inside lists, normalise, derive): `check` renders it speculatively while the
    models load, and uses that rendering only when the validated values turn out byte-identical.
    None when the inputs are not plain enough to guess from (the validating path reports why)."""
    try:
        recipe_doc, infra_doc = load(recipe_path), load(infra_path)
        apply_overrides(recipe_doc, overrides or [])
        recipe, infra, defaults = recipe_doc.data, infra_doc.data, _chart_defaults()
        infra_block = dict(infra.get("infra") or {})
        name, namespace = recipe.get("name"), infra_block.pop("namespace", None)
        if not isinstance(name, str) or not isinstance(namespace, str):
            return None
        values = {
            "recipe": {
                "name": name,
                "entrypoint": recipe.get("entrypoint", defaults["recipe"]["entrypoint"]),
                "cluster": _merge(defaults["recipe"]["cluster"], recipe.get("cluster") or {}),
                "config": _recipe_text(recipe_doc),
            },
            "infra": _merge(defaults["infra"], infra_block),
            **{key: _merge(defaults[key], infra.get(key) or {}) for key in ("launch", "kuberay", "sandbox")},
        }
        return _prune(values), name, namespace
    except Exception:  # noqa: BLE001 - a failed guess only means no speculation
        return None


class _HelmSafeDumper(yaml.SafeDumper):
    """Quotes strings that Helm's YAML 1.1 parser would read as booleans (y, n, …)."""


def _str(dumper: yaml.SafeDumper, value: str) -> yaml.Node:
    if value in ("y", "Y", "n", "N"):
        return dumper.represent_scalar("tag:yaml.org,2002:str", value, style="'")
    return dumper.represent_str(value)


_HelmSafeDumper.add_representer(str, _str)


def values_yaml(values: ChartValues) -> str:
    return yaml.dump(values_dict(values), Dumper=_HelmSafeDumper, sort_keys=False, allow_unicode=True, width=120)
