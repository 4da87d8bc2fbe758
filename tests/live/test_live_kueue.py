"""Kueue on the session playground (the real controller, v0.17.0, and the real KubeRay operator): gang
admission, priority preemption, and what status, run --wait, the training-loss guard, uninstall and rollback
make of a queued job. Each test makes its own namespace, ClusterQueue (GPU quota for exactly one job; cpu
and memory to spare) and LocalQueue, and removes them.

A job here is the small recipe with 2 GPUs per fleet: 4 GPUs of the playground's 16, so the nodes could hold
several jobs and only Kueue's quota holds the second back."""

from __future__ import annotations

import json
import threading
import uuid

import bounds
import pytest
from kubernetes import client
from kubernetes.client.exceptions import ApiException
from live_helpers import KUEUE, RECIPE, cli, create_custom_object, delete_custom_objects, infra_variant

from generator.live.state.queueing import JOB_UID_LABEL

GPUS = ["cluster.trainer.gpusPerNode=2", "cluster.inference.gpusPerNode=2"]  # one job: 4 GPUs
JOB_GPUS = 4
WAIT = 60  # --timeout of a `run --wait` of one small job
SHORT = 8  # --timeout of a `run --wait` that ends while queued
VERB = 60  # --timeout of the other verbs

@pytest.fixture
def queue(namespace, k8s):
    """A ClusterQueue (named after the namespace, which alone it admits) with quota for one job's GPUs and a
    LocalQueue `q` in the namespace; `queue.priority(name, value)` adds a WorkloadPriorityClass. Each is deleted
    at teardown."""
    api = client.CustomObjectsApi(k8s)
    made: list = []  # (group, plural, namespace, name)

    class Queue:
        def make(self, preemption: dict | None = None) -> Queue:
            spec = {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": namespace}},
                    "resourceGroups": [{"coveredResources": ["cpu", "memory", "nvidia.com/gpu"], "flavors": [
                        {"name": "default-flavor", "resources": [
                            {"name": "cpu", "nominalQuota": "1000"}, {"name": "memory", "nominalQuota": "4Ti"},
                            {"name": "nvidia.com/gpu", "nominalQuota": str(JOB_GPUS)}]}]}]}
            if preemption:
                spec["preemption"] = preemption
            self._create("clusterqueues", None, {"kind": "ClusterQueue", "metadata": {"name": namespace},
                                                 "spec": spec})
            self._create("localqueues", namespace, {"kind": "LocalQueue", "metadata": {"name": "q"},
                                                    "spec": {"clusterQueue": namespace}})
            return self

        def priority(self, name: str, value: int) -> str:
            full = f"{namespace}-{name}"
            self._create("workloadpriorityclasses", None, {"kind": "WorkloadPriorityClass",
                                                           "metadata": {"name": full}, "value": value})
            return full

        def _create(self, plural: str, ns: str | None, body: dict) -> None:
            create_custom_object(api, made, KUEUE, plural, ns, body)

    yield Queue()
    delete_custom_objects(api, made)


def _infra(tmp_path, namespace, priority: str | None = None, mode: str = "rayjob"):
    def change(d):
        d["infra"]["namespace"] = namespace
        d["launch"].update(mode=mode, queue="q", **({"priorityClass": priority} if priority else {}))

    return infra_variant(tmp_path, f"{priority or 'plain'}-{mode}-{uuid.uuid4().hex[:4]}.yaml", change)


def _run(capsys, playground, infra, name, *more):
    return cli(capsys, "run", RECIPE, infra, f"name={name}", *GPUS, *more, "--kubeconfig", playground.kubeconfig)


def _status(capsys, playground, namespace, name) -> dict:
    rc, out, err = cli(capsys, "status", name, "-n", namespace, "-o", "json", "--kubeconfig", playground.kubeconfig)
    assert rc == 0, err
    return json.loads(out)


def _custom(k8s):
    return client.CustomObjectsApi(k8s)


def _rayjob(k8s, namespace, name) -> dict | None:
    try:
        return _custom(k8s).get_namespaced_custom_object("ray.io", "v1", namespace, "rayjobs", name)
    except ApiException as exc:
        if exc.status == 404:
            return None
        raise


def _workloads(k8s, namespace, uid: str | None = None) -> list[dict]:
    sel = f"{JOB_UID_LABEL}={uid}" if uid else None
    return _custom(k8s).list_namespaced_custom_object(*KUEUE, namespace, "workloads",
                                                             label_selector=sel)["items"]


