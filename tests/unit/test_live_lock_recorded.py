"""The run lock (release.RunLock) against the fake's Lease state, answered with the Status bodies the
apiserver gave while recording (lease.json): acquire, refuse a live holder, take over from a dead pid and
from an expired holder on another host, release only while ours."""

from __future__ import annotations

import json
import os
import socket
from datetime import UTC, datetime, timedelta

import pytest
from fake_cluster import install

from generator.errors import CheckFailed
from generator.live.kube import Kube
from generator.live.release import HOLDER_PID, HOLDER_UNTIL, RunLock, lease_name

NS, RELEASE = "rec", "small"
NO_SUCH_PID = 4_194_305  # above the largest pid_max Linux allows: never a live process


@pytest.fixture
def fake(monkeypatch, tmp_path):
    return install(monkeypatch, tmp_path, "lease")


@pytest.fixture
def kube(fake):
    return Kube()


def stamp(t: datetime) -> str:
    return t.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def held(kube, *, host: str, pid: int, renewed_ago: float, until: datetime | None = None) -> dict:
    """Another holder's lease, made through the fake API (POST), renewed `renewed_ago` seconds ago."""
    notes = {HOLDER_PID: f"{host}/{pid}"} | ({HOLDER_UNTIL: stamp(until)} if until else {})
    when = stamp(datetime.now(UTC) - timedelta(seconds=renewed_ago))
    body = {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
            "metadata": {"name": lease_name(RELEASE), "annotations": notes},
            "spec": {"holderIdentity": f"{host}/{pid}/run/0badc0de", "leaseDurationSeconds": 15,
                     "acquireTime": when, "renewTime": when}}
    return kube.request("POST", f"/apis/coordination.k8s.io/v1/namespaces/{NS}/leases", body=body)


def test_acquire_and_release(fake, kube):
    lock = RunLock(kube, NS, RELEASE, "run")
    lock.acquire()
    try:
        lease = fake.lease(NS, RELEASE)
        assert lease["spec"]["holderIdentity"] == lock.identity and not lock.took_over_stale
        assert lease["metadata"]["annotations"][HOLDER_PID] == f"{socket.gethostname()}/{os.getpid()}"
    finally:
        lock.release_lock()
    assert fake.lease(NS, RELEASE) is None and lock.lost is None


def test_a_fresh_lease_refuses_a_second_holder(fake, kube):
    with RunLock(kube, NS, RELEASE, "run") as first:
        with pytest.raises(CheckFailed) as exc:
            RunLock(kube, NS, RELEASE, "rollback").acquire()
        assert f"release {RELEASE} in namespace {NS} is busy: another `run` (holder {first.identity}" in str(exc.value)
        assert "nothing was changed" in str(exc.value)
        assert fake.lease(NS, RELEASE)["spec"]["holderIdentity"] == first.identity  # untouched


def test_a_stale_lease_of_a_live_process_here_is_not_taken(fake, kube):
    held(kube, host=socket.gethostname(), pid=os.getpid(), renewed_ago=60)
    with pytest.raises(CheckFailed, match=f"stopped renewing its lock 60s ago, but its process {os.getpid()} "
                       r"is still alive \(paused\?\)"):
        RunLock(kube, NS, RELEASE, "run").acquire()


def test_taken_over_from_a_dead_process_on_this_host(fake, kube):
    held(kube, host=socket.gethostname(), pid=NO_SUCH_PID, renewed_ago=60)
    with RunLock(kube, NS, RELEASE, "run") as lock:
        assert lock.took_over_stale
        assert fake.lease(NS, RELEASE)["spec"]["holderIdentity"] == lock.identity
    assert fake.lease(NS, RELEASE) is None


def test_another_hosts_holder_is_waited_for_until_its_helm_deadline(fake, kube):
    until = datetime.now(UTC) + timedelta(minutes=5)
    held(kube, host="elsewhere", pid=1, renewed_ago=60, until=until)
    with pytest.raises(CheckFailed, match=r"its helm may work until .* \(holder on host elsewhere\)"):
        RunLock(kube, NS, RELEASE, "run").acquire()


