"""changes/remnants: the objects of a release whose Helm record is gone are found by the chart's labels only, and
each one left is said with what holds it (finalizer, owner, nothing); on recorded objects."""

from __future__ import annotations

import time

import pytest

from generator.errors import CheckFailed
from generator.live.changes import remnants

HELD_JOB = {"metadata": {"name": "small", "namespace": "ns", "uid": "u1", "deletionTimestamp": "2026-12-05T08:00:00Z",
                         "finalizers": ["ray.io/rayjob-finalizer"],
                         "labels": {"app.kubernetes.io/instance": "small", "kueue.x-k8s.io/queue-name": "training"}}}
POD = {"metadata": {"name": "small-head-x", "namespace": "ns",
                    "ownerReferences": [{"kind": "RayCluster", "name": "small-abc"}]}}


def test_the_selector_is_the_charts_labels_not_the_instance_alone():
    assert remnants.selector("small") == ("app.kubernetes.io/instance=small,app.kubernetes.io/name=dockyard,"
                                          "app.kubernetes.io/part-of=dockyard")


def test_a_held_object_names_its_finalizer_and_who_removes_it():
    line = remnants.why("RayJob", HELD_JOB)
    assert line.startswith("RayJob ns/small is being deleted (since 2026-12-05T08:00:00Z), held by the finalizer "
                           "ray.io/rayjob-finalizer, which only the KubeRay operator removes"), line
    other = remnants.why("RayJob", {"metadata": {**HELD_JOB["metadata"], "finalizers": ["example.com/hold"]}})
    assert "the controller that added them removes" in other and "KubeRay" not in other.split("?")[0]


def test_an_owned_object_names_its_owner_and_an_orphan_says_how_to_delete_it():
    assert remnants.why("Pod", POD) == ("Pod ns/small-head-x is owned by RayCluster small-abc: the garbage "
                                        "collector removes it once its owner is gone")
    orphan = remnants.why("ConfigMap", {"metadata": {"name": "small-recipe", "namespace": "ns"}})
    assert orphan.endswith("`kubectl delete configmap small-recipe -n ns`")
    terminating = remnants.why("Pod", {"metadata": {**POD["metadata"], "deletionTimestamp": "t"}})
    assert terminating == "Pod ns/small-head-x is being deleted (since t): its kubelet ends it"


def test_only_queued_ray_objects_give_workloads_to_wait_for():
    assert remnants.queued_uids([("RayJob", HELD_JOB), ("Pod", POD)]) == {"u1": ("rayjobs", "small")}
    unqueued = {"metadata": {**HELD_JOB["metadata"], "labels": {}}}
    assert remnants.queued_uids([("RayJob", unqueued)]) == {}


class Recorded:
    """A cluster answering list calls from recorded objects by path; what each list asked is kept."""

    context_namespace = None

    def __init__(self, by_plural: dict[str, list], forbidden_all: bool = False) -> None:
        self.by_plural, self.forbidden_all, self.asked = by_plural, forbidden_all, []

    def list(self, path: str, label_selector: str | None = None, field_selector: str | None = None) -> list:
        from kubernetes.client.exceptions import ApiException

        self.asked.append((path, label_selector))
        if self.forbidden_all and "/namespaces/" not in path:
            raise ApiException(status=403)
        if path.endswith(("rayjobs", "rayclusters")) and "ray" not in self.by_plural:
            raise ApiException(status=404)  # KubeRay not served
        return self.by_plural.get(path.rsplit("/", 1)[1], [])


def test_nothing_of_the_release_is_none_the_caller_says_not_found():
    kube = Recorded({})
    assert remnants.finish(kube, "never", "ns", 0.0, lambda ns: list) is None
    assert all(sel == remnants.selector("never") for _, sel in kube.asked)
    assert {p for p, _ in kube.asked} >= {"/api/v1/namespaces/ns/pods", "/api/v1/namespaces/ns/configmaps"}


def test_forbidden_to_list_every_namespace_it_looks_in_its_own():
    kube = Recorded({}, forbidden_all=True)
    assert remnants.finish(kube, "never", None, 0.0, lambda ns: list) is None
    assert "/namespaces/" not in kube.asked[0][0] and kube.asked[-1][0] == "/apis/ray.io/v1/namespaces/default/rayjobs"


class Lock:
    def __init__(self, *_a, **_kw):
        pass

    def __enter__(self):
        return self

    def __exit__(self, *_a):
        pass


class Quiet:
    def __init__(self, *_a):
        pass

    def poll(self):
        return []

    def held(self):
        return ""


@pytest.fixture
def polls(monkeypatch):
    """No lock, no leader watch; the wait polls at most three times and records each sleep it would take (the
    deadline is never reached: a test that stops at once sleeps none)."""
    slept = []

    def wait_until(pred, _timeout):
        for _ in range(3):
            if value := pred():
                return value
            slept.append(0.5)
        return value

    monkeypatch.setattr(remnants, "RunLock", Lock)
    monkeypatch.setattr(remnants, "LeaderWatch", Quiet)
    monkeypatch.setattr(remnants, "wait_until", wait_until)
    return slept


