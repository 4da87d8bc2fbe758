"""`run` and `cluster up`: compose values, install them with Helm, follow RayJob -> RayCluster -> pods."""

from __future__ import annotations

import sys
import threading
import time
from dataclasses import dataclass
from typing import Any

from generator.errors import EXIT_OK, CheckFailed
from generator.live.kube import INSTANCE, RAY_GROUP, RAY_VERSION, Kube
from generator.live.progress import Progress
from generator.live.release import PENDING, Helm, RunLock, wait_until
from generator.live.snapshot import Snapshot, decode_release, labels, release_records, take


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
    from generator.compose import compose, load_inputs, values_dict

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


def _manifest_objects(text: str) -> list[dict[str, Any]]:
    import yaml

    return [d for d in yaml.safe_load_all(text or "") if isinstance(d, dict)]


def _rayjob_spec(docs: list[dict[str, Any]]) -> dict[str, Any] | None:
    return next((d.get("spec") for d in docs if d.get("kind") == "RayJob"), None)


def diff_paths(old: Any, new: Any, path: str = "", out: list[str] | None = None, limit: int = 8) -> list[str]:
    """Key paths where two JSON-like trees differ (worker groups are indexed by groupName)."""
    out = [] if out is None else out
    if len(out) >= limit:
        return out
    if isinstance(old, dict) and isinstance(new, dict):
        for k in sorted(set(old) | set(new)):
            diff_paths(old.get(k), new.get(k), f"{path}.{k}" if path else k, out, limit)
    elif isinstance(old, list) and isinstance(new, list) and old + new and all(
            isinstance(x, dict) and ("groupName" in x or "name" in x) for x in old + new):
        o = {x.get("groupName", x.get("name")): x for x in old}
        n = {x.get("groupName", x.get("name")): x for x in new}
        for k in sorted(set(o) | set(n)):
            diff_paths(o.get(k), n.get(k), f"{path}[{k}]", out, limit)
    elif old != new:
        if isinstance(old, (dict, list)) or isinstance(new, (dict, list)):
            out.append(path)
        else:
            out.append(f"{path}: {old!r} -> {new!r}")
    return out


def _rayjob_change(kube: Kube, p: Plan, records: list[Any]) -> list[str]:
    """How the RayJob spec would change against the deployed release (empty: no RayJob to protect)."""
    from generator.helm import template

    if p.mode != "rayjob":
        return []
    deployed = next((r for r in reversed(records) if labels(r).get("status") == "deployed"), None)
    if deployed is None:
        return []
    old = _rayjob_spec(_manifest_objects(decode_release(deployed).get("manifest", "")))
    if old is None or kube.get_ray("rayjobs", p.namespace, p.release) is None:
        return []
    new = _rayjob_spec(_manifest_objects(template(p.values, p.release, p.namespace)))
    if new is None or old == new:
        return []
    return diff_paths(old, new)


def _delete_rayjob(kube: Kube, p: Plan, out: Progress, timeout: float) -> None:
    delete_rayjob(kube, p.namespace, p.release, out.say, timeout)


def delete_rayjob(kube: Kube, namespace: str, name: str, say: Any, timeout: float) -> None:
    """Delete a RayJob in the foreground (its RayCluster and pods go too) and wait until both are gone."""
    from kubernetes.client.exceptions import ApiException

    job = kube.get_ray("rayjobs", namespace, name)
    cluster = ((job or {}).get("status") or {}).get("rayClusterName")
    say(f"--replace: deleting RayJob {name}" + (f" and its RayCluster {cluster}" if cluster else ""))
    try:
        kube.custom.delete_namespaced_custom_object("ray.io", "v1", namespace, "rayjobs", name,
                                                    propagation_policy="Foreground")
    except ApiException as exc:
        if exc.status != 404:
            raise
    gone = wait_until(lambda: kube.get_ray("rayjobs", namespace, name) is None
                      and (not cluster or kube.get_ray("rayclusters", namespace, cluster) is None), timeout)
    if not gone:
        raise CheckFailed(f"RayJob {name} was not deleted within {timeout:.0f}s; nothing else was changed")


