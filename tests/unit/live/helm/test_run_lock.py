"""The run lock (run_lock.RunLock) against the fake's Lease state, answered with the Status bodies the
apiserver gave while recording (lease.json): acquire, refuse a live holder, take over from a dead pid and
from a holder on another host that stopped renewing, release only while ours.

No verdict may come from another host's clock: a holder elsewhere is judged by whether its record changes
while this host watches it (on the observer's monotonic clock, injected here as `Clock`, whose sleep
advances it and lets the "other holder" act), a holder here by whether its process still exists.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta

import pytest

from generator.errors import CheckFailed
from generator.live.client.kube import Kube
from generator.live.helm import holders
from generator.live.helm.run_lock import HOLDER_HELM_SECONDS, HOLDER_PID, HOLDER_PROCESS, RunLock, lease_name
from tests.support.fake_cluster import install

NS, RELEASE = "rec", "small"
LEASES = f"/apis/coordination.k8s.io/v1/namespaces/{NS}/leases"
NO_SUCH_PID = 4_194_305  # above the largest pid_max Linux allows: never a live process
HERE = socket.gethostname()
SKEWS = [-3600, 0, 3600]  # the holder's clock 1 h ahead (renewTime in our future), right, 1 h behind
ELSEWHERE = "elsewhere/1/run/0badc0de"


class Clock:
    """The observer's monotonic clock: sleep advances it at once, then lets the other holder act."""

    def __init__(self) -> None:
        self.now, self.slept, self.sleeps = 1000.0, 0.0, 0
        self.on_sleep: list = []

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds
        self.slept += seconds
        self.sleeps += 1
        for act in self.on_sleep:
            act(self.sleeps)


@pytest.fixture
def fake(monkeypatch, tmp_path):
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))  # this test's own first-seen store
    return install(monkeypatch, tmp_path, "lease")


@pytest.fixture
def kube(fake):
    return Kube()


@pytest.fixture
def clock(monkeypatch):
    c = Clock()
    monkeypatch.setattr(RunLock, "clock", staticmethod(c))
    monkeypatch.setattr(RunLock, "sleep", staticmethod(c.sleep))
    return c


def stamp(t: datetime) -> str:
    return t.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def held(kube, *, host: str = "elsewhere", pid: int = 1, skew: float = 0, process: str | None = None,
         helm_seconds: int | None = None) -> dict:
    """Another holder's lease, made through the fake API (POST); its renewTime is `skew` seconds behind
    our wall clock (negative: ahead)."""
    notes = {HOLDER_PID: f"{host}/{pid}"}
    if process:
        notes[HOLDER_PROCESS] = process
    if helm_seconds is not None:
        notes[HOLDER_HELM_SECONDS] = str(helm_seconds)
    when = stamp(datetime.now(UTC) - timedelta(seconds=skew))
    body = {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
            "metadata": {"name": lease_name(RELEASE), "annotations": notes},
            "spec": {"holderIdentity": f"{host}/{pid}/run/0badc0de", "leaseDurationSeconds": 15,
                     "acquireTime": when, "renewTime": when}}
    return kube.request("POST", LEASES, body=body)


def renew(kube, skew: float) -> None:
    """The other holder renews its lease, stamped by its own (skewed) clock."""
    lease = kube.request("GET", f"{LEASES}/{lease_name(RELEASE)}")
    lease["spec"]["renewTime"] = stamp(datetime.now(UTC) - timedelta(seconds=skew - 5))
    kube.request("PUT", f"{LEASES}/{lease_name(RELEASE)}", body=lease)


def gone_process() -> tuple[int, str]:
    """The pid and process name of a process that ran on this host and has exited (and been reaped)."""
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    name = holders.process(proc.pid)
    proc.kill()
    proc.wait()
    assert name and holders.process(proc.pid) is None
    return proc.pid, name


# acquiring and releasing ------------------------------------------------------------------------------

