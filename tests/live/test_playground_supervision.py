"""The playground supervises its controllers as a kubelet would (generator/playground/supervise.py): a KubeRay
operator that is killed, or that ends on `leader election lost` (its Lease taken, or its apiserver paused past
the renew deadline), comes back after its back-off, leads again, and `playground status` counts the restart
with its exit; after an apiserver pause a later `run --wait` succeeds, since an operator is there to act."""

from __future__ import annotations

import datetime
import os
import signal
import subprocess
import sys
import time

import bounds
import pytest
from kubernetes import client
from live_helpers import INFRA, RECIPE, cli
from session_env import wait_for

from generator.pinned_tools import REPO
from generator.playground import processes as procs
from generator.playground import restarts
from generator.playground.state import PlaygroundState

OPERATOR = "kuberay-operator"
LEASE = ("kube-system", "ray-operator-leader")  # control_plane.py: --leader-election-namespace; KubeRay's lease name
LEASE_SECONDS = 15  # controller-runtime's default LeaseDuration (KubeRay sets none); its RenewDeadline is 10 s
# Over the operator's 10 s renew deadline with room, and under kwok's 40 s node leases (control_plane.py
# KWOK_LEASE_SECONDS), so the operator loses its lease while the nodes stay Ready for the rest of the session.
PAUSE = 25
STATUS = 60  # `playground status`: health checks only

pytestmark = pytest.mark.timeout(600)


def _record(playground) -> restarts.Record:
    state = PlaygroundState.load(playground.state_dir)
    assert state, playground.state_dir
    record = restarts.of(playground.state_dir, state.components[OPERATOR])
    assert record is not None, f"{OPERATOR} is not supervised: {state.components[OPERATOR]}"
    return record


def _holder(coord: client.CoordinationV1Api) -> str:
    return coord.read_namespaced_lease(LEASE[1], LEASE[0]).spec.holder_identity or ""


def _back(playground, coord, since: float, old_holder: str) -> tuple[restarts.Record, list[restarts.Exit]]:
    """Wait for the operator to be restarted after an exit at or after `since` (epoch seconds) and to take
    its Lease anew; returns its record and the exits since. The bound: 60 s for the exit to come, then each
    back-off the supervisor chose plus 30 s, then the new process's wait for the old Lease to lapse."""
    deadline = time.monotonic() + 60
    while True:
        record = _record(playground)
        new = [e for e in record.exits if e.at >= since]
        if new and record.state == restarts.RUNNING and record.child and procs.is_running(record.child):
            break
        if new and record.next_start:
            deadline = max(deadline, time.monotonic() + record.next_start - time.time() + 30)
        if time.monotonic() > deadline:
            pytest.fail(f"{OPERATOR} was not restarted in time: {record}", pytrace=False)
        time.sleep(0.5)
    wait_for(lambda: _holder(coord) not in ("", old_holder), 2 * LEASE_SECONDS + 30, f"{OPERATOR} to lead again")
    return record, new


def _status(playground) -> str:
    st = subprocess.run([sys.executable, "-m", "generator.playground", "status", "--state-dir",
                         str(playground.state_dir)], capture_output=True, text=True, timeout=STATUS, cwd=REPO)
    assert st.returncode == 0, st.stdout + st.stderr
    return next(ln for ln in st.stdout.splitlines() if ln.split()[:1] == [OPERATOR])


def test_a_killed_operator_comes_back_and_status_counts_the_restart(playground):
    coord = client.CoordinationV1Api(playground.api_client())
    before, holder = _record(playground), _holder(coord)
    pid = playground.pids()[OPERATOR]
    assert before.child and before.child.pid == pid
    since = time.time()
    os.kill(pid, signal.SIGKILL)
    after, new = _back(playground, coord, since, holder)
    assert [(e.signal, e.code) for e in new] == [("SIGKILL", None)]
    assert after.child and after.child.pid != pid and after.restarts == before.restarts + 1
    line = _status(playground)
    assert line.split()[1] == "ok", line
    assert f"pid {after.child.pid}, " in line and f"restarts {after.restarts} (last: killed by SIGKILL at " in line


def test_an_operator_that_loses_its_lease_exits_and_comes_back(playground):
    """Another holder takes the Lease: the operator cannot renew within its deadline and exits with
    `leader election lost`, as it does when its apiserver stops answering; its supervisor starts it again."""
    coord = client.CoordinationV1Api(playground.api_client())
    before = _record(playground)
    assert before.child and procs.is_running(before.child)
    since, now = time.time(), datetime.datetime.now(datetime.UTC)
    coord.patch_namespaced_lease(LEASE[1], LEASE[0], {"spec": {
        "holderIdentity": "intruder", "leaseDurationSeconds": LEASE_SECONDS,
        "acquireTime": now.isoformat(), "renewTime": now.isoformat()}})
    after, new = _back(playground, coord, since, "intruder")
    assert [(e.code, e.reason) for e in new] == [(1, "Error")] and "leader election lost" in new[0].message, new
    line = _status(playground)
    assert line.split()[1] == "ok", line
    assert f"restarts {after.restarts} (last: exit code 1 (Error) at " in line and "leader election lost" in line


def test_after_an_apiserver_pause_the_operator_is_back_and_run_wait_succeeds(playground, namespace, capsys):
    """The fault the launcher must survive (the pause also proven in test_trust_live.py): the operator loses
    its lease during the pause and exits; afterwards it leads again and a new job is reconciled to ready."""
    coord = client.CoordinationV1Api(playground.api_client())
    holder = _holder(coord)
    assert _record(playground).child
    api = playground.pids()["kube-apiserver"]
    since = time.time()
    os.kill(api, signal.SIGSTOP)
    try:
        time.sleep(PAUSE)
    finally:
        os.kill(api, signal.SIGCONT)
    _, new = _back(playground, coord, since, holder)
    assert "leader election lost" in new[0].message, new
    timeout = 120
    t0 = time.monotonic()
    rc, out, err = cli(capsys, "run", RECIPE, INFRA, "-n", namespace, "--wait", "--kubeconfig", playground.kubeconfig,
                       "--timeout", timeout)
    assert rc == 0, out + err
    assert time.monotonic() - t0 < bounds.verb(timeout)
    ray = client.CustomObjectsApi(playground.api_client())
    clusters = ray.list_namespaced_custom_object("ray.io", "v1", namespace, "rayclusters")["items"]
    assert [c["status"].get("state") for c in clusters] == ["ready"], clusters
