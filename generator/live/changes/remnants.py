"""A release whose Helm record is gone but whose objects remain. Helm drops the record even when its uninstall's
wait fails, so an `uninstall` stopped at its timeout (a RayJob held by KubeRay's finalizer while the operator was
down) leaves objects with no record to find them by. `uninstall` run again finishes it: it finds them by the labels
the chart puts on every object (instance, name and part-of: never another chart's objects of the same release
name), waits until they are gone (deletes the release's SandboxClaims, as a first uninstall does), and ends 0
when nothing is left, else 1 naming each object left and what holds it: at the timeout, or at once when all that
is left is objects nothing will remove (not being deleted, owned by nothing: a failed `helm test` pod). Nothing
found: the caller's "not found"."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import Any

from generator.errors import CheckFailed
from generator.live.client.api_errors import api_status
from generator.live.client.kube import INSTANCE, Kube
from generator.live.client.wait import wait_until
from generator.live.helm.ownership import CHART_NAME
from generator.live.helm.run_lock import RunLock
from generator.live.state import queueing
from generator.live.state.controllers import LeaderWatch

# (kind as said, API path prefix, plural): what the chart renders and what KubeRay makes of it, pods included.
# Not the PersistentVolumeClaims: Helm keeps them on purpose (resource-policy keep). Not KubeRay's submitter Job
# either: it carries only KubeRay's labels (its pod carries the chart's, from submitterPodTemplate, and is listed).
KINDS = (("Deployment", "/apis/apps/v1", "deployments"), ("Service", "/api/v1", "services"),
         ("NetworkPolicy", "/apis/networking.k8s.io/v1", "networkpolicies"),
         ("PodDisruptionBudget", "/apis/policy/v1", "poddisruptionbudgets"),
         ("HorizontalPodAutoscaler", "/apis/autoscaling/v2", "horizontalpodautoscalers"),
         ("ConfigMap", "/api/v1", "configmaps"), ("ServiceAccount", "/api/v1", "serviceaccounts"),
         ("Role", "/apis/rbac.authorization.k8s.io/v1", "roles"),
         ("RoleBinding", "/apis/rbac.authorization.k8s.io/v1", "rolebindings"),
         ("ResourceQuota", "/api/v1", "resourcequotas"), ("LimitRange", "/api/v1", "limitranges"),
         ("SandboxTemplate", "/apis/extensions.agents.x-k8s.io/v1beta1", "sandboxtemplates"),
         ("SandboxWarmPool", "/apis/extensions.agents.x-k8s.io/v1beta1", "sandboxwarmpools"),
         ("Pod", "/api/v1", "pods"), ("RayCluster", "/apis/ray.io/v1", "rayclusters"),
         ("RayJob", "/apis/ray.io/v1", "rayjobs"))


def selector(release: str) -> str:
    """The labels every object of the chart carries (charts/dockyard/templates/_helpers.tpl, dockyard.labels)."""
    return f"{INSTANCE}={release},app.kubernetes.io/name={CHART_NAME},app.kubernetes.io/part-of=dockyard"


def listed(kube: Kube, release: str, namespace: str | None) -> list[tuple[str, dict[str, Any]]]:
    """(kind, object) of each object of the release in `namespace` (None: every namespace). A kind the cluster
    does not serve (no KubeRay, no agent-sandbox) has none."""
    scope = f"/namespaces/{namespace}" if namespace else ""
    out = []
    for kind, prefix, plural in KINDS:
        try:
            items = kube.list(f"{prefix}{scope}/{plural}", label_selector=selector(release))
        except Exception as exc:
            if api_status(exc) == 404:
                continue
            raise
        out += [(kind, o) for o in items]
    return out


def why(kind: str, obj: dict[str, Any]) -> str:
    """What an object left behind waits on, in a reader's words: its finalizers, its owner, or nothing."""
    meta = obj.get("metadata") or {}
    name = f"{kind} {meta.get('namespace', '?')}/{meta.get('name', '?')}"
    fins = meta.get("finalizers") or []
    owners = ", ".join(f"{o.get('kind')} {o.get('name')}" for o in meta.get("ownerReferences") or [])
    if meta.get("deletionTimestamp"):
        said = f"{name} is being deleted (since {meta['deletionTimestamp']})"
        if fins:
            who = ("only the KubeRay operator removes " if any(f.startswith("ray.io/") for f in fins)
                   else "the controller that added them removes ")
            return (f"{said}, held by the finalizer{'s' if len(fins) > 1 else ''} {', '.join(fins)}, which {who}"
                    "them: is it running? (`dockyard-k8s doctor` checks KubeRay's)")
        return f"{said}: its kubelet ends it" if kind == "Pod" else said
    if owners:
        return f"{name} is owned by {owners}: the garbage collector removes it once its owner is gone"
    return (f"{name} is not being deleted and nothing owns it: delete it with "
            f"`kubectl delete {kind.lower()} {meta.get('name', '?')} -n {meta.get('namespace', '?')}`")


