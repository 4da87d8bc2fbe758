"""Removing a release: helm uninstall under the run lock, then waiting until none of its objects is left —
Kueue's Workloads of its queued RayJob or RayCluster included (they carry no release label: found by the
object's UID; the garbage collector removes them with their owner). After a rollback, the Workloads of
objects it removed are waited for the same way. With sandbox.backend agent-sandbox, the SandboxClaims of
the release's sandboxes are the runtime's, not Helm's: they are deleted after the uninstall, and while it is waited
for (each takes its Sandbox and pod with it), and waited for too."""

from __future__ import annotations

import sys
import time

from generator.errors import CheckFailed
from generator.live.changes import remnants
from generator.live.changes.guard import RAY_PLURALS, impact, manifest_objects
from generator.live.client.api_errors import is_forbidden
from generator.live.client.kube import INSTANCE, Kube
from generator.live.client.wait import wait_until
from generator.live.helm.ownership import require_ours, require_secret_storage
from generator.live.helm.records import live_manifest, release_records
from generator.live.helm.resolve import ReleaseNotFound, resolve
from generator.live.helm.run_lock import RunLock, clear_left_behind
from generator.live.helm.runner import Helm
from generator.live.state import queueing
from generator.live.state.controllers import LeaderWatch
from generator.live.state.warm_pool import CLAIMS, SANDBOXES, pool_of

KEEP = ("helm.sh/resource-policy", "keep")  # what the chart's claims carry (charts/dockyard/templates/ray/pvc.yaml)


def readded_kept_claims(kube: Kube, ns: str, current: str | None, target: str | None) -> list[str]:
    """The PersistentVolumeClaims the target manifest holds and the current one does not, which exist: claims Helm
    kept when a revision dropped them. `helm rollback` cannot take them back (unlike an upgrade it adopts nothing
    the current revision does not list, and fails half-way), so a rollback that would is refused before it runs."""
    from kubernetes.client.exceptions import ApiException

    have = {o["metadata"]["name"] for o in manifest_objects(current or "") if o.get("kind") == "PersistentVolumeClaim"}
    out = []
    for obj in manifest_objects(target or ""):
        name = obj["metadata"]["name"]
        if obj.get("kind") != "PersistentVolumeClaim" or name in have:
            continue
        try:
            kube.core.read_namespaced_persistent_volume_claim(name, ns)
        except ApiException as exc:
            if exc.status == 404:
                continue
            raise
        out.append(name)
    return out


def warm_pools(manifest: str | None) -> set[str]:
    """The names of the manifest's SandboxWarmPools (sandbox.backend agent-sandbox)."""
    return {o["metadata"]["name"] for o in manifest_objects(manifest or "") if o.get("kind") == "SandboxWarmPool"}


def release_claims(kube: Kube, ns: str, release: str, pools: set[str]) -> list[str]:
    """The release's SandboxClaims in `ns`: those naming one of its warm pools (`pools`), and the owners of the
    Sandboxes made from its template (their pod template carries the release's label), which finds a claim whose
    pool an earlier revision had (a switch back to the pool backend). Nothing where agent-sandbox is not served;
    a Sandbox list RBAC refuses leaves the claims found by pool."""
    from kubernetes.client.exceptions import ApiException

    try:
        claims = {c["metadata"]["name"]: c for c in kube.list(CLAIMS.format(ns=ns))}
    except ApiException as exc:
        if exc.status in (403, 404):  # 404: agent-sandbox is not served here, so no claim can exist
            return []
        raise
    names = {n for n, c in claims.items() if pool_of(c) in pools}
    try:
        for sb in kube.list(SANDBOXES.format(ns=ns)):
            labels = (((sb.get("spec") or {}).get("podTemplate") or {}).get("metadata") or {}).get("labels") or {}
            if labels.get(INSTANCE) == release and labels.get("app.kubernetes.io/component") == "sandbox":
                # a Sandbox may outlive its claim (already deleted, its garbage collection pending)
                names |= {o["name"] for o in sb["metadata"].get("ownerReferences") or []
                          if o.get("kind") == "SandboxClaim" and o["name"] in claims}
    except ApiException as exc:
        if exc.status not in (403, 404):
            raise
    return sorted(names)


