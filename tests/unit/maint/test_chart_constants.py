"""generator/maint/chart_constants.py: the lists the templates share with the Python come from the Python, through
the generated templates/_constants.tpl, and no template keeps a copy written by hand."""

from __future__ import annotations

import json
import re
from typing import Any

from generator.inputs.fabric_rules import FABRIC_ENV
from generator.inputs.models.env import GPU_CHART_ENV
from generator.inputs.rules import POOL_ONLY_KEYS
from generator.maint import chart_constants
from generator.pinned_tools import CHART_DIR

DEFINE = re.compile(r'\{\{- define "dockyard\.const\.(\w+)" -\}\}(.*?)\{\{- end -\}\}')


def committed(text: str) -> dict[str, Any]:
    """Each define of a _constants.tpl text, parsed as the chart parses it (JSON)."""
    return {name: json.loads(body) for name, body in DEFINE.findall(text)}


def test_the_committed_template_holds_the_python_constants():
    """(test_schema_export's staleness check compares the text; this reads the values back, as the chart does.)"""
    got = committed(chart_constants.TEMPLATE.read_text())
    assert got == {name: json.loads(json.dumps(value)) for name, (_, value) in chart_constants.constants().items()}
    assert got["gpuChartEnv"] == list(GPU_CHART_ENV) and got["fabricEnv"] == list(FABRIC_ENV)
    assert [k["key"] for k in got["backendOnlyKeys"]["pool"]] == [".".join(w) for w, _ in POOL_ONLY_KEYS]


def _code(text: str) -> str:
    """A template's text without its comments (whose examples may name the constants)."""
    return re.sub(r"\{\{-?\s*/\*.*?\*/\s*-?\}\}", "", text, flags=re.S)


def _strings(value: Any) -> list[list[str]]:
    """The lists of strings inside a constant (itself, or the lists and key names in its mappings)."""
    if isinstance(value, dict):
        found = [[k for k in value if isinstance(k, str) and "." in k]]
        return found + [s for v in value.values() for s in _strings(v)]
    if isinstance(value, list):
        items = [v for v in value if isinstance(v, str)]
        return [items] + [s for v in value if isinstance(v, (dict, list)) for s in _strings(v)]
    return [[value]] if isinstance(value, str) and ("/" in value or "." in value) else []


def _scalars(value: Any) -> list[str]:
    """Patterns for the distinctive scalars inside a constant: a number of three digits or more (a default in
    seconds) and a KubeRay minor (`1.6`, as in semverCompare ">=1.6-0")."""
    if isinstance(value, dict):
        return [p for v in value.values() for p in _scalars(v)]
    if isinstance(value, int) and not isinstance(value, bool) and value >= 100:
        return [rf"\b{value}\b"]
    if isinstance(value, str) and re.fullmatch(r"\d+\.\d+", value):
        return [rf"[<>=~^]\s*v?{re.escape(value)}\b"]
    return []


def hand_copies(templates: dict[str, str]) -> list[str]:
    """Where a template writes a constant out itself: two of its list's items side by side (`list "a" "b"`), a
    one-item list of it (`list "a")`), one of its distinctive strings (a key path, a mount path), or one of its
    distinctive scalars (a default number, a version bound)."""
    found = []
    for name, (_, value) in chart_constants.constants().items():
        for path, text in templates.items():
            found += [f"{path}: dockyard.const.{name} written by hand ({m.group(0)})"
                      for p in _scalars(value) for m in re.finditer(p, _code(text))]
        for items in _strings(value):
            items = [i for i in items if i]
            patterns = [rf'"{re.escape(a)}"\s*,?\s*"{re.escape(b)}"' for a, b in zip(items, items[1:], strict=False)]
            if len(items) == 1:
                distinctive = "/" in items[0] or "." in items[0]
                patterns.append(rf'"{re.escape(items[0])}"' if distinctive else rf'list\s+"{re.escape(items[0])}"\s*\)')
            for path, text in templates.items():
                found += [f"{path}: dockyard.const.{name} written by hand ({m.group(0)})"
                          for p in patterns for m in re.finditer(p, _code(text))]
    return found


def test_no_template_keeps_a_hand_copy():
    templates = {str(p.relative_to(CHART_DIR)): p.read_text() for p in sorted((CHART_DIR / "templates").rglob("*"))
                 if p.is_file() and p != chart_constants.TEMPLATE}
    assert hand_copies(templates) == []


def test_the_hand_copy_check_finds_one():
    bad = {
        "a.tpl": '{{- if has .role (list "trainer" "inference") -}}',
        "b.tpl": '{{- $m := .accessModes | default (list "ReadWriteMany") -}}',
        "c.tpl": '{{- $keys := list (list "rollingUpdate.maxSurge" $x "\\"25%\\"") -}}',
        "d.tpl": '{{- $p := "/dockyard/logs" -}}',
        "e.tpl": '{{/* a comment may name list "trainer" "inference" */}}{{- $ok := list "head" .Values -}}',
        "f.tpl": "preRunningDeadlineSeconds: {{ $l.preRunningDeadlineSeconds | default 3600 }}",
        "g.tpl": '{{- if semverCompare ">=1.6-0" .Values.kuberay.version }}{{ 36000 }}{{- end }}',
    }
    found = hand_copies(bad)
    assert sorted({f.split(":")[0] for f in found}) == ["a.tpl", "b.tpl", "c.tpl", "d.tpl", "f.tpl", "g.tpl"], found
    assert not [f for f in found if "36000" in f]  # a number is matched whole

