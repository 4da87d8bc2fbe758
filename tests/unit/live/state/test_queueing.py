"""queueing.summarize/line and the guard's view of queued jobs, on RayJobs and Workloads captured from the
playground (`playground up --kueue`: Kueue v0.17.0, KubeRay v1.6.1) into tests/unit/data/kueue/:

    waiter  queued: QuotaReserved False, reason Pending (the ClusterQueue's GPUs are taken)
    low     preempted: admitted and running, then evicted by `high` (withinClusterQueue: LowerPriority), requeued
    high    admitted: the preemptor, running
    lost    queued on a LocalQueue that does not exist: reason Inadmissible

The reads (queueing.read, the snapshot, status, run --wait, uninstall, rollback) are proven on the real
controller in tests/live/test_live_kueue.py."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
import yaml

from generator.live.changes.guard import impact
from generator.live.state import queueing

DATA = Path(__file__).resolve().parents[2] / "data" / "kueue"
QUOTA = ("couldn't assign flavors to pod set trainer: insufficient unused quota for nvidia.com/gpu in flavor "
         "default-flavor, 8 more needed")


def captured(name: str) -> tuple[dict, list[dict]]:
    doc = json.loads((DATA / f"{name}.json").read_text())
    return doc["rayjob"], doc["workloads"]


def summary(name: str, **kw) -> queueing.Queue:
    job, wls = captured(name)
    return queueing.summarize(job, "RayJob", queueing.pick(wls, job["metadata"]["uid"]), **kw)


def test_a_job_waiting_for_quota_is_queued_with_kueues_reason():
    q = summary("waiter", cluster_queue="pq")
    assert (q.state, q.reason, q.local_queue, q.cluster_queue, q.priority_class) == ("queued", "Pending", "q", "pq",
                                                                                     "low")
    assert q.message.startswith(QUOTA) and q.suspended and q.waits
    assert q.workload.startswith("rayjob-waiter-")
    assert queueing.line(q) == f"queued in LocalQueue q (ClusterQueue pq), priority low — Pending: {q.message}"


def test_an_admitted_job_names_its_cluster_queue_from_the_admission():
    q = summary("high")
    assert (q.state, q.cluster_queue, q.priority_class, q.suspended, q.waits) == ("admitted", "pq", "high", False,
                                                                                  False)
    assert queueing.line(q) == "admitted to LocalQueue q (ClusterQueue pq), priority high"


def test_a_preempted_job_names_the_preemptor_and_why_it_still_waits():
    high_job, high_wls = captured("high")
    low_job, low_wls = captured("low")
    wl = queueing.pick(low_wls, low_job["metadata"]["uid"])
    assert queueing.preemptor_uid(wl) == high_job["metadata"]["uid"]  # Kueue names the preemptor's job UID
    by = queueing.describe_owner(high_wls[0])
    assert by == f"RayJob pq/high (Workload {high_wls[0]['metadata']['name']}, priority high)"
    q = queueing.summarize(low_job, "RayJob", wl, cluster_queue="pq", preemptor=by)
    assert (q.state, q.reason, q.preempted_by) == ("preempted", "Preempted", by)
    assert q.message.startswith("Preempted to accommodate a workload") and q.waits
    assert q.waiting.startswith(f"Pending: {QUOTA}")
    assert queueing.line(q) == (f"preempted in LocalQueue q (ClusterQueue pq), priority low by {by} due to "
                                f"prioritization in the ClusterQueue; waiting again: {q.waiting}")


def test_a_missing_local_queue_is_kueues_inadmissible_reason():
    q = summary("lost")
    assert (q.state, q.reason, q.message, q.cluster_queue) == ("queued", "Inadmissible",
                                                               "LocalQueue nosuch doesn't exist", None)
    assert queueing.line(q) == "queued in LocalQueue nosuch — Inadmissible: LocalQueue nosuch doesn't exist"


def test_readmission_after_preemption_is_admitted_again():
    """Kueue's SetQuotaReservation turns Evicted False ('Previously: ...') on readmission: the conditions of the
    captured preempted Workload with that one change, and those of the admitted one."""
    low_job, low_wls = captured("low")
    _, high_wls = captured("high")
    wl = copy.deepcopy(low_wls[0])
    admitted = {c["type"]: c for c in high_wls[0]["status"]["conditions"]}
    for c in wl["status"]["conditions"]:
        if c["type"] in admitted:
            c.update(admitted[c["type"]])
        elif c["type"] in ("Evicted", "Preempted"):
            c.update(status="False", reason="QuotaReserved", message="Previously: " + c["message"])
    wl["status"]["admission"] = high_wls[0]["status"]["admission"]
    unsuspended = copy.deepcopy(low_job)
    unsuspended["spec"]["suspend"] = False
    assert queueing.summarize(unsuspended, "RayJob", wl).state == "admitted"


def test_no_workload_yet_and_a_job_kueue_does_not_manage():
    job, _ = captured("waiter")
    q = queueing.summarize(job, "RayJob", None)
    assert q.state == "queued" and "no Workload for it yet" in q.message and q.waits
    running, _ = captured("high")
    q = queueing.summarize(running, "RayJob", None)
    assert q.state == "unknown" and not q.waits and "runs unqueued" in q.note


def test_pick_takes_the_objects_own_live_workload():
    job, wls = captured("low")
    uid = job["metadata"]["uid"]
    other = copy.deepcopy(wls[0])
    other["metadata"]["ownerReferences"][0]["uid"] = "someone-else"
    dying = copy.deepcopy(wls[0])
    dying["metadata"].update(deletionTimestamp="2026-12-02T15:40:00Z", creationTimestamp="2026-12-02T15:39:00Z")
    assert queueing.pick([other, dying, wls[0]], uid) is wls[0]  # a newer one being deleted loses
    assert queueing.pick([other], uid) is None


# reads that fail -------------------------------------------------------------------------------------------

def _refusing(status: int, reason: str, body: str = ""):
    """A Kube whose every Kueue request answers `status`: the failures tests/live cannot make Kueue give (a 5xx,
    a 429) or that a missing RBAC grant gives."""
    from kubernetes.client.exceptions import ApiException

    class Refusing:
        def list(self, path, **kw):
            exc = ApiException(status=status, reason=reason)
            exc.body = body
            raise exc

        request = list

    return Refusing()


@pytest.mark.parametrize(("status", "reason"), [(500, "Internal Server Error"), (429, "Too Many Requests"),
                                                (403, "Forbidden")])
def test_any_failed_workload_read_is_the_queues_note_not_an_error(status, reason):
    job, _ = captured("waiter")
    q = queueing.read(_refusing(status, reason), "pq", job, "RayJob")
    assert (q.state, q.waits) == ("queued", True)  # spec.suspend still says nothing of the gang runs
    assert q.note.startswith("workloads.kueue.x-k8s.io in pq ")
    assert f"{status} {reason}" in q.note and q.note.endswith("Kueue's reason is not shown")
    assert queueing.line(q).startswith("queued in LocalQueue q, priority low; workloads.kueue.x-k8s.io in pq ")


def test_a_failed_local_queue_or_preemptor_read_is_said_too():
    from kubernetes.client.exceptions import ApiException

    low_job, low_wls = captured("low")

    class Busy:  # the job's Workloads are read; Kueue's other objects answer 503
        def list(self, path, label_selector=""):
            if path.endswith("/namespaces/pq/workloads") and low_job["metadata"]["uid"] in label_selector:
                return low_wls
            raise ApiException(status=503, reason="Service Unavailable")

        def request(self, method, path):
            raise ApiException(status=503, reason="Service Unavailable")

    q = queueing.read(Busy(), "pq", low_job, "RayJob")
    assert q.state == "preempted" and q.preempted_by == f"the job with UID {queueing.preemptor_uid(low_wls[0])}"
    assert q.note == ("LocalQueue q's ClusterQueue could not be read (the API server answered 503 Service "
                      "Unavailable: Service Unavailable): Kueue's reason is not shown")


def test_unreadable_workloads_are_unknown_not_none():
    found, why = queueing.workloads_of(_refusing(403, "Forbidden"), "pq", ["a-uid"])
    assert found is None and why.startswith("workloads.kueue.x-k8s.io in pq not readable (the API server refused")
    unserved = _refusing(404, "Not Found", "404 page not found")
    found, why = queueing.workloads_of(unserved, "pq", ["a-uid"])
    assert found is None and "does not serve workloads.kueue.x-k8s.io/v1beta2" in why
    assert queueing.workloads_of(unserved, "pq", []) == ([], None)  # nothing to look for: nothing read


def test_rollback_says_it_did_not_check_workloads_it_cannot_read():
    from generator.live.changes.teardown import settle_workloads

    class Gone:  # the queued RayJob is gone (deleted by the rollback); its Workloads answer 403
        list = _refusing(403, "Forbidden").list

        def get_ray(self, plural, namespace, name):
            return None

    said = settle_workloads(Gone(), "pq", {"a-uid": ("rayjobs", "small")}, timeout=1)  # type: ignore[arg-type]
    assert said.startswith("Workloads not checked (workloads.kueue.x-k8s.io in pq not readable (the API server "
                           "refused the request (403 Forbidden)")


def test_queued_means_the_label_and_suspend():
    assert queueing.held(captured("waiter")[0]) and queueing.held(captured("low")[0])
    assert not queueing.held(captured("high")[0])
    unlabelled = copy.deepcopy(captured("waiter")[0])
    del unlabelled["metadata"]["labels"][queueing.QUEUE_LABEL]
    assert not queueing.held(unlabelled)  # suspended by hand is not Kueue's: the guard treats it as today


# the training-loss guard -----------------------------------------------------------------------------------

class Live:
    """What impact() reads: the captured RayJob under the release's name."""

    def __init__(self, job: dict):
        self.job = job

    def get_ray(self, plural, namespace, name):
        return self.job if plural == "rayjobs" else None


