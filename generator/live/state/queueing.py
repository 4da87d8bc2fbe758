"""Kueue's view of a queued RayJob (rayjob mode) or RayCluster (bringup): its Workload, summed up.

Kueue suspends an object that carries `kueue.x-k8s.io/queue-name` and makes a Workload for it
(`workloads.kueue.x-k8s.io`, never the short name: Kubernetes has a Workload kind of its own), labelled
with the object's UID (`kueue.x-k8s.io/job-uid`) and owned by it. The Workload's conditions say why the
object waits (QuotaReserved False: reason Pending with the flavor assigner's words, or Inadmissible when
the LocalQueue or ClusterQueue is missing or stopped), that it was admitted (Admitted), evicted (Evicted,
reason Preempted with the preemptor's job UID in the message) or finished. The object itself only shows
`spec.suspend: true`.

`summarize()` is the pure part (tests/unit/live/state/test_queueing.py runs it on Workloads captured from Kueue
v0.17.0); `read()` makes the requests: one list by job UID, plus one LocalQueue read while not admitted
(its ClusterQueue) and, for a preempted one, the preemptor's Workload: one list cluster-wide, and a second
in the namespace when the cluster-wide one is refused; for an admitted job placed by topology, one list of the
nodes carrying the level's label (once a process). Any failed read is the Queue's note, never an error.
"""

from __future__ import annotations

import re
import weakref

from generator.live.client.api_errors import api_status
from generator.live.kueue.api import API, JOB_UID_LABEL, PRIORITY_LABEL, QUEUE_LABEL, WORKLOADS, unreadable
from generator.live.state.record import Record, as_dict

TYPE_CHECKING = False  # typing's import costs ~3 ms at start-up: for type checkers only
if TYPE_CHECKING:
    from typing import Any

WAITING = ("queued", "preempted", "evicted")  # states in which nothing of the gang runs (once it is suspended)
_PREEMPTOR = re.compile(r"JobUID: ([0-9a-fA-F-]{36})")
_DUE = re.compile(r" due to ([^;]+)")  # the preemption's reason, in Kueue's words


class Queue(Record):
    """What `status` shows as `queue` (to_dict) and the wait and the guard read."""

    kind: str  # RayJob | RayCluster: the object Kueue queues
    name: str
    local_queue: str
    priority_class: str | None = None
    suspended: bool = False  # the object's spec.suspend (Kueue's hold on it)
    state: str = "unknown"  # queued | admitted | preempted | evicted | finished | unknown
    cluster_queue: str | None = None
    workload: str | None = None
    reason: str | None = None  # Kueue's condition reason for the state
    message: str | None = None  # and its own words
    waiting: str | None = None  # evicted or preempted: why it is not admitted again yet
    preempted_by: str | None = None
    note: str | None = None  # what could not be read, or what is odd
    placement: str | None = None  # where Kueue's Topology Aware Scheduling put the fleets (kueue/topology.py)

    @property
    def waits(self) -> bool:
        """Nothing of the gang runs: queued (or evicted and requeued) and held suspended by Kueue."""
        return self.suspended and self.state in (*WAITING, "unknown")

    def to_dict(self) -> dict[str, Any]:
        out = as_dict(self)
        out["waits"] = self.waits
        return out


def queue_name(obj: dict[str, Any] | None) -> str | None:
    return ((obj or {}).get("metadata") or {}).get("labels", {}).get(QUEUE_LABEL) or None


def suspended(obj: dict[str, Any] | None) -> bool:
    return ((obj or {}).get("spec") or {}).get("suspend") is True


def held(obj: dict[str, Any] | None) -> bool:
    """Queued by Kueue and not admitted: the queue label and spec.suspend true (no API call)."""
    return bool(queue_name(obj)) and suspended(obj)


def _condition(wl: dict[str, Any], kind: str) -> dict[str, Any] | None:
    return next((c for c in (wl.get("status") or {}).get("conditions") or [] if c.get("type") == kind), None)


def _true(wl: dict[str, Any], kind: str) -> dict[str, Any] | None:
    c = _condition(wl, kind)
    return c if c and c.get("status") == "True" else None


def pick(workloads: list[dict[str, Any]], uid: str) -> dict[str, Any] | None:
    """The object's Workload: owned by it, not being deleted, the newest (Kueue replaces one whose pod
    sets no longer match the object, so two may exist for a moment)."""
    mine = [w for w in workloads if any(r.get("uid") == uid for r in w["metadata"].get("ownerReferences") or [])]
    live = [w for w in mine if not w["metadata"].get("deletionTimestamp")] or mine
    return max(live, key=lambda w: w["metadata"].get("creationTimestamp") or "", default=None)


def preemptor_uid(wl: dict[str, Any]) -> str | None:
    """The job UID Kueue names in a preempted Workload's message (Evicted or Preempted condition)."""
    for kind in ("Preempted", "Evicted"):
        m = _PREEMPTOR.search((_condition(wl, kind) or {}).get("message") or "")
        if m:
            return m.group(1)
    return None


