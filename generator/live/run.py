"""`run` and `cluster up`: compose values, install them with Helm, follow RayJob -> RayCluster -> pods."""

from __future__ import annotations

import sys
import threading
import time
from dataclasses import dataclass
from typing import Any

from generator.errors import EXIT_OK, CheckFailed
from generator.live.guard import delete_ray, deployed_manifest, end_state, impact, require_ours
from generator.live.kube import INSTANCE, RAY_GROUP, RAY_VERSION, Kube
from generator.live.progress import Progress
from generator.live.release import PENDING, Helm, RunLock
from generator.live.snapshot import Snapshot, labels, release_records, take


@dataclass
class Plan:
    release: str
    namespace: str
    mode: str
    values: dict[str, Any]
    notes: list[str]

    @property
    def priority_class(self) -> str | None:
        return (self.values.get("infra") or {}).get("priorityClassName")


def plan(recipe: str, infra: str, overrides: list[str], release: str | None, namespace: str | None,
         mode: str | None = None) -> Plan:
    """Validated values for the live path. ResourceQuota/LimitRange are never installed here."""
    from generator.inputs.compose import compose, load_inputs, values_dict

    inputs = load_inputs(recipe, infra, overrides)
    if mode:
        inputs.infra.launch.mode = mode
    values = compose(inputs)
    vals = values_dict(values)
    notes = []
    infra_block = vals.setdefault("infra", {})
    for key, kind in (("resourceQuota", "ResourceQuota"), ("limitRange", "LimitRange")):
        block = infra_block.get(key) or {}
        if block.get("enabled"):
            notes.append(f"note: infra.{key} is enabled, but the live path does not apply a {kind} "
                         f"(namespace-wide governance is cluster-admin territory); install it with "
                         f"`dockyard-k8s render {recipe} {infra} | kubectl apply -f -`")
            block["enabled"] = False
    return Plan(release or values.recipe.name, namespace or inputs.infra.infra.namespace,
                inputs.infra.launch.mode, vals, notes)


def _recover(kube: Kube, helm: Helm, p: Plan, records: list[Any], out: Progress, timeout: float) -> None:
    """A release left pending or failed by an interrupted run (we hold the lock, so nobody else is
    running): roll back to the last deployed revision, or uninstall a never-deployed release."""
    if not records:
        return
    status = labels(records[-1]).get("status")
    deployed = [r for r in records if labels(r).get("status") == "deployed"]
    if status in PENDING:
        if deployed:
            rev = int(labels(deployed[-1])["version"])
            out.say(f"release {p.release} was left {status} by an interrupted run: rolling back to revision {rev}")
            helm.rollback(p.release, p.namespace, rev, timeout=timeout)
        else:
            out.say(f"release {p.release} was left {status} by an interrupted first install: removing it")
            helm.uninstall(p.release, p.namespace, timeout=timeout)
    elif not deployed and status in ("failed", "uninstalling"):
        out.say(f"release {p.release} has no deployed revision (last: {status}): removing it before installing")
        helm.uninstall(p.release, p.namespace, timeout=timeout)


def follow(kube: Kube, release: str, namespace: str, deadline: float, progress: Progress,
           phase: str = "waiting") -> Snapshot:
    """Re-read the release until its end state; CheckFailed with the reasons on failure or timeout.

    Watches on the release's pods, RayJobs and RayClusters wake the wait as soon as something
    changes (a burst of events is read once, at most every MIN_INTERVAL); without an event the
    state is re-read every FLOOR_INTERVAL (Warning events, which explain a wait, are not watched)."""
    changed, stop = threading.Event(), threading.Event()
    watching = False
    try:
        while True:
            changed.clear()
            read_at = time.monotonic()
            snap = take(kube, release, namespace)
            progress.update(snap, phase)
            if snap.ready():
                return snap
            failure = snap.failure()
            if failure:
                raise CheckFailed(failure + _reasons(snap))
            if time.monotonic() >= deadline:
                raise CheckFailed(f"{release} not ready after the timeout" + _reasons(snap))
            if not watching:
                watching = True
                sel = f"{INSTANCE}={release}"
                for path, selector in ((f"/api/v1/namespaces/{namespace}/pods", sel),
                                       (f"/apis/{RAY_GROUP}/{RAY_VERSION}/namespaces/{namespace}/rayjobs", sel),
                                       (f"/apis/{RAY_GROUP}/{RAY_VERSION}/namespaces/{namespace}/rayclusters", None)):
                    threading.Thread(target=kube.watch, args=(path, changed.set, stop, selector), daemon=True).start()
            changed.wait(max(0.0, min(FLOOR_INTERVAL, deadline - time.monotonic())))
            time.sleep(max(0.0, read_at + MIN_INTERVAL - time.monotonic()))
    finally:
        stop.set()


MIN_INTERVAL = 0.2  # seconds between two reads of the release while events stream in
FLOOR_INTERVAL = 2.0  # a re-read when nothing was watched to change


def _reasons(snap: Snapshot) -> str:
    reasons = snap.not_ready_reasons()
    return ("\n  " + "\n  ".join(reasons)) if reasons else ""


WATCH_INTERVAL = 1.0  # seconds between two reads of the release while helm works (its reasons explain a failure)


