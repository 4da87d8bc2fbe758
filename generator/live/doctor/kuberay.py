"""`doctor`'s KubeRay rows: its CRDs are served, an operator Deployment is ready, and an operator reconciles
(its leader Lease is renewed while doctor watches)."""

from __future__ import annotations

from generator.live.client.kube import RAY_GROUP, RAY_VERSION, Kube
from generator.live.doctor.rows import FAIL, OK, WARN, Row, forbidden


def kuberay_crds_row(kube: Kube) -> Row:
    served = kube.ray_resources()
    need = ("rayjobs", "rayclusters")
    missing = [p for p in need if p not in served]
    if missing:
        return Row(FAIL, "KubeRay CRDs", f"{RAY_GROUP}/{RAY_VERSION} does not serve {', '.join(missing)}",
                   "install the KubeRay operator and its CRDs (helm chart kuberay-operator)")
    return Row(OK, "KubeRay CRDs", f"{RAY_GROUP}/{RAY_VERSION} serves {', '.join(sorted(served & set(need)))}")


def kuberay_operator_row(kube: Kube) -> Row:
    from kubernetes.client.exceptions import ApiException

    from generator.pinned_tools import kuberay_range

    try:
        deployments = kube.apps.list_deployment_for_all_namespaces().items
    except ApiException as exc:
        if exc.status != 403:
            raise
        return Row(WARN, "KubeRay operator",
                   forbidden("list", "deployments", None, "whether a KubeRay operator runs is unknown"),
                   f"ask a cluster admin whether a KubeRay operator ({kuberay_range()}) watches this namespace")
    ops = [d for d in deployments if "kuberay-operator" in d.metadata.name
           or (d.metadata.labels or {}).get("app.kubernetes.io/name") == "kuberay-operator"]
    if not ops:
        return Row(WARN, "KubeRay operator",
                   "no in-cluster operator Deployment found (an operator running outside the cluster, as on the "
                   "playground, cannot be seen from the API)",
                   f"make sure a KubeRay operator ({kuberay_range()}) watches this namespace, or RayJobs will not "
                   "progress")
    ready = [d for d in ops if (d.status.ready_replicas or 0) > 0]
    d = ops[0]
    return Row(OK if ready else FAIL, "KubeRay operator",
               f"Deployment {d.metadata.namespace}/{d.metadata.name} {'ready' if ready else 'not ready'}",
               "" if ready else "check the operator's pods and logs")

LEADER_LEASE = "ray-operator-leader"  # KubeRay's LeaderElectionID (ray-operator main.go)

RECONCILE_WATCH = 5.0  # seconds a live leader surely renews in (controller-runtime renews every 2 s)


def kuberay_reconciling_row(kube: Kube, watch: float = RECONCILE_WATCH) -> Row:
    """Whether a KubeRay operator is reconciling: its leader Lease changes while this process watches
    it (judged on our own clock, never by comparing the holder's renewTime with ours)."""
    import time

    from kubernetes.client.exceptions import ApiException

    path = "/apis/coordination.k8s.io/v1/leases"
    try:
        leases = kube.list(path, field_selector=f"metadata.name={LEADER_LEASE}")
    except ApiException as exc:
        if exc.status != 403:
            raise
        return Row(WARN, "KubeRay reconciling", forbidden("list", "leases.coordination.k8s.io", None,
                                                          "whether the operator reconciles is unknown"))
    if not leases:
        return Row(WARN, "KubeRay reconciling",
                   f"no leader Lease {LEADER_LEASE} in any namespace (leader election off?): whether an operator "
                   "reconciles is unknown", "run the KubeRay operator with --enable-leader-election (its chart's "
                   "default) so this can be checked")
    lease = leases[0]
    where = f"{lease['metadata']['namespace']}/{LEADER_LEASE}"
    holder = (lease.get("spec") or {}).get("holderIdentity")
    if not holder:
        return Row(FAIL, "KubeRay reconciling", f"leader Lease {where} has no holder: no operator leads",
                   "start the KubeRay operator; RayJobs and RayClusters do not progress, and their finalizers "
                   "(ray.io/rayjob-finalizer) are not removed, until one runs")
    seen, t0 = lease["metadata"]["resourceVersion"], time.monotonic()
    while time.monotonic() - t0 < watch:
        time.sleep(0.5)
        now = kube.request("GET", f"/apis/coordination.k8s.io/v1/namespaces/{lease['metadata']['namespace']}"
                                  f"/leases/{LEADER_LEASE}")
        if now["metadata"]["resourceVersion"] != seen:
            return Row(OK, "KubeRay reconciling", f"leader Lease {where} renewed by {holder} "
                                                  f"({time.monotonic() - t0:.1f}s after it was first read)")
    return Row(FAIL, "KubeRay reconciling",
               f"leader Lease {where} (holder {holder}) was not renewed in {watch:.0f}s of watching: the operator is "
               "stopped or stuck", "check the KubeRay operator's pods and logs; RayJobs and RayClusters do not "
               "progress, and their finalizers (ray.io/rayjob-finalizer) are not removed, until it reconciles")
