"""One read of a release's state: Helm record, RayJob, RayCluster, and a row per fleet.

A snapshot costs a bounded number of API calls, whatever the number of pods: five lists (the Helm
records, RayJobs, pods and Deployments by the release's labels, and every RayCluster of the namespace,
unfiltered: a RayJob's RayCluster is the one KubeRay names in the RayJob's status.rayClusterName, so it is
picked from the list by that name or the release's label), and two more only while a fleet has fewer pods than
it wants and none of them says why: the Warning events (by a field selector) that say why its owner made none,
and, for the sandbox fleet, its ReplicaSets (by the release's labels), the owners those events name. A release
whose every fleet has its pods (a running job) never needs them: the pods already say everything.
`status`, `run --wait` and `dev` all read through it. A job queued with Kueue (the `kueue.x-k8s.io/queue-name`
label on the RayJob, or the RayCluster in bringup mode) costs one more list (its Workload by UID), plus one read
while it is not admitted (the LocalQueue) or after it was preempted (the preemptor): queueing.py. A release that
renders a sandbox HorizontalPodAutoscaler costs one more list (pool.py); a pod waiting for a node that mounts a
claim, one more (the claims' ProvisioningFailed events: claims.py).
Objects are read as plain JSON dicts (Kube.list), not the client's typed model classes (pydantic models in
kubernetes 37): that keeps `status` free of the typed API modules' import cost.
"""

from __future__ import annotations

from collections import Counter
from datetime import UTC, datetime

from generator.live.client.kube import INSTANCE, Kube, Objects
from generator.live.helm.records import labels, release_records
from generator.live.state import driver_log, pool, queueing, warm_pool
from generator.live.state.claims import FailedClaim, event_time, failed_claims
from generator.live.state.job_progress import JobProgress
from generator.live.state.pods import FLEETS, fleet_of, pod_gpus, pod_ready, pod_reason
from generator.live.state.pulls import FailedPull, failed_pulls
from generator.live.state.record import Record, as_dict, factory

TYPE_CHECKING = False  # typing's import costs ~3 ms at start-up: for type checkers only
if TYPE_CHECKING:
    from typing import Any


QUEUED = "queued by Kueue"  # the reason of a fleet Kueue holds back


class Fleet(Record):
    fleet: str
    desired: int = 0
    ready: int = 0
    pods: int = 0
    gpus_requested: int = 0
    gpus_allocated: int = 0
    nodes: list[str] = factory(list)
    reason: str = ""

    @property
    def is_ready(self) -> bool:
        return self.ready >= self.desired


