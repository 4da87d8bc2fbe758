"""generator/maint/chart_readme.py: the chart README's values table, one section per top-level key, from the models."""

from __future__ import annotations

import re
from typing import Any, Literal

import pytest
from pydantic import Field

from generator.inputs.models import ChartValues
from generator.inputs.models.types import Quantity, Strict
from generator.maint import chart_readme


@pytest.mark.parametrize("annotation, name", [
    (str, "string"), (int, "int"), (bool, "bool"), (list[str], "list"), (dict[str, str], "object"),
    (str | None, "string"), (int | str, "int or string"), (Literal["a", "b"], "string"),
    (Quantity | None, "quantity"), (Quantity, "quantity"),
    (ChartValues, "object"), (Any, "object"),
])
def test_type_names(annotation, name):
    assert chart_readme.type_name(annotation) == name


def test_a_section_per_top_level_key_and_a_row_per_leaf():
    table = chart_readme.values_table()
    assert re.findall(r"^### (\w+)$", table, re.M) == list(ChartValues.model_fields)
    assert "| `sandbox.backend` | string | `\"pool\"` | `pool`: a Deployment of long-lived executors" in table
    assert "| `launch.queue` | string | `—` | Kueue LocalQueue" in table
    assert "| `kuberay.placement.gpu.tolerations` | list | `[{\"key\": \"nvidia.com/gpu\"" in table


def test_rows_escape_pipes_and_cut_long_defaults():
    class Shape(Strict):
        """A shape."""

        pick: str = Field("a|b", description="one | the other")
        many: list[str] = Field(["x" * 40, "y" * 40], description="Long.")

    rows = chart_readme.rows(Shape, Shape().model_dump(), "s.")
    assert rows[0] == '| `s.pick` | string | `"a\\|b"` | one \\| the other |'
    assert rows[1].count("…") == 1 and len(rows[1].split("`")[3]) == chart_readme.MAX_DEFAULT


def test_the_table_goes_between_the_markers_and_nowhere_without_them():
    text = f"intro\n{chart_readme.BEGIN}\nstale row\n{chart_readme.END}\nafter\n"
    out = chart_readme.readme_with_table(text)
    assert out.startswith("intro\n") and out.endswith(f"{chart_readme.END}\nafter\n") and "stale row" not in out
    with pytest.raises(ValueError, match="markers"):
        chart_readme.readme_with_table("no markers here")
