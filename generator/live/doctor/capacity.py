"""`doctor`'s rows on room: GPUs per fleet and for the whole gang, the sandbox pool, ResourceQuota headroom.

Nodes' allocatable resources are read once, with what other pods already request (`read_room`);
each row function compares the rendered pod templates with that.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from generator.live.client.kube import GPU, INSTANCE, Kube
from generator.live.client.pod_requests import requests
from generator.live.doctor.rows import FAIL, OK, WARN, Namespace, Row, forbidden
from generator.quantity import fmt, qty

RUNNING = "status.phase!=Succeeded,status.phase!=Failed"  # pods that hold their resources

IN_USE_UNKNOWN = forbidden("list", "pods", None, "what other namespaces use is unknown")


@dataclass
class Room:
    """Schedulable nodes' allocatable resources and what other pods request on them, by node name."""

    alloc: dict[str, dict[str, float]] = field(default_factory=dict)
    used: dict[str, dict[str, float]] = field(default_factory=dict)
    labels: dict[str, dict[str, str]] = field(default_factory=dict)  # for the placement rows (placement.py)
    taints: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    handlers: dict[str, set[str]] = field(default_factory=dict)  # node.status.runtimeHandlers (runtime_class.py)
    nodes_denied: bool = False  # RBAC: nodes cannot be listed
    pods_denied: bool = False  # RBAC: pods of every namespace cannot be listed

    def free(self, node: str, resource: str, empty: bool = False) -> float:
        """What of `resource` the node has left: its allocatable less what other pods request (`empty`: all of its
        allocatable, as if no other pod ran)."""
        return self.alloc[node].get(resource, 0.0) - (0.0 if empty else self.used[node].get(resource, 0.0))


def _read_nodes(kube: Kube, room: Room) -> list[Any]:
    from kubernetes.client.exceptions import ApiException

    try:
        nodes = [n for n in kube.core.list_node().items if not n.spec.unschedulable]
    except ApiException as exc:
        if exc.status != 403:
            raise
        nodes, room.nodes_denied = [], True
    room.alloc = {n.metadata.name: {k: qty(v) for k, v in (n.status.allocatable or {}).items()} for n in nodes}
    room.used = {n.metadata.name: {} for n in nodes}
    room.labels = {n.metadata.name: dict(n.metadata.labels or {}) for n in nodes}
    room.taints = {n.metadata.name: [{"key": t.key, "value": t.value, "effect": t.effect} for t in n.spec.taints or []]
                   for n in nodes}
    room.handlers = {n.metadata.name: {h.name for h in n.status.runtime_handlers or [] if h.name} for n in nodes}
    return nodes


def read_room(kube: Kube, release: str, namespace: str) -> Room:
    from kubernetes.client.exceptions import ApiException

    room = Room()
    _read_nodes(kube, room)
    try:
        pods = kube.core.list_pod_for_all_namespaces(field_selector=RUNNING).items
    except ApiException as exc:
        if exc.status != 403:
            raise
        pods, room.pods_denied = [], True
    for p in pods:
        if (p.metadata.labels or {}).get(INSTANCE) == release and p.metadata.namespace == namespace:
            continue  # this release's own pods (an upgrade replaces them)
        if p.spec.node_name in room.used:
            on_node = room.used[p.spec.node_name]
            for c in p.spec.containers or []:
                req = dict((c.resources.limits or {}) if c.resources else {})
                req.update((c.resources.requests or {}) if c.resources else {})
                for k, v in req.items():
                    on_node[k] = on_node.get(k, 0.0) + qty(v)
    return room


def never_fits(kube: Kube, cluster: Any, more: Callable[[Room, bool], list[Row]] | None = None) -> Row | None:
    """doctor's first failing GPU row on an empty cluster (every node's allocatable, no other pod), or of `more`
    (room, empty=True) -> rows (e.g. the fabric's devices): the gang can never be scheduled, however long one
    waits. None when it fits, or nodes cannot be read."""
    room = Room()
    _read_nodes(kube, room)
    if room.nodes_denied:
        return None
    rows = gpu_rows(room, cluster, empty=True) + (more(room, True) if more else [])
    return next((r for r in rows if r.mark == FAIL), None)


def refuse_never_fits(kube: Kube, cluster: Any, what: str,
                      more: Callable[[Room, bool], list[Row]] | None = None) -> None:
    """CheckFailed (exit 1) before anything is installed, in never_fits' row's words."""
    from generator.errors import CheckFailed

    row = never_fits(kube, cluster, more)
    if row is not None:
        raise CheckFailed(f"the cluster can never schedule this gang ({row.check}: {row.detail}): {what} would wait "
                          f"out its whole --timeout; nothing was changed. {row.remedy}")