class Snapshot(Record):
    release: str
    namespace: str
    revision: int | None = None
    release_status: str | None = None
    updated: str | None = None
    mode: str | None = None  # rayjob | bringup | attach (what exists)
    rayjob: dict[str, Any] | None = None
    raycluster: dict[str, Any] | None = None
    fleets: dict[str, Fleet] = factory(dict)
    queue: queueing.Queue | None = None  # Kueue's view of a job that carries the queue label, else None
    calls: int = 0
    namespace_deleting: str | None = None  # set by `status`: why the namespace is Terminating
    pool: dict[str, int] | None = None  # the sandbox Deployment's replica counts (pool.py)
    hpa: dict[str, Any] | None = None  # its HorizontalPodAutoscaler, read only when the release renders one
    warm_pool: dict[str, Any] | None = None  # agent-sandbox's warm pool and claims (warm_pool.py), likewise
    pulls: list[FailedPull] = factory(list)  # containers whose image pull failed (pulls.py)
    claims: list[FailedClaim] = factory(list)  # claims a waiting pod mounts that fail to provision
    # where the job's progress is read from (job_progress.py): the RayJob's current job, its head's Service and IP
    job_id: str | None = None
    head_service: str | None = None
    head_ip: str | None = None  # the newest live head pod of the current RayCluster
    progress: JobProgress | None = None  # read by `status` with one more request, not by take()

    # end states --------------------------------------------------------------------------------
    def ray_fleets(self) -> list[Fleet]:
        return [self.fleets[f] for f in ("head", "trainer", "inference") if f in self.fleets]

    def queued(self) -> bool:
        """Held by Kueue: queued (or preempted and requeued), suspended, so nothing of the gang runs."""
        return bool(self.queue and self.queue.waits)

    def ready(self) -> bool:
        sandbox = self.fleets.get("sandbox")
        if sandbox is None or not sandbox.is_ready:
            return False
        if self.mode == "attach" or self.mode is None:
            return self.mode == "attach"
        if not self.raycluster or self.raycluster.get("state") != "ready":
            return False
        if not all(f.is_ready for f in self.ray_fleets()):
            return False
        if self.mode == "rayjob":
            return (self.rayjob or {}).get("deploymentStatus") in ("Running", "Complete")
        return True

    def failure(self) -> str | None:
        """A terminal failure worth stopping a wait for."""
        job = self.rayjob or {}
        if job.get("deploymentStatus") in ("Failed", "ValidationFailed"):
            why = job.get("message") or job.get("reason") or "no message"
            return f"RayJob {job.get('name')} {job.get('deploymentStatus')}: {why}"
        # a failed attempt KubeRay retries (Retrying, launch.backoffLimit) is not the end of the job
        if job.get("jobStatus") in ("FAILED", "STOPPED") and job.get("deploymentStatus") != "Retrying":
            line = f"RayJob {job.get('name')} job status {job.get('jobStatus')}: {job.get('message') or ''}"
            return line.rstrip(": ")
        return None

    def not_ready_reasons(self) -> list[str]:
        out = []
        for f in self.fleets.values():
            if not f.is_ready or f.reason:
                out.append(f"{f.fleet} {f.ready}/{f.desired}: {f.reason or 'not ready yet'}")
        return out

    def summary_line(self) -> str:
        parts = []
        for name in FLEETS:
            f = self.fleets.get(name)
            if f is None or (name == "submitter" and f.pods == 0):
                continue
            part = f"{name} {f.ready}/{f.desired}"
            if f.reason and not f.is_ready and not f.reason.startswith(QUEUED):  # the kueue part says why
                part += f" ({f.reason})"
            parts.append(part)
        if self.queue:
            parts.append("kueue: " + queueing.line(self.queue))
        if self.rayjob:
            parts.append(f"rayjob {self.rayjob.get('deploymentStatus') or 'New'}")
        if self.raycluster:
            parts.append(f"raycluster {self.raycluster.get('state') or 'pending'}")
        elif self.mode in ("rayjob", "bringup"):
            parts.append("raycluster -")
        return " · ".join(parts) or "no objects yet"

    def to_dict(self) -> dict[str, Any]:
        out = as_dict(self)
        out["fleets"] = [as_dict(f) | {"ready_all": f.is_ready} for f in self.fleets.values()]
        out["ready"] = self.ready()
        out["queue"] = self.queue.to_dict() if self.queue else None
        out["progress"] = self.progress.to_dict() if self.progress else None
        return out


