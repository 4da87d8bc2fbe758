"""Kubernetes quantities ("500m", "8Gi") parsed to numbers and shown again. No imports of the package: the
product's live path (generator/live/) and the playground, which never import each other, both use it."""

from __future__ import annotations

TYPE_CHECKING = False  # typing's import costs ~3 ms at start-up (the happy path reads quotas): type checkers only
if TYPE_CHECKING:
    from typing import Any

UNITS = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60, "n": 1e-9, "u": 1e-6,
         "m": 1e-3, "k": 1e3, "K": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "P": 1e15, "E": 1e18}


def qty(value: Any) -> float:
    """A Kubernetes quantity as a float (cpu in cores, bytes for memory)."""
    if value is None:
        return 0.0
    s = str(value)
    for suffix in sorted(UNITS, key=len, reverse=True):
        if s.endswith(suffix):
            return float(s[: -len(suffix)]) * UNITS[suffix]
    return float(s)


def fmt(key: str, value: float | None) -> str:
    """A quantity for a row: cpu in cores or millicores, memory and storage in Mi/Gi/Ti."""
    if value is None:
        return "-"
    if key == "cpu":
        return f"{value:g}" if value >= 1 else f"{value * 1000:.0f}m"
    if key in ("memory", "ephemeral-storage"):
        for unit, size in (("Ti", 2**40), ("Gi", 2**30), ("Mi", 2**20)):
            if value >= size:
                return f"{value / size:g}{unit}"
        return f"{value:g}"
    return f"{value:g}"
