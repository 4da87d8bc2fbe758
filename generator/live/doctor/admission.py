"""`doctor`'s admission rows: PodSecurity admission (a server-side dry run of each rendered pod) and whether
the sandbox NetworkPolicy needs an enforcing CNI."""

from __future__ import annotations

import copy
from typing import Any

from generator.live.client.api_errors import status_message
from generator.live.client.kube import Kube
from generator.live.doctor.rows import FAIL, OK, WARN, Namespace, Row, forbidden


def _dry_run_pod(role: str, template: dict[str, Any], drop_priority_class: bool) -> dict[str, Any]:
    """A Pod made of a rendered pod template, for a server-side dry run."""
    spec: dict[str, Any] = copy.deepcopy(template.get("spec") or {})
    spec.pop("serviceAccountName", None)  # created by the release itself
    for c in spec.get("containers", []) + spec.get("initContainers", []):
        for part in ("limits", "requests"):
            block = (c.get("resources") or {}).get(part)
            if block:
                c["resources"][part] = {k: str(v) for k, v in block.items()}
    if drop_priority_class:
        spec.pop("priorityClassName", None)
    labels = (template.get("metadata") or {}).get("labels") or {}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"generateName": f"doctor-{role}-", "labels": labels},
            "spec": spec}


def pod_security_row(kube: Kube, ns: Namespace, templates: dict[str, dict[str, Any]], drop_priority_class: bool,
                     fabric: str = "") -> Row:
    """A server-side dry run of each rendered pod (drop_priority_class: the PriorityClass is not known to exist);
    `fabric`: what the fabric profile asks of PodSecurity, the remedy when a worker pod is refused."""
    from kubernetes.client.exceptions import ApiException

    if ns.deleting:
        return Row(WARN, "PodSecurity admission", f"namespace {ns.name} is being deleted: nothing can be created in it")
    if ns.exists is False:
        return Row(WARN, "PodSecurity admission", "namespace does not exist yet: the cluster's default level applies",
                   "create the namespace first to check its level")
    level = ((ns.obj.metadata.labels or {}).get("pod-security.kubernetes.io/enforce", "cluster default") if ns.obj
             else "unknown (the namespace cannot be read)")
    refused = []
    for role, tpl in templates.items():
        try:
            kube.core.create_namespaced_pod(ns.name, _dry_run_pod(role, tpl, drop_priority_class), dry_run="All")
        except ApiException as exc:
            status = exc.status
            if status not in (400, 403, 422):
                raise
            msg = status_message(exc)
            if status == 403 and 'cannot create resource "pods"' in str(msg):  # RBAC, not admission
                return Row(WARN, "PodSecurity admission",
                           forbidden("create", "pods", ns.name, "whether the namespace admits the pods is unknown "
                                     "(a server-side dry run needs the create verb)"))
            refused.append(f"{role}: {msg}")
    if refused:
        remedy = ("relax the namespace's pod-security.kubernetes.io/enforce label, or harden sandbox.security / "
                  "infra.security (profile: restricted)")
        if fabric and any(r.startswith(("trainer:", "inference:")) for r in refused):
            remedy = f"{fabric}; else {remedy}"  # what the profile asks first, the general remedy after it
        return Row(FAIL, "PodSecurity admission", f"enforce={level}: " + "; ".join(refused)[:600], remedy)
    return Row(OK, "PodSecurity admission",
               f"enforce={level}: admits all {len(templates)} pod templates (server-side dry run)")


def network_policy_rows(values: dict[str, Any]) -> list[Row]:
    if not (values.get("sandbox") or {}).get("networkPolicy", {}).get("enabled"):
        return []
    return [Row(WARN, "NetworkPolicy", "the sandbox NetworkPolicy is only enforced by a CNI that implements it",
                "use Calico, Cilium or another enforcing CNI; elsewhere the policy is an inert no-op")]