class ClaimSweep:
    """Deletes the release's claims each time it is called, a claim made after the uninstall included (background:
    the garbage collector removes each one's Sandbox and pod, which `leftovers` waits for by the pods' release
    label); says each once. Returns the claims still there."""

    def __init__(self, kube: Kube, ns: str, release: str, pools: set[str]) -> None:
        self.kube, self.ns, self.release, self.pools = kube, ns, release, pools
        self.deleted: set[str] = set()

    def __call__(self) -> list[str]:
        from kubernetes.client.exceptions import ApiException

        names = release_claims(self.kube, self.ns, self.release, self.pools)
        for name in names:
            if name in self.deleted:
                continue
            try:
                self.kube.request("DELETE", f"{CLAIMS.format(ns=self.ns)}/{name}")
            except ApiException as exc:
                if exc.status != 404:
                    raise
            self.deleted.add(name)
            print(f"{self.release}: deleted SandboxClaim {name} (its sandbox and pod go with it)", file=sys.stderr,
                  flush=True)
        return names


def queued_objects(kube: Kube, ns: str, manifest: str | None) -> dict[str, tuple[str, str]]:
    """{UID: (plural, name)} of the manifest's RayJobs and RayClusters that carry Kueue's queue label, as they
    are live (one read each; none for a release without launch.queue)."""
    out = {}
    for obj in manifest_objects(manifest or ""):
        if obj.get("kind") in RAY_PLURALS and queueing.queue_name(obj):
            live = kube.get_ray(RAY_PLURALS[obj["kind"]], ns, obj["metadata"]["name"])
            if live is not None:
                out[live["metadata"]["uid"]] = (RAY_PLURALS[obj["kind"]], obj["metadata"]["name"])
    return out


def workloads_left(kube: Kube, ns: str, uids: dict[str, tuple[str, str]] | list[str]) -> tuple[list[str], str | None]:
    """(the Workloads Kueue made for these object UIDs that still exist, None) — one list per UID —, or
    ([], why) when Kueue's Workloads cannot be read: not checked, never "none left"."""
    found, why = queueing.workloads_of(kube, ns, list(uids))
    return [f"{queueing.WORKLOADS}/{w['metadata']['name']}" for w in found or []], why


def leftovers(kube: Kube, release: str, ns: str, uids: dict[str, tuple[str, str]] | None = None) -> list[str]:
    """Every object of the release still present (by instance label), pods included, and the Workloads of
    its queued objects (`uids`, from queued_objects before they were deleted)."""
    from kubernetes import client

    sel = f"{INSTANCE}={release}"
    out: list[str] = []
    net = client.NetworkingV1Api(kube.api)
    pol = client.PolicyV1Api(kube.api)
    listings = {
        "deployments": lambda: kube.apps.list_namespaced_deployment(ns, label_selector=sel).items,
        "services": lambda: kube.core.list_namespaced_service(ns, label_selector=sel).items,
        "networkpolicies": lambda: net.list_namespaced_network_policy(ns, label_selector=sel).items,
        "poddisruptionbudgets": lambda: pol.list_namespaced_pod_disruption_budget(ns, label_selector=sel).items,
        "horizontalpodautoscalers": lambda: client.AutoscalingV2Api(kube.api).list_namespaced_horizontal_pod_autoscaler(
            ns, label_selector=sel).items,
        "configmaps": lambda: kube.core.list_namespaced_config_map(ns, label_selector=sel).items,
        "serviceaccounts": lambda: kube.core.list_namespaced_service_account(ns, label_selector=sel).items,
        "pods": lambda: kube.core.list_namespaced_pod(ns, label_selector=sel).items,
    }
    for kind, fn in listings.items():
        out += [f"{kind}/{o.metadata.name}" for o in fn()]
    for plural in ("rayclusters", "rayjobs"):
        out += [f"{plural}/{o['metadata']['name']}" for o in kube.list_ray(plural, ns, sel)]
    return out + (workloads_left(kube, ns, uids)[0] if uids else [])


def finalizer_holds(kube: Kube, release: str, ns: str) -> list[str]:
    """The release's RayJobs and RayClusters that are being deleted but held by a finalizer, and who
    removes it: what an uninstall waits on when the KubeRay operator is not reconciling."""
    out = []
    for plural, kind in (("rayjobs", "RayJob"), ("rayclusters", "RayCluster")):
        for o in kube.list_ray(plural, ns, f"{INSTANCE}={release}"):
            meta = o["metadata"]
            for fin in meta.get("finalizers") or [] if meta.get("deletionTimestamp") else []:
                who = ("only the KubeRay operator removes: is it running and reconciling? (`dockyard-k8s doctor` "
                       "checks)") if fin.startswith("ray.io/") else "the controller that added it removes"
                out.append(f"{kind} {meta['name']} is held by the finalizer {fin} (deleted at "
                           f"{meta['deletionTimestamp']}), which {who}")
    return out