def test_taken_over_from_another_host_past_its_deadline(fake, kube):
    held(kube, host="elsewhere", pid=1, renewed_ago=60, until=datetime.now(UTC) - timedelta(seconds=1))
    with RunLock(kube, NS, RELEASE, "run") as lock:
        assert lock.took_over_stale


def test_release_leaves_a_lease_that_is_no_longer_ours(fake, kube):
    lock = RunLock(kube, NS, RELEASE, "run")
    lock.acquire()
    fake.take_over(NS, RELEASE, "elsewhere/1/run/0badc0de")  # meanwhile
    lock.release_lock()
    assert lock.lost == "the run lock is now held by elsewhere/1/run/0badc0de"
    assert fake.lease(NS, RELEASE) is not None  # not deleted


def test_a_takeover_that_loses_the_race_is_refused(fake, kube, monkeypatch):
    """Two takers read the stale lease; the second PUT carries a stale resourceVersion: 409 Conflict."""
    held(kube, host=socket.gethostname(), pid=NO_SUCH_PID, renewed_ago=60)
    real = kube.request

    def racing(method, path, *a, **kw):
        if method == "PUT" and not racing.done:  # another taker writes first
            racing.done = True
            lease = fake.lease(NS, RELEASE)
            real("PUT", path, body=lease | {"spec": lease["spec"] | {"holderIdentity": "other/2/run/x"}})
        return real(method, path, *a, **kw)

    racing.done = False
    monkeypatch.setattr(kube, "request", racing)
    with pytest.raises(CheckFailed, match="another run took the lock just now"):
        RunLock(kube, NS, RELEASE, "run").acquire()


def test_recorded_status_bodies_are_the_apiservers(fake, kube):
    """The fake's 409/404 answers are the recorded ones: the client raises ApiException with them."""
    from kubernetes.client.exceptions import ApiException

    held(kube, host="elsewhere", pid=1, renewed_ago=0)
    with pytest.raises(ApiException) as exc:
        held(kube, host="elsewhere", pid=1, renewed_ago=0)
    assert exc.value.status == 409 and json.loads(exc.value.body)["reason"] == "AlreadyExists"
    with pytest.raises(ApiException) as exc:
        kube.request("GET", f"/apis/coordination.k8s.io/v1/namespaces/{NS}/leases/other.dockyard-run")
    assert exc.value.status == 404
    assert json.loads(exc.value.body)["message"] == 'leases.coordination.k8s.io "other.dockyard-run" not found'


def test_the_holder_renews_and_stops_when_its_lease_is_taken(fake, kube, monkeypatch):
    import time

    from generator.live import release

    monkeypatch.setattr(release, "LEASE_SECONDS", 0.03)  # renew every 10 ms
    lock = RunLock(kube, NS, RELEASE, "run")
    lock.acquire()
    try:
        first = fake.lease(NS, RELEASE)["metadata"]["resourceVersion"]
        deadline = time.monotonic() + 5
        while fake.lease(NS, RELEASE)["metadata"]["resourceVersion"] == first and time.monotonic() < deadline:
            time.sleep(0.005)
        renewed = fake.lease(NS, RELEASE)
        assert renewed["metadata"]["resourceVersion"] != first and renewed["spec"]["holderIdentity"] == lock.identity
        fake.take_over(NS, RELEASE, "elsewhere/1/run/0badc0de")
        lock._thread.join(timeout=5)  # the renewer sees it and stops
        assert not lock._thread.is_alive() and lock.lost == "the run lock is now held by elsewhere/1/run/0badc0de"
    finally:
        lock.release_lock()
    assert fake.lease(NS, RELEASE)["spec"]["holderIdentity"] == "elsewhere/1/run/0badc0de"