def _admitted(wl: dict) -> bool:
    return any(c["type"] == "Admitted" and c["status"] == "True" for c in (wl.get("status") or {}).get("conditions")
               or [])


def _pods(k8s, namespace, release) -> list:
    return client.CoreV1Api(k8s).list_namespaced_pod(
        namespace, label_selector=f"app.kubernetes.io/instance={release},app.kubernetes.io/component=ray").items


class Sampler(threading.Thread):
    """Samples job `release`'s Ray pods, then its Workload, every 0.2 s: (pods, admitted when read after them)."""

    def __init__(self, k8s, namespace, release):
        super().__init__(daemon=True)
        self.args = k8s, namespace, release
        self.samples: list[tuple[int, bool]] = []
        self.stop = threading.Event()

    def run(self):
        k8s, namespace, release = self.args
        while not self.stop.is_set():
            pods = _pods(k8s, namespace, release)
            job = _rayjob(k8s, namespace, release)
            wls = _workloads(k8s, namespace, job["metadata"]["uid"]) if job else []
            self.samples.append((len(pods), any(_admitted(w) for w in wls)))
            self.stop.wait(0.2)


@pytest.mark.timeout(2 * bounds.verb(WAIT) + bounds.verb(SHORT) + 2 * bounds.verb(VERB) + 60)
def test_gang_admission_all_or_nothing(playground, k8s, namespace, queue, capsys, tmp_path):
    queue.make()
    infra = _infra(tmp_path, namespace)
    rc, out, err = _run(capsys, playground, infra, "a", "--wait", "--timeout", WAIT)
    assert rc == 0, out + err
    assert _status(capsys, playground, namespace, "a")["queue"]["state"] == "admitted"
    assert all(p.status.phase == "Running" for p in _pods(k8s, namespace, "a"))

    sampler = Sampler(k8s, namespace, "b")
    rc, out, err = _run(capsys, playground, infra, "b", "--timeout", VERB)
    assert rc == 0, out + err
    sampler.start()
    try:
        # B waits for quota: suspended, no pod of it, Kueue's reason in status (json and table)
        rc, out, err = _run(capsys, playground, infra, "b", "--wait", "--timeout", SHORT)
        assert rc == 1 and "queued:" in out, out + err
        line = err.strip().splitlines()
        assert len(line) == 1 and line[0].startswith("error: b still queued after the timeout"), err
        assert "insufficient unused quota for nvidia.com/gpu in flavor default-flavor" in line[0]
        st = _status(capsys, playground, namespace, "b")["queue"]
        assert (st["state"], st["reason"], st["local_queue"], st["cluster_queue"], st["waits"]) == (
            "queued", "Pending", "q", namespace, True)
        assert "insufficient unused quota for nvidia.com/gpu" in st["message"]
        rc, table, _ = cli(capsys, "status", "b", "-n", namespace, "--kubeconfig", playground.kubeconfig)
        assert f"queue      queued in LocalQueue q (ClusterQueue {namespace}) — Pending: couldn't assign" in table
        job_b = _rayjob(k8s, namespace, "b")
        assert job_b["spec"]["suspend"] is True and job_b["status"]["jobDeploymentStatus"] == "Suspended"
        assert _pods(k8s, namespace, "b") == []

        # A goes: nothing of it is left, its Workload included; B is admitted whole and comes up
        uid_a = _rayjob(k8s, namespace, "a")["metadata"]["uid"]
        assert _workloads(k8s, namespace, uid_a)
        rc, out, err = cli(capsys, "uninstall", "a", "-n", namespace, "--kubeconfig", playground.kubeconfig,
                           "--timeout", VERB)
        assert rc == 0 and "nothing left" in out, out + err
        assert _workloads(k8s, namespace, uid_a) == []
        rc, out, err = _run(capsys, playground, infra, "b", "--wait", "--timeout", WAIT)
        assert rc == 0 and "RayJob running on a ready RayCluster" in out, out + err
    finally:
        sampler.stop.set()
        sampler.join(5)
    assert _status(capsys, playground, namespace, "b")["queue"]["state"] == "admitted"
    # all or nothing: no sample saw a pod of B while its Workload (read after the pods) was not admitted,
    # and the admission assigned every pod set in full
    assert sampler.samples and any(pods for pods, _ in sampler.samples), sampler.samples
    assert all(admitted for pods, admitted in sampler.samples if pods), sampler.samples
    assert sum(1 for _, admitted in sampler.samples if not admitted) >= 5  # B was sampled while it waited
    (wl,) = _workloads(k8s, namespace, job_b["metadata"]["uid"])
    wanted = {p["name"]: p["count"] for p in wl["spec"]["podSets"]}
    assigned = {p["name"]: p["count"] for p in wl["status"]["admission"]["podSetAssignments"]}
    assert assigned == wanted == {"head": 1, "trainer": 1, "inference": 1, "submitter": 1}