def describe_owner(wl: dict[str, Any]) -> str:
    """'RayJob NS/NAME (Workload W, priority P)' for a Workload."""
    meta = wl["metadata"]
    owner: dict[str, Any] = next(iter(meta.get("ownerReferences") or []), {})
    pri = ((wl.get("spec") or {}).get("priorityClassRef") or {}).get("name")
    what = f"{owner.get('kind', 'object')} {meta.get('namespace')}/{owner.get('name', '?')}"
    return what + f" (Workload {meta['name']}" + (f", priority {pri})" if pri else ")")


def summarize(obj: dict[str, Any], kind: str, wl: dict[str, Any] | None, *, cluster_queue: str | None = None,
              preemptor: str | None = None) -> Queue:
    """The Queue of a labelled object from its Workload (None: Kueue has made none yet). `cluster_queue`:
    the LocalQueue's ClusterQueue when known (a Workload names it only once admitted); `preemptor`: who
    evicted it (describe_owner of the preemptor's Workload)."""
    meta = obj["metadata"]
    q = Queue(kind=kind, name=meta["name"], local_queue=queue_name(obj) or "",
              priority_class=(meta.get("labels") or {}).get(PRIORITY_LABEL), suspended=suspended(obj),
              cluster_queue=cluster_queue)
    if wl is None:
        if q.suspended:
            q.state, q.message = "queued", "Kueue has made no Workload for it yet (is the Kueue controller running?)"
        else:
            q.note = (f"no Workload: Kueue does not manage this {kind} (it runs unqueued); is Kueue's "
                      f"{kind} integration enabled?")
        return q
    q.workload = wl["metadata"]["name"]
    admission = (wl.get("status") or {}).get("admission") or {}
    q.cluster_queue = admission.get("clusterQueue") or q.cluster_queue
    q.priority_class = ((wl.get("spec") or {}).get("priorityClassRef") or {}).get("name") or q.priority_class
    reserved = _condition(wl, "QuotaReserved")
    finished, evicted, admitted = _true(wl, "Finished"), _true(wl, "Evicted"), _true(wl, "Admitted")
    if finished:
        q.state, cond = "finished", finished
    elif evicted:
        q.state, cond = ("preempted" if evicted.get("reason") == "Preempted" else "evicted"), evicted
        q.preempted_by = preemptor if q.state == "preempted" else None
        if reserved and reserved.get("status") == "False":
            q.waiting = _words(reserved)
    elif admitted:
        q.state, cond = "admitted", admitted
    else:
        q.state = "queued"
        cond = reserved or {"reason": "Pending", "message": "Kueue has not considered it yet"}
        if reserved and reserved.get("status") == "True":  # quota held, admission checks still to pass
            q.message = f"quota reserved in ClusterQueue {q.cluster_queue}, waiting for its admission checks"
            q.reason = "QuotaReserved"
            return q
    q.reason, q.message = cond.get("reason"), cond.get("message")
    return q


def _words(cond: dict[str, Any]) -> str:
    return f"{cond.get('reason')}: {cond.get('message')}" if cond.get("message") else str(cond.get("reason"))


def line(q: Queue) -> str:
    """One line of the queue's state, Kueue's own words last."""
    where = f"LocalQueue {q.local_queue}" + (f" (ClusterQueue {q.cluster_queue})" if q.cluster_queue else "")
    pri = f", priority {q.priority_class}" if q.priority_class else ""
    due = _DUE.search(q.message or "") if q.state == "preempted" else None
    head = {
        "queued": f"queued in {where}{pri}",
        "admitted": f"admitted to {where}{pri}",
        "preempted": f"preempted in {where}{pri}" + (f" by {q.preempted_by}" if q.preempted_by else "")
        + (f" due to {due.group(1)}" if due else ""),
        "evicted": f"evicted from {where}{pri}",
        "finished": f"finished in {where}{pri}",
    }.get(q.state, f"{where}{pri}")
    if q.state in ("preempted", "evicted"):
        head += f"; {'waiting again: ' + q.waiting if q.waiting else 'being stopped'}"
        return head + (f" (Kueue: {q.message})" if q.message and not q.preempted_by else "")
    text = head + (f" — {q.reason}: {q.message}" if q.message and q.state != "admitted" else "")
    return text + (f"; {q.note}" if q.note else "")


# API reads --------------------------------------------------------------------------------------------

def _note(exc: Any, what: str) -> str:
    """The note for any failed Kueue read: refused or unserved (kueue_api.unreadable), else what failed."""
    from generator.live.client.api_errors import describe_error

    return unreadable(exc, what) or (f"{what} could not be read ({describe_error(exc) or type(exc).__name__}): "
                                     "Kueue's reason is not shown")


