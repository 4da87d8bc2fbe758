"""One pod as the reading verbs see it: which fleet it belongs to (by the chart's and KubeRay's labels), the GPUs it
holds, whether it is ready, and why not in one line (the scheduler's message, a waiting container, its phase)."""

from __future__ import annotations

from generator.live.client.kube import GPU
from generator.live.helm.records import labels

TYPE_CHECKING = False  # typing's import costs ~3 ms at start-up: for type checkers only
if TYPE_CHECKING:
    from typing import Any

FLEETS = ("head", "trainer", "inference", "sandbox", "submitter")


def container_gpus(container: dict[str, Any]) -> int:
    """GPUs a container holds: its request, which Kubernetes defaults to the limit (for an extended
    resource the two must be equal when both are set)."""
    res = container.get("resources") or {}
    val = (res.get("requests") or {}).get(GPU)
    if val is None:
        val = (res.get("limits") or {}).get(GPU)
    return int(val or 0)


def pod_gpus(spec: dict[str, Any] | None) -> int:
    return sum(container_gpus(c) for c in (spec or {}).get("containers") or [])


def pod_ready(pod: dict[str, Any]) -> bool:
    st = pod.get("status")
    if pod["metadata"].get("deletionTimestamp") or (st and st.get("phase") != "Running"):
        return False
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in (st or {}).get("conditions") or [])


def pod_reason(pod: dict[str, Any]) -> str:
    """Why a pod is not ready: the scheduler's message, a waiting container, or its phase."""
    st = pod.get("status") or {}
    if pod["metadata"].get("deletionTimestamp"):
        return "Terminating"
    for c in st.get("conditions") or []:
        if c.get("type") == "PodScheduled" and c.get("status") == "False":
            msg = (c.get("message") or "").split(" preemption:")[0]
            msg = msg.replace(" no new claims to deallocate,", "").rstrip(" ,")
            return f"{c.get('reason') or 'Unschedulable'}: {msg}".strip()
    for cs in st.get("containerStatuses") or []:
        w = (cs.get("state") or {}).get("waiting")
        if w and w.get("reason"):
            return f"{w['reason']}: {w.get('message') or ''}".rstrip(": ")
    return f"{st.get('phase') or 'Unknown'}"


def fleet_of(pod: dict[str, Any]) -> str | None:
    lab = labels(pod)
    if lab.get("dockyard.dev/fleet") in FLEETS:
        return lab["dockyard.dev/fleet"]
    if lab.get("ray.io/node-type") == "head":
        return "head"
    if lab.get("ray.io/group") in ("trainer", "inference"):
        return lab["ray.io/group"]
    return None

