"""`run`'s install step: the plan's values through `helm upgrade --install` under the run lock.

Before Helm runs: the values are fitted to the KubeRay CRDs the cluster serves (served_fields), a release an
interrupted run left pending is recovered, and the recovery and the change are checked against running training
(guard.enforce; --replace deletes what cannot be changed in place). While Helm runs, the release is re-read so a
failure can say what the pods were waiting on.
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from generator.errors import CheckFailed
from generator.live.changes.guard import enforce
from generator.live.changes.plan import Plan
from generator.live.changes.served_fields import fit_to_served
from generator.live.client.kube import Kube
from generator.live.helm.ownership import require_ours, require_secret_storage
from generator.live.helm.records import (
    PENDING,
    decode_release,
    end_state,
    labels,
    live_manifest,
    release_records,
    upgrade_base,
)
from generator.live.helm.run_lock import RunLock
from generator.live.helm.runner import Helm
from generator.live.state.claims import FailedClaim
from generator.live.state.controllers import LeaderWatch
from generator.live.state.follow import reasons
from generator.live.state.progress import Progress
from generator.live.state.pulls import FailedPull, PullWatch
from generator.live.state.snapshot import Snapshot, take

WATCH_INTERVAL = 1.0  # seconds between two reads of the release while helm works (its reasons explain a failure)


@dataclass
class Installed:
    """What the steps after the install (following the release or its job) go on with."""

    kube: Kube
    progress: Progress
    deadline: float  # time.monotonic() at which --timeout runs out
    t0: float  # time.monotonic() at the start


def install(p: Plan, *, kubeconfig: str | None, context: str | None, timeout: float, quiet: bool,
            replace: bool, create_namespace: bool, wait: bool = False) -> Installed:
    """Install or upgrade the release (helm, atomic) and say which revision is deployed. With `wait`
    (the caller waits for the gang), a gang no node set could ever hold is refused before Helm runs."""
    progress = Progress(quiet=quiet, title=f"{p.release} ({p.namespace})")
    for note in p.notes:
        print(note, file=sys.stderr)
    t0 = time.monotonic()
    deadline = t0 + timeout
    kube = Kube(kubeconfig, context)
    kube.deadline = deadline
    progress.say(f"{p.release} in namespace {p.namespace}, {kube.target()}")
    if p.mode != "attach":
        kube.require_ray()
        if served := fit_to_served(kube, p.mode, p.namespace, p.values):
            print(served, file=sys.stderr)
        if wait:
            from generator.live.doctor.capacity import refuse_never_fits
            from generator.live.doctor.fabric import gang_rows

            network = (p.values.get("kuberay") or {}).get("network")
            refuse_never_fits(kube, p.cluster, "`run --wait`", gang_rows(p.cluster, network))
    kube.require_priority_class(p.priority_class)
    if not kube.namespace_exists(p.namespace):
        if not create_namespace:
            raise CheckFailed(f"namespace {p.namespace} does not exist: pass --create-namespace, or create it")
        kube.ensure_namespace(p.namespace)
        progress.say(f"created namespace {p.namespace}")
    helm = Helm(kube, deadline=deadline)
    with RunLock(kube, p.namespace, p.release, "run", deadline=deadline) as lock:
        require_secret_storage(kube, p.release, p.namespace, "run")
        records = release_records(kube, p.release, p.namespace)
        require_ours(records, p.release, p.namespace, "run")
        _recover(helm, kube, p, records, progress, replace, deadline)
        records = release_records(kube, p.release, p.namespace)
        _guard(kube, p, records, replace, progress, deadline)
        since = max((int(labels(r)["version"]) for r in records), default=0)
        rev = _upgrade(kube, helm, p, progress, deadline, since)
        if lock.lost:
            raise CheckFailed(f"{lock.lost} while this run worked: another run may have changed the release; "
                              f"check `dockyard-k8s history {p.release} -n {p.namespace}`")
        progress.say(f"release {p.release} revision {rev.get('version')} {rev.get('info', {}).get('status')} "
                     f"in {p.namespace} ({time.monotonic() - t0:.1f}s): sandbox pool rolled out")
    return Installed(kube, progress, deadline, t0)


def _recover(helm: Helm, kube: Kube, p: Plan, records: list[Any], out: Progress, replace: bool,
             deadline: float) -> None:
    """A release left pending by an interrupted run (we hold the lock, so nobody else is running): roll
    back to the last deployed revision, or uninstall a never-deployed one; a release left `uninstalling`
    is removed. Each goes through the training-loss gate against the newest revision's manifest (what is
    live). A release with only failed revisions needs no recovery: Helm upgrades over its last one."""
    if not records:
        return
    status = labels(records[-1]).get("status")
    deployed = [r for r in records if labels(r).get("status") == "deployed"]
    live = live_manifest(records)

    def left() -> float:  # helm's --timeout, read after enforce(): --replace may have spent some waiting
        return max(5.0, deadline - time.monotonic())

    if status in PENDING and deployed:
        rev = int(labels(deployed[-1])["version"])
        why = f"release {p.release} was left {status} by an interrupted run, and rolling it back to revision {rev}"
        enforce(kube, p.namespace, live, decode_release(deployed[-1]).get("manifest", ""), replace=replace,
                verb="run", say=out.say, deadline=deadline, why=why + " changes what runs")
        out.say(f"release {p.release} was left {status} by an interrupted run: rolling back to revision {rev}")
        since = int(labels(records[-1])["version"])
        _recovering(kube, p, out, f"helm rollback to revision {rev}", since,
                    lambda: helm.rollback(p.release, p.namespace, rev, timeout=left()))
    elif status in PENDING or status == "uninstalling":
        what = "an interrupted first install" if status in PENDING else "an interrupted uninstall"
        enforce(kube, p.namespace, live, "", replace=replace, verb="run", say=out.say, deadline=deadline,
                why=f"release {p.release} was left {status} by {what}, and recovering it means removing it")
        out.say(f"release {p.release} was left {status} by {what}: removing it")
        since = int(labels(records[-1])["version"])
        _recovering(kube, p, out, "helm uninstall", since, lambda: helm.uninstall(p.release, p.namespace,
                                                                                   timeout=left()))
    elif not deployed and status == "failed":
        out.say(f"release {p.release} has no deployed revision (last: failed): upgrading over it")


def _recovering(kube: Kube, p: Plan, out: Progress, what: str, since: int, step: Callable[[], Any]) -> None:
    """A recovery step (helm rollback or uninstall) watched like an upgrade: its failure says Helm's end
    state and what held it, not only Helm's own words ("context deadline exceeded")."""
    with Watching(kube, p, out, what) as watching:
        try:
            step()
        except CheckFailed as exc:
            watching.stop()
            raise CheckFailed(f"recovering release {p.release} failed: {exc}\n  helm's end state: "
                              f"{end_state(kube, p.release, p.namespace, since)}" + watching.held()) from None


