"""state.controllers.LeaderWatch: a controller's leader Lease judged on the observer's clock — lapsed once its
record stays unchanged past its lease duration or has no holder, never from the holder's renewTime; said once,
and again when a new holder leads; a Lease that is absent or unreadable says nothing."""

from __future__ import annotations

import pytest
from kubernetes.client.exceptions import ApiException

from generator.live.state.controllers import KUBERAY_LEASE, LEADERS, MARGIN, LeaderWatch

RAY_PATH = f"/apis/coordination.k8s.io/v1/namespaces/ray-system/leases/{KUBERAY_LEASE}"


class Leases:
    """The two calls LeaderWatch makes (list by name, get), over a dict of Leases; `forbid` answers 403."""

    def __init__(self) -> None:
        self.items: dict[str, dict] = {}
        self.forbid = False
        self.reads = 0

    def put(self, ns: str, name: str, holder: str | None, version: int, renew: str = "2000-01-01T00:00:00.000000Z",
            duration: int = 15) -> None:
        self.items[f"/apis/coordination.k8s.io/v1/namespaces/{ns}/leases/{name}"] = {
            "metadata": {"name": name, "namespace": ns, "uid": f"u-{name}", "resourceVersion": str(version)},
            "spec": {"holderIdentity": holder, "leaseDurationSeconds": duration, "renewTime": renew}}

    def list(self, path: str, field_selector: str) -> list[dict]:
        self.reads += 1
        if self.forbid:
            raise ApiException(status=403)
        name = field_selector.removeprefix("metadata.name=")
        return [v for v in self.items.values() if v["metadata"]["name"] == name]

    def request(self, method: str, path: str) -> dict:
        self.reads += 1
        if self.forbid:
            raise ApiException(status=403)
        if path not in self.items:
            raise ApiException(status=404)
        return self.items[path]


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def cluster():
    c = Leases()
    c.put("ray-system", KUBERAY_LEASE, "op-1", 1)
    return c


def test_a_renewing_leader_is_never_said_whatever_its_renew_time(cluster):
    clock = Clock()
    watch = LeaderWatch(cluster, clock)
    for step in range(30):  # a minute of renewals every 2 s, its renewTime a year in the past
        cluster.put("ray-system", KUBERAY_LEASE, "op-1", 10 + step, renew="2025-01-01T00:00:00.000000Z")
        assert watch.poll() == []
        clock.now += 2
    assert watch.lapsed() == [] and watch.held() == ""


def test_a_silent_leader_lapses_after_its_lease_duration_on_our_clock(cluster):
    clock = Clock()
    watch = LeaderWatch(cluster, clock)
    assert watch.poll() == []  # first sight: nothing can be said yet
    clock.now += 15 + MARGIN - 1
    assert watch.poll() == []  # not yet: the lease duration plus the margin for a renewal in flight
    clock.now += 2
    [line] = watch.poll()
    assert line.startswith(f"no instance of the KubeRay operator leads: its leader Lease ray-system/{KUBERAY_LEASE} "
                           "(holder op-1) was not renewed for 18s, past its 15s lease")
    assert "no RayCluster or Ray pod is created" in line
    clock.now += 5
    assert watch.poll() == []  # said once
    assert watch.held() == f"\n  held by: {line}"
    cluster.put("ray-system", KUBERAY_LEASE, "op-2", 99)  # a restarted operator takes the lease
    clock.now += 5
    again = f"the KubeRay operator leads again (its leader Lease ray-system/{KUBERAY_LEASE} is held by op-2)"
    assert watch.poll() == [again]
    assert watch.held() == ""


def test_a_released_lease_lapses_at_once(cluster):
    cluster.put("ray-system", KUBERAY_LEASE, None, 2)  # a graceful exit releases the lease: no holder
    [line] = LeaderWatch(cluster, Clock()).poll()
    assert f"its leader Lease ray-system/{KUBERAY_LEASE} has no holder" in line


def test_the_lease_duration_is_the_leases_own(cluster):
    cluster.put("kube-system", "kube-scheduler", "sched-1", 5, duration=60)
    clock = Clock()
    watch = LeaderWatch(cluster, clock)
    watch.poll()
    clock.now += 30
    cluster.put("ray-system", KUBERAY_LEASE, "op-1", 7)
    assert watch.poll() == []  # 30 s silent is within a 60 s lease
    clock.now += 40
    cluster.put("ray-system", KUBERAY_LEASE, "op-1", 8)
    [line] = watch.poll()
    said = "kube-scheduler leads: its leader Lease kube-system/kube-scheduler (holder sched-1) was not renewed for 70s"
    assert said in line and "new pods stay Pending" in line


def test_absent_or_unreadable_leases_say_nothing():
    empty = Leases()
    clock = Clock()
    watch = LeaderWatch(empty, clock)
    for _ in range(20):
        assert watch.poll() == []
        clock.now += 10
    forbidden = Leases()
    forbidden.put("ray-system", KUBERAY_LEASE, "op-1", 1)
    forbidden.forbid = True
    watch = LeaderWatch(forbidden, clock)
    for _ in range(20):
        assert watch.poll() == []
        clock.now += 10


def test_reads_are_spaced(cluster):
    clock = Clock()
    watch = LeaderWatch(cluster, clock)
    watch.poll()
    first = cluster.reads
    assert first == 1 + len(LEADERS)  # one list to find KubeRay's namespace, one read per leader after that
    for _ in range(10):
        clock.now += 0.1
        watch.poll()
    assert cluster.reads == first  # a wait that polls every 0.1 s reads the Leases at most every 2 s


def test_an_apiserver_that_does_not_answer_says_nothing(cluster):
    """A wait during an apiserver pause: the Lease reads fail to connect; the watch adds nothing and never raises
    (the wait's own reads say what happened)."""
    from urllib3.exceptions import MaxRetryError

    def unreachable(*_a, **_kw):
        raise MaxRetryError(None, "https://127.0.0.1:1/apis", "connection refused")

    cluster.list = unreachable
    cluster.request = unreachable
    assert LeaderWatch(cluster, Clock()).poll() == []


def test_the_held_lease_is_the_leaders_when_an_old_released_one_lingers():
    c = Leases()
    c.put("old-ray", KUBERAY_LEASE, None, 1)  # an earlier install's operator released its Lease and was removed
    c.put("ray-system", KUBERAY_LEASE, "op-1", 2)
    assert LeaderWatch(c, Clock()).poll() == []  # the live leader's Lease is watched, not the leftover


def test_a_forbidden_list_is_asked_once():
    c = Leases()
    c.forbid = True
    clock = Clock()
    watch = LeaderWatch(c, clock)
    watch.poll()
    first = c.reads
    clock.now += 10
    watch.poll()
    assert c.reads - first == len(LEADERS) - 2  # the two found by name are not listed again; the others are read