def take(kube: Kube, release: str, namespace: str, records: list[Any] | None = None) -> Snapshot:
    """Read the release: its Helm record, RayJob, RayCluster and pods, in five calls; Warning events (and the
    sandbox's ReplicaSets) in one or two more only when a fleet misses pods no pod explains."""
    start = kube.calls
    snap = Snapshot(release=release, namespace=namespace)
    sel = f"{INSTANCE}={release}"
    if records is None:
        records = release_records(kube, release, namespace)
    _read_record(snap, records)
    jobs = kube.list_ray("rayjobs", namespace, sel)
    clusters = kube.list_ray("rayclusters", namespace)
    pods = kube.list(f"/api/v1/namespaces/{namespace}/pods", label_selector=sel)
    deployments = kube.list(f"/apis/apps/v1/namespaces/{namespace}/deployments", label_selector=sel)

    ray_spec = _read_ray(snap, jobs, clusters)
    queued = _queued(snap, jobs, clusters)
    if queued is not None:  # only a labelled job costs Kueue reads
        snap.queue = queueing.read(kube, namespace, queued[1], queued[0])
    per_pod_gpu = _desired(snap, ray_spec, deployments, bool(records))
    if snap.pool is not None and pool.renders_hpa(records):  # one more list, only with an HPA
        snap.hpa = pool.read_hpa(kube, namespace, release)
    if warm_pool.renders_warm_pool(records):  # sandbox.backend agent-sandbox: the warm pool is the sandbox fleet
        snap.warm_pool = warm_pool.read(kube, namespace, release)
        if snap.warm_pool and not snap.warm_pool.get("forbidden"):
            snap.fleets["sandbox"] = Fleet("sandbox", desired=snap.warm_pool["replicas"])
            if snap.mode is None and records:
                snap.mode = "attach"
    for f in snap.fleets.values():
        f.gpus_requested = f.desired * per_pod_gpu.get(f.fleet, 0)
    reasons, nodes = _observe(snap, pods)
    snap.head_ip = _head_ip(pods, (snap.raycluster or {}).get("name"))
    snap.pulls = failed_pulls(pods, fleet_of)
    snap.claims = failed_claims(kube, namespace, pods, fleet_of)  # a request only while a pod waits on one
    _explain(snap, reasons, nodes, _owner_warnings(kube, snap, reasons, sel))
    snap.calls = kube.calls - start
    return snap


def _read_record(snap: Snapshot, records: list[Any]) -> None:
    """Revision, status and update time from the newest Helm record."""
    if not records:
        return
    last = records[-1]
    snap.revision = int(labels(last).get("version", 0))
    snap.release_status = labels(last).get("status")
    ts = labels(last).get("modifiedAt")
    created = last["metadata"].get("creationTimestamp")
    if created:  # RFC 3339 UTC, shown as the typed client's datetime.isoformat would show it
        snap.updated = datetime.fromisoformat(created).isoformat(timespec="seconds")
    elif ts and ts.isdigit():
        snap.updated = datetime.fromtimestamp(int(ts), UTC).isoformat(timespec="seconds")


def _read_ray(snap: Snapshot, jobs: Objects, clusters: Objects) -> dict[str, Any] | None:
    """The release's RayJob and RayCluster into the snapshot; the RayCluster spec in force (or None)."""
    release = snap.release
    job = next((j for j in jobs if j["metadata"]["name"] == release), None)  # the chart names it after the release
    cluster_name = None
    ray_spec = None
    if job:
        st = job.get("status") or {}
        cluster_name = st.get("rayClusterName")
        snap.mode = "rayjob"
        snap.rayjob = {
            "name": job["metadata"]["name"],
            "deploymentStatus": st.get("jobDeploymentStatus"),
            "jobStatus": st.get("jobStatus"),
            "cluster": cluster_name,
            "reason": st.get("reason"),
            "message": st.get("message"),
            # KubeRay counts the ends of the job's attempts; each retry (backoffLimit) runs on a new RayCluster
            "failed": st.get("failed") or 0,
            "succeeded": st.get("succeeded") or 0,
            "backoffLimit": (job.get("spec") or {}).get("backoffLimit") or 0,
        }
        ray_spec = (job.get("spec") or {}).get("rayClusterSpec")
        snap.job_id, snap.head_service = st.get("jobId"), driver_log.head_service(job)
    wanted = {release, cluster_name} - {None}
    cluster = next((c for c in clusters if c["metadata"]["name"] in wanted
                    or (c["metadata"].get("labels") or {}).get(INSTANCE) == release), None)
    if cluster:
        st = cluster.get("status") or {}
        snap.mode = snap.mode or "bringup"
        snap.raycluster = {
            "name": cluster["metadata"]["name"],
            "state": st.get("state"),
            "reason": st.get("reason"),
            "readyWorkers": st.get("readyWorkerReplicas"),
            "desiredGPU": st.get("desiredGPU"),
            "headService": (st.get("head") or {}).get("serviceName"),
        }
        ray_spec = cluster.get("spec") or ray_spec
    return ray_spec