def test_objects_left_at_the_deadline_are_each_named_with_what_holds_them(polls):
    kube = Recorded({"rayjobs": [HELD_JOB], "pods": [POD], "ray": []})
    with pytest.raises(CheckFailed) as err:
        remnants.finish(kube, "small", None, 0.0, lambda ns: list)
    text = str(err.value)
    assert text.startswith("release small has no Helm record in ns (uninstalled), but objects of it remain after the "
                           "timeout:\n  ")
    assert "RayJob ns/small is being deleted" in text and "ray.io/rayjob-finalizer" in text
    assert "Pod ns/small-head-x is owned by RayCluster small-abc" in text
    assert len(polls) == 3  # held and owned objects keep the wait
    kube.by_plural = {"ray": []}  # the negative control: all gone, finished
    assert remnants.finish(kube, "small", "ns", 0.0, lambda ns: list) is None


class Going(Recorded):
    """Objects found by the first listing of each kind (every namespace), gone from the second on (the wait's, in
    their namespace): they went meanwhile."""

    def list(self, path: str, label_selector: str | None = None, field_selector: str | None = None) -> list:
        found = super().list(path, label_selector, field_selector)
        plural = path.rsplit("/", 1)[1]
        return found if sum(p.endswith(f"/{plural}") for p, _ in self.asked) == 1 else []


def test_objects_found_that_go_during_the_wait_finish_the_release(polls):
    kube = Going({"rayjobs": [HELD_JOB], "pods": [POD], "ray": []})
    swept = []
    assert remnants.finish(kube, "small", None, time.monotonic() + 600, lambda ns: swept.append(ns) or list) == ["ns"]
    assert swept == ["ns"] and polls == []  # gone at the first poll of the wait: no sleep


def test_only_objects_nothing_will_remove_left_stops_at_once_saying_how_to_delete_them(polls):
    test_pod = {"metadata": {"name": "small-sandbox-test", "namespace": "ns"}}  # a failed `helm test` pod
    kube = Recorded({"pods": [test_pod]})
    with pytest.raises(CheckFailed) as err:
        remnants.finish(kube, "small", "ns", time.monotonic() + 3600, lambda ns: list)
    assert polls == []  # no sleep, let alone until the hour's deadline
    assert str(err.value) == ("release small has no Helm record in ns (uninstalled), but objects of it remain that "
                              "nothing will remove:\n  Pod ns/small-sandbox-test is not being deleted and nothing owns "
                              "it: delete it with `kubectl delete pod small-sandbox-test -n ns`\n"
                              "once they are deleted, nothing of the release is left")


def test_an_unremovable_object_beside_one_still_going_keeps_the_wait(polls):
    test_pod = {"metadata": {"name": "small-sandbox-test", "namespace": "ns"}}
    kube = Recorded({"pods": [test_pod, POD]})
    with pytest.raises(CheckFailed, match="after the timeout"):
        remnants.finish(kube, "small", "ns", 0.0, lambda ns: list)
    assert len(polls) == 3
    claims_left = Recorded({"pods": [test_pod]})  # a SandboxClaim still going keeps it too
    with pytest.raises(CheckFailed, match="SandboxClaim ns/c1 is not gone yet"):
        remnants.finish(claims_left, "small", "ns", 0.0, lambda ns: lambda: ["c1"])


def test_the_charts_rbac_quota_and_agent_sandbox_kinds_are_found():
    pool = {"metadata": {"name": "small-sandbox", "namespace": "ns"}}
    role = {"metadata": {"name": "small-sandbox-claims", "namespace": "ns"}}
    kube = Recorded({"sandboxwarmpools": [pool], "roles": [role], "limitranges": [pool]})
    found = remnants.listed(kube, "small", "ns")
    assert [(k, o["metadata"]["name"]) for k, o in found] == [
        ("Role", "small-sandbox-claims"), ("LimitRange", "small-sandbox"), ("SandboxWarmPool", "small-sandbox")]
    asked = {p for p, _ in kube.asked}
    assert {"/apis/rbac.authorization.k8s.io/v1/namespaces/ns/rolebindings", "/api/v1/namespaces/ns/resourcequotas",
            "/apis/extensions.agents.x-k8s.io/v1beta1/namespaces/ns/sandboxtemplates"} <= asked


def test_a_kind_the_cluster_does_not_serve_has_none():
    class NoAgentSandbox(Recorded):
        def list(self, path, label_selector=None, field_selector=None):
            from kubernetes.client.exceptions import ApiException

            if "extensions.agents.x-k8s.io" in path:
                raise ApiException(status=404)
            return super().list(path, label_selector, field_selector)

    kube = NoAgentSandbox({"pods": [POD], "ray": []})
    assert remnants.listed(kube, "small", "ns") == [("Pod", POD)]
