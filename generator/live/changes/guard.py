"""What a change to a release would do to running training (whose release it is: helm/ownership.py).

`impact()` compares the manifest an operation acts on — what Helm itself diffs against: the newest
revision for rollback and uninstall (a failed or pending revision applied its objects too), the deployed
one, else the newest failed one, for upgrade — with the one it would leave (a new render for `run`, an
older revision for `rollback` and for the recovery of an interrupted run, nothing for removing a
release) against the live RayJobs and RayClusters. Losses (a running RayJob or RayCluster deleted, or a
RayJob whose spec KubeRay would not apply, #1776) are refused unless the user passes --replace
(`enforce()`); a recipe change under a running job is announced. A RayJob or RayCluster queued by Kueue
(its queue label and spec.suspend true: nothing of the gang runs) is not running training: a change to it is
announced as applying before it starts; an admitted one counts as running, and the loss says it was admitted.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from generator.errors import CheckFailed
from generator.live.client.kube import Kube
from generator.live.state import queueing

RAY_PLURALS = {"RayJob": "rayjobs", "RayCluster": "rayclusters"}

TERMINAL_JOB = ("Complete", "Failed")  # jobDeploymentStatus of a RayJob with no training left to lose


@dataclass
class Impact:
    lost: list[str] = field(default_factory=list)  # refused without --replace
    replace: list[tuple[str, str]] = field(default_factory=list)  # (plural, name) to delete first with --replace
    notes: list[str] = field(default_factory=list)  # announced, never refused
    unqueued: list[str] = field(default_factory=list)  # queued objects the change takes out of Kueue: refused too
    queued: list[tuple[str, str]] = field(default_factory=list)  # (kind, name) read as queued: enforce re-reads them

    def refuse_unless(self, replace: bool, verb: str, why: str = "") -> None:
        if self.unqueued and not replace:
            raise CheckFailed(
                f"`{verb}` takes queued objects out of Kueue's queue:\n  " + "\n  ".join(self.unqueued)
                + "\nnothing was changed. Rerun with --replace to recreate them unqueued (nothing of them runs yet: "
                "no training is lost), or keep launch.queue")
        if self.lost and not replace:
            raise CheckFailed(
                f"`{verb}` would lose running training{': ' + why if why else ''}:\n  " + "\n  ".join(self.lost)
                + "\nnothing was changed. Rerun with --replace to accept that (the jobs restart from scratch), "
                "or wait until they finish")


def manifest_objects(text: str) -> list[dict[str, Any]]:
    import yaml

    return [d for d in yaml.safe_load_all(text or "") if isinstance(d, dict)]


def _ray(objs: list[dict[str, Any]]) -> dict[tuple[str, str], dict[str, Any]]:
    return {(o["kind"], o["metadata"]["name"]): o.get("spec") or {} for o in objs if o.get("kind") in RAY_PLURALS}


def _recipes(objs: list[dict[str, Any]]) -> dict[str, Any]:
    return {o["metadata"]["name"]: o.get("data") for o in objs
            if o.get("kind") == "ConfigMap" and o["metadata"]["name"].endswith("-recipe")}


def _state(kind: str, live: dict[str, Any]) -> str:
    st = live.get("status") or {}
    admitted = _admitted(live)
    if kind == "RayJob":
        job = st.get("jobStatus") or "-"
        return f"jobDeploymentStatus {st.get('jobDeploymentStatus') or 'Initializing'}, jobStatus {job}" + (
            f", RayCluster {st['rayClusterName']}" if st.get("rayClusterName") else "") + admitted
    workers = sum(int(g.get("replicas") or 0) for g in (live.get("spec") or {}).get("workerGroupSpecs") or [])
    return f"state {st.get('state') or 'pending'}, {workers} workers" + admitted


def _admitted(live: dict[str, Any]) -> str:
    """', admitted by Kueue from LocalQueue Q' for a running object that carries the queue label."""
    queue = queueing.queue_name(live)
    return f", admitted by Kueue from LocalQueue {queue}" if queue else ""


def _running(kind: str, live: dict[str, Any] | None) -> bool:
    if live is None or (live.get("metadata") or {}).get("deletionTimestamp"):
        return False
    return kind != "RayJob" or (live.get("status") or {}).get("jobDeploymentStatus") not in TERMINAL_JOB


def as_served(deployed: Any, live: Any) -> Any:
    """The deployed manifest's spec without what the API server pruned from the live object (a field its CRD
    lacks: an older KubeRay dropped the chart's default start deadline): a field that never took effect changes
    nothing when a new render leaves it out. Mappings are compared key by key; lists are kept as deployed."""
    if not isinstance(deployed, dict) or not isinstance(live, dict):
        return deployed
    return {k: as_served(v, live[k]) for k, v in deployed.items() if k in live}


def impact(kube: Kube, namespace: str, current: str | None, target: str) -> Impact:
    """What installing `target` over the deployed manifest `current` does to live Ray objects."""
    from generator.live.changes.diff import diff_paths

    out = Impact()
    if current is None:
        return out
    cur_objs, tgt_objs = manifest_objects(current), manifest_objects(target)
    cur, tgt = _ray(cur_objs), _ray(tgt_objs)
    tgt_labels = {(o["kind"], o["metadata"]["name"]): o for o in tgt_objs if o.get("kind") in RAY_PLURALS}
    kept_running = []
    for (kind, name), spec in cur.items():
        live = kube.get_ray(RAY_PLURALS[kind], namespace, name)
        if queueing.held(live) and not (live or {})["metadata"].get("deletionTimestamp"):  # not running yet
            out.queued.append((kind, name))
            changes = "it would be deleted" if (kind, name) not in tgt else (
                "its change applies before it starts" if tgt[(kind, name)] != spec or _recipes(cur_objs)
                != _recipes(tgt_objs) else "")
            if changes:
                out.notes.append(f"note: {kind} {name} is queued by Kueue in LocalQueue {queueing.queue_name(live)}, "
                                 f"not yet running (suspended until admitted): no training is lost; {changes}")
            if (kind, name) in tgt and not queueing.queue_name(tgt_labels[(kind, name)]):
                # Kueue lets go of it, but nothing clears the suspend it set, and its Workload stays behind
                out.unqueued.append(f"{kind} {name} (suspended by Kueue in LocalQueue {queueing.queue_name(live)}) "
                                    "would lose its queue label and stay suspended, its Workload left behind")
                out.replace.append((RAY_PLURALS[kind], name))
            continue
        if live is not None and live.get("spec"):
            spec = as_served(spec, live["spec"])
        if not _running(kind, live):
            if kind == "RayJob" and live is not None and (kind, name) in tgt \
                    and not (live.get("metadata") or {}).get("deletionTimestamp"):
                # an ended RayJob is never run again by KubeRay, whatever its spec becomes: recreate it
                out.replace.append((RAY_PLURALS[kind], name))
                out.notes.append(f"note: RayJob {name} has ended ({_state(kind, live)}); KubeRay does not run it "
                                 "again: --replace recreates it, so the job runs anew")
            continue
        assert live is not None
        what = f"{kind} {name} ({_state(kind, live)})"
        if (kind, name) not in tgt:
            out.lost.append(f"{what} would be deleted")
        elif tgt[(kind, name)] != spec and kind == "RayJob":
            paths = "; ".join(diff_paths(spec, tgt[(kind, name)]))
            out.lost.append(f"{what}: its spec changes ({paths}), which KubeRay does not pass to a running "
                            "job's cluster (KubeRay #1776): it must be deleted and recreated")
            out.replace.append((RAY_PLURALS[kind], name))
        else:
            kept_running.append((kind, name, _admitted(live).lstrip(", ")))
            if tgt[(kind, name)] != spec:
                paths = "; ".join(diff_paths(spec, tgt[(kind, name)]))
                out.notes.append(f"note: RayCluster {name} spec changes ({paths}): KubeRay rescales its groups "
                                 "but does not restart running pods for a pod-template change")
    old_recipes, new_recipes = _recipes(cur_objs), _recipes(tgt_objs)
    changed = [n for n in old_recipes if n in new_recipes and old_recipes[n] != new_recipes[n]]
    for kind, name, admitted in kept_running:
        for cm in changed:
            out.notes.append(
                f"note: the recipe changes under running {kind} {name}{f' ({admitted})' if admitted else ''}: "
                f"ConfigMap {cm} is updated and the mounted file follows within about a minute, but a running "
                "driver keeps the config it read at start"
                + (" (--replace restarts the job with the new recipe)" if kind == "RayJob" else ""))
            if kind == "RayJob":
                out.replace.append((RAY_PLURALS[kind], name))
    return out


def enforce(kube: Kube, namespace: str, current: str | None, target: str, *, replace: bool, verb: str,
            say: Any, deadline: float, why: str = "") -> Impact:
    """The one gate of every path that deletes or replaces live Ray objects: refuse a loss of running
    training unless --replace, announce the notes, and with --replace delete what must be recreated.
    Last, just before the caller's helm operation, the objects read as queued are read again: one Kueue
    admitted meanwhile is running now, and the change is judged (and refused) as for a running one."""
    hit = impact(kube, namespace, current, target)
    hit.refuse_unless(replace, verb, why)
    for note in hit.notes:
        say(note)
    if replace:
        for plural, name in dict.fromkeys(hit.replace):
            delete_ray(kube, namespace, plural, name, say, max(5.0, deadline - time.monotonic()))
    admitted = [(k, n) for k, n in hit.queued if _admitted_since(kube, namespace, k, n)]
    if admitted:
        _enforce_admitted(kube, namespace, current, target, admitted, hit, replace=replace, verb=verb, say=say,
                          deadline=deadline, why=why)
    return hit


def _admitted_since(kube: Kube, namespace: str, kind: str, name: str) -> bool:
    """The object read as queued is no longer suspended (Kueue admitted it) and not being deleted."""
    live = kube.get_ray(RAY_PLURALS[kind], namespace, name)
    return live is not None and not queueing.suspended(live) and not live["metadata"].get("deletionTimestamp")


def _enforce_admitted(kube: Kube, namespace: str, current: str | None, target: str, admitted: list[tuple[str, str]],
                      first: Impact, *, replace: bool, verb: str, say: Any, deadline: float, why: str) -> None:
    """The running path for the objects Kueue admitted after impact() read them queued."""
    mine = tuple(f"{k} {n} " for k, n in admitted)
    since = "read queued a moment ago, Kueue admitted it since: it runs now"
    for kind, name in admitted:
        say(f"note: {kind} {name} was {since}, so the change is judged as one under running training")
    again = impact(kube, namespace, current, target)
    again.lost = [f"{line} ({since})" for line in again.lost if line.startswith(mine)]
    again.unqueued = []  # refused (or accepted with --replace) on the first read already
    again.refuse_unless(replace, verb, why)
    for note in again.notes:  # the others' were said on the first read
        if any(f"{k} {n} " in note for k, n in admitted):
            say(note)
    if replace:
        done = set(first.replace)
        for plural, name in dict.fromkeys(p for p in again.replace if p not in done):
            delete_ray(kube, namespace, plural, name, say, max(5.0, deadline - time.monotonic()))


def delete_ray(kube: Kube, namespace: str, plural: str, name: str, say: Any, timeout: float) -> None:
    """Delete a RayJob or RayCluster in the foreground and wait until it (and a RayJob's cluster) is gone."""
    from kubernetes.client.exceptions import ApiException

    from generator.live.client.kube import RAY_GROUP, RAY_VERSION
    from generator.live.client.wait import wait_until

    obj = kube.get_ray(plural, namespace, name)
    cluster = ((obj or {}).get("status") or {}).get("rayClusterName") if plural == "rayjobs" else None
    kind = "RayJob" if plural == "rayjobs" else "RayCluster"
    say(f"--replace: deleting {kind} {name}" + (f" and its RayCluster {cluster}" if cluster else ""))
    try:
        kube.custom.delete_namespaced_custom_object(RAY_GROUP, RAY_VERSION, namespace, plural, name,
                                                    propagation_policy="Foreground")
    except ApiException as exc:
        if exc.status != 404:
            raise
    gone = wait_until(lambda: kube.get_ray(plural, namespace, name) is None
                      and (not cluster or kube.get_ray("rayclusters", namespace, cluster) is None), timeout)
    if not gone:
        raise CheckFailed(f"{kind} {name} was not deleted within {timeout:.0f}s; nothing else was changed")
