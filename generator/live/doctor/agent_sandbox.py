"""`doctor`'s agent-sandbox rows, made only for sandbox.backend agent-sandbox: the CRDs the chart's objects and
a runtime's claims need are served, and a controller reconciles them (its leader Lease is renewed while doctor
watches, as for KubeRay's operator). The template's RuntimeClass and the warm pool's room on CPU nodes are the
RuntimeClass and sandbox rows every backend gets (the SandboxTemplate's pod is the sandbox pod)."""

from __future__ import annotations

from generator.live.client.kube import Kube
from generator.live.doctor.rows import FAIL, OK, WARN, Row, forbidden

GROUP, VERSION = "extensions.agents.x-k8s.io", "v1beta1"
CORE_GROUP = "agents.x-k8s.io"
NEED = {GROUP: ("sandboxtemplates", "sandboxwarmpools", "sandboxclaims"), CORE_GROUP: ("sandboxes",)}
LEADER_LEASE = "a3317529.agent-sandbox.x-k8s.io"  # agent-sandbox's LeaderElectionID (cmd/agent-sandbox-controller)
RECONCILE_WATCH = 5.0  # seconds a live leader surely renews in (controller-runtime renews every 2 s)
INSTALL = ("install agent-sandbox v1.0.x with its extensions: its CRDs and the controller run with --extensions "
           "(kubernetes-sigs/agent-sandbox's extensions.yaml)")


def _served(kube: Kube, group: str) -> set[str] | None:
    """The resources group/v1beta1 serves, or None when the API server does not serve that version."""
    from kubernetes.client.exceptions import ApiException

    try:
        found = kube.request("GET", f"/apis/{group}/{VERSION}")
    except ApiException as exc:
        if exc.status == 404:
            return None
        raise
    return {r["name"] for r in found.get("resources") or [] if "/" not in r["name"]}


def crds_row(kube: Kube) -> Row:
    missing = []
    for group, need in NEED.items():
        served = _served(kube, group) or set()
        missing += [f"{p}.{group}" for p in need if p not in served]
    if missing:
        return Row(FAIL, "agent-sandbox CRDs", f"{VERSION} of {', '.join(missing)} not served", INSTALL)
    return Row(OK, "agent-sandbox CRDs", f"{GROUP}/{VERSION} serves {', '.join(NEED[GROUP])}; "
                                         f"{CORE_GROUP}/{VERSION} serves sandboxes")


def reconciling_row(kube: Kube, watch: float = RECONCILE_WATCH) -> Row:
    """Whether an agent-sandbox controller reconciles: its leader Lease changes while this process watches it
    (judged on our own clock)."""
    import time

    from kubernetes.client.exceptions import ApiException

    check = "agent-sandbox controller"
    try:
        leases = kube.list("/apis/coordination.k8s.io/v1/leases", field_selector=f"metadata.name={LEADER_LEASE}")
    except ApiException as exc:
        if exc.status != 403:
            raise
        return Row(WARN, check, forbidden("list", "leases.coordination.k8s.io", None,
                                          "whether the controller reconciles is unknown"))
    if not leases:
        return Row(WARN, check, f"no leader Lease {LEADER_LEASE} in any namespace (leader election off?): whether "
                                "a controller reconciles is unknown",
                   "run agent-sandbox's controller with --leader-elect (its default) so this can be checked")
    lease = leases[0]
    ns = lease["metadata"]["namespace"]
    holder = (lease.get("spec") or {}).get("holderIdentity")
    if not holder:
        return Row(FAIL, check, f"leader Lease {ns}/{LEADER_LEASE} has no holder: no controller leads",
                   "start agent-sandbox's controller with --extensions: the warm pool does not fill and no "
                   "claim binds until one runs")
    seen, t0 = lease["metadata"]["resourceVersion"], time.monotonic()
    while time.monotonic() - t0 < watch:
        time.sleep(0.5)
        now = kube.request("GET", f"/apis/coordination.k8s.io/v1/namespaces/{ns}/leases/{LEADER_LEASE}")
        if now["metadata"]["resourceVersion"] != seen:
            return Row(OK, check, f"leader Lease {ns}/{LEADER_LEASE} renewed by {holder} "
                                  f"({time.monotonic() - t0:.1f}s after it was first read)")
    return Row(FAIL, check, f"leader Lease {ns}/{LEADER_LEASE} (holder {holder}) was not renewed in {watch:.0f}s "
                            "of watching: the controller is stopped or stuck",
               "check agent-sandbox's controller: the warm pool does not refill and no claim binds until it "
               "reconciles")


def rows(kube: Kube, values: dict) -> list[Row]:
    """The rows, for sandbox.backend agent-sandbox only."""
    if (values.get("sandbox") or {}).get("backend") != "agent-sandbox":
        return []
    crds = crds_row(kube)
    return [crds] if crds.mark == FAIL else [crds, reconciling_row(kube)]