@pytest.mark.timeout(2 * bounds.verb(WAIT) + 5 * bounds.verb(VERB) + 60)
def test_priority_preemption_and_a_queued_jobs_rollback_and_uninstall(playground, k8s, namespace, queue,
                                                                       capsys, tmp_path, wait):
    queue.make(preemption={"withinClusterQueue": "LowerPriority"})
    low, high = queue.priority("low", 10), queue.priority("high", 1000)
    rc, out, err = _run(capsys, playground, _infra(tmp_path, namespace, low), "low", "--wait", "--timeout", WAIT)
    assert rc == 0, out + err
    job = _rayjob(k8s, namespace, "low")
    (wl,) = _workloads(k8s, namespace, job["metadata"]["uid"])
    rc, out, err = _run(capsys, playground, _infra(tmp_path, namespace, high), "high", "--wait", "--timeout", WAIT)
    assert rc == 0, out + err

    # low was preempted by high, said by status; its RayJob, release and Workload stay (requeued)
    st = _status(capsys, playground, namespace, "low")["queue"]
    assert (st["state"], st["reason"], st["priority_class"], st["waits"]) == ("preempted", "Preempted", low, True)
    assert st["preempted_by"].startswith(f"RayJob {namespace}/high (Workload rayjob-high-") and high in \
        st["preempted_by"]
    assert "insufficient unused quota for nvidia.com/gpu" in st["waiting"]
    rc, table, _ = cli(capsys, "status", "low", "-n", namespace, "--kubeconfig", playground.kubeconfig)
    assert f"queue      preempted in LocalQueue q (ClusterQueue {namespace}), priority {low} by RayJob " \
           f"{namespace}/high" in table and "due to prioritization in the ClusterQueue" in table, table
    after = _rayjob(k8s, namespace, "low")
    assert after["metadata"]["uid"] == job["metadata"]["uid"] and not after["metadata"].get("deletionTimestamp")
    assert after["spec"]["suspend"] is True and _pods(k8s, namespace, "low") == []
    assert [w["metadata"]["name"] for w in _workloads(k8s, namespace, job["metadata"]["uid"])] == \
        [wl["metadata"]["name"]]
    rc, out, _ = cli(capsys, "history", "low", "-n", namespace, "-o", "json", "--kubeconfig", playground.kubeconfig)
    assert [r["status"] for r in json.loads(out)] == ["deployed"]

    # rollback of the queued job: revision 2 makes it a queued RayCluster (the queued RayJob goes: no training
    # lost), rolling back to 1 removes that cluster; no Workload is left behind, the new RayJob has its own
    rc, out, err = _run(capsys, playground, _infra(tmp_path, namespace, low, mode="bringup"), "low",
                        "--timeout", VERB)
    assert rc == 0 and "queued by Kueue in LocalQueue q, not yet running" in out + err, out + err
    wait(lambda: _workloads(k8s, namespace, job["metadata"]["uid"]) == [], 30, "the RayJob's Workload to go")
    cluster = _custom(k8s).get_namespaced_custom_object("ray.io", "v1", namespace, "rayclusters", "low")
    wait(lambda: _workloads(k8s, namespace, cluster["metadata"]["uid"]), 30, "the RayCluster's Workload")
    rc, out, err = cli(capsys, "rollback", "low", "1", "-n", namespace, "--kubeconfig", playground.kubeconfig,
                       "--timeout", VERB)
    assert rc == 0, out + err
    assert _workloads(k8s, namespace, cluster["metadata"]["uid"]) == []
    rolled = _rayjob(k8s, namespace, "low")
    wait(lambda: _workloads(k8s, namespace, rolled["metadata"]["uid"]), 30, "the new RayJob's Workload")
    owners = {w["metadata"]["ownerReferences"][0]["uid"] for w in _workloads(k8s, namespace)}
    assert owners == {rolled["metadata"]["uid"], _rayjob(k8s, namespace, "high")["metadata"]["uid"]}

    # uninstall of the queued job: nothing of it is left when it returns, its Workload included
    rc, out, err = cli(capsys, "uninstall", "low", "-n", namespace, "--kubeconfig", playground.kubeconfig,
                       "--timeout", VERB)
    assert rc == 0 and "nothing left" in out, out + err
    assert _workloads(k8s, namespace, rolled["metadata"]["uid"]) == []