def _manifest(job: dict, steps: int, queue: str | None = "q") -> str:
    labels = {queueing.QUEUE_LABEL: queue} if queue else {}
    objs = [{"kind": "RayJob", "metadata": {"name": "small", "labels": labels}, "spec": job["spec"]},
            {"kind": "ConfigMap", "metadata": {"name": "small-recipe"}, "data": {"recipe.yaml": f"steps: {steps}\n"}}]
    return yaml.safe_dump_all(objs)


@pytest.mark.parametrize("name", ["waiter", "low"])
def test_a_queued_job_is_not_running_training(name):
    job, _ = captured(name)
    hit = impact(Live(job), "pq", _manifest(job, 1), _manifest(job, 2))
    assert hit.lost == [] and hit.replace == [] and hit.unqueued == []
    assert hit.notes == [("note: RayJob small is queued by Kueue in LocalQueue q, not yet running (suspended until "
                         "admitted): no training is lost; its change applies before it starts")]
    assert impact(Live(job), "pq", _manifest(job, 1), _manifest(job, 1)).notes == []  # nothing changes: silent
    gone = impact(Live(job), "pq", _manifest(job, 1), "")
    assert gone.lost == [] and "it would be deleted" in gone.notes[0]


def test_an_admitted_job_is_running_and_the_guard_says_it_was_admitted():
    job, _ = captured("high")
    hit = impact(Live(job), "pq", _manifest(job, 1), _manifest(job, 2))
    assert hit.lost == [] and hit.replace == [("rayjobs", "small")]
    assert hit.notes[0].startswith("note: the recipe changes under running RayJob small (admitted by Kueue from "
                                   "LocalQueue q): ConfigMap small-recipe is updated")
    gone = impact(Live(job), "pq", _manifest(job, 1), "")
    assert gone.lost == [("RayJob small (jobDeploymentStatus Running, jobStatus -, RayCluster "
                         f"{job['status']['rayClusterName']}, admitted by Kueue from LocalQueue q) would be deleted")]