def _why_held(kube: Kube, release: str, ns: str) -> str:
    try:
        lines = finalizer_holds(kube, release, ns)
    except Exception as exc:  # the reason is a bonus: never hide the error it explains
        from generator.live.client.api_errors import describe_error

        return f"\n  (what holds it could not be read: {describe_error(exc) or type(exc).__name__})"
    return "".join(f"\n  {line}" for line in lines)


def remove(kube: Kube, name: str, ns: str, manifest: str | None, deadline: float) -> str:
    """`helm uninstall` the release, then wait until nothing of it is left: its objects, pods included, and
    the Workloads Kueue made for its queued RayJobs and RayClusters (queued_objects of `manifest`, its live
    manifest, read here before the uninstall deletes them). Returns '' when everything was checked, else
    'Workloads not checked (why)'. CheckFailed names what is left and what holds it. `uninstall` and
    `smoke` both remove a release this way; the caller holds the run lock if it takes one."""
    uids = queued_objects(kube, ns, manifest)
    pools = warm_pools(manifest)
    try:
        Helm(kube, deadline=deadline).uninstall(name, ns, timeout=max(1.0, deadline - time.monotonic()))
    except CheckFailed as exc:
        again = ("" if release_records(kube, name, ns) else  # helm drops its record even when its wait fails
                 f"\n  Helm has dropped the release record: `dockyard-k8s uninstall {name} -n {ns}` run again once "
                 "that is resolved waits for what is left")
        raise CheckFailed(f"{exc}{_why_held(kube, name, ns)}{again}") from None
    claims = ClaimSweep(kube, ns, name, pools)
    claims()  # after the pool is gone: no claim takes a new sandbox
    unchecked: list[str] = []
    leaders = LeaderWatch(kube)

    def clear() -> bool:
        for line in leaders.poll():  # a controller gone is said when seen, not at the timeout
            print(f"{name}: {line}", file=sys.stderr, flush=True)
        if claims() or leftovers(kube, name, ns):
            return False
        names, why = workloads_left(kube, ns, uids) if uids else ([], None)
        unchecked[:] = [why] if why else []
        return not names

    if not wait_until(clear, max(1.0, deadline - time.monotonic())):
        remain = leftovers(kube, name, ns, uids) + [f"sandboxclaims/{c}" for c in claims()]
        raise CheckFailed(f"release {name} uninstalled, but objects remain: {', '.join(remain)}"
                          + _why_held(kube, name, ns) + _why_workloads(kube, ns, uids) + leaders.held())
    return f"Workloads not checked ({unchecked[0]})" if unchecked else ""


def uninstall(kubeconfig: str | None, context: str | None, release: str | None, namespace: str | None,
              timeout: float) -> None:
    """Uninstall the release (the only one in scope when unnamed) and wait until nothing of it is left."""
    t0 = time.monotonic()
    deadline = t0 + timeout
    kube = Kube(kubeconfig, context)
    kube.deadline = deadline
    try:
        name, ns, _ = resolve(kube, release, namespace)
    except ReleaseNotFound as gone:
        # already gone: a removal killed after its helm finished may have left its run lock behind
        cleared = clear_left_behind(kube, release, gone.namespace, "uninstall") if release else []
        for line in cleared:
            print(f"release {release} is already uninstalled; {line}")
        # an uninstall stopped at its timeout: the record is gone, objects of it are still going
        finished = (remnants.finish(kube, release, gone.namespace, deadline,
                                    lambda ns: ClaimSweep(kube, ns, release, set())) if release else None)
        if not cleared and finished is None:
            raise  # nothing of it, not even a lock: a name never installed (or long gone), as helm says it
        for ns in finished or []:
            _done(kube, release or "", ns, t0, "")
        return
    print(f"uninstall {name} from namespace {ns}, {kube.target()}", file=sys.stderr, flush=True)
    with RunLock(kube, ns, name, "uninstall", deadline=deadline):
        require_secret_storage(kube, name, ns, "uninstall")
        records = release_records(kube, name, ns)
        require_ours(records, name, ns, "uninstall")
        # uninstall is the request to remove: it never refuses, but names the running training it ends
        for line in impact(kube, ns, live_manifest(records), "").lost:
            print(f"uninstall ends running training: {line}", flush=True)
        unchecked = remove(kube, name, ns, live_manifest(records), deadline)
    _done(kube, name, ns, t0, unchecked)


