"""The inputs checked against the committed JSON schemas, without pydantic: the happy path's validator.

The models are the one source of truth: `make schema` writes schema/recipe.schema.json,
schema/infra.schema.json and the chart's values.schema.json from them (a test fails when one is
stale). This module reads those files (~1 ms) and applies them with the models' own semantics, which
plain JSON Schema does not have: strict types (a boolean is not an integer, 1.0 is not an integer,
mapping keys are strings), no .inf/.nan outside the recipe's opaque keys, a field's alias or its
name, the defaults filled in before the cross-field rules look (pydantic validates defaults), and a
pattern matched as pydantic matches it. What no keyword can say is in `generator.inputs.rules`, which the
models call too. `tests/unit/inputs/test_schema_check.py` proves that this and the models accept and refuse
exactly the same inputs.

`check` returns the validated data as `model_dump(mode="json", by_alias=True, exclude_none=True)`
would: declared keys in the models' order with defaults filled, extra keys after them. On any
refusal it raises `Refused` without a reason: the caller then asks the models, which explain.
"""

from __future__ import annotations

import json
import math
import re
from functools import cache

from generator.bundled import schema_path
from generator.inputs import api_rules, fabric_rules, rules
from generator.pinned_tools import CHART_DIR

TYPE_CHECKING = False  # typing's import costs ~3 ms at start-up: for type checkers only
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

SCHEMAS = {
    "recipe": schema_path("recipe"),
    "infra": schema_path("infra"),
    "values": CHART_DIR / "values.schema.json",
}
# The keywords the models' schemas use; any other is a hard error (a model change needs this module).
KEYWORDS = {"$schema", "$id", "definitions", "$ref", "type", "properties", "additionalProperties", "required",
            "default", "description", "enum", "const", "pattern", "minLength", "maxLength", "minimum", "maximum",
            "items", "minItems", "maxItems", "minProperties", "propertyNames", "anyOf", "allOf", "not", "if", "then",
            "uniqueItems", "contains"}
# Field names whose key in the schema is an alias (populate_by_name: either is accepted, not both).
# tests/unit/inputs/test_schema_check.py keeps this equal to the models' aliases.
ALIASES = {"ephemeral-storage": "ephemeralStorage"}


class Refused(Exception):
    """The models refuse this input (they say why)."""


class _Model(dict):
    """A mapping validated by a model (its None values are dropped from the output, as exclude_none does)."""


def _free(value: Any, finite: bool) -> None:
    """Free-form data (the models' `Any`): only .inf/.nan are refused, where the models refuse them."""
    if not finite:
        return
    stack = [value]
    while stack:
        node = stack.pop()
        if isinstance(node, float) and not math.isfinite(node):
            raise Refused
        if isinstance(node, dict):
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)


def _same(a: Any, b: Any) -> bool:
    """JSON equality: True is not 1."""
    return type(a) is type(b) and a == b if isinstance(a, bool) or isinstance(b, bool) else a == b


@cache
def _regex(pattern: str) -> Callable[[str], Any]:
    if pattern == rules.QUANTITY_RE:
        return rules.quantity_string_ok
    # pydantic matches patterns with Rust's regex, where `$` is the end of the text only; in Python
    # `$` also matches before a final newline.
    return re.compile(pattern.replace("$", r"\Z")).search


def _is_type(value: Any, kind: str) -> bool:
    if kind == "object":
        return isinstance(value, dict) and all(isinstance(k, str) for k in value)
    if kind == "string":
        return isinstance(value, str)
    if kind == "integer":
        return isinstance(value, int) and not isinstance(value, bool)
    if kind == "number":
        return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
    if kind == "boolean":
        return isinstance(value, bool)
    if kind == "array":
        return isinstance(value, list)
    if kind == "null":
        return value is None
    raise AssertionError(f"schema type {kind!r}")