@pytest.mark.timeout(2 * bounds.verb(WAIT) + 4 * bounds.verb(VERB) + 30)
def test_helm_upgrade_keeps_a_queued_job_queued_and_guards_a_running_one(playground, k8s, namespace, queue,
                                                                          capsys, tmp_path):
    queue.make()
    infra = _infra(tmp_path, namespace)
    assert _run(capsys, playground, infra, "a", "--wait", "--timeout", WAIT)[0] == 0
    assert _run(capsys, playground, infra, "b", "--timeout", VERB)[0] == 0
    queued = _rayjob(k8s, namespace, "b")
    assert queued["spec"]["suspend"] is True

    # a recipe change of the queued job: applied, announced as not running yet; still queued, same RayJob
    rc, out, err = _run(capsys, playground, infra, "b", "grpo.max_num_steps=20", "--timeout", VERB)
    assert rc == 0 and "revision 2 deployed" in out, out + err
    assert ("note: RayJob b is queued by Kueue in LocalQueue q, not yet running (suspended until admitted): no "
            "training is lost; its change applies before it starts") in out + err
    job = _rayjob(k8s, namespace, "b")
    assert job["spec"]["suspend"] is True and job["metadata"]["uid"] == queued["metadata"]["uid"]
    assert _status(capsys, playground, namespace, "b")["queue"]["state"] == "queued"
    assert _pods(k8s, namespace, "b") == []

    # the running (admitted) job: a recipe change is announced as today, a spec change refused as today,
    # each saying it was admitted by Kueue
    running = _rayjob(k8s, namespace, "a")
    rc, out, err = _run(capsys, playground, infra, "a", "grpo.max_num_steps=20", "--timeout", VERB)
    assert rc == 0, out + err
    assert "note: the recipe changes under running RayJob a (admitted by Kueue from LocalQueue q)" in out + err
    rc, out, err = _run(capsys, playground, infra, "a", "cluster.trainer.nodes=2", "--timeout", VERB)
    assert rc == 1 and "would lose running training" in err and "admitted by Kueue from LocalQueue q" in err, err
    job = _rayjob(k8s, namespace, "a")
    assert job["metadata"]["uid"] == running["metadata"]["uid"] and not job["spec"].get("suspend")
    assert _status(capsys, playground, namespace, "a")["queue"]["state"] == "admitted"


@pytest.mark.timeout(bounds.verb(VERB) + bounds.verb(WAIT) + 60)
def test_a_webhook_that_does_not_answer_is_named(playground, k8s, namespace, queue, capsys, tmp_path):
    """Kueue's controller stopped: its admission webhooks do not answer, the apiserver refuses the queued
    RayJob after the webhook's own timeout, and `run` names the webhook and what serves it — at once, not at
    the --timeout. The control: with Kueue resumed, the same `run` installs."""
    import os
    import signal
    import time

    queue.make()
    infra = _infra(tmp_path, namespace)
    kueue = playground.pids()["kueue"]
    os.kill(kueue, signal.SIGSTOP)
    try:
        t0 = time.monotonic()
        rc, out, err = _run(capsys, playground, infra, "hooked", "--timeout", VERB)
        took = time.monotonic() - t0
    finally:
        os.kill(kueue, signal.SIGCONT)
    assert rc == 1, out + err
    assert 'failed calling webhook "' in err and "did not answer: the server it names" in err, err
    assert took < VERB - 15, (took, err)
    rc, out, err = _run(capsys, playground, infra, "hooked", "--timeout", VERB)
    assert rc == 0, out + err
    cli(capsys, "uninstall", "hooked", "-n", namespace, "--kubeconfig", playground.kubeconfig, "--timeout", VERB)
