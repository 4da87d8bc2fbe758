"""Whether the controllers a wait depends on still lead: their leader Leases, watched on this host's clock.

A wait on Helm or on the release ends at its --timeout when the controller that would move it forward is
gone: the KubeRay operator (it creates the RayCluster and its pods and removes their finalizers),
kube-controller-manager (a Deployment's pods, garbage collection), kube-scheduler (binding pods), Kueue
(admission). Each one that runs with leader election renews a Lease every few seconds. A Lease whose record
stays unchanged for its leaseDurationSeconds on this host's monotonic clock (client-go's rule: the holder's
renewTime is never compared with our clock), or whose holder released it, has lapsed: no instance of that
controller leads, and the wait is said to be held by it as soon as that is seen.

A Lease that does not exist, or that cannot be read (RBAC, a managed control plane that hides its own), says
nothing: only a Lease seen renewing can be seen lapsing. (The playground runs kube-controller-manager,
kube-scheduler and Kueue without leader election, so there only KubeRay's Lease is watched; the others are
judged by the same code on clusters that elect their leaders, the usual setting.)
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

KUBERAY_LEASE = "ray-operator-leader"  # KubeRay's LeaderElectionID (ray-operator main.go); its namespace varies


@dataclass(frozen=True)
class Leader:
    """One controller's leader Lease: where it is (namespace None: found by name in any namespace), who it
    is, and what stops while none leads."""

    namespace: str | None
    name: str
    who: str
    stops: str


LEADERS = (
    Leader(None, KUBERAY_LEASE, "the KubeRay operator",
           "RayJobs and RayClusters do not progress (no RayCluster or Ray pod is created, no finalizer removed)"),
    Leader("kube-system", "kube-controller-manager", "kube-controller-manager",
           "Deployments get no new pods and deleted objects' dependents are not removed"),
    Leader("kube-system", "kube-scheduler", "kube-scheduler", "new pods stay Pending, unscheduled"),
    Leader(None, "c1f6bfd2.kueue.x-k8s.io", "Kueue's controller manager",
           "queued workloads are not admitted and Kueue's webhooks may not answer"),
)
EVERY = 2.0  # seconds between two reads of the Leases (controller-runtime renews every 2 s)
MARGIN = 2.0  # seconds past leaseDurationSeconds before a silent Lease counts as lapsed (a renewal in flight)


class LeaderWatch:
    """Call poll() now and then (a wait's own loop); it returns the lines newly worth saying. lapsed() is
    what holds a wait at its end. Reads errors quietly: what it says is a bonus to the error it explains."""

    def __init__(self, kube: Any, clock: Callable[[], float] = time.monotonic,
                 leaders: tuple[Leader, ...] = LEADERS, every: float = EVERY) -> None:
        self.kube, self.clock, self.leaders, self.every = kube, clock, leaders, every
        self._last: float | None = None
        self._seen: dict[str, tuple[list[Any], float]] = {}  # name -> (record, when first seen on our clock)
        self._where: dict[str, str | None] = {}  # a Lease found by name: its namespace (None: looked, absent)
        self._down: dict[str, str] = {}  # name -> the line said when it lapsed
        self._lock = threading.Lock()  # poll() runs in a wait's thread while held() is read by the waiter

    def _read(self, leader: Leader) -> dict[str, Any] | None:
        from kubernetes.client.exceptions import ApiException

        ns = leader.namespace
        try:
            if ns is None:
                if leader.name not in self._where:
                    found = self.kube.list("/apis/coordination.k8s.io/v1/leases",
                                           field_selector=f"metadata.name={leader.name}")
                    # an old install's released Lease may linger beside the live one: the held one is the leader's
                    found.sort(key=lambda lease: not (lease.get("spec") or {}).get("holderIdentity"))
                    self._where[leader.name] = found[0]["metadata"]["namespace"] if found else None
                ns = self._where[leader.name]
                if ns is None:
                    return None
            return dict(self.kube.request("GET", f"/apis/coordination.k8s.io/v1/namespaces/{ns}/leases/{leader.name}"))
        except ApiException as exc:
            if exc.status == 403 and leader.namespace is None:
                self._where[leader.name] = None  # not ours to list: asked once, not on every poll
            return None  # absent or forbidden: nothing to say about this leader
        except Exception:
            return None  # the apiserver not answering: the wait's own reads say so; nothing to add here

    def poll(self) -> list[str]:
        """Read each Lease once; the lines of those that lapsed, or lead again, since the last poll."""
        with self._lock:
            return self._poll()

    def _poll(self) -> list[str]:
        out: list[str] = []
        now = self.clock()
        if self._last is not None and now - self._last < self.every:
            return out  # a wait's loop may call often: the Leases are read at most every `every` seconds
        self._last = now
        for leader in self.leaders:
            lease = self._read(leader)
            if lease is None:
                continue
            meta, spec = lease.get("metadata") or {}, lease.get("spec") or {}
            record = [meta.get("uid"), meta.get("resourceVersion"), spec.get("holderIdentity"), spec.get("renewTime")]
            before = self._seen.get(leader.name)
            if before is None or before[0] != record:
                self._seen[leader.name] = (record, now)
                if leader.name in self._down and spec.get("holderIdentity"):
                    del self._down[leader.name]
                    out.append(f"{leader.who} leads again (its leader Lease {meta.get('namespace')}/{leader.name} "
                               f"is held by {spec.get('holderIdentity')})")
                    continue
            if leader.name in self._down:
                continue
            where = f"{meta.get('namespace')}/{leader.name}"
            if not spec.get("holderIdentity"):
                line = f"no instance of {leader.who} leads: its leader Lease {where} has no holder; {leader.stops}"
            else:
                duration = _seconds(spec.get("leaseDurationSeconds"))
                silent = now - self._seen[leader.name][1]
                if silent < duration + MARGIN:
                    continue
                line = (f"no instance of {leader.who} leads: its leader Lease {where} (holder "
                        f"{spec.get('holderIdentity')}) was not renewed for {silent:.0f}s, past its {duration:.0f}s "
                        f"lease; {leader.stops}")
            self._down[leader.name] = line
            out.append(line)
        return out

    def lapsed(self) -> list[str]:
        """The lines of the controllers that lapsed and have not led again since."""
        with self._lock:
            return list(self._down.values())

    def held(self) -> str:
        """What a timed-out wait adds: one indented line per lapsed controller ('' when none)."""
        return "".join(f"\n  held by: {line}" for line in self.lapsed())


def _seconds(value: Any) -> float:
    try:
        return max(1.0, float(value))
    except (TypeError, ValueError):
        return 15.0  # client-go's default lease duration