class _Checker:
    def __init__(self, root: dict[str, Any], finite: bool):
        self.defs = root.get("definitions", {})
        self.finite = finite
        self.root = root
        self._written: dict[int, bool] = {}  # id of a rule -> _refuses_written (the schemas live as long as this)

    def _refuses_written(self, rule: Any) -> bool:
        found = self._written.get(id(rule))
        if found is None:
            found = self._written[id(rule)] = _refuses_written(rule)
        return found

    def ok(self, value: Any, schema: dict[str, Any], rule: bool = False) -> bool:
        try:
            self.check(value, schema, rule)
        except Refused:
            return False
        return True

    def check(self, value: Any, schema: dict[str, Any] | bool, rule: bool = False) -> Any:
        """The value, validated and normalised by `schema`; Refused when it does not hold. `rule`: a rule's check of
        a value already validated (normalised, or as written): nothing to normalise, the value as it is."""
        if isinstance(schema, bool):  # `false`: a key refused when written at all (mode_keys.infra_schema_rules)
            if not schema:
                raise Refused
            return value
        given = value
        ref = schema.get("$ref")
        if ref is not None:  # draft-07: the keywords beside a $ref are not applied
            name = ref.rsplit("/", 1)[1]
            out = self.check(value, self.defs[name], rule)
            hook = HOOKS.get(name)
            if hook is not None:
                hook(out)
            return out
        kind = schema.get("type")
        if kind is not None and not _is_type(value, kind):
            raise Refused
        if "anyOf" in schema:
            for branch in schema["anyOf"]:
                try:
                    value = self.check(value, branch, rule)
                    break
                except Refused:
                    continue
            else:
                raise Refused
        if "enum" in schema and not any(_same(value, e) for e in schema["enum"]):
            raise Refused
        if "const" in schema and not _same(value, schema["const"]):
            raise Refused
        if isinstance(value, str):
            value = self._string(value, schema)
        elif isinstance(value, (int, float)) and not isinstance(value, bool):
            if isinstance(value, float) and not math.isfinite(value):
                raise Refused  # strict models: allow_inf_nan=False
            if "minimum" in schema and value < schema["minimum"]:
                raise Refused
            if "maximum" in schema and value > schema["maximum"]:
                raise Refused
        elif isinstance(value, list):
            value = self._array(value, schema, rule)
        elif isinstance(value, dict):
            value = self._object(value, schema, rule)
        if "allOf" in schema or "not" in schema or "if" in schema:
            seen = value if rule else _plain(value)  # the rules look at what Helm is given: defaults in, None out
            for sub in schema.get("allOf", ()):
                # a rule refusing a key outright looks at what was written, as an editor does (not the defaults)
                self.check(given if self._refuses_written(sub) else seen, sub, True)
            if "not" in schema and self.ok(seen, schema["not"], True):
                raise Refused
            if "if" in schema and self.ok(seen, schema["if"], True) and "then" in schema:
                self.check(seen, schema["then"], True)
        return value

    def _string(self, value: str, schema: dict[str, Any]) -> str:
        if "minLength" in schema and len(value) < schema["minLength"]:
            raise Refused
        if "maxLength" in schema and len(value) > schema["maxLength"]:
            raise Refused
        pattern = schema.get("pattern")
        if pattern is not None:
            if not _regex(pattern)(value):
                raise Refused
            if pattern == rules.CIDR_RE and rules.cidr_problem(value):
                raise Refused
        return value

    def _array(self, value: list[Any], schema: dict[str, Any], rule: bool) -> list[Any]:
        if "minItems" in schema and len(value) < schema["minItems"]:
            raise Refused
        if "maxItems" in schema and len(value) > schema["maxItems"]:
            raise Refused
        if schema.get("uniqueItems") and any(_same(a, b) for i, a in enumerate(value) for b in value[i + 1:]):
            raise Refused
        if "contains" in schema and not any(self.ok(v, schema["contains"], rule) for v in value):
            raise Refused
        items = schema.get("items")
        if items is None:
            if schema.get("type") == "array" and not rule:
                _free(value, self.finite)
            return value
        checked = [self.check(v, items, rule) for v in value]
        return value if rule else checked

    def _object(self, value: dict[str, Any], schema: dict[str, Any], rule: bool) -> dict[str, Any]:
        props: dict[str, Any] = schema.get("properties", {})
        names = schema.get("propertyNames")
        if names is not None:
            for key in value:
                self.check(key, names)
        required = schema.get("required", ())
        extra = schema.get("additionalProperties", True)
        if schema.get("type") == "object" and props and not rule:  # a model: every field, in order, then extras
            out: dict[str, Any] = _Model()
            used = set()
            for key, sub in props.items():
                given = [k for k in (key, ALIASES.get(key)) if k is not None and k in value]
                if len(given) > 1:
                    raise Refused  # the alias and the field name both set
                if given:
                    used.add(given[0])
                    out[key] = self.check(value[given[0]], sub)
                elif "default" in sub:
                    out[key] = self.check(sub["default"], sub)
                else:
                    raise Refused  # a required field (every other one has a default)
            rest = ((k, v) for k, v in value.items() if k not in used)
        else:  # a dict field, a rule's condition, or a model already checked (an anyOf branch): the keys given
            out = _Model() if isinstance(value, _Model) else {}
            for key in required:
                if key not in value:
                    raise Refused
            for key, sub in props.items():
                if key in value:
                    out[key] = self.check(value[key], sub, rule)
            rest = ((k, v) for k, v in value.items() if k not in props)
        for key, item in rest:
            if extra is False:
                raise Refused
            if isinstance(extra, dict):
                out[key] = self.check(item, extra, rule)
            else:
                if not rule:
                    _free(item, self.finite)
                out[key] = item
        if "minProperties" in schema and len(out) < schema["minProperties"]:
            raise Refused
        return value if rule else out


