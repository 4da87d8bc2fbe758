"""The chart's README values table (charts/dockyard/README.md), generated from the models by `make schema`.

One table per top-level section of the values (`recipe`, `infra`, `launch`, `kuberay`, `sandbox`), each row a
leaf key: its dotted path, its type, its default (as values.yaml has it) and the model's Field description. The
prose around the table is written by hand; the block between the markers is this module's.
"""

from __future__ import annotations

import json
import types
import typing
from typing import Any, Literal

from pydantic import BaseModel

from generator.inputs.models import ChartValues
from generator.inputs.models.types import Quantity, model_in
from generator.pinned_tools import CHART_DIR

README = CHART_DIR / "README.md"
BEGIN = "<!-- values-table:begin (generated from generator/inputs/models by `make schema`; do not edit) -->"
END = "<!-- values-table:end -->"
MAX_DEFAULT = 60  # characters of a default shown; a longer one is cut with `…` (values.yaml has it whole)
_SCALARS = {bool: "bool", int: "int", float: "number", str: "string"}


def type_name(annotation: Any) -> str:
    """A reader's name of a field's type: `string`, `int`, `bool`, `number`, `quantity` (a Kubernetes quantity, a
    string or a number), `list`, `object`, or several joined by ` or ` (an optional field is named by what it
    takes, not by its null)."""
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if origin is typing.Annotated:
        return "quantity" if annotation == Quantity else type_name(args[0])
    if origin in (typing.Union, types.UnionType):
        names = [type_name(a) for a in args if a is not type(None)]
        return " or ".join(dict.fromkeys(names))
    if origin is Literal:
        return " or ".join(dict.fromkeys(_SCALARS.get(type(a), "string") for a in args))
    if origin in (list, tuple, set, frozenset) or annotation in (list, tuple):
        return "list"
    if origin is dict or annotation is dict:
        return "object"
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return "object"
    if annotation in _SCALARS:
        return _SCALARS[annotation]
    return "object" if annotation is Any else str(getattr(annotation, "__name__", annotation))


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _default(value: Any) -> str:
    if value in (None, ""):
        return "—"
    shown = json.dumps(value, ensure_ascii=False)
    return shown if len(shown) <= MAX_DEFAULT else shown[: MAX_DEFAULT - 1] + "…"


def rows(model: type[BaseModel], data: dict[str, Any], prefix: str) -> list[str]:
    """The table rows of `model`'s leaf keys under `prefix`, recursing into nested models that hold a value."""
    out: list[str] = []
    for name, field in model.model_fields.items():
        key = field.alias or name
        path = f"{prefix}{key}"
        sub = model_in(field.annotation)
        value = data.get(key)
        if sub is not None and isinstance(value, dict) and sub.model_config.get("extra") != "allow":
            out.extend(rows(sub, value, path + "."))
            continue
        out.append(f"| `{path}` | {_cell(type_name(field.annotation))} | `{_cell(_default(value))}` | "
                   f"{_cell(field.description or '')} |")
    return out


def values_table() -> str:
    """A section per top-level key: its heading, what it is (Field description, then the model's docstring), the
    table of its keys."""
    defaults = ChartValues().model_dump(mode="json", by_alias=True)
    parts: list[str] = []
    for name, field in ChartValues.model_fields.items():
        key = field.alias or name
        sub = model_in(field.annotation)
        assert sub is not None, f"top-level key {key} is not a model"
        about = " ".join(s.strip() for s in (field.description, sub.__doc__) if s and s.strip())
        parts += [f"### {key}", "", about, "", "| key | type | default | description |", "| --- | --- | --- | --- |",
                  *rows(sub, defaults[key], f"{key}."), ""]
    return "\n".join(parts).rstrip("\n")


def readme_with_table(text: str) -> str:
    """`text` (the chart's README) with the block between the markers replaced by the table."""
    from generator.tool_table import between_markers

    out = between_markers(text, BEGIN, END, values_table())
    if out is None:
        raise ValueError(f"{README}: the markers {BEGIN!r} and {END!r} are missing")
    return out
