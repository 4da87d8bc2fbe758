"""`status` shows a RayJob's attempts (launch.backoffLimit): KubeRay counts the failed ones in status.failed and
runs each retry on a new RayCluster."""

from __future__ import annotations

from generator.live.client.kube import INSTANCE
from generator.live.state.snapshot import Snapshot, _read_ray
from generator.live.verbs.status import status_table
from tests.support.job_states import ScriptedJob


def _job(status: dict, backoff: int | None) -> dict:
    spec = {} if backoff is None else {"backoffLimit": backoff}
    return {"metadata": {"name": "grpo-swe"}, "spec": spec, "status": status}


def _status(status: dict, backoff: int | None) -> list[str]:
    snap = Snapshot("grpo-swe", "ns")
    _read_ray(snap, [_job(status, backoff)], [])
    return [ln for ln in status_table(snap).splitlines() if ln.startswith("attempts")]


def test_a_retry_running_on_its_new_cluster_is_the_second_attempt():
    st = {"jobDeploymentStatus": "Running", "jobStatus": "RUNNING", "failed": 1, "rayClusterName": "grpo-swe-x2"}
    assert _status(st, 1) == ["attempts   attempt 2 of 2 (1 failed, retried on a new RayCluster)"]


def test_the_first_attempt_and_the_end_of_every_attempt():
    assert _status({"jobDeploymentStatus": "Running"}, 1) == ["attempts   attempt 1 of 2 (0 failed)"]
    done = {"jobDeploymentStatus": "Complete", "jobStatus": "SUCCEEDED", "failed": 1, "succeeded": 1}
    assert _status(done, 1) == ["attempts   attempt 2 of 2 (1 failed, retried on a new RayCluster)"]
    spent = {"jobDeploymentStatus": "Failed", "jobStatus": "FAILED", "failed": 2}
    assert _status(spent, 1) == ["attempts   attempt 2 of 2 (2 failed)"]


def test_a_job_without_retries_that_has_not_failed_has_no_attempts_line():
    assert _status({"jobDeploymentStatus": "Running"}, None) == []
    assert _status({"jobDeploymentStatus": "Failed", "failed": 1}, 0) == ["attempts   attempt 1 of 1 (1 failed)"]


def test_run_follow_waits_through_a_retry_and_streams_the_second_attempt(monkeypatch):
    from generator.live.state import driver_log

    monkeypatch.setattr(driver_log.time, "sleep", lambda _s: None)
    first = {"jobId": "a1", "rayClusterName": "c1", "jobStatus": "RUNNING", "jobDeploymentStatus": "Running"}
    states = [
        first,
        {**first, "jobStatus": "FAILED", "jobDeploymentStatus": "Retrying", "failed": 1},  # KubeRay retries it
        {"jobDeploymentStatus": "New", "failed": 1},
        {"jobId": "a2", "rayClusterName": "c2", "jobStatus": "RUNNING", "jobDeploymentStatus": "Running", "failed": 1},
        {"jobId": "a2", "rayClusterName": "c2", "jobStatus": "SUCCEEDED", "jobDeploymentStatus": "Complete",
         "failed": 1, "succeeded": 1},
    ]
    out: list[str] = []
    ok, job = driver_log.follow(ScriptedJob(states, {"a1": "step 0\nstep 1\n", "a2": "start at 2\n"}), "r", "ns", None,
                                write=out.append)
    assert ok is True and job["status"]["jobDeploymentStatus"] == "Complete"
    assert "".join(out) == "step 0\nstep 1\n--- attempt 2 (RayCluster c2) after 1 failed\nstart at 2\n"


def test_a_failed_attempt_that_is_retried_is_no_failure_to_stop_a_wait():
    snap = Snapshot("grpo-swe", "ns")
    _read_ray(snap, [_job({"jobDeploymentStatus": "Retrying", "jobStatus": "FAILED", "failed": 1}, 1)], [])
    assert snap.failure() is None
    _read_ray(snap, [_job({"jobDeploymentStatus": "Failed", "jobStatus": "FAILED", "failed": 2}, 1)], [])
    assert snap.failure() and "Failed" in snap.failure()


