"""Recipe + infra spec -> validated chart values.

`composed` is what `values`, `render` and `check` call: `generator.inputs.schema_check` on the happy path,
without pydantic; pydantic and the models are imported only when that refuses, to explain why.
"""

from __future__ import annotations

import difflib
from collections import namedtuple
from pathlib import Path

import yaml

from generator.errors import InputError, Problem
from generator.inputs.explain import from_validation
from generator.inputs.loader import Document, apply_overrides, load
from generator.inputs.quota_rules import quota_problems
from generator.inputs.rules import MAX_RAYCLUSTER_NAME, MAX_RAYJOB_NAME
from generator.inputs.storage_rules import gang_problems
from generator.inputs.topology_rules import together_problem
from generator.inputs.version_rules import pre_running_problem, target_minor

TYPE_CHECKING = False  # typing's import costs ~3 ms at start-up: for type checkers only
if TYPE_CHECKING:
    from typing import Any

    from pydantic import BaseModel

    from generator.inputs.models import ChartValues, Recipe


class Inputs(namedtuple("Inputs", "recipe infra recipe_doc infra_doc")):
    """recipe: Recipe, infra: InfraSpec, recipe_doc: Document, infra_doc: Document."""

    __slots__ = ()


def _validate(model: type[BaseModel], doc: Document) -> Any:
    from pydantic import ValidationError

    try:
        return model.model_validate(doc.data)
    except ValidationError as exc:
        raise from_validation(exc, model, [((), doc)]) from None


def _near_misses(recipe: Recipe, doc: Document) -> list[Problem]:
    """The recipe's extra keys are opaque, but one a letter away from a launcher key is a typo."""
    from generator.inputs.models import Recipe

    known = list(Recipe.model_fields)
    out = []
    for key in recipe.model_extra or {}:
        close = difflib.get_close_matches(key, known, n=1, cutoff=0.8)
        if close and close[0] not in doc.data:
            out.append(Problem(doc.path, doc.line_of((key,)), key,
                               f"unknown key {key!r} (the launcher reads {close[0]!r})",
                               "one of the launcher keys: " + ", ".join(known) + ", or a dockyard_rl section",
                               close[0]))
    return out


def load_inputs(recipe_path: str | Path, infra_path: str | Path, overrides: list[str] | None = None) -> Inputs:
    """Parse and validate both files; every problem of both is reported at once."""
    from generator.inputs.models import InfraSpec, Recipe

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
        infra = _validate(InfraSpec, infra_doc)  # with the keys its launch mode ignores (mode_keys)
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
    from generator.inputs.models import ChartValues

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
    gang = gang_problems(infra_block["storage"], recipe.cluster.model_dump())
    if gang:
        doc = inputs.infra_doc
        raise InputError([Problem(doc.path, doc.line_of(("infra", "storage", key)), f"infra.storage.{key}.accessModes",
                                  message, expected) for key, message, expected in gang])
    topology = infra.launch.topology.model_dump() if infra.launch.topology is not None else None
    together = together_problem(topology, recipe.cluster.model_dump())
    if together:
        doc = inputs.infra_doc
        raise InputError([Problem(doc.path, doc.line_of(("launch", "topology", "groups")), "launch.topology.groups",
                                  *together)])
    minor = target_minor()
    newer = pre_running_problem(infra.launch.preRunningDeadlineSeconds, minor)
    if newer:
        doc = inputs.infra_doc
        raise InputError([Problem(doc.path, doc.line_of(("launch", "preRunningDeadlineSeconds")),
                                  "launch.preRunningDeadlineSeconds", *newer)])
    _refuse_quota(inputs, infra_block)
    return ChartValues.model_validate({
        "recipe": {
            "name": recipe.name,
            "entrypoint": recipe.entrypoint,
            "cluster": recipe.cluster.model_dump(),
            "config": _recipe_text(inputs.recipe_doc),
        },
        "infra": infra_block,
        "launch": infra.launch.model_dump(),
        "kuberay": {**infra.kuberay.model_dump(), "version": minor},
        "sandbox": infra.sandbox.model_dump(),
    })


