"""The test suite never uses or disturbs the user's playground or releases (issue: `make demo` then
`make test` failed 11 live tests because both shared the default playground, the demo's job holding
every GPU)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import bounds
import pytest
from live_helpers import INFRA, RECIPE
from real_node_session import PREFIXES as REAL_NODE_PREFIXES
from session_env import SESSION_PREFIX, USER_ENV, reap_dead_sessions, sessions_root, user_state_dir
from test_live_run import pytestmark as INNER_MARK

from generator.pinned_tools import REPO

# An inner test session: a live test that needs all 16 GPUs of a fresh session playground.
INNER = "tests/live/test_live_run.py::test_run_wait_status_logs_history_uninstall[helm3]"
INNER_TEST = INNER_MARK.args[0]  # the inner test's own bound (test_live_run.py's timeout mark)
USER_UP, USER_RUN, STATUS = 180, 150, 60  # the user's playground and job: --timeout; `status` (no --timeout)
# the inner session: its playground up (tests/live/conftest.py), the test, its playground down
INNER_SESSION = bounds.playground_up(bounds.SESSION_UP) + INNER_TEST + bounds.playground_down()

pytestmark = pytest.mark.timeout(420)


def test_session_playground_is_its_own(playground):
    from generator.playground import default_state_dir
    from generator.playground.lifecycle import load_state

    assert playground.state_dir.parent == sessions_root()
    assert playground.state_dir.name == f"{SESSION_PREFIX}{os.getpid()}"
    assert playground.state_dir != user_state_dir()
    # everything that resolves "the playground" or "the cluster" inside the session lands on the session's
    assert default_state_dir() == playground.state_dir
    assert os.environ["KUBECONFIG"] == playground.kubeconfig != USER_ENV["KUBECONFIG"]
    assert os.environ["HELM_CONFIG_HOME"].startswith(str(playground.state_dir))
    user = load_state(user_state_dir())
    if user:  # a user's playground is running: no port and no kubeconfig in common
        assert not set(user["ports"].values()) & set(playground.state["ports"].values())
        assert user["kubeconfig"] != playground.kubeconfig


def _cli(env: dict, *argv, timeout: float) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "generator", *map(str, argv)], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=timeout)


@pytest.mark.timeout(bounds.playground_up(USER_UP) + bounds.verb(USER_RUN) + INNER_SESSION + STATUS
                     + bounds.playground_down())
def test_a_session_beside_a_users_busy_playground_leaves_it_alone(tmp_path):
    """A user's playground at the default folder, with a release holding every GPU and KUBECONFIG
    exported: a test session started then runs on its own playground, passes, and leaves the user's
    playground, processes and release exactly as they were."""
    from generator.playground.control_plane import wanted
    from generator.playground.lifecycle import component_health, load_state
    from generator.playground.state import PlaygroundState

    home = tmp_path / "state"  # the user's XDG_STATE_HOME: default playground home/dockyard-k8s/playground
    env = {k: v for k, v in os.environ.items()
           if k not in ("KUBECONFIG", "DOCKYARD_PLAYGROUND_DIR", "HELM_CONFIG_HOME", "HELM_CACHE_HOME",
                        "HELM_DATA_HOME")}
    env.update(XDG_STATE_HOME=str(home), PYTHONUNBUFFERED="1")
    user_dir = home / "dockyard-k8s" / "playground"
    up = _cli(env, "playground", "up", "--gpu-nodes", 2, "--cpu-nodes", 1, "--timeout", USER_UP,
              timeout=bounds.playground_up(USER_UP))
    try:
        assert up.returncode == 0, up.stdout + up.stderr
        before = load_state(user_dir)
        env["KUBECONFIG"] = before["kubeconfig"]  # as the README's `export KUBECONFIG=...` leaves it
        run = _cli(env, "run", RECIPE, INFRA, "-n", "dockyard", "--create-namespace", "--wait", "--timeout", USER_RUN,
                   timeout=bounds.verb(USER_RUN))
        assert run.returncode == 0, run.stdout + run.stderr  # the user's job: all 16 GPUs taken

        inner = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", INNER],
                               cwd=REPO, env=env, capture_output=True, text=True, timeout=INNER_SESSION)
        assert inner.returncode == 0, inner.stdout[-3000:] + inner.stderr[-2000:]
        assert "1 passed" in inner.stdout

        after = load_state(user_dir)
        assert after == before  # same processes, ports, kubeconfig
        user = PlaygroundState.from_dict(after)  # started without --kueue: its components, Kueue not among them
        assert "kueue" not in wanted(user) and all(component_health(user, c)[0] for c in wanted(user))
        st = _cli(env, "status", "small", "-n", "dockyard", "-o", "json", timeout=STATUS)
        assert st.returncode == 0, st.stderr
        status = json.loads(st.stdout)
        assert (status["revision"], status["release_status"], status["ready"]) == (1, "deployed", True)
        # the inner session stopped its own playground and left no folder behind
        assert not list((home / "dockyard-k8s" / "test-playgrounds").glob(SESSION_PREFIX + "*"))
    finally:
        _cli(env, "playground", "down", timeout=bounds.playground_down())
    assert not user_dir.exists()


def test_a_killed_sessions_folder_is_reaped_and_a_running_ones_kept(tmp_path):
    dead = subprocess.Popen(["true"])
    dead.wait()  # its pid is gone now
    gone, alive = tmp_path / f"{SESSION_PREFIX}{dead.pid}", tmp_path / f"{SESSION_PREFIX}1"  # pid 1 runs
    dead_node, other = tmp_path / f"{REAL_NODE_PREFIXES[1]}{dead.pid}", tmp_path / f"{REAL_NODE_PREFIXES[0]}1"
    for folder in (gone, alive, dead_node, other):
        folder.mkdir()
        (folder / "state.json").write_text("{}")  # a playground folder whose start-up was cut short
        (tmp_path / f".{folder.name}.lock").touch()
    reap_dead_sessions(tmp_path)  # the session fixture's call: its own prefix only
    assert not gone.exists() and not (tmp_path / f".{gone.name}.lock").exists()
    assert alive.exists() and (tmp_path / f".{alive.name}.lock").exists() and dead_node.exists()
    reap_dead_sessions(tmp_path, REAL_NODE_PREFIXES)  # the real-node turn's call (a killed run's node)
    assert not dead_node.exists() and not (tmp_path / f".{dead_node.name}.lock").exists()
    assert other.exists() and alive.exists()
