"""The real node's failures and its `down`, last in the real node part: a second real node is refused in one line
and leaves nothing, `down` after a crash (kubelet and containerd killed, their pods orphaned) leaves the host exactly
as it was before the session's `up`, and a start that fails half way removes what it made.

The real node is the session's (conftest's `node`), shared with the other test_real_node*.py modules; the tests
that down it or need none up are marked `downs_real_node`, so hack/suite.py runs this module last in its part (a
test after them would pay another start).

Every address dialed here is loopback (the apiserver) or inside the node's network namespace (pods).
"""

from __future__ import annotations

import io
import json
import os
from pathlib import Path

import pytest
from real_node_session import host_snapshot
from session_env import wait_for

from generator.playground.node import spec as S

pytestmark = pytest.mark.real_node  # the machine's one real node: hack/suite.py runs this module in a real node part


def test_a_second_real_node_is_refused_in_one_line_and_leaves_nothing(node, tmp_path):
    from session_env import exit_code

    from generator.playground.lifecycle import down, up
    from generator.playground.nodes import Shape
    from generator.playground.state import Process

    other = tmp_path / "second"
    out = io.StringIO()
    assert exit_code(up, other, Shape(gpu_nodes=1, gpus_per_node=8, cpu_nodes=0), out=out, real_node=True) == 1
    text = out.getvalue()
    assert f"another playground's real node holds {S.POD_CIDR}" in text and "Traceback" not in text, text
    assert "without --real-node" in text
    state = json.loads((other / "state.json").read_text())
    from generator.playground import processes as procs

    records = [Process.from_dict(r) for r in state["components"].values()]
    assert not [r for r in records if procs.is_running(r)]  # its control plane stopped
    assert down(other, out=io.StringIO()) == 0 and not other.exists()


@pytest.mark.downs_real_node
def test_down_after_a_crash_leaves_the_host_as_it_was(node):
    import signal

    from generator.playground.lifecycle import down
    from generator.playground.node import host

    comps = node.state["real_node"]["components"]
    pids = {v["pid"] for v in comps.values()}
    assert host.our_pids(node.spec)  # the check below can fail: while up, the node has processes
    ns = node.namespace("crash")
    node.client(ns)
    # a crash: kubelet and containerd die; the pods and their shims are orphaned
    for name in ("kubelet", "containerd"):
        os.kill(comps[name]["pid"], signal.SIGKILL)
    orphans = [p for p in host.our_pids(node.spec) if p not in pids]
    assert orphans, "a pod's processes should outlive the kubelet and containerd"
    out = io.StringIO()
    assert down(node.state_dir, out=out) == 0, out.getvalue()
    assert not node.state_dir.exists()
    after = host_snapshot()
    for key in node.before:
        changed = sorted(set(map(str, after[key])) ^ set(map(str, node.before[key])))
        assert after[key] == node.before[key], f"{key} changed: {changed}"
    assert not [p for p in pids if Path(f"/proc/{p}").exists()]
    assert not host.our_cgroup_dirs(node.spec)
    wait_for(lambda: not host.our_pids(node.spec), 10, "the killed processes to be reaped")


@pytest.mark.downs_real_node  # the real node must be down for its own start to get half way
def test_a_start_that_fails_half_way_removes_what_it_made(no_real_node, monkeypatch, tmp_path):
    from session_env import exit_code

    from generator.playground import processes as procs
    from generator.playground.lifecycle import down, up
    from generator.playground.node import components as C
    from generator.playground.node import host
    from generator.playground.nodes import Shape
    from generator.playground.state import PlaygroundState

    real_argv = C.argv

    def broken(name, *args):  # CoreDNS refuses an unknown flag and exits: a failure half way
        argv = real_argv(name, *args)
        return [*argv, "-no-such-flag"] if name == "coredns" else argv

    monkeypatch.setattr(C, "argv", broken)
    state_dir = tmp_path / "half"
    out = io.StringIO()
    shape = Shape(gpu_nodes=1, gpus_per_node=8, cpu_nodes=0)
    assert exit_code(up, state_dir, shape, out=out, real_node=True, timeout=240) == 1
    text = out.getvalue()
    assert "coredns exited during start-up" in text and "Traceback" not in text, text
    spec = S.NodeSpec(state_dir)
    state = PlaygroundState.load(state_dir)
    assert state and state.real_node
    assert state.real_node.components["containerd"]  # it got that far
    running = [r.name for r in [*state.components.values(), *state.real_node.components.values()]
               if procs.is_running(r)]
    assert not running, running
    assert not host.our_cgroup_dirs(spec) and not host.our_mounts(spec)
    wait_for(lambda: not host.our_pids(spec), 10, "the half-started node's processes to be gone")
    after = host_snapshot()
    for key in no_real_node:
        assert after[key] == no_real_node[key], f"{key} changed after a failed up"
    assert down(state_dir, out=io.StringIO()) == 0 and not state_dir.exists()
