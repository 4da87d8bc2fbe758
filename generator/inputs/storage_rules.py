"""The storage rules a JSON Schema keyword cannot say (how many pods write a volume), as plain functions
without pydantic: the models' composition (generator/inputs/compose.py) and its fast path both call them,
and the chart states the same (dockyard.validate.storage). The layout (paths, env) is docs/storage.md's."""

from __future__ import annotations

TYPE_CHECKING = False  # typing's import costs ~3 ms at start-up: for type checkers only
if TYPE_CHECKING:
    from typing import Any

ALL_GROUPS = ("head", "trainer", "inference")
DEFAULT_ACCESS_MODES = ["ReadWriteMany"]

# Per volume: the mount path in the Ray container, the env that names it, and the claim's name suffix
# (the chart creates `<release>-<suffix>`, the same name on every run of a release). The chart's
# dockyard.storage.layout reads it (dockyard.const.storageLayout, written from here by `make schema`).
LAYOUT: dict[str, dict[str, Any]] = {
    "checkpoints": {"path": "/dockyard/checkpoints", "env": ["DOCKYARD_CHECKPOINT_DIR"], "suffix": "checkpoints"},
    "modelCache": {"path": "/dockyard/model-cache", "env": ["DOCKYARD_MODEL_CACHE_DIR", "HF_HOME"],
                   "suffix": "model-cache"},
    "logs": {"path": "/dockyard/logs", "env": ["DOCKYARD_LOG_DIR"], "suffix": "logs"},
}
OFFLINE_ENV = ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE")
# Every env name the storage invariants own.
STORAGE_ENV = tuple(name for spec in LAYOUT.values() for name in spec["env"]) + OFFLINE_ENV


def writers(volume: dict[str, Any], cluster: dict[str, Any]) -> int:
    """How many pods mount a volume (chart-values form): the head once, each worker group by its nodes."""
    groups = volume.get("mountOn") or ALL_GROUPS
    return sum(1 if g == "head" else int((cluster.get(g) or {}).get("nodes", 1)) for g in groups)


def gang_problems(storage: dict[str, Any], cluster: dict[str, Any]) -> list[tuple[str, str, str]]:
    """(volume key, message, expected) for each created claim more than one pod writes without ReadWriteMany.
    The chart refuses the same (dockyard.validate.storage); an existing claim's modes are doctor's to check."""
    out = []
    for key in LAYOUT:
        volume = storage.get(key)
        if not volume or volume.get("claimName") is not None:
            continue
        modes = list(volume.get("accessModes") or DEFAULT_ACCESS_MODES)
        count = writers(volume, cluster)
        if count > 1 and "ReadWriteMany" not in modes:
            groups = ", ".join(volume.get("mountOn") or ALL_GROUPS)
            message = (f"{count} pods ({groups}) mount it and write, but its access modes [{' '.join(modes)}] "
                       "do not include ReadWriteMany")
            out.append((key, message, "accessModes: [ReadWriteMany] (or mountOn one pod)"))
    return out
