"""The per-release run lock: a Lease held and renewed for the whole of a mutating verb, judged without
comparing clocks (the holder's process on this host, else a watch on this host's monotonic clock)."""

from __future__ import annotations

import math
import os
import socket
import sys
import threading
import time
from datetime import UTC, datetime
from typing import Any

from generator.errors import CheckFailed
from generator.live.client.kube import INSTANCE, Kube
from generator.live.helm import holders
from generator.live.helm.records import release_records
from generator.live.helm.runner import GRACE

LEASE_SECONDS = 15

HOLDER_PID = "dockyard.dev/holder-pid"  # "<host>/<pid>" of the holder

HOLDER_PROCESS = "dockyard.dev/holder-process"  # "<boot id>/<pid namespace>/<start time>": holders.process

HOLDER_HELM_SECONDS = "dockyard.dev/holder-helm-seconds"  # the longest its helm may still work, as of this write


def lease_name(release: str) -> str:
    return f"{release}.dockyard-run"


class RunLock:
    """Held for the whole of a mutating verb; renewed every LEASE_SECONDS / 3.

    A taken lease is judged without comparing clocks (client-go's leader election does the same):
    - its holder runs on this host (same hostname, boot and pid namespace): a live holder is refused at
      once; one whose process is gone (or whose pid now names another process) is taken over at once;
    - otherwise the lease is watched on this host's monotonic clock from when this host first saw its
      record: a change (a renewal) is refused at once; a record unchanged for its leaseDurationSeconds is
      stale, and is taken over unless its holder's helm may still work (the holder publishes the seconds
      its helm may still work as of each write, counted here from that first sight).
    The takeover is a PUT with the resourceVersion read (a racing taker gets 409). Renewal and release
    check that the lease is still ours; a holder whose lease was taken over sees `lost`."""

    clock = staticmethod(time.monotonic)  # the observer's clock (tests inject one)
    sleep = staticmethod(time.sleep)

    def __init__(self, kube: Kube, namespace: str, release: str, verb: str, deadline: float | None = None):
        """deadline (time.monotonic()): when this verb's helm is stopped; None: no bound published."""
        import uuid

        self.kube, self.namespace, self.release, self.verb = kube, namespace, release, verb
        self.identity = f"{socket.gethostname()}/{os.getpid()}/{verb}/{uuid.uuid4().hex[:8]}"
        self.deadline = deadline
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._warned: str | None = None
        self.took_over_stale = False
        self.lost: str | None = None

    def _path(self, name: str = "") -> str:
        return f"/apis/coordination.k8s.io/v1/namespaces/{self.namespace}/leases" + (f"/{name}" if name else "")

    def _notes(self) -> dict[str, str]:
        notes = {HOLDER_PID: f"{socket.gethostname()}/{os.getpid()}"}
        me = holders.process(os.getpid())
        if me:
            notes[HOLDER_PROCESS] = me
        if self.deadline is not None:  # a duration, not an instant: no reader needs our clock
            notes[HOLDER_HELM_SECONDS] = str(max(0, math.ceil(self.deadline + GRACE - self.clock())))
        return notes

    def _body(self, resource_version: str | None = None) -> dict[str, Any]:
        now = _micro_time(datetime.now(UTC))
        metadata: dict[str, Any] = {"name": lease_name(self.release), "annotations": self._notes(),
                                    "labels": {INSTANCE: self.release,
                                               "app.kubernetes.io/managed-by": "dockyard-k8s"}}
        if resource_version:
            metadata["resourceVersion"] = resource_version
        return {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": metadata,
                "spec": {"holderIdentity": self.identity, "leaseDurationSeconds": LEASE_SECONDS,
                         "acquireTime": now, "renewTime": now}}

    def _busy(self, why: str) -> CheckFailed:
        return CheckFailed(f"release {self.release} in namespace {self.namespace} is busy: {why}; nothing was "
                           "changed. Wait for it to finish, or stop it (Ctrl-C) and run again")

    @staticmethod
    def _here(lease: dict[str, Any]) -> tuple[int, str | None] | None:
        """(pid, this host's name for the holder's process now) when the holder ran on this host; None
        when its pid means nothing here."""
        notes = (lease.get("metadata") or {}).get("annotations") or {}
        host, _, pid = (notes.get(HOLDER_PID) or "").rpartition("/")
        recorded = notes.get(HOLDER_PROCESS) or ""
        where = holders.machine()
        if host != socket.gethostname() or not pid.isdigit() or not where or not recorded.startswith(f"{where}/"):
            return None
        return int(pid), holders.process(int(pid))

    def acquire(self) -> None:
        from kubernetes.client.exceptions import ApiException

        for _ in range(3):  # a lease released between our POST and GET: create it again
            try:
                self.kube.request("POST", self._path(), body=self._body())
                break
            except ApiException as exc:
                if exc.status != 409:
                    raise
            current = self._read()
            if current is not None and self._judge(current):
                break
        else:
            raise self._busy("its run lock was taken and released three times while this run tried to take it")
        self._thread = threading.Thread(target=self._renew, name="dockyard-lease", daemon=True)
        self._thread.start()

    def _read(self) -> dict[str, Any] | None:
        from kubernetes.client.exceptions import ApiException

        try:
            return dict(self.kube.request("GET", self._path(lease_name(self.release))))
        except ApiException as exc:
            if exc.status != 404:
                raise
            return None

    def _judge(self, current: dict[str, Any]) -> bool:
        """Take over a lease whose holder is gone (True), raise busy while it may work, False when the
        lease vanished while watched."""
        spec = current.get("spec") or {}
        holder = spec.get("holderIdentity") or "?"
        verb = holder.split("/")[2] if holder.count("/") >= 2 else "run"
        here = self._here(current)
        if here is not None:
            pid, now_named = here
            recorded = current["metadata"]["annotations"][HOLDER_PROCESS]
            if now_named == recorded or (now_named is None and holders.hidden(pid)):
                paused = " (paused?)" if holders.stopped(pid) else ""
                raise self._busy(f"another `{verb}` (holder {holder}) is in flight: its process {pid} is still "
                                 f"alive{paused}")
            return self._take_over(current)  # gone, or its pid names another process now
        return self._watch(current, holder, verb)

    def _watch(self, current: dict[str, Any], holder: str, verb: str) -> bool:
        """A holder on another host: stale once its record is unchanged for its lease duration on our clock."""
        spec, notes = current.get("spec") or {}, (current.get("metadata") or {}).get("annotations") or {}
        host = (notes.get(HOLDER_PID) or "?").rpartition("/")[0] or "?"
        duration = _number(spec.get("leaseDurationSeconds"), LEASE_SECONDS, low=1)
        helm_seconds = _number(notes.get(HOLDER_HELM_SECONDS), 0)
        record = _record(current)
        key = f"{getattr(self.kube, 'server', '')} {self.namespace}/{lease_name(self.release)}"
        seen = holders.first_seen(key, record, self.clock())
        stale_at, helm_done_at = seen + duration, seen + helm_seconds
        if helm_done_at > max(stale_at, self.clock()):  # refused even if it stays silent: say so now
            raise self._busy(f"another `{verb}` (holder {holder} on host {host}) holds the lock, and its helm may "
                             f"still work for up to {math.ceil(helm_done_at - self.clock())} s")
        left = stale_at - self.clock()
        if self.deadline is not None and stale_at > self.deadline:
            raise self._busy(f"another `{verb}` (holder {holder} on host {host}) holds the lock; telling whether "
                             f"it still renews takes {math.ceil(left)} s, more than this run's --timeout leaves")
        if left > 0:
            print(f"waiting up to {math.ceil(left)} s to see whether holder {holder} renews its lock",
                  file=sys.stderr, flush=True)
        while (left := stale_at - self.clock()) > 0:
            self.sleep(min(1.0, duration / 10, left))
            latest = self._read()
            if latest is None:
                return False
            if _record(latest) != record:
                raise self._busy(f"another `{verb}` (holder {holder} on host {host}) renewed its lock while this "
                                 "run watched: it is in flight")
        return self._take_over(current)

    def _take_over(self, current: dict[str, Any]) -> bool:
        from kubernetes.client.exceptions import ApiException

        try:
            self.kube.request("PUT", self._path(lease_name(self.release)),
                              body=self._body(current["metadata"]["resourceVersion"]))
        except ApiException as exc:
            if exc.status == 409:
                raise self._busy("another run took the lock just now") from None
            raise
        self.took_over_stale = True
        return True

    def _mine(self) -> dict[str, Any] | None:
        """The lease when we still hold it; None (and `lost` set) when another holder has it."""
        lease = self._read() or {}
        holder = (lease.get("spec") or {}).get("holderIdentity")
        if holder != self.identity:
            self.lost = f"the run lock is now held by {holder}" if holder else "the run lock was deleted"
            return None
        return lease

    def _trouble(self, doing: str, exc: Exception, then: str = "") -> None:
        """One stderr line per new failure of the lock's own requests (a renewal may recover)."""
        from generator.live.client.api_errors import describe_error

        text = (f"could not {doing} the run lock of release {self.release} in namespace {self.namespace}: "
                f"{describe_error(exc, getattr(self.kube, 'server', None)) or f'{type(exc).__name__}: {exc}'}{then}")
        if text != self._warned:
            self._warned = text
            print(f"warning: {text}", file=sys.stderr, flush=True)

    def _renew(self) -> None:
        while not self._stop.wait(LEASE_SECONDS / 3):
            try:
                lease = self._mine()
                if lease is None:
                    return
                lease["spec"]["renewTime"] = _micro_time(datetime.now(UTC))
                lease["metadata"]["annotations"] = {**(lease["metadata"].get("annotations") or {}), **self._notes()}
                self.kube.request("PUT", self._path(lease_name(self.release)), body=lease)
            except Exception as exc:  # the next renewal may succeed; the lease lasts LEASE_SECONDS
                self._trouble("renew", exc)

    def release_lock(self) -> None:
        self._stop.set()
        if self._thread:
            self._thread.join(timeout=5)
        try:
            lease = self._mine()
            if lease is not None:  # delete only our own lease, and only the version we read
                self.kube.request("DELETE", self._path(lease_name(self.release)),
                                  body={"preconditions": {"resourceVersion": lease["metadata"]["resourceVersion"]}})
        except Exception as exc:  # the verb's own outcome stands; the lease is left to go stale
            self._trouble("release", exc, f"; it goes stale: the next run on this host takes it at once, one "
                                          f"elsewhere after watching it for {LEASE_SECONDS} s")

    def __enter__(self) -> RunLock:
        self.acquire()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.release_lock()


