"""`status` shows a RayJob's attempts (launch.backoffLimit): KubeRay counts the failed ones in status.failed and
runs each retry on a new RayCluster."""

from __future__ import annotations

from generator.live.state.snapshot import Snapshot, _read_ray
from generator.live.verbs.status import status_table


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