def test_the_progress_line_costs_status_one_request_and_none_without_it(monkeypatch, capsys):
    """The verb's budget: the snapshot's own reads (counted by tests/unit/live/state/test_snapshot.py) plus one for
    progress, made only while the job has a head to read it from; `--no-progress` makes none."""
    import argparse
    import json
    import time

    from generator.live.verbs import status as verb

    class Kube:
        def __init__(self):
            self.asked = []

        def get_answer(self, path, query):
            self.asked.append(path)
            return 200, json.dumps({"t": time.time(), "step": 3, "total": 6}) + "\n"

        def namespace_deletion(self, namespace):
            return None

    def snapshot(head_ip):
        snap = Snapshot("grpo-swe", "ns")
        _read_ray(snap, [_job({"jobId": "raysubmit_1", "rayClusterName": "c1", "jobStatus": "RUNNING",
                               "jobDeploymentStatus": "Running"}, 0)], [])
        snap.head_ip = head_ip
        return snap

    def run(head_ip, progress=True):
        kube = Kube()
        monkeypatch.setattr(verb, "Kube", lambda *a: kube)
        monkeypatch.setattr(verb, "resolve", lambda k, release, ns: ("grpo-swe", "ns", []))
        monkeypatch.setattr(verb, "take", lambda *a: snapshot(head_ip))
        args = argparse.Namespace(kubeconfig=None, context=None, release="grpo-swe", namespace="ns", watch=False,
                                  output="table", progress=progress, timeout=None)
        assert verb.status(args) == 0
        return kube.asked, capsys.readouterr().out

    asked, out = run("10.244.0.7")
    assert asked == ["/api/v1/namespaces/ns/services/c1-head-svc:8265/proxy/api/v0/logs/file"]
    assert "progress   step 3 of 6 (50%)" in out
    asked, out = run("10.244.0.7", progress=False)
    assert asked == [] and "progress" not in out
    asked, out = run(None)  # no head running: nothing to ask, and the line says why
    assert asked == [] and "progress   unknown (no running head pod)" in out

    def bringup(head_ip):
        snap = Snapshot("grpo-swe", "ns")
        _read_ray(snap, [], [{"metadata": {"name": "grpo-swe", "labels": {INSTANCE: "grpo-swe"}},
                              "status": {"state": "ready"}}])
        snap.head_ip = head_ip
        return snap

    monkeypatch.setattr(verb, "take", lambda *a: bringup("10.244.0.8"))
    kube = Kube()
    monkeypatch.setattr(verb, "Kube", lambda *a: kube)
    args = argparse.Namespace(kubeconfig=None, context=None, release="grpo-swe", namespace="ns", watch=False,
                              output="table", progress=True, timeout=None)
    assert verb.status(args) == 0
    # a bringup cluster: one read too, of the newest job the run watcher ran on its head
    assert kube.asked == ["/api/v1/namespaces/ns/services/grpo-swe-head-svc:8265/proxy/api/v0/logs/file"]
    assert "progress   step 3 of 6 (50%)" in capsys.readouterr().out
    monkeypatch.setattr(verb, "take", lambda *a: bringup(None))
    kube.asked.clear()
    assert verb.status(args) == 0 and kube.asked == []


NO_HEAD = 'failed to get job info: no endpoints available for service "grpo-swe-abcde-head-svc"'


class Nodes:
    """A cluster answering node reads from constructed Node objects; each read is counted."""

    def __init__(self, nodes: dict) -> None:
        self.nodes, self.asked = nodes, []

    def request(self, method, path):
        self.asked.append(path)
        return self.nodes[path.rsplit("/", 1)[1]]


def _on(node: str, message: str | None = NO_HEAD) -> Snapshot:
    from generator.live.state.snapshot import Fleet

    snap = Snapshot("grpo-swe", "ns")
    _read_ray(snap, [_job({"jobDeploymentStatus": "Running", "jobStatus": "FAILED", "rayClusterName": "grpo-swe-abcde",
                           "message": message}, 0)], [])
    snap.fleets["head"] = Fleet("head", desired=1, ready=1, pods=1, nodes=[node])
    return snap


KWOK = {"metadata": {"name": "gpu-node-0", "annotations": {"kwok.x-k8s.io/node": "fake"}}}
REAL = {"metadata": {"name": "real-node", "annotations": {"node.alpha.kubernetes.io/ttl": "0"}}}


