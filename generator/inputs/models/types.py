"""Constrained scalar types shared by the models, each with its JSON Schema."""

from __future__ import annotations

import math
import typing
from typing import Annotated, Any

from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field, WithJsonSchema
from pydantic_core import PydanticCustomError

from generator.inputs.api_rules import annotations_problem, label_prefix_problem
from generator.inputs.rules import CIDR_RE, QUANTITY_RE, cidr_problem, quantity_string_ok

DNS1123_LABEL_RE = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"
DNS1035_LABEL_RE = r"^[a-z]([-a-z0-9]*[a-z0-9])?$"
DNS1123_SUBDOMAIN_RE = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$"
IMAGE_REPO_RE = r"^[a-z0-9]+([._/:-][a-z0-9]+)*$"
IMAGE_TAG_RE = r"^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$"
DIGEST_RE = r"^sha256:[a-f0-9]{64}$"
ENV_NAME_RE = r"^[-._a-zA-Z][-._a-zA-Z0-9]*$"
# Kubernetes label keys (a qualified name: an optional DNS-1123 prefix and '/', a name of at most 63)
# and label values (at most 63, may be empty), as its API validates them.
LABEL_NAME = r"[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?"
LABEL_KEY_RE = rf"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?{LABEL_NAME}$"
LABEL_VALUE_RE = rf"^({LABEL_NAME})?$"
LABEL_KEY_MAX = 253 + 1 + 63
# An annotation key is a label key checked lower-cased (the API's ValidateAnnotations): its prefix may hold
# upper-case letters.
ANNOTATION_KEY_RE = (rf"^([A-Za-z0-9]([-A-Za-z0-9]*[A-Za-z0-9])?(\.[A-Za-z0-9]([-A-Za-z0-9]*[A-Za-z0-9])?)*/)?"
                     rf"{LABEL_NAME}$")
# The prefix before '/' is a DNS-1123 subdomain of at most 253 characters. The patterns above cannot count
# it (the regexes of Go, Rust and JSON Schema have no look-ahead): a second pattern bounds it.
LABEL_PREFIX_RE = r"^([^/]{1,253}/)?[^/]*$"
INT32_MAX = 2**31 - 1  # the API's int32 fields (replicas, seconds, ports, percentages)


def model_in(annotation: Any) -> type[BaseModel] | None:
    """The BaseModel inside an annotation such as `Image` or `Image | None`."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    for arg in typing.get_args(annotation):
        found = model_in(arg)
        if found:
            return found
    return None


# strict: no coercion, so a YAML 1.1 boolean (yes, on, true) is not the integer 1, nor "3" the number 3;
# allow_inf_nan=False: .inf and .nan are refused (Helm's JSON values and Kubernetes have no such numbers).
STRICT_TYPES = ConfigDict(strict=True, allow_inf_nan=False)


class Strict(BaseModel):
    """Base for every model: unknown keys are errors, types are not coerced."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True, validate_default=True, **STRICT_TYPES)


def yaml_number(value: float) -> str:
    """A non-finite float as YAML spells it."""
    return ".nan" if math.isnan(value) else (".inf" if value > 0 else "-.inf")


def non_finite(value: Any) -> tuple[tuple[str | int, ...], float] | None:
    """The first .inf or .nan inside free-form data: (its key path inside `value`, the number)."""
    stack: list[tuple[tuple[str | int, ...], Any]] = [((), value)]
    while stack:
        where, node = stack.pop()
        if isinstance(node, float) and not math.isfinite(node):
            return where, node
        if isinstance(node, dict):
            stack.extend((where + (k,), v) for k, v in reversed(node.items()))
        elif isinstance(node, (list, tuple)):
            stack.extend((where + (i,), v) for i, v in reversed(list(enumerate(node))))
    return None


def refuse_non_finite(value: Any) -> Any:
    """A validator for free-form data: refuse .inf/.nan anywhere inside. The error carries the key
    path inside the field (`ctx["inside"]`), so the report names the key and its line."""
    found = non_finite(value)
    if found is not None:
        inside, number = found
        raise PydanticCustomError("non_finite", "{number} is not a finite number",
                                  {"number": yaml_number(number), "inside": inside})
    return value


def refused(inside: tuple[str | int, ...], message: str, expected: str = "") -> PydanticCustomError:
    """A refusal of a key inside free-form data: the report names the key (`inside`, the path inside
    the field or model validated), its line, and what was expected."""
    return PydanticCustomError("refused", "{message}", {"message": message, "inside": inside, "expected": expected})