def gpu_rows(room: Room, cluster: Any, empty: bool = False) -> list[Row]:
    """One row per GPU fleet (enough nodes with enough GPUs) and one for the whole gang against what is
    free now (`empty`: against every node's allocatable, as if no other pod ran)."""
    if room.nodes_denied:
        return [Row(WARN, f"GPU capacity: {group}", forbidden("list", "nodes", None, "GPU capacity unknown"),
                    "ask a cluster admin whether the GPUs are there (or for a ClusterRole to list nodes)")
                for group in ("trainer", "inference", "gang")]
    gpu_nodes = {n: a.get(GPU, 0.0) for n, a in room.alloc.items() if a.get(GPU, 0.0) > 0}
    rows = []
    for group in ("trainer", "inference"):
        g = getattr(cluster, group)
        fit = [n for n, c in gpu_nodes.items() if c >= g.gpusPerNode]
        mark = OK if len(fit) >= g.nodes else FAIL
        rows.append(Row(mark, f"GPU capacity: {group}",
                        f"{g.nodes} pod(s) × {g.gpusPerNode} {GPU}: {len(fit)} node(s) have ≥ {g.gpusPerNode} "
                        "allocatable",
                        "" if mark == OK else f"add GPU nodes with ≥ {g.gpusPerNode} GPUs, or lower cluster.{group}"))
    rows.append(_gang_row(room, cluster, gpu_nodes, empty))
    return rows


def place(free: dict[str, float], want: list[float]) -> int:
    """How many of the pods (GPUs each) fit the nodes' free GPUs: first fit, biggest pod first."""
    free, placed = dict(free), 0
    for w in sorted(want, reverse=True):
        node = next((n for n, c in sorted(free.items(), key=lambda x: x[1]) if c >= w), None)
        if node:
            free[node] -= w
            placed += 1
    return placed


def _gang_row(room: Room, cluster: Any, gpu_nodes: dict[str, float], empty: bool = False) -> Row:
    """Every worker pod at once, against the GPUs free now (or, `empty`, every node's allocatable)."""
    free = {n: c - (0.0 if empty else room.used[n].get(GPU, 0.0)) for n, c in gpu_nodes.items()}
    want = ([cluster.trainer.gpusPerNode] * cluster.trainer.nodes
            + [cluster.inference.gpusPerNode] * cluster.inference.nodes)
    placed = place(free, want)
    fits = placed == len(want)
    when = "if no other pod used any" if empty or room.pods_denied else "now"
    detail = (f"{placed}/{len(want)} worker pods fit in the {'allocatable' if empty else 'free'} GPUs {when}"
              + f" ({int(sum(want))} wanted, {int(sum(gpu_nodes.values()))} allocatable on {len(gpu_nodes)} node(s))"
              + (f"; {IN_USE_UNKNOWN}" if room.pods_denied and not empty else ""))
    if not fits:
        return Row(FAIL, "GPU capacity: gang", detail,
                   ("add GPU nodes, or shrink cluster.trainer/inference" if empty
                    else "free GPUs (other jobs), add GPU nodes, or shrink cluster.trainer/inference"))
    if room.pods_denied:
        return Row(WARN, "GPU capacity: gang", detail, "ask a cluster admin whether the GPUs are free")
    return Row(OK, "GPU capacity: gang", detail)


def sandbox_rows(room: Room, template: dict[str, Any] | None, replicas: int,
                 autoscaling: dict[str, Any] | None = None) -> list[Row]:
    """Whether `replicas` sandbox pods fit the schedulable nodes' free cpu, memory and ephemeral storage; with an
    HPA (`autoscaling` enabled) its minimum must fit and its maximum is a warning when it cannot."""
    if autoscaling and autoscaling.get("enabled"):
        low, high = int(autoscaling.get("minReplicas", 1)), int(autoscaling.get("maxReplicas", 1))
        rows = _sandbox_rows(room, template, low, knob="sandbox.autoscaling.minReplicas")
        top = _sandbox_rows(room, template, high, "sandbox pool at max")
        if top and top[0].mark == FAIL:
            rows.append(Row(WARN, top[0].check, f"the HPA's maxReplicas {high}: {top[0].detail}",
                            "lower sandbox.autoscaling.maxReplicas or sandbox.resources, or add CPU nodes: the HPA "
                            "cannot add replicas past the room"))
        elif top:
            rows.append(top[0])
        return rows
    return _sandbox_rows(room, template, replicas)


