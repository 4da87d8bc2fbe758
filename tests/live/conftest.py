"""Live tests: one playground cluster per test session, the session's own.

The `playground` fixture starts a playground in a folder of its own,
${XDG_STATE_HOME:-~/.local/state}/dockyard-k8s/test-playgrounds/session-<pid> (free loopback ports, like
every playground), and stops it at the end of the session. It never uses, stops or changes the user's
playground (the default state folder, $DOCKYARD_PLAYGROUND_DIR) or the user's releases: for the
session KUBECONFIG and $DOCKYARD_PLAYGROUND_DIR point at the session's playground, and helm's
config, cache and data folders at the session folder. Folders left by a killed session (its pid
gone) are stopped and removed at the next session's start. Every test under tests/live is marked `live`.

The tests of the machine's one real node mark themselves (`pytestmark = pytest.mark.real_node` in the module,
which hack/suite.py reads to put the module in a real node part): `-m 'not real_node'` runs everything else. On a
machine that cannot host the real node (no root, cgroup v2 only, ...) they are skipped with one reason naming what
it lacks, except under $CI, where they run and fail: CI must not lose them quietly. `make test` decides the same up
front (hack/suite.py, its REAL_NODE variable). Their fixtures are here: `node` (the real node alone), `ray_node`
(with GPUs, the Ray image and Kueue), `sandbox_node` (with agent-sandbox's controller) and `no_real_node` (none up):
one playground at a time, started at the first test that asks for its kind and kept for the session's later ones
(real_node_session.SLOT), so the modules of one real node part share one start.
"""

from __future__ import annotations

import io
import os
import sys
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from session_env import SESSION_PREFIX, exit_code, reap_dead_sessions, sessions_root, user_state_dir, wait_for

LIVE_DIR = Path(__file__).resolve().parent

# Shape the session's playground is started with when none is running: its GPU nodes advertise an RDMA and an
# EFA device as those device plugins would (kuberay.network's live tests, test_live_fabric.py), and they are two
# racks in two blocks, with Kueue's Topology over them (launch.topology's live tests, test_live_topology.py).
SESSION_SHAPE = {"gpu_nodes": 2, "gpus_per_node": 8, "cpu_nodes": 1, "node_cpu": "64", "node_memory": "512Gi",
                 "gpu_node_devices": "rdma/ib=2,vpc.amazonaws.com/efa=4", "topology": "2x1"}


def session_kueue() -> bool:
    """The session playground runs Kueue and agent-sandbox's controller, except in `make test-matrix`'s legs: both
    are claimed for the pinned KubeRay and Kubernetes only, and those legs run neither's tests."""
    from generator.pinned_tools import PLAYGROUND_KUBERAY_ENV, PLAYGROUND_KUBERNETES_ENV

    return not (os.environ.get(PLAYGROUND_KUBERAY_ENV) or os.environ.get(PLAYGROUND_KUBERNETES_ENV))


def real_node_skip() -> str:
    """Why the real node's tests cannot run on this machine ('' when they can, and always under $CI)."""
    from generator.playground.node.machine import NEEDS, lacks

    missing = [] if os.environ.get("CI") else lacks(commands=False)
    if not missing:
        return ""
    return (f"this machine cannot host the real node: it lacks {'; '.join(missing)} (the real node needs {NEEDS}); "
            "`-m 'not real_node'` or `make test REAL_NODE=0` runs everything else")


DOWNS_REAL_NODE = "downs_real_node"  # the marker of a test that downs the real node or needs none up (pyproject)


def pytest_collection_modifyitems(config, items):
    skip = None
    for item in items:
        path = Path(str(item.path)).resolve()
        if LIVE_DIR in path.parents:
            item.add_marker(pytest.mark.live)
        if item.get_closest_marker("real_node") is not None:
            skip = real_node_skip() if skip is None else skip
            if skip:
                item.add_marker(pytest.mark.skip(reason=skip))