def _not_bool(value: Any) -> Any:
    if isinstance(value, bool):
        raise ValueError("expected a Kubernetes quantity such as 1, 500m or 2Gi, not a boolean")
    if isinstance(value, float) and not math.isfinite(value):
        raise ValueError(f"expected a Kubernetes quantity such as 1, 500m or 2Gi, not {yaml_number(value)}")
    return value


def _quantity(value: Any) -> Any:
    if isinstance(value, (int, float)):
        if value < 0:
            raise ValueError(f"quantity must not be negative, got {value}")
        return value
    if not quantity_string_ok(str(value)):
        raise ValueError(f"{value!r} is not a Kubernetes quantity (expected e.g. 1, 500m, 2Gi, 20Gi)")
    return value


QUANTITY_SCHEMA = {
    "anyOf": [
        {"type": "string", "pattern": QUANTITY_RE},
        {"type": "number", "minimum": 0},
    ]
}

Quantity = Annotated[
    int | float | str, BeforeValidator(_not_bool), AfterValidator(_quantity), WithJsonSchema(QUANTITY_SCHEMA)
]


def _cidr(value: str) -> str:
    problem = cidr_problem(value)
    if problem:
        raise ValueError(problem)
    return value


Cidr = Annotated[str, Field(pattern=CIDR_RE), AfterValidator(_cidr)]
Dns1123Label = Annotated[str, Field(pattern=DNS1123_LABEL_RE, max_length=63)]
Dns1123Subdomain = Annotated[str, Field(pattern=DNS1123_SUBDOMAIN_RE, max_length=253)]
# A Kueue object named in a label (LocalQueue, WorkloadPriorityClass): Kueue validates the name as a
# DNS-1123 subdomain, and a label value holds at most 63 characters.
KueueName = Annotated[str, Field(pattern=DNS1123_SUBDOMAIN_RE, max_length=63)]
EnvName = Annotated[str, Field(pattern=ENV_NAME_RE)]
FreeForm = Annotated[
    dict[str, Any],
    AfterValidator(refuse_non_finite),
    WithJsonSchema({"type": "object", "additionalProperties": True}),
]


def prefix_fits(key: str) -> str:
    """A validator: the prefix of a qualified name is at most 253 characters."""
    problem = label_prefix_problem(key)
    if problem:
        raise ValueError(problem)
    return key


def key_schema(pattern: str) -> dict[str, Any]:
    """The JSON Schema of a qualified name matching `pattern` (the prefix bound as a second pattern)."""
    return {"type": "string", "pattern": pattern, "maxLength": LABEL_KEY_MAX, "allOf": [{"pattern": LABEL_PREFIX_RE}]}


# Qualified names as the API checks them: the pattern, at most 253+1+63 characters, a prefix of at most 253.
LabelKey = Annotated[str, Field(pattern=LABEL_KEY_RE, max_length=LABEL_KEY_MAX), AfterValidator(prefix_fits),
                     WithJsonSchema(key_schema(LABEL_KEY_RE))]
AnnotationKey = Annotated[str, Field(pattern=ANNOTATION_KEY_RE, max_length=LABEL_KEY_MAX), AfterValidator(prefix_fits),
                          WithJsonSchema(key_schema(ANNOTATION_KEY_RE))]
# A taint key; empty: a toleration of every taint (operator Exists).
TaintKey = Annotated[str, Field(pattern=f"^$|{LABEL_KEY_RE}", max_length=LABEL_KEY_MAX), AfterValidator(prefix_fits),
                     WithJsonSchema(key_schema(f"^$|{LABEL_KEY_RE}"))]
LabelValue = Annotated[str, Field(pattern=LABEL_VALUE_RE, max_length=63)]
Labels = Annotated[
    dict[LabelKey, LabelValue],
    WithJsonSchema({
        "type": "object",
        "propertyNames": {k: v for k, v in key_schema(LABEL_KEY_RE).items() if k != "type"},
        "additionalProperties": {"type": "string", "pattern": LABEL_VALUE_RE, "maxLength": 63},
    }),
]
NodeSelector = Labels


def _annotations_fit(annotations: dict[str, str]) -> dict[str, str]:
    found = annotations_problem(annotations)
    if found:
        raise refused(*found)
    return annotations


# Annotations: qualified-name keys (checked lower-cased), at most 256 KiB of keys and values together (that
# sum is the models' and schema_check's: no JSON Schema keyword adds lengths up).
Annotations = Annotated[
    dict[AnnotationKey, str],
    AfterValidator(_annotations_fit),
    WithJsonSchema({
        "type": "object",
        "propertyNames": {k: v for k, v in key_schema(ANNOTATION_KEY_RE).items() if k != "type"},
        "additionalProperties": {"type": "string"},
    }),
]