def _guard(kube: Kube, p: Plan, records: list[Any], replace: bool, progress: Progress, deadline: float) -> None:
    """Refuse to lose running training unless --replace; with it, delete what must be recreated."""
    current = upgrade_base(records)
    if current is None:
        return
    from generator.render.helm import template

    enforce(kube, p.namespace, current, template(p.values, p.release, p.namespace), replace=replace, verb="run",
            say=progress.say, deadline=deadline)


def _rollback_reserve(left: float) -> float:
    """Seconds kept back from helm's --timeout for the --atomic rollback after a failed upgrade."""
    return min(60.0, max(10.0, left * 0.2))


def _upgrade(kube: Kube, helm: Helm, p: Plan, progress: Progress, deadline: float, since: int) -> dict[str, Any]:
    """helm upgrade --install while the release is re-read; a failure says Helm's end state and what held it."""
    left = deadline - time.monotonic()
    with Watching(kube, p, progress, "helm upgrade --install") as watching:
        try:
            return helm.upgrade(p.release, p.namespace, p.values, timeout=max(5.0, left - _rollback_reserve(left)),
                                description=f"dockyard-k8s run ({p.mode})")
        except CheckFailed as exc:
            watching.stop()
            raise CheckFailed(f"{exc}\n  helm's end state: {end_state(kube, p.release, p.namespace, since)}"
                              + watching.held()) from None
        except KeyboardInterrupt:
            print("\ninterrupted: helm was stopped; `dockyard-k8s run` again converges from here", file=sys.stderr)
            raise


class Watching:
    """While a helm verb works, a thread re-reads the release: the progress is drawn, the last not-ready
    reasons are kept (a rollback's cleanup leaves none), and a controller whose leader Lease lapses is said as
    soon as that is seen, as is a failed image pull or a claim its provisioner refused (Helm's --wait waits for the
    chart's claims to be bound: a refused one holds it to its timeout). held() is what a failure adds: what the pods
    were waiting on, those pulls and claims, and which controller no instance of leads."""

    def __init__(self, kube: Kube, p: Plan, progress: Progress, phase: str) -> None:
        self.kube, self.p, self.progress, self.phase = kube, p, progress, phase
        self.leaders = LeaderWatch(kube)
        self.stuck = PullWatch()  # each failed pull and refused claim said once, when first seen
        self.seen: list[Snapshot] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="dockyard-watch", daemon=True)

    def __enter__(self) -> Watching:
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    def stop(self) -> None:
        """No progress line is drawn after this returns (a read still in flight is dropped, not drawn)."""
        self._stop.set()
        self._thread.join(timeout=5)

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                snap = take(self.kube, self.p.release, self.p.namespace)
                if snap.not_ready_reasons() or not self.seen:
                    self.seen[:] = [snap]
                lines = self.leaders.poll() + [s.line() for s in self.stuck.new(_stuck(snap))]
                if self._stop.is_set():
                    return  # stopped while reading: the failure is being said, no progress after it
                self.progress.update(snap, self.phase)
                for line in lines:
                    self.progress.say(f"{self.p.release}: {line}")
            except Exception:
                pass  # a read that fails leaves the last reasons; helm's own error is the verdict
            self._stop.wait(WATCH_INTERVAL)

    def held(self) -> str:
        snap = self.seen[0] if self.seen else None
        why = reasons(snap) + "".join(f"\n  {s.line()}" for s in _stuck(snap)) if snap else ""
        return (f"\n  while it ran:{why}" if why else "") + self.leaders.held()


def _stuck(snap: Snapshot) -> list[FailedPull | FailedClaim]:
    """What no pod of the release starts without: its failed image pulls and the claims their provisioner refused."""
    return [*snap.pulls, *snap.claims]