def test_acquire_and_release(fake, kube, clock):
    lock = RunLock(kube, NS, RELEASE, "run", deadline=clock.now + 100)
    lock.acquire()
    try:
        lease = fake.lease(NS, RELEASE)
        assert lease["spec"]["holderIdentity"] == lock.identity and not lock.took_over_stale
        notes = lease["metadata"]["annotations"]
        assert notes[HOLDER_PID] == f"{HERE}/{os.getpid()}"
        assert notes[HOLDER_PROCESS] == holders.process(os.getpid())
        assert notes[HOLDER_PROCESS].startswith(f"{holders.machine()}/")
        assert notes[HOLDER_HELM_SECONDS] == "115"  # a duration (deadline + 15 s grace), no wall-clock instant
        assert "dockyard.dev/holder-until" not in notes
    finally:
        lock.release_lock()
    assert fake.lease(NS, RELEASE) is None and lock.lost is None


def test_a_fresh_lease_refuses_a_second_holder(fake, kube, clock):
    with RunLock(kube, NS, RELEASE, "run") as first:
        with pytest.raises(CheckFailed) as exc:
            RunLock(kube, NS, RELEASE, "rollback").acquire()
        assert f"release {RELEASE} in namespace {NS} is busy: another `run` (holder {first.identity}" in str(exc.value)
        assert "nothing was changed" in str(exc.value)
        assert fake.lease(NS, RELEASE)["spec"]["holderIdentity"] == first.identity  # untouched
    assert clock.slept == 0


# a holder on this host: its process decides, at once ----------------------------------------------------

@pytest.mark.parametrize("skew", SKEWS)
def test_a_live_process_here_is_refused_at_once_whatever_its_renew_time(fake, kube, clock, skew):
    held(kube, host=HERE, pid=os.getpid(), skew=skew, process=holders.process(os.getpid()))
    with pytest.raises(CheckFailed) as exc:
        RunLock(kube, NS, RELEASE, "run").acquire()
    assert f"is in flight: its process {os.getpid()} is still alive; nothing was changed" in str(exc.value)
    assert clock.slept == 0


def test_a_stopped_process_here_is_refused_as_paused(fake, kube, clock):
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        os.kill(proc.pid, signal.SIGSTOP)
        deadline = time.monotonic() + 5  # the signal is delivered asynchronously
        while not holders.stopped(proc.pid) and time.monotonic() < deadline:
            time.sleep(0.005)
        held(kube, host=HERE, pid=proc.pid, process=holders.process(proc.pid))
        with pytest.raises(CheckFailed, match=rf"its process {proc.pid} is still alive \(paused\?\)"):
            RunLock(kube, NS, RELEASE, "run").acquire()
    finally:
        proc.kill()
        proc.wait()


@pytest.mark.parametrize("skew", [-3600, 0])
def test_a_gone_process_here_is_taken_over_at_once(fake, kube, clock, skew):
    """The re-run right after a SIGKILLed verb: its lease was renewed just now (or is stamped in our
    future), its process is gone: no wait, no refusal."""
    pid, name = gone_process()
    held(kube, host=HERE, pid=pid, skew=skew, process=name)
    with RunLock(kube, NS, RELEASE, "uninstall") as lock:
        assert lock.took_over_stale and clock.slept == 0
        assert fake.lease(NS, RELEASE)["spec"]["holderIdentity"] == lock.identity
    assert fake.lease(NS, RELEASE) is None


def test_a_reused_pid_here_is_not_the_holder(fake, kube, clock):
    """The holder's pid now names another live process (this one): its start time tells them apart."""
    held(kube, host=HERE, pid=os.getpid(), process=f"{holders.machine()}/1")
    with RunLock(kube, NS, RELEASE, "run") as lock:
        assert lock.took_over_stale and clock.slept == 0


def test_a_holder_with_this_hostname_on_another_machine_is_watched(fake, kube, clock, capsys):
    """Same hostname, another boot or pid namespace (a twin container, a rebooted host): its pid means
    nothing here, so neither our live pid nor a dead one decides; its record does."""
    held(kube, host=HERE, pid=os.getpid(), process="another-boot/4026531836/12345")
    with RunLock(kube, NS, RELEASE, "run") as lock:
        assert lock.took_over_stale and clock.slept == 15
    err = capsys.readouterr().err
    assert f"waiting up to 15 s to see whether holder {HERE}/{os.getpid()}/run/0badc0de renews" in err