def test_a_head_on_a_simulated_node_is_said_in_one_line_instead_of_kuberays_failure_words():
    from generator.live.verbs.status import simulated_head

    kube = Nodes({"gpu-node-0": KWOK})
    snap = _on("gpu-node-0")
    node = simulated_head(kube, snap)
    assert node == "gpu-node-0" and kube.asked == ["/api/v1/nodes/gpu-node-0"]
    rows = [ln for ln in status_table(snap, node).splitlines() if ln.startswith("rayjob")]
    assert rows == [("rayjob     grpo-swe  Running  cluster grpo-swe-abcde  — simulated: the head is on kwok node "
                     "gpu-node-0, whose pods are placed and ready but run no Ray, so the job is never submitted here "
                     "(placement and readiness are real); to run it: `dockyard-k8s playground up --real-node`")]
    assert "no endpoints" not in status_table(snap, node) and "FAILED" not in status_table(snap, node)
    seen: dict = {}
    for _ in range(2):  # --watch: each node is read once
        simulated_head(kube, snap, seen)
    assert len(kube.asked) == 2


def test_a_head_on_a_real_node_with_the_same_message_keeps_kuberays_words():
    from generator.live.verbs.status import simulated_head

    snap = _on("real-node")
    assert simulated_head(Nodes({"real-node": REAL}), snap) is None
    assert f"rayjob     grpo-swe  Running  job FAILED  cluster grpo-swe-abcde  — {NO_HEAD}" in status_table(snap)


def test_a_healthy_job_reads_no_node_and_a_node_rbac_hides_leaves_kuberays_words():
    from kubernetes.client.exceptions import ApiException

    from generator.live.verbs.status import simulated_head

    kube = Nodes({"gpu-node-0": KWOK})
    assert simulated_head(kube, _on("gpu-node-0", message=None)) is None
    assert kube.asked == []  # the budget of a healthy job: no request more

    class Forbidden(Nodes):
        def request(self, method, path):
            raise ApiException(status=403)

    assert simulated_head(Forbidden({}), _on("gpu-node-0")) is None


def test_a_failed_jobs_reason_is_said_once_across_the_rayjob_line_and_the_end(monkeypatch, capsys):
    """After a failed job the table's rayjob line and the end below it read the same RayJob: its reason is said once
    (KubeRay may copy it into rayJobInfo too), and a reason only Ray's job info has is said below the table."""
    import argparse

    from generator.live.verbs import status as verb

    said = "Job entrypoint command failed with exit code 1, last available logs: Traceback ..."
    log = "step 0\nTraceback (most recent call last):\nValueError: loss is nan\n"

    class Kube:
        def __init__(self, job):
            self.job = job

        def get_ray(self, plural, ns, name):
            return self.job

        def request(self, method, path):
            return {"logs": log}

        def namespace_deletion(self, namespace):
            return None

    def run(status: dict) -> str:
        job = {**_job(status, 0), "metadata": {"name": "grpo-swe"}}
        snap = Snapshot("grpo-swe", "ns")
        _read_ray(snap, [job], [])
        monkeypatch.setattr(verb, "Kube", lambda *a: Kube(job))
        monkeypatch.setattr(verb, "resolve", lambda k, release, ns: ("grpo-swe", "ns", []))
        monkeypatch.setattr(verb, "take", lambda *a: snap)
        args = argparse.Namespace(kubeconfig=None, context=None, release="grpo-swe", namespace="ns", watch=False,
                                  output="table", progress=False, timeout=None)
        assert verb.status(args) == 0
        return capsys.readouterr().out

    ended = {"jobId": "raysubmit_1", "rayClusterName": "c1", "jobStatus": "FAILED", "jobDeploymentStatus": "Failed",
             "failed": 1}
    for status in ({**ended, "message": said}, {**ended, "message": said, "rayJobInfo": {"message": said}}):
        out = run(status)
        assert out.count(said) == 1, out
        assert "RayJob grpo-swe: job FAILED (deployment Failed)\n" in out and "ValueError: loss is nan" in out
    out = run({**ended, "rayJobInfo": {"message": "only Ray's words"}})  # nothing on the rayjob line: said below
    assert out.count("only Ray's words") == 1 and "RayJob grpo-swe: job FAILED (deployment Failed): only Ray's" in out