def test_taking_a_queued_job_out_of_the_queue_is_refused_without_replace():
    from generator.errors import CheckFailed

    job, _ = captured("waiter")
    hit = impact(Live(job), "pq", _manifest(job, 1), _manifest(job, 1, queue=None))
    assert hit.replace == [("rayjobs", "small")] and hit.lost == []
    with pytest.raises(CheckFailed, match="takes queued objects out of Kueue's queue:\n  RayJob small \\(suspended"):
        hit.refuse_unless(False, "run")
    hit.refuse_unless(True, "run")  # --replace recreates it unqueued


def test_a_job_kueue_admits_between_the_read_and_the_upgrade_is_guarded_as_running():
    """impact() reads the RayJob queued; Kueue admits it before the helm upgrade: enforce() reads it again last,
    and a spec change KubeRay would not apply to the running job is refused without --replace."""
    from generator.errors import CheckFailed
    from generator.live.changes.guard import enforce

    waiter, _ = captured("waiter")
    running, _ = captured("high")

    class Admitting(Live):
        def __init__(self):
            self.reads = 0

        def get_ray(self, plural, namespace, name):
            self.reads += 1
            return (waiter if self.reads == 1 else running) if plural == "rayjobs" else None

    target = copy.deepcopy(waiter)
    target["spec"]["entrypoint"] = "python3 other.py"
    said: list[str] = []
    with pytest.raises(CheckFailed, match="would lose running training") as err:
        enforce(Admitting(), "pq", _manifest(waiter, 1), _manifest(target, 1), replace=False, verb="run",
                say=said.append, deadline=0)
    assert "(read queued a moment ago, Kueue admitted it since: it runs now)" in str(err.value)
    assert said[0].startswith("note: RayJob small is queued by Kueue") and said[1] == (
        "note: RayJob small was read queued a moment ago, Kueue admitted it since: it runs now, so the change is "
        "judged as one under running training")
    still = Live(waiter)  # still queued at the second read: the change applies before it starts
    assert enforce(still, "pq", _manifest(waiter, 1), _manifest(target, 1), replace=False, verb="run",
                   say=said.append, deadline=0).queued == [("RayJob", "small")]