def attempts_line(job: dict[str, Any]) -> str | None:
    """`attempt 2 of 2 (1 failed, retried on a new RayCluster)` for a RayJob that may retry or has failed once;
    None for a single-attempt job that has not failed (nothing to say)."""
    failed, succeeded, limit = job.get("failed") or 0, job.get("succeeded") or 0, job.get("backoffLimit") or 0
    if not limit and not failed:
        return None
    ended = job.get("deploymentStatus") in ("Complete", "Failed")
    now = min(failed + succeeded + (0 if ended else 1), limit + 1) or 1
    what = f"{failed} failed" + (", retried on a new RayCluster" if failed and (not ended or succeeded) else "")
    return f"attempt {now} of {limit + 1} ({what})"


def _queued(snap: Snapshot, jobs: Objects, clusters: Objects) -> tuple[str, dict[str, Any]] | None:
    """(kind, object) of what Kueue queues, when it carries the queue label: the release's RayJob, else (bringup)
    its RayCluster (a RayJob's own cluster is admitted with the job)."""
    name, kind, found = (snap.rayjob, "RayJob", jobs) if snap.rayjob else (snap.raycluster, "RayCluster", clusters)
    obj = next((o for o in found if name and o["metadata"]["name"] == name["name"]), None)
    return (kind, obj) if obj is not None and queueing.queue_name(obj) else None


def _desired(snap: Snapshot, ray_spec: dict[str, Any] | None, deployments: Objects,
             installed: bool) -> dict[str, int]:
    """A fleet per group of the specs with its desired pods; GPUs per pod by fleet."""
    per_pod_gpu: dict[str, int] = {}
    if ray_spec:
        snap.fleets["head"] = Fleet("head", desired=1)
        per_pod_gpu["head"] = pod_gpus(((ray_spec.get("headGroupSpec") or {}).get("template") or {}).get("spec"))
        for g in ray_spec.get("workerGroupSpecs") or []:
            name = g.get("groupName")
            if name not in ("trainer", "inference"):
                continue
            replicas = 0 if g.get("suspend") else int(g.get("replicas", g.get("minReplicas", 0)) or 0)
            snap.fleets[name] = Fleet(name, desired=replicas)
            per_pod_gpu[name] = pod_gpus((g.get("template") or {}).get("spec"))
    sandbox_dep = next((d for d in deployments if labels(d).get("app.kubernetes.io/component") == "sandbox"), None)
    if sandbox_dep is not None:
        dep_spec = sandbox_dep.get("spec") or {}
        snap.fleets["sandbox"] = Fleet("sandbox", desired=int(dep_spec.get("replicas") or 0))
        snap.pool = pool.replicas(sandbox_dep)
        per_pod_gpu["sandbox"] = pod_gpus((dep_spec.get("template") or {}).get("spec"))
        if snap.mode is None:
            snap.mode = "attach" if installed else None
    if snap.rayjob is not None:
        snap.fleets["submitter"] = Fleet("submitter", desired=0)
    return per_pod_gpu