@dataclass
class Playground:
    state_dir: Path
    kubeconfig: str
    server: str
    shape: dict
    started_here: bool
    state: dict = field(repr=False, default_factory=dict)

    @property
    def gpu_node_names(self) -> list[str]:
        return [f"gpu-node-{i}" for i in range(self.shape["gpu_nodes"])]

    @property
    def cpu_node_names(self) -> list[str]:
        return [f"cpu-node-{i}" for i in range(self.shape["cpu_nodes"])]

    @property
    def gpus_per_node(self) -> int:
        return int(self.shape["gpus_per_node"])

    def pids(self) -> dict[str, int]:
        """The PID of each component's process now, read afresh: a supervised component's is its supervisor's
        child, which a restart replaces (generator/playground/restarts.py)."""
        from generator.playground.restarts import current_processes
        from generator.playground.state import PlaygroundState

        state = PlaygroundState.load(self.state_dir)
        return {name: proc.pid for name, proc in current_processes(state).items()} if state else {}

    def api_client(self):
        from kubernetes import config

        return config.new_client_from_config(config_file=self.kubeconfig)


@pytest.fixture(scope="session")
def playground():
    from bounds import SESSION_UP

    from generator.playground.lifecycle import down, load_state, up
    from generator.playground.nodes import Shape

    root = sessions_root()
    reap_dead_sessions(root)
    state_dir = root / f"{SESSION_PREFIX}{os.getpid()}"
    assert state_dir != user_state_dir()
    saved = {k: os.environ.get(k) for k in ("KUBECONFIG", "DOCKYARD_PLAYGROUND_DIR", "HELM_CONFIG_HOME",
                                            "HELM_CACHE_HOME", "HELM_DATA_HOME")}
    try:
        out = io.StringIO()
        t0 = time.monotonic()
        rc = exit_code(up, state_dir, Shape(**SESSION_SHAPE), timeout=SESSION_UP, out=out, kueue=session_kueue(),
                       agent_sandbox=session_kueue())
        if rc != 0:
            pytest.fail(f"playground up failed (exit {rc}):\n{out.getvalue()}", pytrace=False)
        print(f"\nsession playground started in {time.monotonic() - t0:.1f} s at {state_dir}")
        state = load_state(state_dir)
        os.environ.update(KUBECONFIG=state["kubeconfig"], DOCKYARD_PLAYGROUND_DIR=str(state_dir),
                          **{k: str(state_dir / "helm" / k.split("_")[1].lower())
                             for k in ("HELM_CONFIG_HOME", "HELM_CACHE_HOME", "HELM_DATA_HOME")})
        yield Playground(
            state_dir=state_dir,
            kubeconfig=state["kubeconfig"],
            server=state["server"],
            shape=state["shape"],
            started_here=True,
            state=state,
        )
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        exit_code(down, state_dir, out=io.StringIO())
        (root / f".{state_dir.name}.lock").unlink(missing_ok=True)


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item):
    """A test that is not the real node's ends the session's real-node playground and turn, if one is held: its env
    (Helm homes) must not reach that test, and other sessions may be waiting for the node."""
    if item.get_closest_marker("real_node") is None and "real_node_session" in sys.modules:
        sys.modules["real_node_session"].SLOT.release()


@pytest.fixture(scope="session")
def real_node_slot():
    """The session's real-node playground (real_node_session.SLOT), down at the session's end."""
    from real_node_session import SLOT

    try:
        yield SLOT
    finally:
        SLOT.release()


def _held(slot, request, kind: str, make):
    """The slot's playground of `kind` for the test; after it, the test that downed it must say so."""
    got = slot.get(kind, make)
    yield got
    if slot.downed() and request.node.get_closest_marker(DOWNS_REAL_NODE) is None:
        pytest.fail(f"{request.node.nodeid} downed the real node without @pytest.mark.{DOWNS_REAL_NODE}: mark it, "
                    "so that hack/suite.py runs its module last in its part", pytrace=False)


