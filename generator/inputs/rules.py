"""Rules the models enforce that a JSON Schema keyword cannot say, as plain functions without pydantic:
the models call them, and so does `generator.inputs.schema_check` (the validator of the happy path), so the
two cannot drift apart."""

from __future__ import annotations

import ipaddress
import re

TYPE_CHECKING = False  # typing's import costs ~3 ms at start-up: for type checkers only
if TYPE_CHECKING:
    from typing import Any

# Kubernetes resource.Quantity, e.g. 500m, 2Gi, 1.5, 10G, 1e3.
QUANTITY_RE = r"^([+]?[0-9]+(\.[0-9]*)?|[+]?\.[0-9]+)(([KMGTPE]i)|[numkMGTPE]|([eE][+-]?[0-9]+))?$"
CIDR_RE = (
    r"^(([0-9]{1,3}\.){3}[0-9]{1,3}/([0-9]|[1-2][0-9]|3[0-2])"
    r"|[0-9a-fA-F:.]*:[0-9a-fA-F:.]*/([0-9]|[1-9][0-9]|1[0-1][0-9]|12[0-8]))$"
)
MAX_RAYJOB_NAME = 47  # KubeRay's limits on the names the recipe's name becomes
MAX_RAYCLUSTER_NAME = 53
RAY_RESOURCE_PARAMS = ("num-cpus", "num-gpus", "memory", "resources")


def quantity_string_ok(value: str) -> bool:
    """A quantity written as a string (Python's `re.match`, as the model's validator has always used)."""
    return re.match(QUANTITY_RE, value) is not None


def cidr_problem(value: str) -> str | None:
    """Why a CIDR block (already matching CIDR_RE) is refused, or None."""
    try:
        net = ipaddress.ip_network(value, strict=False)
    except ValueError as exc:
        return f"{value!r} is not a CIDR block (expected e.g. 10.0.0.0/8): {exc}"
    if net.network_address != ipaddress.ip_interface(value).ip:
        return f"{value!r} has host bits set; did you mean {net.with_prefixlen}?"
    return None


def _holds(container: Any, key: str) -> bool:
    """`key in container` for what YAML can give; other values hold nothing."""
    return isinstance(container, (str, list, dict)) and key in container


def duplicate_group(names: list[Any]) -> str | None:
    """The first groupName given twice among the worker group overlays, or None."""
    seen: set[Any] = set()
    for name in names:
        if name in seen:
            return name
        seen.add(name)
    return None


def kuberay_overlay_problem(groups: list[tuple[str, dict[str, Any]]]) -> str | None:
    """Why KubeRay refuses a group of the RayClusterSpec overlay, or None: (name, group spec) pairs,
    the head's first."""
    for name, spec in groups:
        for key in ("rayStartParams", "resources"):
            if spec.get(key) is not None and not isinstance(spec[key], dict):
                return (f"{name}: {key} must be a mapping (ray start flag or resource name: value), "
                        f"got {spec[key]!r}")
        params = spec.get("rayStartParams") or {}
        if _holds(params, "labels"):
            return f"{name}: rayStartParams.labels is refused by KubeRay; use the group's `labels` field"
        clash = [k for k in RAY_RESOURCE_PARAMS if _holds(params, k)]
        if clash and spec.get("resources"):
            return (f"{name}: Ray resources set both in group-level `resources` and rayStartParams {clash}; "
                    "KubeRay refuses this, use only one")
        for key in ("replicas", "minReplicas", "maxReplicas"):
            if key in spec:
                return f"{name}: {key} comes from the recipe's cluster.<group>.nodes; remove it from the overlay"
    return None
