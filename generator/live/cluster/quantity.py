"""Kubernetes quantities: parsed ("500m", "8Gi") and shown again, and what one pod requests, counted as the
scheduler and Kueue count it."""

from __future__ import annotations

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


def requests(template: dict[str, Any]) -> dict[str, float]:
    """What one pod of the template reserves, as the scheduler and Kueue count it (`pod_requests`)."""
    return pod_requests(template.get("spec") or {})


def _container_requests(c: dict[str, Any]) -> dict[str, float]:
    """A container's requests, its limits where no request is set (Kueue's UseLimitsAsMissingRequests)."""
    res = c.get("resources") or {}
    merged = dict(res.get("limits") or {})
    merged.update(res.get("requests") or {})
    return {k: qty(v) for k, v in merged.items()}


def _add(into: dict[str, float], more: dict[str, float]) -> None:
    for k, v in more.items():
        into[k] = into.get(k, 0.0) + v


def pod_requests(spec: dict[str, Any]) -> dict[str, float]:
    """One pod's requests as Kubernetes' PodRequests (component-helpers) counts them, which Kueue uses: the
    containers and sidecars (restartable init containers) summed, at least each init container's peak, plus
    the pod's overhead."""
    total: dict[str, float] = {}
    for c in spec.get("containers") or []:
        _add(total, _container_requests(c))
    sidecars: dict[str, float] = {}
    peak: dict[str, float] = {}
    for c in spec.get("initContainers") or []:
        req = _container_requests(c)
        if c.get("restartPolicy") == "Always":  # a sidecar runs beside the containers and the later init ones
            _add(total, req)
            _add(sidecars, req)
            step = dict(sidecars)
        else:
            step = dict(req)
            _add(step, sidecars)
        for k, v in step.items():
            peak[k] = max(peak.get(k, 0.0), v)
    for k, v in peak.items():
        total[k] = max(total.get(k, 0.0), v)
    _add(total, {k: qty(v) for k, v in (spec.get("overhead") or {}).items()})
    return {k: v for k, v in total.items() if v > 0}
