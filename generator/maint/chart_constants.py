"""The constants the chart's templates share with the Python, written from the Python by `make schema` as
charts/dockyard/templates/_constants.tpl: one `define` per constant, printing it as JSON, which a template reads
with `include "dockyard.const.<name>" . | fromJson` (or `fromJsonArray`). The templates hold no copy of these
lists; tests/unit/maint/test_chart_constants.py fails on one written by hand.

The constants stay where the Python uses them (the rules and the models); this module only gathers them.
"""

from __future__ import annotations

import json
from typing import Any

from generator.inputs.fabric_rules import FABRIC_ENV
from generator.inputs.models.env import GPU_CHART_ENV
from generator.inputs.models.infra import GROUPS
from generator.inputs.rules import AGENT_SANDBOX_ONLY_KEYS, POOL_ONLY_KEYS
from generator.inputs.storage_rules import ALL_GROUPS, DEFAULT_ACCESS_MODES, LAYOUT, OFFLINE_ENV
from generator.inputs.version_rules import PRE_RUNNING_DEADLINE, PRE_RUNNING_SINCE
from generator.pinned_tools import CHART_DIR

TEMPLATE = CHART_DIR / "templates" / "_constants.tpl"


def _backend_keys(keys: tuple[tuple[tuple[str | int, ...], Any], ...]) -> list[dict[str, Any]]:
    """Each key only one sandbox backend reads: its dotted name, its path inside `sandbox`, and its default as
    JSON text (the chart compares `toJson` of the value with it, and prints it as the expected value)."""
    return [{"key": ".".join(map(str, where)), "path": list(where), "default": json.dumps(default)}
            for where, default in keys]


def constants() -> dict[str, tuple[str, Any]]:
    """name -> (what it is, for the define's comment; the value)."""
    about = {
        "workerGroups": "the worker groups of the RayCluster, each a GPU fleet (models/infra.py GROUPS)",
        "rayGroups": "every Ray group, the head first (storage_rules.py ALL_GROUPS)",
        "gpuChartEnv": ("the env the chart sets in every container of the head and both fleets, which infra.env and "
                        "an overlay may not set (models/env.py GPU_CHART_ENV)"),
        "fabricEnv": "the env kuberay.network owns in every container of both fleets (fabric_rules.py FABRIC_ENV)",
        "backendOnlyKeys": ("per sandbox backend, the keys only it reads, with their defaults as JSON: under the other "
                            "backend each must keep its default (rules.py POOL_ONLY_KEYS, AGENT_SANDBOX_ONLY_KEYS)"),
        "storageKeys": "the volumes of infra.storage, in the order they are mounted (storage_rules.py LAYOUT)",
        "storageLayout": ("per volume: its mount path, the env that names it, the suffix of a created claim's name "
                          "(storage_rules.py LAYOUT)"),
        "storageOfflineEnv": "the env set to 1 with infra.storage.modelCache.offline (storage_rules.py OFFLINE_ENV)",
        "defaultAccessModes": ("the access modes of a claim the chart creates, unless given (storage_rules.py "
                               "DEFAULT_ACCESS_MODES)"),
        "preRunningDeadline": ("the RayJob's default preRunningDeadlineSeconds, rendered when "
                               "launch.preRunningDeadlineSeconds is unset and kuberay.version is at least `since`, the "
                               "KubeRay minor that added the field (version_rules.py PRE_RUNNING_DEADLINE, "
                               "PRE_RUNNING_SINCE)"),
    }
    values: dict[str, Any] = {
        "workerGroups": list(GROUPS),
        "rayGroups": list(ALL_GROUPS),
        "gpuChartEnv": list(GPU_CHART_ENV),
        "fabricEnv": list(FABRIC_ENV),
        "backendOnlyKeys": {"pool": _backend_keys(POOL_ONLY_KEYS),
                            "agent-sandbox": _backend_keys(AGENT_SANDBOX_ONLY_KEYS)},
        "storageKeys": list(LAYOUT),
        "storageLayout": LAYOUT,
        "storageOfflineEnv": list(OFFLINE_ENV),
        "defaultAccessModes": list(DEFAULT_ACCESS_MODES),
        "preRunningDeadline": {"seconds": PRE_RUNNING_DEADLINE, "since": PRE_RUNNING_SINCE},
    }
    return {name: (about[name], value) for name, value in values.items()}


def template() -> str:
    """The text of charts/dockyard/templates/_constants.tpl."""
    out = ["{{/*",
           "GENERATED from the Python by `make schema` (generator/maint/chart_constants.py): edit the Python, not",
           "this file. Each define prints one constant as JSON: include \"dockyard.const.<name>\" . | fromJson",
           "(a mapping) or fromJsonArray (a list).",
           "*/}}"]
    for name, (about, value) in constants().items():
        out += ["", f"{{{{/* {about[0].upper()}{about[1:]}. */}}}}",
                f'{{{{- define "dockyard.const.{name}" -}}}}{json.dumps(value, ensure_ascii=False)}{{{{- end -}}}}']
    return "\n".join(out) + "\n"
