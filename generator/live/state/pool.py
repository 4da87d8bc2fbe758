"""The sandbox pool's rollout and autoscaling, for `status`: the Deployment's replica counts (already read by
the snapshot) and, only when the release renders one, its HorizontalPodAutoscaler (one more list)."""

from __future__ import annotations

from generator.live.client.kube import INSTANCE, Kube, Objects

TYPE_CHECKING = False  # typing's import costs ~3 ms at start-up: for type checkers only
if TYPE_CHECKING:
    from typing import Any

HPA_KIND = "kind: HorizontalPodAutoscaler"


def replicas(deployment: dict[str, Any]) -> dict[str, int]:
    """desired (spec, the HPA's when it scales), updated, ready and available (ready for minReadySeconds)."""
    spec, st = deployment.get("spec") or {}, deployment.get("status") or {}
    return {"desired": int(spec.get("replicas") or 0), "updated": int(st.get("updatedReplicas") or 0),
            "ready": int(st.get("readyReplicas") or 0), "available": int(st.get("availableReplicas") or 0)}


def renders_hpa(records: list[dict[str, Any]]) -> bool:
    """Whether the newest Helm record's manifest has an HPA (sandbox.autoscaling.enabled): no read otherwise."""
    from generator.live.helm.records import live_manifest

    try:
        return HPA_KIND in (live_manifest(records) or "")
    except Exception:  # a record this cannot read (corrupt, foreign): no hpa line, status goes on
        return False


def read_hpa(kube: Kube, namespace: str, release: str) -> dict[str, Any] | None:
    """The release's sandbox HPA: replicas (current, desired, min, max), each metric's current/target
    utilisation, and why it cannot scale (ScalingActive False), or None when there is none."""
    from generator.live.client.api_errors import is_forbidden

    try:
        items: Objects = kube.list(f"/apis/autoscaling/v2/namespaces/{namespace}/horizontalpodautoscalers",
                                   label_selector=f"{INSTANCE}={release}")
    except Exception as exc:
        if is_forbidden(exc):
            return {"forbidden": True}
        raise
    hpa = next((h for h in items if (h["metadata"].get("labels") or {}).get("app.kubernetes.io/component")
                == "sandbox"), None)
    if hpa is None:
        return None
    spec, st = hpa.get("spec") or {}, hpa.get("status") or {}
    current = {(m.get("resource") or {}).get("name"): ((m.get("resource") or {}).get("current") or {})
               .get("averageUtilization") for m in st.get("currentMetrics") or [] if m.get("type") == "Resource"}
    metrics = []
    for m in spec.get("metrics") or []:
        res = m.get("resource") or {}
        target = (res.get("target") or {}).get("averageUtilization")
        now = current.get(res.get("name"))
        metrics.append({"resource": res.get("name"), "current": now, "target": target})
    stuck = next((c for c in st.get("conditions") or [] if c.get("type") == "ScalingActive"
                  and c.get("status") == "False"), None)
    return {"name": hpa["metadata"]["name"], "min": spec.get("minReplicas", 1), "max": spec.get("maxReplicas"),
            "current": int(st.get("currentReplicas") or 0), "desired": int(st.get("desiredReplicas") or 0),
            "metrics": metrics, "inactive": f"{stuck.get('reason')}: {stuck.get('message', '')}" if stuck else ""}


def lines(pool: dict[str, int] | None, hpa: dict[str, Any] | None) -> list[str]:
    """status's `pool` line and, with an HPA, its `hpa` line (metrics as kubectl shows them: current/target)."""
    out = []
    if pool:
        out.append(f"pool       sandbox  desired {pool['desired']}  updated {pool['updated']}  "
                   f"ready {pool['ready']}  available {pool['available']}")
    if hpa and hpa.get("forbidden"):
        out.append("hpa        not readable: RBAC forbids listing horizontalpodautoscalers here")
    elif hpa:
        shown = "  ".join(f"{m['resource']} {'<unknown>' if m['current'] is None else str(m['current']) + '%'}"
                          f"/{m['target']}%" for m in hpa["metrics"])
        line = (f"hpa        {hpa['name']}  replicas {hpa['current']} (wants {hpa['desired']}, min {hpa['min']}, "
                f"max {hpa['max']})  {shown}")
        out.append(line + (f"  — not scaling: {hpa['inactive']}" if hpa["inactive"] else ""))
    return out