def _sandbox_rows(room: Room, template: dict[str, Any] | None, replicas: int, check: str = "sandbox pool fits",
                  knob: str = "sandbox.replicas") -> list[Row]:
    if not template:
        return []
    if room.nodes_denied:
        return [Row(WARN, check, forbidden("list", "nodes", None, "CPU and memory room unknown"))]
    per = requests(template)
    short = []
    for key in ("cpu", "memory", "ephemeral-storage"):
        need_one = per.get(key, 0.0)
        free_by_node = {n: room.alloc[n].get(key, 0.0) - room.used[n].get(key, 0.0) for n in room.alloc}
        slots = sum(int(f // need_one) if need_one else replicas for f in free_by_node.values() if f > 0)
        if slots < replicas:
            short.append(f"{key}: room for {slots} of {replicas} replicas at {fmt(key, need_one)} each")
    if short:
        return [Row(FAIL, check, "; ".join(short),
                    f"lower {knob} or sandbox.resources (requests are what the scheduler reserves)")]
    return [Row(WARN if room.pods_denied else OK, check,
                f"{replicas} × (cpu {fmt('cpu', per.get('cpu'))}, memory {fmt('memory', per.get('memory'))}, "
                f"ephemeral-storage {fmt('ephemeral-storage', per.get('ephemeral-storage'))}) fit the schedulable "
                "nodes" + (f" if no other pod used any; {IN_USE_UNKNOWN}" if room.pods_denied else ""))]


def quota_rows(kube: Kube, ns: Namespace, templates: dict[str, dict[str, Any]], counts: dict[str, int]) -> list[Row]:
    """ResourceQuota headroom for everything the release creates (`counts`: pods per role, 1 when unnamed)."""
    from kubernetes.client.exceptions import ApiException

    if ns.exists is False:
        return []
    try:
        quotas = kube.core.list_namespaced_resource_quota(ns.name).items
    except ApiException as exc:
        if exc.status != 403:
            raise
        return [Row(WARN, "ResourceQuota headroom",
                    forbidden("list", "resourcequotas", ns.name, "whether a quota leaves room is unknown"))]
    if not quotas:
        return [Row(OK, "ResourceQuota headroom", f"no ResourceQuota in {ns.name}")]
    need: dict[str, float] = {"pods": 0.0}
    for role, tpl in templates.items():
        n = counts.get(role, 1)
        need["pods"] += n
        for k, v in requests(tpl).items():
            need[k] = need.get(k, 0.0) + n * v
    over = []
    for q in quotas:
        hard = q.status.hard or q.spec.hard or {}
        used = q.status.used or {}
        for key, limit in hard.items():
            res = key.removeprefix("requests.")
            if res not in need or key.startswith("limits."):
                continue
            room = qty(limit) - qty(used.get(key, 0))
            if need[res] > room:
                over.append(f"{q.metadata.name} {key}: needs {fmt(res, need[res])}, {fmt(res, room)} left")
    if over:
        return [Row(FAIL, "ResourceQuota headroom", "; ".join(over), "raise the quota or shrink the recipe")]
    return [Row(OK, "ResourceQuota headroom", f"{len(quotas)} quota(s) leave room for the release")]


# What the run watcher (charts/dockyard/files/run_watch.py) costs the head, measured (docs/run-watch.md): one Python
# process of the standard library beside the job, waking once a second.
WATCHER_RSS_MIB = 16
WATCHER_CPU = "about 1 millicore"
# The Ray log keeper's sidecar (charts/dockyard/templates/ray/_storage.tpl, dockyard.ray.pinRayLogKeeper): what
# each Ray pod that mounts the logs volume adds to its requests and limits, so Kueue's quota and the node count it.
KEEPER_REQUESTS = "cpu 10m, memory 32Mi"
KEEPER_LIMITS = "cpu 200m, memory 64Mi"


def watcher_row(values: dict[str, Any]) -> Row:
    """The run watcher: where it runs and what it costs (inside the head's container: no requests of its own, no
    RBAC), the stall guard, and whether each attempt's driver log is kept."""
    launch = values.get("launch") or {}
    watch = launch.get("watch") or {}
    if not watch.get("enabled", True):
        return Row(OK, "run watcher", "off (launch.watch.enabled false): no progress in status, no kept logs, "
                                      "no stall guard")
    guard = (f"stall guard {watch['stallTimeoutSeconds']} s (first report within {watch.get('firstReportSeconds')} s)"
             if watch.get("stallTimeoutSeconds") is not None else "no stall guard (launch.watch.stallTimeoutSeconds)")
    volume = ((values.get("infra") or {}).get("storage") or {}).get("logs") or {}
    on_head = volume and "head" in (volume.get("mountOn") or ["head"])
    logs = (f"each job's driver log kept on infra.storage.logs (up to {watch.get('keepLogMiB', 64)} MiB each)"
            if on_head else "driver logs not kept after an attempt (no infra.storage.logs mounted on the head)")
    keep = int(watch.get("keepRayLogMiB", 64))
    groups = list(volume.get("mountOn") or ["head", "trainer", "inference"]) if volume and keep else []
    keeper = (f"; the Ray logs of each {', '.join(groups)} pod kept there (up to {keep} MiB a pod) by a sidecar "
              f"requesting {KEEPER_REQUESTS} a pod (limits {KEEPER_LIMITS})" if groups else
              "; the Ray pods' own Ray logs not kept" + ("" if volume else " (no infra.storage.logs)")
              + (" (launch.watch.keepRayLogMiB 0)" if volume and not keep else ""))
    return Row(OK, "run watcher", f"in the head's container, within its requests (~{WATCHER_RSS_MIB} MiB, "
                                  f"{WATCHER_CPU}; no RBAC); {guard}; {logs}{keeper}")
