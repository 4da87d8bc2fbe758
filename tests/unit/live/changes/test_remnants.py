"""changes/remnants: the objects of a release whose Helm record is gone are found by the chart's labels only, and
each one left is said with what holds it (finalizer, owner, nothing); on recorded objects."""

from __future__ import annotations

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


def test_objects_left_at_the_deadline_are_each_named_with_what_holds_them(monkeypatch):
    kube = Recorded({"rayjobs": [HELD_JOB], "pods": [POD], "ray": []})

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

    monkeypatch.setattr(remnants, "RunLock", Lock)
    monkeypatch.setattr(remnants, "LeaderWatch", Quiet)
    monkeypatch.setattr(remnants, "wait_until", lambda pred, _t: pred())
    with pytest.raises(CheckFailed) as err:
        remnants.finish(kube, "small", None, 0.0, lambda ns: list)
    text = str(err.value)
    assert text.startswith("release small has no Helm record in ns (uninstalled), but objects of it remain after the "
                           "timeout:\n  ")
    assert "RayJob ns/small is being deleted" in text and "ray.io/rayjob-finalizer" in text
    assert "Pod ns/small-head-x is owned by RayCluster small-abc" in text
    kube.by_plural = {"ray": []}  # the negative control: all gone, finished
    assert remnants.finish(kube, "small", "ns", 0.0, lambda ns: list) is None
