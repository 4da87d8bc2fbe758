"""The run while it runs, on the real node (launch.watch): `status` reads the job's progress from the head, the
stall guard ends an attempt that stops reporting and the retry resumes and reports steadily; without the guard
(the negative control) the same hang runs on, and a head replaced mid-run is said.

The node, the test shape and what is dialed: real_ray_inputs.py.
"""

from __future__ import annotations

import time

import pytest
import stall_job
from live_helpers import cli, spawn
from real_ray_inputs import RECIPE, SHAPE, fresh_ns, infra_file
from session_env import wait_for

pytestmark = pytest.mark.real_node  # the machine's one real node: hack/suite.py runs this module in a real node part


# ---------------------------------------------------------------- the run while it runs (launch.watch)

STALL = 30  # the stall guard's timeout: the models' floor
# the guard checks once a second: it ends the job within STALL + 1 s of the last report, plus scheduling slack on
# two cores shared with the rest of `make test`
BOUND = 5


def _status(capsys, kc: str, ns: str, installed: bool = True) -> str:
    """`status`'s table; with installed False, "" while the release is not there yet (the run installs it)."""
    rc, out, err = cli(capsys, "status", "grpo-swe", "-n", ns, "--kubeconfig", kc)
    if not installed and rc == 1 and "not found" in err:
        return ""
    assert rc == 0, out + err
    return out


def _progress(status: str) -> str:
    return next((line for line in status.splitlines() if line.startswith("progress ")), "")


def test_a_stalled_attempt_is_ended_and_the_retry_resumes_reporting_steadily(ray_node, capsys, tmp_path):
    kc, ns = ray_node["kubeconfig"], fresh_ns()
    infra = infra_file(tmp_path, "stall", lambda doc: stall_job.guarded(doc, STALL))
    # the retry reports a step every 20 s for 40 s: steadily, within the timeout, for longer than it
    run = spawn("run", RECIPE, infra, *SHAPE, stall_job.entrypoint_override(20), "-n", ns, "--create-namespace",
                "--follow", "--kubeconfig", kc, "--timeout", "900", "-q")
    try:
        # while the first attempt hangs, status reads its progress from the head
        def at_step_2() -> str | None:
            text = _status(capsys, kc, ns, installed=False)
            return text if "step 2 of 6" in _progress(text) else None

        status = wait_for(at_step_2, 600, "status: progress at step 2", interval=2)
        assert "checkpoint step 2" in _progress(status) and "reward=0.2" in _progress(status), status
        out, err = run.communicate(timeout=900)
    finally:
        run.kill()
    print(out + err)
    assert run.returncode == 0, out + err
    assert f"dockyard: stalled: no progress for {STALL} s after step 2" in out, out
    assert "dockyard-stall: start at step 3" in out and "dockyard-stall: done" in out, out
    assert "[dockyard-k8s] progress: step 5 of 6" in out, out
    (first, r1), (second, r2) = stall_job.kept_records(ray_node["state_dir"], ns)
    reports1 = [r for r in r1 if "step" in r]
    stalled = next(r for r in r1 if r.get("event") == "stalled")
    ended = next(r for r in r1 if r.get("event") == "ended")
    silent = stalled["t"] - reports1[-1]["t"]
    assert reports1[-1]["step"] == 2 and STALL <= silent <= STALL + BOUND, (silent, r1)
    assert ended["t"] - stalled["t"] <= 10 + 1, r1  # SIGTERM, SIGKILL after the 10 s grace
    reports2 = [r for r in r2 if "step" in r]
    assert [r["step"] for r in reports2] == [3, 4, 5], r2
    assert not any(r.get("event") == "stalled" for r in r2), r2  # 40 s of reports 20 s apart: never ended
    print(f"from the hang to the retry's first step: {reports2[0]['t'] - reports1[-1]['t']:.1f} s "
          f"(the guard's {STALL} s included)")
    status = _status(capsys, kc, ns)
    assert "attempts   attempt 2 of 2 (1 failed, retried on a new RayCluster)" in status, status
    assert "step 5 of 6 (83%)" in _progress(status), status
    assert f"the previous attempt's job ended: stalled: no progress for {STALL} s after step 2" in status, status
    rc, kept, err = cli(capsys, "logs", "grpo-swe", "-n", ns, "--attempt", "1", "--kubeconfig", kc)
    assert rc == 0 and f"dockyard: stalled: no progress for {STALL} s after step 2" in kept, kept + err
    # negative control of the kept Ray logs: the same logs volume, keepRayLogMiB 0, and nothing of a pod kept
    rc, kept, err = cli(capsys, "logs", "grpo-swe", "-n", ns, "--attempt", "1", "--role", "trainer",
                        "--kubeconfig", kc)
    assert rc == 1 and "attempt 1's trainer Ray logs were not kept: no trainer pod of RayCluster" in err, kept + err
    rc, out, err = cli(capsys, "uninstall", "grpo-swe", "-n", ns, "--kubeconfig", kc, "--timeout", "300")
    assert rc == 0, out + err


def test_without_the_guard_a_hang_runs_on_and_a_replaced_head_is_said(ray_node, capsys, tmp_path):
    from kubernetes import client, config

    kc, ns = ray_node["kubeconfig"], fresh_ns()
    infra = infra_file(tmp_path, "hang", lambda doc: stall_job.guarded(doc, None))
    run = spawn("run", RECIPE, infra, *SHAPE, stall_job.entrypoint_override(1), "-n", ns, "--create-namespace",
                "--follow", "--kubeconfig", kc, "--timeout", "900", "-q")
    api = config.new_client_from_config(config_file=kc)
    try:
        wait_for(lambda: "step 2 of 6" in _progress(_status(capsys, kc, ns, installed=False)), 600,
                 "status: progress at step 2", interval=2)
        # negative control: no guard, so the same hang is still running well after the guard's bound
        time.sleep(STALL + BOUND + 8)
        status = _status(capsys, kc, ns)
        assert "Running  job RUNNING" in status, status
        ago = _progress(status).split("last report ")[1].split(" s ago")[0]
        assert int(ago) >= STALL + BOUND, status
        # the head replaced mid-run: KubeRay makes a new head in the same RayCluster and submits the job again
        core = client.CoreV1Api(api)
        (head,) = core.list_namespaced_pod(ns, label_selector="ray.io/node-type=head").items
        core.delete_namespaced_pod(head.metadata.name, ns)
        out, err = run.communicate(timeout=900)
    finally:
        run.kill()
        api.close()
    print(out + err)
    assert run.returncode == 0, out + err
    assert "--- the job was submitted again on RayCluster" in out, out
    tail = out.split("--- the job was submitted again on RayCluster")[-1]
    assert "dockyard-stall: start at step 3" in tail and "dockyard-stall: done" in tail, out
    status = _status(capsys, kc, ns)
    assert "restarted: the job was submitted again on the same RayCluster (its head was replaced)" in status, status
    assert "attempt 1 of 2 (0 failed)" in status, status
    rc, out, err = cli(capsys, "uninstall", "grpo-swe", "-n", ns, "--kubeconfig", kc, "--timeout", "300")
    assert rc == 0, out + err