def _observe(snap: Snapshot, pods: Objects) -> tuple[dict[str, Counter[str]], dict[str, set[str]]]:
    """Count each fleet's live pods (ready, GPUs placed); (not-ready reasons, nodes) by fleet."""
    reasons: dict[str, Counter[str]] = {name: Counter() for name in snap.fleets}
    nodes: dict[str, set[str]] = {name: set() for name in snap.fleets}
    for pod in pods:
        name = fleet_of(pod)
        if name is None or name not in snap.fleets:
            continue
        f = snap.fleets[name]
        if (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
            continue
        f.pods += 1
        if name == "submitter":
            f.desired = max(f.desired, 1)
        spec = pod.get("spec") or {}
        if spec.get("nodeName"):
            nodes[name].add(spec["nodeName"])
            f.gpus_allocated += pod_gpus(spec)
        if pod_ready(pod):
            f.ready += 1
        else:
            reasons[name][pod_reason(pod)] += 1
    return reasons, nodes


def _head_ip(pods: Objects, cluster: str | None) -> str | None:
    """The IP of the newest running head pod of RayCluster `cluster` (not one being deleted): where the job's
    progress is read."""
    heads = [p for p in pods if labels(p).get("ray.io/node-type") == "head"
             and (cluster is None or labels(p).get("ray.io/cluster") == cluster)
             and not p["metadata"].get("deletionTimestamp") and (p.get("status") or {}).get("podIP")]
    newest = max(heads, key=lambda p: p["metadata"].get("creationTimestamp") or "", default=None)
    return newest["status"]["podIP"] if newest else None


def _owner_key(name: str) -> str:
    """Whose Warning events explain fleet `name`'s missing pods: `sandbox` (its ReplicaSets), `submitter` (the
    RayJob) or `ray` (the RayCluster)."""
    return name if name in ("sandbox", "submitter") else "ray"


def _wanted_owners(snap: Snapshot, reasons: dict[str, Counter[str]]) -> set[str]:
    """The owner keys _explain will look up: of each fleet with fewer pods than it wants, none of them saying why
    (a pod's own reason wins), not held by Kueue, and whose owner exists to have events."""
    out = set()
    for name, f in snap.fleets.items():
        if reasons[name] or f.pods >= f.desired:
            continue
        key = _owner_key(name)
        if key != "sandbox" and snap.queued():
            continue
        if (key == "ray" and not snap.raycluster) or (key == "submitter" and not snap.rayjob):
            continue  # no owner, no events of it
        out.add(key)
    return out


def _owner_warnings(kube: Kube, snap: Snapshot, reasons: dict[str, Counter[str]], sel: str) -> dict[str, str]:
    """The newest Warning event of each pod owner that _explain asks about (sandbox ReplicaSets, the RayCluster,
    the RayJob's submitter): why pods that do not exist were not created (quota, PodSecurity, ...). Read only
    when a fleet misses pods with no pod to say why: the events list, and the ReplicaSets for the sandbox's."""
    wanted = _wanted_owners(snap, reasons)
    if not wanted:
        return {}  # every fleet has its pods, or they say why: no request
    namespace = snap.namespace
    owner_fleet: dict[str, str] = {}
    if "sandbox" in wanted:
        for rs in kube.list(f"/apis/apps/v1/namespaces/{namespace}/replicasets", label_selector=sel):
            owner_fleet[rs["metadata"]["name"]] = "sandbox"
    events = kube.list(f"/api/v1/namespaces/{namespace}/events", field_selector="type=Warning")
    if snap.raycluster:
        owner_fleet[snap.raycluster["name"]] = "ray"
    if snap.rayjob:
        owner_fleet[snap.rayjob["name"]] = "submitter"
    latest: dict[str, tuple[str, str]] = {}
    for ev in events:
        obj = ev.get("involvedObject")
        if obj is None or obj.get("name") not in owner_fleet:
            continue
        when = event_time(ev)
        key = owner_fleet[obj["name"]]
        if key not in latest or when >= latest[key][0]:
            latest[key] = (when, f"{ev.get('reason')}: {ev.get('message')}")
    return {key: text for key, (_, text) in latest.items()}


def _explain(snap: Snapshot, reasons: dict[str, Counter[str]], nodes: dict[str, set[str]],
             warnings: dict[str, str]) -> None:
    """Each fleet's nodes and one reason: the commonest not-ready reason, else why pods are missing."""
    for name, f in snap.fleets.items():
        f.nodes = sorted(nodes[name])
        if reasons[name]:
            text, count = reasons[name].most_common(1)[0]
            f.reason = text if f.pods - f.ready <= 1 else f"{count} pod(s) {text}"
        elif f.pods < f.desired:
            key = _owner_key(name)
            if key != "sandbox" and snap.queued():  # Kueue holds the gang: no pod of it is created
                f.reason = f"{QUEUED} (LocalQueue {snap.queue.local_queue if snap.queue else '?'})"
            elif key in warnings:
                f.reason = warnings[key]
            elif key == "ray" and not snap.raycluster:
                f.reason = "waiting for KubeRay to create the RayCluster"
            else:
                f.reason = f"{f.desired - f.pods} pod(s) not created yet"