def clear_left_behind(kube: Kube, release: str, namespace: str | None, verb: str) -> list[str]:
    """Remove the run locks of `release` that outlived it: a verb killed after its helm had finished leaves
    the Lease with no release to go with it, and nothing else ever removes it. Only a lock in a namespace with
    no Helm record of the release is touched, and each is judged as a taker judges it (RunLock.acquire): a
    holder on this host whose process is gone, or one elsewhere whose record stays unchanged for its lease
    duration on this host's clock, gives it up; a holder that may still work is refused (CheckFailed, busy).
    Returns one line per lock removed and seen gone (none: [])."""
    from kubernetes.client.exceptions import ApiException

    path = (f"/apis/coordination.k8s.io/v1/namespaces/{namespace}/leases" if namespace
            else "/apis/coordination.k8s.io/v1/leases")
    try:
        found = kube.list(path, field_selector=f"metadata.name={lease_name(release)}")
    except ApiException as exc:
        if exc.status == 403:  # not ours to read: nothing can be said about a lock
            return []
        raise
    out = []
    for lease in found:
        ns = lease["metadata"]["namespace"]
        if release_records(kube, release, ns):
            continue  # the release is there: its lock is the verb's own business, not a leftover
        holder = (lease.get("spec") or {}).get("holderIdentity") or "?"
        gone = "whose process is gone" if RunLock._here(lease) is not None else "which stopped renewing it"
        lock = RunLock(kube, ns, release, verb, deadline=getattr(kube, "deadline", None))
        with lock:
            pass  # taken from its dead holder, then released: deleted
        if lock.took_over_stale and lock._read() is None:  # not said when it vanished by itself or stayed
            out.append(f"removed its run lock {ns}/{lease_name(release)}, left behind by {holder}, {gone}")
    return out


def _record(lease: dict[str, Any]) -> list[Any]:
    """What changes when a holder writes its lease: a change seen is a renewal, whatever its clocks say."""
    meta, spec = lease.get("metadata") or {}, lease.get("spec") or {}
    return [meta.get("uid"), meta.get("resourceVersion"), spec.get("holderIdentity"), spec.get("renewTime")]


def _number(value: Any, default: float, low: float = 0) -> float:
    try:
        number = float(value)
    except (TypeError, ValueError):
        return default
    return max(low, number) if math.isfinite(number) else default


def _micro_time(t: datetime) -> str:
    """A Kubernetes MicroTime (RFC 3339, microseconds, UTC)."""
    return t.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
