"""Generate every schema and the chart's values.yaml from the models (`make schema`).

Outputs: charts/dockyard/values.schema.json, values.yaml, the values table of its README (chart_readme) and
templates/_constants.tpl (chart_constants), schema/recipe.schema.json, schema/infra.schema.json, the supported
versions table (from the table of tools) in README.md, and the table of tools' JSON twin. A test fails when one is
stale.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel

from generator.inputs.models import ChartValues, InfraSpec, Recipe
from generator.inputs.models.types import model_in
from generator.maint import chart_constants, chart_readme
from generator.maint.supported_versions import readme_with_versions
from generator.pinned_tools import CHART_DIR, REPO

DRAFT07 = "http://json-schema.org/draft-07/schema#"
README = REPO / "README.md"


def _draft07(node: Any) -> Any:
    """Pydantic emits 2020-12 `$defs`; Helm's draft-07 wants `definitions`. Drop titles."""
    if isinstance(node, dict):
        out = {}
        for key, value in node.items():
            if key == "title" and isinstance(value, str):
                continue
            if key == "$defs":
                key = "definitions"
            if key == "$ref" and isinstance(value, str):
                value = value.replace("#/$defs/", "#/definitions/")
            out[key] = _draft07(value)
        return out
    if isinstance(node, list):
        return [_draft07(v) for v in node]
    return node


def json_schema(model: type[BaseModel], schema_id: str) -> dict[str, Any]:
    schema = _draft07(model.model_json_schema(by_alias=True))
    return {"$schema": DRAFT07, "$id": schema_id, **schema}


def _dump_json(schema: dict[str, Any]) -> str:
    return json.dumps(schema, indent=2, ensure_ascii=False) + "\n"


def _yaml_scalar(value: Any) -> str:
    text = yaml.safe_dump(value, default_flow_style=True, sort_keys=False, width=10_000).strip()
    return text.removesuffix("\n...").strip()


def _values_lines(model: type[BaseModel], data: dict[str, Any], indent: int) -> list[str]:
    pad = " " * indent
    lines: list[str] = []
    for name, field in model.model_fields.items():
        key = field.alias or name
        desc = field.description or ""
        lines.append(f"{pad}# {desc}")
        sub = model_in(field.annotation)
        value = data.get(key)
        if sub is not None and isinstance(value, dict) and sub.model_config.get("extra") != "allow":
            lines.append(f"{pad}{key}:")
            lines.extend(_values_lines(sub, value, indent + 2))
        elif isinstance(value, (dict, list)) and value:
            block = yaml.safe_dump(value, default_flow_style=False, sort_keys=False).rstrip("\n")
            lines.append(f"{pad}{key}:")
            lines.extend(f"{pad}  {ln}" for ln in block.splitlines())
        else:
            lines.append(f"{pad}{key}: {_yaml_scalar(value)}")
    return lines


def values_yaml() -> str:
    defaults = ChartValues().model_dump(mode="json", by_alias=True)
    head = [
        "# Default values of the dockyard chart. GENERATED from generator/inputs/models by `make schema`:",
        "# edit the models, not this file. values.schema.json (same source) is enforced by Helm.",
        "",
    ]
    return "\n".join(head + _values_lines(ChartValues, defaults, 0)) + "\n"


def outputs() -> dict[Path, str]:
    """Every generated file and its expected content."""
    out = {
        CHART_DIR / "values.schema.json": _dump_json(json_schema(ChartValues, "https://dockyard.dev/schema/values.json")),
        CHART_DIR / "values.yaml": values_yaml(),
        REPO / "schema" / "recipe.schema.json": _dump_json(json_schema(Recipe, "https://dockyard.dev/schema/recipe.json")),
        REPO / "schema" / "infra.schema.json": _dump_json(json_schema(InfraSpec, "https://dockyard.dev/schema/infra.json")),
    }
    if README.exists():
        out[README] = readme_with_versions(README.read_text())
    out[chart_constants.TEMPLATE] = chart_constants.template()
    out[chart_readme.README] = chart_readme.readme_with_table(chart_readme.README.read_text())
    from generator import tool_table

    out[tool_table.TWIN] = tool_table.twin()
    return out


def main() -> int:
    for path, content in outputs().items():
        path.parent.mkdir(parents=True, exist_ok=True)
        if not path.exists() or path.read_text() != content:
            path.write_text(content)
            print(f"wrote {path.relative_to(REPO)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