def read(kube: Any, namespace: str, obj: dict[str, Any], kind: str) -> Queue:
    """Read the object's Workload (and, as needed, its LocalQueue and preemptor) into a Queue. Any failed
    Kueue read (refused, unserved, a 5xx or 429 of a busy apiserver) is the Queue's note, never an exception:
    one hiccup of Kueue's API does not fail `status` or `run --wait`."""
    uid = obj["metadata"].get("uid") or ""
    try:
        found = kube.list(f"{API}/namespaces/{namespace}/workloads", label_selector=f"{JOB_UID_LABEL}={uid}")
    except Exception as exc:
        if api_status(exc) is None:
            raise
        q = summarize(obj, kind, None)
        q.state, q.message, q.note = ("queued" if q.suspended else "unknown"), None, _note(exc, f"{WORKLOADS} in "
                                                                                                 f"{namespace}")
        return q
    wl = pick(found, uid)
    cluster_queue = preemptor = None
    if wl is not None and preemptor_uid(wl):
        preemptor = _preemptor(kube, namespace, preemptor_uid(wl) or "")
    admitted = wl is not None and ((wl.get("status") or {}).get("admission") or {}).get("clusterQueue")
    note = None
    if not admitted:
        cluster_queue, note = _cluster_queue(kube, namespace, queue_name(obj) or "")
    q = summarize(obj, kind, wl, cluster_queue=cluster_queue, preemptor=preemptor)
    q.note = q.note or (note if q.reason != "Inadmissible" else None)  # Kueue's own words say it then
    if wl is not None and admitted and _asks_topology(wl):
        q.placement = _placement(kube, wl)
    return q


def _asks_topology(wl: dict[str, Any]) -> bool:
    """A pod set of the Workload asks for a topology level: only then is kueue/topology.py imported and read."""
    return any((ps.get("topologyRequest") or {}).get(mode)
               for ps in (wl.get("spec") or {}).get("podSets") or [] for mode in ("required", "preferred"))


# Each host's value of a topology level, by client: the nodes are listed once a process, not at every poll.
_NODE_LEVELS: weakref.WeakKeyDictionary[Any, dict[str, dict[str, str]]] = weakref.WeakKeyDictionary()


def _placement(kube: Any, wl: dict[str, Any]) -> str | None:
    """The placement line of an admitted Workload that asked for a topology; the hosts' domains read from
    the nodes (one list, by the level's label) when Kueue recorded the hosts only."""
    from generator.live.kueue import topology

    placed = topology.placements(wl)
    level = topology.hosts_level(placed)
    node_level: dict[str, str] | None = None
    known = _NODE_LEVELS.setdefault(kube, {})  # once a process: `run --wait` and `status --watch` poll
    if level and level in known:
        node_level = known[level]
    elif level:
        try:
            nodes = kube.list("/api/v1/nodes", label_selector=level)
            node_level = known[level] = {
                ((n["metadata"].get("labels") or {}).get("kubernetes.io/hostname") or n["metadata"]["name"]):
                n["metadata"]["labels"][level] for n in nodes}
        except Exception as exc:
            if api_status(exc) is None:
                raise
    text = topology.line(placed, node_level)
    if text and level and node_level is None:
        text += f" (the nodes' {level} labels could not be read)"
    return text


def _cluster_queue(kube: Any, namespace: str, local_queue: str) -> tuple[str | None, str | None]:
    """(the LocalQueue's ClusterQueue, a note when it cannot be told)."""
    from generator.live.client.api_errors import is_object_404

    try:
        lq = kube.request("GET", f"{API}/namespaces/{namespace}/localqueues/{local_queue}")
    except Exception as exc:
        if api_status(exc) is None:
            raise
        if api_status(exc) == 404 and is_object_404(exc):
            return None, f"LocalQueue {local_queue} does not exist in namespace {namespace}"
        if unreadable(exc, "") is not None:
            return None, None  # the Workload's own reason (or the Workloads' note) says enough
        return None, _note(exc, f"LocalQueue {local_queue}'s ClusterQueue")
    return (lq.get("spec") or {}).get("clusterQueue"), None


def _preemptor(kube: Any, namespace: str, job_uid: str) -> str:
    """Who preempted: the Workload labelled with the preemptor's job UID, cluster-wide (a cohort spans
    namespaces), else (that list refused) in this namespace; its job UID when neither can be read."""
    for path in (f"{API}/workloads", f"{API}/namespaces/{namespace}/workloads"):
        try:
            found = kube.list(path, label_selector=f"{JOB_UID_LABEL}={job_uid}")
        except Exception as exc:
            if api_status(exc) is None:
                raise
            if api_status(exc) in (401, 403):
                continue
            break
        wl = pick(found, job_uid)
        if wl is not None:
            return describe_owner(wl)
        break
    return f"the job with UID {job_uid}"


def workloads_of(kube: Any, namespace: str, uids: list[str]) -> tuple[list[dict[str, Any]] | None, str | None]:
    """(the Workloads Kueue made for these object UIDs, None) — one list per UID —, or (None, why) when they
    cannot be read (refused, or Kueue not served): unknown, which is not "none left"."""
    out: list[dict[str, Any]] = []
    for uid in uids:
        try:
            out += kube.list(f"{API}/namespaces/{namespace}/workloads", label_selector=f"{JOB_UID_LABEL}={uid}")
        except Exception as exc:
            if api_status(exc) is None:
                raise
            why = unreadable(exc, f"{WORKLOADS} in {namespace}", then="")
            if why is None:
                raise
            return None, why
    return out, None