def _refuses_written(node: Any) -> bool:
    """Whether a rule refuses a key when present at all (a `false` schema under `properties`), which only the input
    as written can tell: with its defaults filled in, every key is present."""
    if isinstance(node, dict):
        props = node.get("properties")
        if isinstance(props, dict) and any(v is False for v in props.values()):
            return True
        return any(_refuses_written(v) for k, v in node.items() if k not in ("default", "const", "enum"))
    if isinstance(node, list):
        return any(_refuses_written(v) for v in node)
    return False


def _plain(value: Any) -> Any:
    """`exclude_none` of a normalised value: None dropped from the models' mappings (not from free-form data)."""
    if isinstance(value, _Model):
        return {k: _plain(v) for k, v in value.items() if v is not None}
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


def _overlay(spec: dict[str, Any]) -> None:
    """RayClusterSpecOverlay's validators (`generator.inputs.rules`): the dumps they see keep None values."""
    workers = spec.get("workerGroupSpecs", [])
    if rules.duplicate_group([g["groupName"] for g in workers]) is not None:
        raise Refused
    groups = [("headGroupSpec", dict(spec.get("headGroupSpec", {})))] + [(g["groupName"], dict(g)) for g in workers]
    if rules.kuberay_overlay_problem(groups):
        raise Refused
    if any(rules.overlay_shape_problem("head" if name == "headGroupSpec" else name, group) for name, group in groups):
        raise Refused
    if any(fabric_rules.fabric_overlay_problem(group) for name, group in groups if name != "headGroupSpec"):
        raise Refused


def _sandbox(sandbox: dict[str, Any]) -> None:
    """Sandbox's _pool_rules (`generator.inputs.rules.sandbox_pool_problem`), its annotations' size and its
    spread constraints' pairs (`generator.inputs.api_rules`)."""
    plain = _plain(sandbox)
    if (rules.sandbox_pool_problem(plain) or api_rules.annotations_problem(plain.get("podAnnotations"))
            or api_rules.spread_problem(plain.get("topologySpreadConstraints"))):
        raise Refused


def _api_rule(rule: Callable[[Any], Any], key: str | None = None) -> Callable[[Any], None]:
    """A hook applying one of `generator.inputs.api_rules` to a model (or to its field `key`)."""
    def hook(value: Any) -> None:
        plain = _plain(value)
        if rule(plain.get(key) if key else plain):
            raise Refused

    return hook


HOOKS: dict[str, Callable[[Any], None]] = {
    "RayClusterSpecOverlay": _overlay, "Sandbox": _sandbox,
    "SandboxResources": _api_rule(api_rules.resources_problem),
    "LimitRangeSettings": _api_rule(api_rules.limit_range_problem),
    "ResourceQuotaSettings": _api_rule(api_rules.quota_problem, "hard"),
    "ResourceFieldRef": _api_rule(api_rules.divisor_problem),
    "PodAffinityTerm": _api_rule(api_rules.pod_affinity_term_problem),
}


@cache
def _checker(name: str) -> _Checker:
    root = json.loads(SCHEMAS[name].read_bytes())
    return _Checker(root, finite=name != "recipe")


def check(name: str, data: Any) -> dict[str, Any]:
    """`data` validated by the `name` schema ("recipe", "infra" or "values") and dumped as the
    models would (see the module docstring); Refused when the models refuse it."""
    checker = _checker(name)
    out = _plain(checker.check(data, checker.root))
    if name == "infra" and any(rules.toyaml_problem(data.get(key)) for key in out):
        raise Refused  # InfraSpec's _toyaml_safe, on what was given
    return out


def declared(name: str) -> list[str]:
    """The top-level keys the `name` schema declares (a model's fields, by alias)."""
    return list(_checker(name).root.get("properties", {}))


def keywords(node: Any) -> set[str]:
    """Every keyword used in a schema (for the test that keeps KEYWORDS complete)."""
    out: set[str] = set()
    if isinstance(node, dict):
        for key, value in node.items():
            out.add(key)
            if key in ("properties", "definitions"):
                for sub in value.values():
                    out |= keywords(sub)
            elif key not in ("default", "enum", "const"):
                out |= keywords(value)
    elif isinstance(node, list):
        for value in node:
            out |= keywords(value)
    return out
