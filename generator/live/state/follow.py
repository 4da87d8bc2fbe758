"""Following a release until its end state: every fleet ready, or a failure with its reasons."""

from __future__ import annotations

import sys
import threading
import time

from generator.errors import CheckFailed
from generator.live.client.kube import INSTANCE, RAY_GROUP, RAY_VERSION, Kube
from generator.live.state import queueing
from generator.live.state.claims import FailedClaim
from generator.live.state.controllers import LeaderWatch
from generator.live.state.progress import Progress
from generator.live.state.pulls import FailedPull, PullWatch
from generator.live.state.snapshot import Snapshot, take

MIN_INTERVAL = 0.2  # seconds between two reads of the release while events stream in
FLOOR_INTERVAL = 2.0  # a re-read when nothing was watched to change
READY = {"rayjob": "RayJob running on a ready RayCluster", "bringup": "RayCluster ready",
         "attach": "sandbox pool ready"}  # what `ready` means, by launch mode


def reasons(snap: Snapshot) -> str:
    """The snapshot's not-ready reasons, one indented line each ('' when there are none)."""
    lines = snap.not_ready_reasons()
    return ("\n  " + "\n  ".join(lines)) if lines else ""


def follow(kube: Kube, release: str, namespace: str, deadline: float, progress: Progress,
           phase: str = "waiting") -> Snapshot:
    """Re-read the release until its end state; CheckFailed with the reasons on failure or timeout.

    Watches on the release's pods, RayJobs and RayClusters wake the wait as soon as something
    changes (a burst of events is read once, at most every MIN_INTERVAL); without an event the
    state is re-read every FLOOR_INTERVAL (Warning events, which explain a wait, are not watched). A
    controller whose leader Lease lapses meanwhile (controllers.LeaderWatch) is said when seen, and a
    timeout names it as what held the wait. A failed image pull is said when seen (the image, the pod, the
    node) and ends the wait as pulls.PullWatch judges: at once when no retry fixes it, else after a bound; so
    does a claim a waiting pod mounts whose provisioner refused it (claims.py)."""
    changed, stop = threading.Event(), threading.Event()
    watching = False
    leaders = LeaderWatch(kube)
    pulls = PullWatch()
    try:
        while True:
            changed.clear()
            read_at = time.monotonic()
            snap = take(kube, release, namespace)
            progress.update(snap, "queued" if snap.queued() else phase)
            if snap.ready():
                return snap
            for line in leaders.poll():  # a controller gone is said when seen, not at the timeout
                progress.say(f"{release}: {line}")
            # the images and the claims a pod cannot start without (claims.py)
            stuck: list[FailedPull | FailedClaim] = [*snap.pulls, *snap.claims]
            for pull in pulls.new(stuck):
                progress.say(f"{release}: {pull.line()}")
            failure = (snap.failure() or pulls.verdict(stuck)
                       or (_vanished(kube, snap) if snap.revision is None or not snap.fleets else None))
            if failure:
                raise CheckFailed(failure + reasons(snap))
            if time.monotonic() >= deadline and snap.queued() and snap.queue:
                raise CheckFailed(f"{release} still queued after the timeout (the release stays installed and starts "
                                  f"when Kueue admits it): {queueing.line(snap.queue)}" + leaders.held())
            if time.monotonic() >= deadline:
                raise CheckFailed(f"{release} not ready after the timeout" + reasons(snap) + leaders.held())
            if not watching:
                watching = True
                _watch(kube, release, namespace, changed, stop)
            changed.wait(max(0.0, min(FLOOR_INTERVAL, deadline - time.monotonic())))
            time.sleep(max(0.0, read_at + MIN_INTERVAL - time.monotonic()))
    finally:
        stop.set()


def _vanished(kube: Kube, snap: Snapshot) -> str | None:
    """What went from under a wait that sees no revision or no object of its release: its namespace, or
    the release itself (None when both are there: the objects are yet to come). One read."""
    release, namespace = snap.release, snap.namespace
    exists, deleting = kube.namespace_state(namespace)
    if deleting:
        return f"namespace {namespace} is {deleting}; {release} cannot become ready there"
    if exists is False:
        return f"namespace {namespace} was deleted while waiting for {release}: nothing of it is left"
    if snap.revision is None:  # take() found no Helm record of it
        return f"release {release} was uninstalled from {namespace} while waiting for it"
    return None


def _watch(kube: Kube, release: str, namespace: str, changed: threading.Event, stop: threading.Event) -> None:
    """Watch threads on the release's pods, RayJobs and RayClusters that set `changed` on any event."""
    sel = f"{INSTANCE}={release}"
    ray = f"/apis/{RAY_GROUP}/{RAY_VERSION}/namespaces/{namespace}"
    for path, selector in ((f"/api/v1/namespaces/{namespace}/pods", sel), (f"{ray}/rayjobs", sel),
                           (f"{ray}/rayclusters", None)):
        threading.Thread(target=kube.watch, args=(path, changed.set, stop, selector), daemon=True).start()


def until_ready(kube: Kube, release: str, namespace: str, mode: str, deadline: float, progress: Progress,
                t0: float) -> None:
    """`run --wait`: follow the release until it is ready and say so; Ctrl-C says the release stays."""
    try:
        follow(kube, release, namespace, deadline, progress)
    except KeyboardInterrupt:
        print(f"\ninterrupted: release {release} stays installed; `dockyard-k8s status {release} -n {namespace}` "
              "shows it", file=sys.stderr)
        raise
    progress.say(f"{release}: {READY.get(mode, 'ready')}; every pod Ready ({time.monotonic() - t0:.1f}s)")
