"""What one pod requests, counted as the scheduler and Kueue count it (the quantities themselves:
generator/quantity.py)."""

from __future__ import annotations

from typing import Any

from generator.quantity import qty


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