# a holder on another host: its record changing (or not) while we watch decides ----------------------------

@pytest.mark.parametrize("skew", SKEWS)
def test_a_silent_holder_elsewhere_is_taken_over_after_its_lease_duration_whatever_its_clock(fake, kube, clock,
                                                                                              capsys, skew):
    held(kube, skew=skew)
    seen_at: list[float] = []
    real = kube.request

    def spy(method, path, *a, **kw):
        if method == "PUT":
            seen_at.append(clock.now)
        return real(method, path, *a, **kw)

    kube.request = spy
    with RunLock(kube, NS, RELEASE, "run") as lock:
        assert lock.took_over_stale
    assert seen_at and seen_at[0] == 1015.0  # exactly the lease duration after we first saw the record
    err = capsys.readouterr().err
    assert "waiting up to 15 s to see whether holder elsewhere/1/run/0badc0de renews its lock" in err


@pytest.mark.parametrize("skew", SKEWS)
def test_a_renewing_holder_elsewhere_is_refused_whatever_its_clock(fake, kube, clock, skew):
    held(kube, skew=skew)
    clock.on_sleep.append(lambda n: n == 5 and renew(kube, skew))  # renews 5 s into our watch
    with pytest.raises(CheckFailed, match="renewed its lock while this run watched: it is in flight") as exc:
        RunLock(kube, NS, RELEASE, "run").acquire()
    assert "(holder elsewhere/1/run/0badc0de on host elsewhere)" in str(exc.value)
    assert clock.slept == 5  # refused when the change is seen, not at the end of the watch
    assert fake.lease(NS, RELEASE)["spec"]["holderIdentity"] == ELSEWHERE


def test_a_holder_whose_helm_may_still_work_is_refused_until_that_work_is_over(fake, kube, clock):
    """The holder published 40 s of helm work left: counted from when this host first saw that record,
    across runs, so a holder that died is not alive afresh at every run."""
    held(kube, helm_seconds=40)
    with pytest.raises(CheckFailed, match=r"holds the lock, and its helm may still work for up to 40 s"):
        RunLock(kube, NS, RELEASE, "run").acquire()
    clock.now += 25
    with pytest.raises(CheckFailed, match=r"its helm may still work for up to 15 s"):
        RunLock(kube, NS, RELEASE, "run").acquire()
    clock.now += 16
    with RunLock(kube, NS, RELEASE, "run") as lock:  # unchanged for 41 s: stale, its helm done
        assert lock.took_over_stale and clock.slept == 0


def test_a_short_helm_bound_waits_only_the_lease_duration(fake, kube, clock):
    held(kube, helm_seconds=10)
    with RunLock(kube, NS, RELEASE, "run") as lock:
        assert lock.took_over_stale and clock.slept == 15


def test_a_watch_longer_than_the_timeout_is_refused_at_once(fake, kube, clock):
    held(kube)
    with pytest.raises(CheckFailed, match=r"telling whether it still renews takes 15 s, more than this run's "
                       r"--timeout leaves"):
        RunLock(kube, NS, RELEASE, "run", deadline=clock.now + 5).acquire()
    assert clock.slept == 0


def test_a_lease_released_while_watched_is_created_again(fake, kube, clock):
    held(kube)
    clock.on_sleep.append(lambda n: n == 3 and kube.request("DELETE", f"{LEASES}/{lease_name(RELEASE)}"))
    with RunLock(kube, NS, RELEASE, "run") as lock:
        assert not lock.took_over_stale and clock.slept == 3
        assert fake.lease(NS, RELEASE)["spec"]["holderIdentity"] == lock.identity


# release, races, renewal ------------------------------------------------------------------------------

def test_release_leaves_a_lease_that_is_no_longer_ours(fake, kube):
    lock = RunLock(kube, NS, RELEASE, "run")
    lock.acquire()
    fake.take_over(NS, RELEASE, ELSEWHERE)  # meanwhile
    lock.release_lock()
    assert lock.lost == f"the run lock is now held by {ELSEWHERE}"
    assert fake.lease(NS, RELEASE) is not None  # not deleted