def _watch_during(kube: Kube, p: Plan, progress: Progress, stop: threading.Event, seen: list[Snapshot]) -> None:
    while not stop.is_set():
        try:
            snap = take(kube, p.release, p.namespace)
            if snap.not_ready_reasons() or not seen:  # keep the last reasons: a rollback's cleanup has none
                seen[:] = [snap]
            progress.update(snap, "helm upgrade --install")
        except Exception:
            pass
        stop.wait(WATCH_INTERVAL)


def _rollback_reserve(left: float) -> float:
    """Seconds kept back from helm's --timeout for the --atomic rollback after a failed upgrade."""
    return min(60.0, max(10.0, left * 0.2))


def run(args: Any, mode: str | None = None) -> int:
    p = plan(args.recipe, args.infra, args.overrides, args.release, args.namespace, mode)
    progress = Progress(quiet=args.quiet, title=f"{p.release} ({p.namespace})")
    for note in p.notes:
        print(note, file=sys.stderr)
    t0 = time.monotonic()
    deadline = t0 + args.timeout
    kube = Kube(args.kubeconfig, args.context)
    kube.deadline = deadline
    if p.mode != "attach":
        kube.require_ray()
    kube.require_priority_class(p.priority_class)
    if not kube.namespace_exists(p.namespace):
        if not args.create_namespace:
            raise CheckFailed(f"namespace {p.namespace} does not exist: pass --create-namespace, or create it")
        kube.ensure_namespace(p.namespace)
        progress.say(f"created namespace {p.namespace}")
    helm = Helm(kube, deadline=deadline)
    with RunLock(kube, p.namespace, p.release, "run", until=deadline) as lock:
        records = release_records(kube, p.release, p.namespace)
        require_ours(records, p.release, p.namespace, "run")
        _recover(kube, helm, p, records, progress, max(5.0, deadline - time.monotonic()))
        records = release_records(kube, p.release, p.namespace)
        current = deployed_manifest(records)
        if current is not None:
            from generator.render.helm import template

            hit = impact(kube, p.namespace, current, template(p.values, p.release, p.namespace))
            hit.refuse_unless(args.replace, "run")
            for note in hit.notes:
                progress.say(note)
            if args.replace:
                for plural, name in dict.fromkeys(hit.replace):
                    delete_ray(kube, p.namespace, plural, name, progress.say, max(5.0, deadline - time.monotonic()))
        since = max((int(labels(r)["version"]) for r in records), default=0)
        stop = threading.Event()
        seen: list[Snapshot] = []
        watcher = threading.Thread(target=_watch_during, args=(kube, p, progress, stop, seen), daemon=True)
        watcher.start()
        left = deadline - time.monotonic()
        try:
            rev = helm.upgrade(p.release, p.namespace, p.values, timeout=max(5.0, left - _rollback_reserve(left)),
                               description=f"dockyard-k8s run ({p.mode})")
        except CheckFailed as exc:
            stop.set()
            watcher.join(timeout=2)
            why = _reasons(seen[0]) if seen else ""
            raise CheckFailed(f"{exc}\n  helm's end state: {end_state(kube, p.release, p.namespace, since)}"
                              + (f"\n  while it ran:{why}" if why else "")) from None
        except KeyboardInterrupt:
            stop.set()
            print("\ninterrupted: helm was stopped; `dockyard-k8s run` again converges from here", file=sys.stderr)
            raise
        finally:
            stop.set()
            watcher.join(timeout=2)
        if lock.lost:
            raise CheckFailed(f"{lock.lost} while this run worked: another run may have changed the release; "
                              f"check `dockyard-k8s history {p.release} -n {p.namespace}`")
        progress.say(f"release {p.release} revision {rev.get('version')} {rev.get('info', {}).get('status')} "
                     f"in {p.namespace} ({time.monotonic() - t0:.1f}s): sandbox pool rolled out")
    if getattr(args, "follow", False) and p.mode == "rayjob":
        return _follow_job(kube, p, deadline, progress)
    if not args.wait:
        return EXIT_OK
    try:
        snap = follow(kube, p.release, p.namespace, deadline, progress)
    except KeyboardInterrupt:
        print(f"\ninterrupted: release {p.release} stays installed; `dockyard-k8s status {p.release} -n {p.namespace}` "
              "shows it", file=sys.stderr)
        raise
    what = {"rayjob": "RayJob running on a ready RayCluster", "bringup": "RayCluster ready",
            "attach": "sandbox pool ready"}.get(p.mode, "ready")
    progress.say(f"{p.release}: {what}; every pod Ready ({time.monotonic() - t0:.1f}s)")
    return EXIT_OK


def _follow_job(kube: Kube, p: Plan, deadline: float, progress: Progress) -> int:
    """`run --follow`: the driver's log until the RayJob ends; 0 succeeded, 1 failed (or not ended in time)."""
    from generator.live import driver_log

    progress.say(f"{p.release}: following the driver's log until the job ends")
    try:
        ok, job = driver_log.follow(kube, p.release, p.namespace, deadline)
    except KeyboardInterrupt:
        print(f"\ninterrupted: release {p.release} stays installed; `dockyard-k8s status {p.release} -n {p.namespace}` "
              "shows it", file=sys.stderr)
        raise
    if ok is None:
        raise CheckFailed(f"{p.release}: the job did not end within --timeout; "
                          + (driver_log.outcome(job) if job else "no RayJob"))
    line = driver_log.outcome(job)
    if not ok:
        raise CheckFailed(line)
    progress.say(line)
    return EXIT_OK