def rayjob_rollback_change(kube: Kube, namespace: str, release: str, records: list[Any], target: int) -> list[str]:
    """How rolling back to `target` would change the live RayJob's spec (KubeRay #1776 applies here too)."""
    by_version = {int(labels(r)["version"]): r for r in records}
    current = next((r for r in reversed(records) if labels(r).get("status") == "deployed"), None)
    if target not in by_version or current is None or kube.get_ray("rayjobs", namespace, release) is None:
        return []
    old = _rayjob_spec(_manifest_objects(decode_release(current).get("manifest", "")))
    new = _rayjob_spec(_manifest_objects(decode_release(by_version[target]).get("manifest", "")))
    if old is None or new is None or old == new:
        return []
    return diff_paths(old, new)


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


def _watch_during(kube: Kube, p: Plan, progress: Progress, stop: threading.Event, seen: list[Snapshot]) -> None:
    while not stop.is_set():
        try:
            snap = take(kube, p.release, p.namespace)
            seen[:] = [snap]
            progress.update(snap, "helm upgrade --install")
        except Exception:  # noqa: BLE001 - the view is best effort; helm's outcome is what counts
            pass
        stop.wait(2.0)


def run(args: Any, mode: str | None = None) -> int:
    p = plan(args.recipe, args.infra, args.overrides, args.release, args.namespace, mode)
    progress = Progress(quiet=args.quiet, title=f"{p.release} ({p.namespace})")
    for note in p.notes:
        print(note, file=sys.stderr)
    t0 = time.monotonic()
    deadline = t0 + args.timeout
    kube = Kube(args.kubeconfig, args.context)
    if p.mode != "attach":
        kube.require_ray()
    kube.require_priority_class(p.priority_class)
    if not kube.namespace_exists(p.namespace):
        if not args.create_namespace:
            raise CheckFailed(f"namespace {p.namespace} does not exist: pass --create-namespace, or create it")
        kube.ensure_namespace(p.namespace)
        progress.say(f"created namespace {p.namespace}")
    helm = Helm(kube)
    with RunLock(kube, p.namespace, p.release, "run"):
        records = release_records(kube, p.release, p.namespace)
        _recover(kube, helm, p, records, progress, max(30.0, deadline - time.monotonic()))
        records = release_records(kube, p.release, p.namespace)
        changed = _rayjob_change(kube, p, records)
        if changed:
            if not args.replace:
                raise CheckFailed(
                    f"the RayJob {p.release} spec changed ({'; '.join(changed)}), and KubeRay does not pass spec "
                    "changes to a running RayJob's cluster (KubeRay #1776): nothing was changed. Rerun with "
                    "--replace to delete and recreate the RayJob (its RayCluster and pods restart), or "
                    f"`dockyard-k8s uninstall {p.release}` first")
            _delete_rayjob(kube, p, progress, max(30.0, deadline - time.monotonic()))
        stop = threading.Event()
        seen: list[Snapshot] = []
        watcher = threading.Thread(target=_watch_during, args=(kube, p, progress, stop, seen), daemon=True)
        watcher.start()
        try:
            rev = helm.upgrade(p.release, p.namespace, p.values, timeout=max(10.0, deadline - time.monotonic()),
                               description=f"dockyard-k8s run ({p.mode})")
        except CheckFailed as exc:
            stop.set()
            watcher.join(timeout=5)
            after = release_records(kube, p.release, p.namespace)
            deployed = [r for r in after if labels(r).get("status") == "deployed"]
            state = (f"revision {labels(deployed[-1])['version']} is still the deployed one" if deployed
                     else "nothing is left installed")
            why = _reasons(seen[0]) if seen else ""
            raise CheckFailed(f"{exc}\n  rolled back: {state}" + (f"\n  while it ran:{why}" if why else "")) from None
        except KeyboardInterrupt:
            stop.set()
            print(f"\ninterrupted: helm was stopped; `dockyard-k8s run` again converges from here", file=sys.stderr)
            raise
        finally:
            stop.set()
            watcher.join(timeout=5)
        progress.say(f"release {p.release} revision {rev.get('version')} {rev.get('info', {}).get('status')} "
                     f"in {p.namespace} ({time.monotonic() - t0:.1f}s): sandbox pool rolled out")
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
