"""state/driver_log.py: `run --follow` (and `job submit --follow`) stream the driver's log through a replaced head
and turn the job's progress reports into lines of their own. (A retry's new attempt:
tests/unit/live/verbs/test_status.py.)"""

from __future__ import annotations

from tests.support.job_states import ScriptedJob


def test_run_follow_says_a_replaced_head_and_streams_the_job_submitted_again(monkeypatch):
    """The head replaced mid-attempt: KubeRay submits the job again on the new head, under the same job id or a new
    one, in the same RayCluster with no attempt ended; the new driver log is streamed from its first line."""
    from generator.live.state import driver_log

    monkeypatch.setattr(driver_log.time, "sleep", lambda _s: None)
    running = {"jobId": "a1", "rayClusterName": "c1", "jobStatus": "RUNNING", "jobDeploymentStatus": "Running"}
    logs = iter(["start at 0\nstep 0\nstep 1\n", "start at 0\nstep 0\nstep 1\n", "start at 2\n",
                 "start at 2\nstep 2\n", "start at 2\nstep 2\ndone\n"])

    class Kube(ScriptedJob):
        def request(self, _method, path):
            return {"logs": next(logs)}

    states = [running, running, running, running, {**running, "jobStatus": "SUCCEEDED",
                                                   "jobDeploymentStatus": "Complete", "succeeded": 1}]
    out: list[str] = []
    ok, _ = driver_log.follow(Kube(states, {}), "r", "ns", None, write=out.append)
    assert ok is True
    again = "--- the job was submitted again on RayCluster c1 (its head was replaced); its log from the start:\n"
    assert "".join(out) == "start at 0\nstep 0\nstep 1\n" + again + "start at 2\nstep 2\ndone\n"

    states = [running, {**running, "jobId": "a2"}, {**running, "jobId": "a2", "jobStatus": "SUCCEEDED",
                                                    "jobDeploymentStatus": "Complete", "succeeded": 1}]
    out = []
    driver_log.follow(ScriptedJob(states, {"a1": "first\n", "a2": "second\n"}), "r", "ns", None, write=out.append)
    assert "".join(out) == "first\n" + again + "second\n"


def test_run_follow_turns_the_jobs_reports_into_progress_lines(monkeypatch):
    from generator.live.state import driver_log

    monkeypatch.setattr(driver_log.time, "sleep", lambda _s: None)
    done = {"jobId": "a1", "rayClusterName": "c1", "jobStatus": "SUCCEEDED", "jobDeploymentStatus": "Complete"}
    out: list[str] = []
    driver_log.follow(ScriptedJob([done], {"a1": 'x\nDOCKYARD_PROGRESS {"step": 4, "total": 9}\n'}), "r", "ns", None,
                      write=out.append)
    assert out[-1] == "[dockyard-k8s] progress: step 4 of 9\n"


def test_the_outcome_leaves_out_a_why_already_said():
    """status prints KubeRay's message on its rayjob line; the end section below the table does not repeat it."""
    from generator.live.state import driver_log

    job = {"metadata": {"name": "j"}, "status": {"jobStatus": "FAILED", "jobDeploymentStatus": "Failed",
                                                 "message": "Job entrypoint command failed with exit code 1"}}
    said = job["status"]["message"]
    assert driver_log.outcome(job) == f"RayJob j: job FAILED (deployment Failed): {said}"
    assert driver_log.outcome(job, said=said) == "RayJob j: job FAILED (deployment Failed)"
    assert driver_log.outcome(job, said="something else").endswith(said)
