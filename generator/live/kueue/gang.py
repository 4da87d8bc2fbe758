"""The gang as Kueue counts it: the pod sets Kueue's RayJob/RayCluster integration (v0.17.0,
pkg/controller/jobs/ray*) asks quota for — one for the head (1 pod), one per worker group (replicas ×
numOfHosts) and, for a RayJob in K8sJobMode, the submitter (1 pod) — each pod's requests as Kueue counts
them (limits where no request is set, init containers, overhead)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from generator.live.client.pod_requests import pod_requests
from generator.live.kueue.api import QUEUE_LABEL
from generator.quantity import fmt


@dataclass
class PodSet:
    name: str
    count: int
    spec: dict[str, Any]  # the pod spec (node selector, affinity, tolerations for the flavor match)
    per_pod: dict[str, float]  # what one pod requests

    def total(self, resource: str) -> float:
        return self.per_pod.get(resource, 0.0) * self.count


def queued_object(docs: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The rendered RayJob or RayCluster that carries the queue label (the one Kueue admits)."""
    return next((d for d in docs if d.get("kind") in ("RayJob", "RayCluster")
                 and QUEUE_LABEL in ((d.get("metadata") or {}).get("labels") or {})), None)


def pod_sets(obj: dict[str, Any]) -> list[PodSet]:
    """Kueue's pod sets of a RayJob or RayCluster (raycluster.BuildPodSets, rayjob addSubmitterPodSet)."""
    spec = obj.get("spec") or {}
    cluster = spec.get("rayClusterSpec") if obj.get("kind") == "RayJob" else spec
    cluster = cluster or {}
    out = []
    head = ((cluster.get("headGroupSpec") or {}).get("template") or {}).get("spec") or {}
    out.append(PodSet("head", 1, head, pod_requests(head)))
    for g in cluster.get("workerGroupSpecs") or []:
        count = int(g["replicas"]) if g.get("replicas") is not None else 1
        hosts = int(g.get("numOfHosts") or 1)
        worker = (g.get("template") or {}).get("spec") or {}
        out.append(PodSet(g["groupName"], count * max(hosts, 1), worker, pod_requests(worker)))
    if obj.get("kind") == "RayJob" and (spec.get("submissionMode") or "K8sJobMode") == "K8sJobMode":
        tpl = spec.get("submitterPodTemplate")
        sub = (tpl or {}).get("spec") or {}
        # KubeRay's default submitter (Kueue's getSubmitterTemplate) when the RayJob names none
        per = pod_requests(sub) if tpl else {"cpu": 0.5, "memory": 200 * 2**20}
        out.append(PodSet("submitter", 1, sub, per))
    return out


def gang_needs(sets: list[PodSet]) -> dict[str, float]:
    need: dict[str, float] = {}
    for ps in sets:
        for r in ps.per_pod:
            need[r] = need.get(r, 0.0) + ps.total(r)
    return need


def amounts(need: dict[str, float]) -> str:
    return ", ".join(f"{r} {fmt(r, v)}" for r, v in sorted(need.items()))


def gang_text(sets: list[PodSet]) -> str:
    """'5 pods (head 1, trainer 2, inference 1, submitter 1)'."""
    return (f"{sum(ps.count for ps in sets)} pods ("
            + ", ".join(f"{ps.name} {ps.count}" for ps in sets) + ")")