def _refuse_quota(inputs: Inputs, infra_block: dict[str, Any]) -> None:
    """A rendered ResourceQuota that cannot hold what the release asks for (quota_rules): the quota's key where it
    is written, each asking key with its file and line."""
    recipe_doc, infra_doc = inputs.recipe_doc, inputs.infra_doc

    def where(path: tuple[str | int, ...]) -> str:
        doc, loc = (recipe_doc, path[1:]) if path[0] == "recipe" else (infra_doc, path)
        dotted = ".".join(str(p) for p in loc)
        line = doc.lines.get(loc)
        return f"{dotted} at {doc.path}:{line}" if line else f"{dotted} (default)"

    found = quota_problems({"recipe": {"cluster": inputs.recipe.cluster.model_dump()}, "infra": infra_block,
                            "launch": inputs.infra.launch.model_dump(), "kuberay": inputs.infra.kuberay.model_dump(),
                            "sandbox": inputs.infra.sandbox.model_dump()}, where)
    if found:
        raise InputError([Problem(infra_doc.path, infra_doc.line_of(path), ".".join(map(str, path)), message, expected)
                          for path, message, expected in found])


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


# Values without the models (the happy path) --------------------------------------------------------

class Composed(namedtuple("Composed", "values release namespace mode")):
    """Chart values (`values_dict` form, a dict), the release, its namespace and the launch mode."""

    __slots__ = ()


def _json_plain(node: Any) -> bool:
    """Only what JSON holds as is: free-form data with a date, bytes or a non-string key is left to
    the models' serialiser."""
    stack = [node]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            if not all(isinstance(k, str) for k in node):
                return False
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
        elif not (node is None or isinstance(node, (str, bool, int, float))):
            return False
    return True


def _compose_fast(recipe_path: str | Path, infra_path: str | Path, overrides: list[str]) -> Composed | None:
    """`values_dict(compose(load_inputs(...)))` by `generator.inputs.schema_check`, without pydantic; None
    whenever the models would refuse (or might say more), so that they run and explain."""
    from generator.inputs import schema_check

    try:
        recipe_doc = load(recipe_path)
        apply_overrides(recipe_doc, overrides)
        infra_doc = load(infra_path)
        recipe = schema_check.check("recipe", recipe_doc.data)
        infra = schema_check.check("infra", infra_doc.data)
    except Exception:
        return None
    known = list(schema_check.declared("recipe"))
    for key in recipe_doc.data:
        close = difflib.get_close_matches(key, known, n=1, cutoff=0.8) if key not in known else None
        if close and close[0] not in recipe_doc.data:
            return None  # a near miss (`_near_misses`): the models report it
    name, mode = recipe["name"], infra["launch"]["mode"]  # (a key the mode ignores: the infra schema refused it)
    if len(name) > (MAX_RAYJOB_NAME if mode == "rayjob" else MAX_RAYCLUSTER_NAME):
        return None
    block = dict(infra["infra"])
    namespace = block.pop("namespace")
    try:
        values = schema_check.check("values", {
            "recipe": {"name": name, "entrypoint": recipe["entrypoint"], "cluster": recipe["cluster"],
                       "config": _recipe_text(recipe_doc)},
            "infra": block,
            **{key: infra[key] for key in ("launch", "sandbox")},
            "kuberay": {**infra["kuberay"], "version": target_minor()},
        })
    except schema_check.Refused:
        return None
    if not _json_plain(values) or gang_problems(values["infra"].get("storage") or {}, values["recipe"]["cluster"]):
        return None
    if quota_problems(values):
        return None  # the models' composition reports it, with its lines
    return Composed(values, name, namespace, mode)


def composed(recipe_path: str | Path, infra_path: str | Path, overrides: list[str] | None = None) -> Composed:
    """The chart values of `values`, `render` and `check`: checked against the models' JSON schemas
    on the happy path; when that refuses, the models validate, and their error is the one reported."""
    fast = _compose_fast(recipe_path, infra_path, overrides or [])
    if fast is not None:
        return fast
    inputs = load_inputs(recipe_path, infra_path, overrides)
    values = compose(inputs)
    return Composed(values_dict(values), values.recipe.name, inputs.infra.infra.namespace, values.launch.mode)


class _HelmSafeDumper(yaml.SafeDumper):
    """Quotes strings that Helm's YAML 1.1 parser would read as booleans (y, n, …)."""


def _str(dumper: yaml.SafeDumper, value: str) -> yaml.Node:
    if value in ("y", "Y", "n", "N"):
        return dumper.represent_scalar("tag:yaml.org,2002:str", value, style="'")
    return dumper.represent_str(value)


_HelmSafeDumper.add_representer(str, _str)


def values_yaml(values: ChartValues | dict[str, Any]) -> str:
    plain = values if isinstance(values, dict) else values_dict(values)
    return yaml.dump(plain, Dumper=_HelmSafeDumper, sort_keys=False, allow_unicode=True, width=120)
