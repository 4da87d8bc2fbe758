"""pyproject.toml's build hook: a wheel carries the chart (charts/dockyard) and the input schemas (schema/) as
package data, generator/_bundle/{chart,schema}, which generator/bundled.py reads. An editable install gets no
copies: it reads the clone's own files in place (a copy in site-packages would go stale at the first edit)."""

from __future__ import annotations

from typing import Any

from hatchling.builders.hooks.plugin.interface import BuildHookInterface

BUNDLE = {"charts/dockyard": "generator/_bundle/chart", "schema": "generator/_bundle/schema"}


class BundleHook(BuildHookInterface):  # type: ignore[misc]  # hatchling ships no type information to mypy here
    PLUGIN_NAME = "custom"

    def initialize(self, version: str, build_data: dict[str, Any]) -> None:
        if version != "editable":
            build_data["force_include"].update(BUNDLE)
