"""The playground's own verbs, as a user runs them: a second `up` reports the running cluster and `status` says it
is healthy, bad usage exits 2, and `down` leaves no process behind."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import bounds
import pytest

from generator.playground.control_plane import SUPERVISED

REPO = Path(__file__).resolve().parents[2]


UP = bounds.playground_up(bounds.PLAYGROUND_UP)  # `up` without --timeout: healthy within it, or stopped after it
DOWN = bounds.playground_down()
STATUS = 60  # `status`: health checks, no --timeout of its own


def _cli(*args, env=None, timeout=UP):
    return subprocess.run(
        [sys.executable, "-m", "generator.playground", *args],
        capture_output=True, text=True, timeout=timeout, cwd=REPO, env=env,
    )


@pytest.mark.timeout(UP + STATUS)
def test_second_up_reports_the_running_cluster_and_status_is_healthy(playground):
    from generator.playground.lifecycle import load_state

    def recorded() -> dict[str, int]:  # state.json's processes: a supervised component's supervisor
        return {n: int(r["pid"]) for n, r in load_state(playground.state_dir)["components"].items()}

    before, children = recorded(), playground.pids()
    out = _cli("up", "--state-dir", str(playground.state_dir))
    assert out.returncode == 0, out.stdout + out.stderr
    assert "already running" in out.stdout
    assert f"export KUBECONFIG={playground.kubeconfig}" in out.stdout
    assert recorded() == before and playground.pids() == children
    kueue = "kueue" in before  # the session's runs Kueue (conftest.session_kueue): kept, and said so
    assert ("it runs Kueue" in out.stdout) == kueue, out.stdout
    if kueue:
        again = _cli("up", "--kueue", "--state-dir", str(playground.state_dir))
        assert again.returncode == 0 and "already running" in again.stdout, again.stdout + again.stderr
        assert recorded() == before

    st = _cli("status", "--state-dir", str(playground.state_dir), timeout=STATUS)
    assert st.returncode == 0, st.stdout + st.stderr
    names = ["etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kwok", "kuberay-operator",
             "volume-provisioner"]
    for name in names + (["kueue"] if kueue else []):
        line = next((ln for ln in st.stdout.splitlines() if ln.split()[:1] == [name]), "")
        assert line.split()[:2] == [name, "ok"], st.stdout
        assert ("; restarts " in line) == (name in SUPERVISED), line  # a supervised one's restarts are counted
    total_gpus = len(playground.gpu_node_names) * playground.gpus_per_node
    assert f"{total_gpus} nvidia.com/gpu" in st.stdout, st.stdout


def test_bad_usage_exits_2(tmp_path):
    out = _cli("up", "--gpu-nodes", "0", "--cpu-nodes", "0", "--state-dir", str(tmp_path / "pg"), timeout=30)
    assert out.returncode == 2, out.stdout + out.stderr
    out = _cli("up", "--node-memory", "lots", "--state-dir", str(tmp_path / "pg"), timeout=30)
    assert out.returncode == 2
    assert not (tmp_path / "pg").exists()
    # a folder that is not a playground's is never taken over (nor deleted by `down`)
    precious = tmp_path / "precious"
    precious.mkdir()
    (precious / "keep.txt").write_text("mine")
    out = _cli("up", "--state-dir", str(precious), timeout=60)
    assert out.returncode == 2, out.stdout + out.stderr
    out = _cli("down", "--state-dir", str(precious), timeout=30)
    assert out.returncode == 0
    assert (precious / "keep.txt").read_text() == "mine"


@pytest.mark.timeout(UP + 2 * DOWN)
def test_down_leaves_no_process_behind(playground, tmp_path):
    """A second, small playground in its own state folder: up, check, down, nothing left."""
    from dataclasses import asdict

    from generator.playground.processes import is_running
    from generator.playground.restarts import current_processes
    from generator.playground.state import PlaygroundState

    state_dir = tmp_path / "second"
    t0 = time.monotonic()
    try:
        out = _cli("up", "--gpu-nodes", "1", "--gpus-per-node", "2", "--cpu-nodes", "1", "--state-dir",
                   str(state_dir))
        assert out.returncode == 0, out.stdout + out.stderr
        assert time.monotonic() - t0 < bounds.PLAYGROUND_UP + bounds.SLACK  # it was healthy within its --timeout
        assert f"export KUBECONFIG={state_dir / 'kubeconfig'}" in out.stdout
        state = PlaygroundState.load(state_dir)
        assert state and len(state.components) == 7  # no Kueue, no agent-sandbox here
        # the recorded processes, a supervised component's being its supervisor, and the processes doing the
        # work: a supervisor's child, or the recorded process itself
        now = current_processes(state)
        children = [now[n] for n in state.components if n in SUPERVISED]
        assert len(children) == len(SUPERVISED) - 2  # neither Kueue nor agent-sandbox's controller here
        assert all(now[n] == r for n, r in state.components.items() if n not in SUPERVISED)
        recs = [*state.components.values(), *children]
        assert all(is_running(r) for r in recs) and len({r.pid for r in recs}) == len(recs)
        # its ports differ from the session playground's: the two do not collide
        assert not set(asdict(state.ports).values()) & set(playground.state["ports"].values())
    finally:
        down = _cli("down", "--state-dir", str(state_dir), timeout=DOWN)  # no process left, even on a failure
    assert down.returncode == 0, down.stdout + down.stderr
    left = [r for r in recs if is_running(r)]
    assert not left, left
    assert not state_dir.exists()
    # the session playground is untouched
    from generator.playground.control_plane import wanted
    from generator.playground.lifecycle import component_health

    session = PlaygroundState.from_dict(playground.state)
    assert all(component_health(session, c)[0] for c in wanted(session))
    # and a second down is a no-op
    again = _cli("down", "--state-dir", str(state_dir), timeout=DOWN)
    assert again.returncode == 0 and "no playground" in again.stdout
