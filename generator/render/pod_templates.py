"""Pod templates by role, read from rendered objects: the one reading of "which pod is which fleet".

Roles: sandbox (the pool's Deployment, or agent-sandbox's SandboxTemplate: the same pod), test (the `helm test`
Pod), submitter (a RayJob's submitterPodTemplate),
head and each worker group by its groupName (trainer, inference). `check --security`, `doctor` and the
chart tests all read pods through here.
"""

from __future__ import annotations

from typing import Any

Template = dict[str, Any]  # a pod template: {"metadata": ..., "spec": ...}


def pod_templates(docs: list[dict[str, Any]]) -> dict[str, Template]:
    """Pod templates (metadata and spec) by role, in the order the objects come."""
    out: dict[str, Template] = {}
    for d in docs:
        kind, spec = d.get("kind"), d.get("spec") or {}
        if kind == "Deployment":
            out["sandbox"] = spec["template"]
        elif kind == "SandboxTemplate":
            out["sandbox"] = spec["podTemplate"]
        elif kind == "Pod":
            out["test"] = {"metadata": d.get("metadata") or {}, "spec": spec}
        elif kind in ("RayJob", "RayCluster"):
            if kind == "RayJob" and spec.get("submitterPodTemplate"):
                out["submitter"] = spec["submitterPodTemplate"]
            cluster = spec.get("rayClusterSpec") if kind == "RayJob" else spec
            if cluster:
                out["head"] = cluster["headGroupSpec"]["template"]
                for g in cluster.get("workerGroupSpecs") or []:
                    out[g["groupName"]] = g["template"]
    return out


def pod_specs(docs: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Pod specs by role (the `spec` of each pod template)."""
    return {role: template["spec"] for role, template in pod_templates(docs).items()}