def test_a_failed_release_says_so(fake, kube, capsys, monkeypatch):
    from kubernetes.client.exceptions import ApiException

    lock = RunLock(kube, NS, RELEASE, "run")
    lock.acquire()
    real = kube.request

    def failing(method, path, *a, **kw):
        if method == "DELETE":
            raise ApiException(status=503, reason="Service Unavailable")
        return real(method, path, *a, **kw)

    monkeypatch.setattr(kube, "request", failing)
    lock.release_lock()
    err = capsys.readouterr().err
    assert f"warning: could not release the run lock of release {RELEASE} in namespace {NS}: " in err
    assert "503" in err and "it goes stale: the next run on this host takes it at once" in err


def test_a_takeover_that_loses_the_race_is_refused(fake, kube, monkeypatch):
    """Two takers read the stale lease; the second PUT carries a stale resourceVersion: 409 Conflict."""
    held(kube, host=HERE, pid=NO_SUCH_PID, process=f"{holders.machine()}/1")
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

    held(kube)
    with pytest.raises(ApiException) as exc:
        held(kube)
    assert exc.value.status == 409 and json.loads(exc.value.body)["reason"] == "AlreadyExists"
    with pytest.raises(ApiException) as exc:
        kube.request("GET", f"{LEASES}/other.dockyard-run")
    assert exc.value.status == 404
    assert json.loads(exc.value.body)["message"] == 'leases.coordination.k8s.io "other.dockyard-run" not found'


def test_the_holder_renews_and_stops_when_its_lease_is_taken(fake, kube, monkeypatch):
    from generator.live.helm import run_lock

    monkeypatch.setattr(run_lock, "LEASE_SECONDS", 0.03)  # renew every 10 ms
    ticks = iter(range(0, 10_000, 10))  # each read of the holder's clock: 10 s later
    monkeypatch.setattr(RunLock, "clock", staticmethod(lambda: float(next(ticks))))
    lock = RunLock(kube, NS, RELEASE, "run", deadline=1000)
    lock.acquire()
    try:
        first = fake.lease(NS, RELEASE)
        deadline = time.monotonic() + 5
        while fake.lease(NS, RELEASE)["metadata"]["resourceVersion"] == first["metadata"]["resourceVersion"] \
                and time.monotonic() < deadline:
            time.sleep(0.005)
        renewed = fake.lease(NS, RELEASE)
        assert renewed["metadata"]["resourceVersion"] != first["metadata"]["resourceVersion"]
        assert renewed["spec"]["holderIdentity"] == lock.identity
        helm = [int(x["metadata"]["annotations"][HOLDER_HELM_SECONDS]) for x in (first, renewed)]
        assert helm[0] > helm[1]  # refreshed at each renewal: the work left as of that write
        fake.take_over(NS, RELEASE, ELSEWHERE)
        lock._thread.join(timeout=5)  # the renewer sees it and stops
        assert not lock._thread.is_alive() and lock.lost == f"the run lock is now held by {ELSEWHERE}"
    finally:
        lock.release_lock()
    assert fake.lease(NS, RELEASE)["spec"]["holderIdentity"] == ELSEWHERE


def test_a_failed_renewal_says_so_once(fake, kube, capsys, monkeypatch):
    from kubernetes.client.exceptions import ApiException

    from generator.live.helm import run_lock

    monkeypatch.setattr(run_lock, "LEASE_SECONDS", 0.03)
    lock = RunLock(kube, NS, RELEASE, "run")
    lock.acquire()
    real, failed = kube.request, []

    def failing(method, path, *a, **kw):
        if method == "PUT":
            failed.append(1)
            raise ApiException(status=500, reason="Internal Server Error")
        return real(method, path, *a, **kw)

    monkeypatch.setattr(kube, "request", failing)
    deadline = time.monotonic() + 5
    while len(failed) < 3 and time.monotonic() < deadline:
        time.sleep(0.005)
    monkeypatch.setattr(kube, "request", real)
    lock.release_lock()
    err = capsys.readouterr().err
    assert len(failed) >= 3
    assert err.count(f"warning: could not renew the run lock of release {RELEASE} in namespace {NS}: ") == 1
    assert "500" in err