def _done(kube: Kube, name: str, ns: str, t0: float, unchecked: str) -> None:
    kept = kept_claims(kube, name, ns)
    print(f"release {name} uninstalled from {ns}: nothing left{' but the kept claims' if kept else ''} "
          f"({time.monotonic() - t0:.1f}s)" + (f"; {unchecked}" if unchecked else ""))
    for line in kept:
        print(line)


def kept_claims(kube: Kube, release: str, ns: str) -> list[str]:
    """A line for each PersistentVolumeClaim of the release that Helm kept (resource-policy keep: the claims
    infra.storage has the chart create), saying why it is there and how to delete it."""
    sel = f"{INSTANCE}={release}"
    lines = []
    try:
        claims = kube.core.list_namespaced_persistent_volume_claim(ns, label_selector=sel).items
    except Exception as exc:  # the release is gone either way: a claim list RBAC refuses is a note, not a failure
        if not is_forbidden(exc):
            raise
        print(f"note: listing PersistentVolumeClaims in {ns} is forbidden for you: claims the release kept "
              f"(infra.storage) are not named here; `kubectl get pvc -n {ns} -l {sel}` with more rights lists them",
              file=sys.stderr)
        return []
    for pvc in claims:
        if (pvc.metadata.annotations or {}).get(KEEP[0]) != KEEP[1]:
            continue
        size = ((pvc.status.capacity or {}).get("storage") or (pvc.spec.resources.requests or {}).get("storage")
                or "?")
        lines.append(f"kept PersistentVolumeClaim {pvc.metadata.name} ({size}, {pvc.status.phase or '?'}; "
                     f"{KEEP[0]}: {KEEP[1]}): its data outlives the release and the next run of {release} in {ns} "
                     f"mounts it again; to delete it and its data: kubectl delete pvc {pvc.metadata.name} -n {ns}")
    return lines


def _why_workloads(kube: Kube, ns: str, uids: dict[str, tuple[str, str]]) -> str:
    """What holds a Workload whose owner is gone: Kueue's finalizer (only a running Kueue removes it)."""
    lines = []
    found, _ = queueing.workloads_of(kube, ns, list(uids)) if uids else ([], None)
    for w in found or []:
        meta = w["metadata"]
        fins = ", ".join(meta.get("finalizers") or []) or "none"
        lines.append(f"\n  {queueing.WORKLOADS}/{meta['name']} (of {'/'.join(uids.get(_job_uid(w), ('?', '?')))}) "
                     f"{'is being deleted' if meta.get('deletionTimestamp') else 'is not deleted yet'}, finalizers: "
                     f"{fins}: Kueue's controller removes its finalizer, the garbage collector the Workload "
                     "(is Kueue running? is kube-controller-manager?)")
    return "".join(lines)


def _job_uid(workload: dict) -> str:
    return (workload["metadata"].get("labels") or {}).get(queueing.JOB_UID_LABEL, "")


def settle_workloads(kube: Kube, ns: str, before: dict[str, tuple[str, str]], timeout: float) -> str:
    """After a rollback: no Workload of the queued objects `before` is left behind. One whose object is gone
    (deleted, or recreated under a new UID by --replace) goes with it (the garbage collector): waited for.
    (An object that stays but leaves the queue is refused by the guard: guard.Impact.unqueued.) Returns ''
    when checked (or nothing had to be), else 'Workloads not checked (why)'."""
    gone = []
    for uid, (plural, name) in before.items():
        live = kube.get_ray(plural, ns, name)
        if live is None or live["metadata"].get("uid") != uid:
            gone.append(uid)
    if not gone:
        return ""
    unchecked: list[str] = []

    def clear() -> bool:
        names, why = workloads_left(kube, ns, gone)
        unchecked[:] = [why] if why else []
        return not names

    if not wait_until(clear, timeout):
        raise CheckFailed(f"Workloads left behind: {', '.join(workloads_left(kube, ns, gone)[0])}"
                          + _why_workloads(kube, ns, {u: before[u] for u in gone}))
    return f"Workloads not checked ({unchecked[0]})" if unchecked else ""