def stranded(obj: dict[str, Any]) -> bool:
    """Whether nothing will ever remove the object: not being deleted and owned by nothing (a failed `helm test`
    pod, which `helm uninstall` leaves: its hook-delete-policy deletes it only on success or the next test)."""
    meta = obj.get("metadata") or {}
    return not meta.get("deletionTimestamp") and not meta.get("ownerReferences")


def queued_uids(found: list[tuple[str, dict[str, Any]]]) -> dict[str, tuple[str, str]]:
    """{UID: (plural, name)} of the RayJobs and RayClusters found that carry Kueue's queue label: their Workloads
    go with them (the garbage collector), and are waited for the same way."""
    return {o["metadata"]["uid"]: (f"{kind.lower()}s", o["metadata"]["name"]) for kind, o in found
            if kind in ("RayJob", "RayCluster") and queueing.queue_name(o)}


def finish(kube: Kube, release: str, namespace: str | None, deadline: float,
           sweep: Callable[[str], Callable[[], list[str]]]) -> list[str] | None:
    """None when no object of the release exists (in `namespace`, else in any namespace the caller may list);
    else waits until none is left (bounded by `deadline`) and returns the namespaces it finished in. CheckFailed
    names each object left and what holds it, at once when nothing will remove what is left. `sweep(ns)`:
    teardown's ClaimSweep of the release's SandboxClaims there (deletes them; returns those still there)."""
    try:
        found = listed(kube, release, namespace)
    except Exception as exc:
        if namespace or api_status(exc) != 403:
            raise
        namespace = kube.context_namespace or "default"  # listing every namespace is forbidden: our own
        found = listed(kube, release, namespace)
    spaces = sorted({o["metadata"]["namespace"] for _, o in found})
    if not spaces:
        return None
    for ns in spaces:
        here = [(k, o) for k, o in found if o["metadata"]["namespace"] == ns]
        print(f"release {release} has no Helm record in {ns} (uninstalled), but {len(here)} object(s) of it remain: "
              "waiting until they are gone", file=sys.stderr, flush=True)
        with RunLock(kube, ns, release, "uninstall", deadline=deadline):  # no run of the same name meanwhile
            _wait(kube, release, ns, queued_uids(here), deadline, sweep(ns))
    return spaces


def _wait(kube: Kube, release: str, ns: str, uids: dict[str, tuple[str, str]], deadline: float,
          claims: Callable[[], list[str]]) -> None:
    def workloads() -> list[str]:  # an unreadable Workload list (Kueue not served) holds nothing here
        return [f"{queueing.WORKLOADS}/{w['metadata']['name']}"
                for w in queueing.workloads_of(kube, ns, list(uids))[0] or []] if uids else []

    leaders = LeaderWatch(kube)
    left: list[tuple[str, dict[str, Any]]] = []
    pending: list[str] = []  # the SandboxClaims and Workloads still there

    def settled() -> bool:
        """Nothing left, or nothing left that anything will remove: waiting longer changes nothing."""
        for line in leaders.poll():
            print(f"{release}: {line}", file=sys.stderr, flush=True)
        left[:] = listed(kube, release, ns)
        pending[:] = [f"SandboxClaim {ns}/{c} is not gone yet" for c in claims()] + [
            f"{w} (its owner is gone: Kueue's finalizer or the garbage collector holds it)" for w in workloads()]
        return not pending and all(stranded(o) for _, o in left)

    wait_until(settled, max(1.0, deadline - time.monotonic()))
    if not left and not pending:
        return
    lines = [why(k, o) for k, o in left] + pending
    if not pending and all(stranded(o) for _, o in left):  # stopped at once, not at the timeout
        raise CheckFailed(f"release {release} has no Helm record in {ns} (uninstalled), but objects of it remain "
                          "that nothing will remove:" + "".join(f"\n  {line}" for line in lines)
                          + "\nonce they are deleted, nothing of the release is left")
    raise CheckFailed(f"release {release} has no Helm record in {ns} (uninstalled), but objects of it remain after "
                      "the timeout:" + "".join(f"\n  {line}" for line in lines) + leaders.held()
                      + f"\nrun `dockyard-k8s uninstall {release} -n {ns}` again once that is resolved")