def _node(state_dir, state, before):
    from real_node_pods import Node

    node = Node(state_dir, state)
    node.before = before  # the host before its `up`
    return node


@pytest.fixture
def node(real_node_slot, request):
    """The real node alone (real_node_pods.Node; .before: the host before its `up`), shared by the session."""
    yield from _held(real_node_slot, request, "node", _node)


@pytest.fixture
def ray_node(real_node_slot, request):
    """The real node with 2 GPUs, the Ray image and Kueue, shared by the session: {state_dir, state, kubeconfig}."""
    yield from _held(real_node_slot, request, "ray", lambda state_dir, state, _before: {
        "state_dir": state_dir, "state": state, "kubeconfig": str(state_dir / "kubeconfig")})


@pytest.fixture
def sandbox_node(real_node_slot, request):
    """The real node with 1 GPU, the Ray image and agent-sandbox's controller (real_node_pods.Node), shared by the
    session."""
    yield from _held(real_node_slot, request, "sandbox", _node)


@pytest.fixture
def no_real_node(real_node_slot):
    """No real-node playground up (the session's is downed), in this session's turn at the real node: the host as
    it is then."""
    return real_node_slot.free()


@pytest.fixture(params=["helm3", "helm4"])
def helm(request, monkeypatch):
    """Run the test once per Helm major: the CLI's helm is picked by $DOCKYARD_HELM (the pinned Helm 3,
    or the pinned Helm 4). Yields the major."""
    from generator.pinned_tools import tool_dir
    from generator.render.helm import HELM_ENV, supported_helm

    monkeypatch.setenv(HELM_ENV, str(tool_dir({"helm3": "helm", "helm4": "helm4"}[request.param]) / "helm"))
    assert supported_helm().major == int(request.param[-1])
    return int(request.param[-1])


@pytest.fixture(scope="session")
def k8s(playground):
    """The official kubernetes client's ApiClient for the session playground."""
    api = playground.api_client()
    yield api
    api.close()


@pytest.fixture
def make_namespace(k8s):
    """`make_namespace(labels=None) -> name`: a fresh namespace whose `default` ServiceAccount
    exists (pods are admitted only then); each is deleted, and waited for, at teardown."""
    from kubernetes import client

    core = client.CoreV1Api(k8s)
    made: list[str] = []

    def make(labels: dict | None = None) -> str:
        name = f"t-{uuid.uuid4().hex[:8]}"
        core.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=name, labels=labels)))
        made.append(name)
        wait_for(lambda: _has_default_sa(core, name), 30, f"default ServiceAccount in {name}")
        return name

    yield make
    for name in made:
        delete_namespace_and_wait(core, name)


@pytest.fixture
def namespace(make_namespace):
    """A fresh namespace (see `make_namespace`)."""
    return make_namespace()


def delete_namespace_and_wait(core, name: str, timeout: float = 60) -> None:
    """Delete a namespace and wait until none of its pods is left, so they no longer hold node
    resources (GPUs) that later tests of the session need. (The namespace object itself lingers
    ~10 s more while the namespace controller finishes; nothing needs to wait for that.)"""
    from kubernetes.client.exceptions import ApiException

    try:
        core.delete_namespace(name)  # Terminating: nothing new can be created in it
        core.delete_collection_namespaced_pod(name, grace_period_seconds=0)  # kwok removes them at once
    except ApiException as exc:
        if exc.status == 404:
            return
        raise
    wait_for(lambda: not core.list_namespaced_pod(name).items, timeout, f"the pods of namespace {name} to be gone")


def _has_default_sa(core, ns: str) -> bool:
    from kubernetes.client.exceptions import ApiException

    try:
        core.read_namespaced_service_account("default", ns)
        return True
    except ApiException as exc:
        if exc.status == 404:
            return False
        raise


@pytest.fixture
def wait():
    """`wait(predicate, timeout, what)`: bounded polling for live tests."""
    return wait_for
