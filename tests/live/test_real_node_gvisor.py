"""gVisor on the real node (issue 22): RuntimeClass `gvisor` (handler runsc, systrap platform) runs a
pod behind gVisor's own kernel, and the same probes on a runc pod show the host's (negative control).

One playground with a real node for the module (test_real_node's conventions: its own state folder,
the machine's one real-node turn, the host checked as before after `down`). Every address dialed is
loopback (the apiserver); the pods here dial nothing.
"""

from __future__ import annotations

import os
import re
import time
from pathlib import Path

import pytest
from real_node_session import real_node_playground
from session_env import wait_for
from test_real_node import Node

from generator.playground.node import components as C
from generator.playground.node import spec as S

PROBE = "cat /proc/version; echo; uname -r; echo; dmesg 2>&1 | head -5; echo; ls /dev | wc -l"


@pytest.fixture(scope="module")
def node():
    # the same prefix as test_real_node (reaped alike); module fixtures are torn down one module at a time
    with real_node_playground("real-node-", timeout=240) as (state_dir, state, before):
        n = Node(state_dir, state)
        n.before = before
        yield n


def test_runtime_class_gvisor_names_the_runsc_handler(node):
    rc = node.get("default", "runtimeclass", C.RUNTIME_CLASS)
    assert rc["handler"] == C.RUNSC_HANDLER
    assert rc["scheduling"]["nodeSelector"] == {S.NODE_LABEL: "true"}


def _probe(node: Node, ns: str, name: str, runtime: str | None) -> tuple[dict, str]:
    extra = {"runtimeClassName": runtime} if runtime else {}
    t0 = time.monotonic()
    node.apply(ns, node.pod(ns, name, ["sleep", "3600"], **extra))
    pod = node.ready(ns, name, timeout=90)
    print(f"\n{runtime or 'runc'} pod {name}: created -> Ready in {time.monotonic() - t0:.1f} s")
    rc, out = node.exec(ns, name, "sh", "-c", PROBE)
    assert rc == 0, out
    return pod, out


def test_a_gvisor_pod_sees_gvisors_kernel_and_a_runc_pod_the_hosts(node):
    ns = node.namespace("gv")
    pod, inside = _probe(node, ns, "sandboxed", C.RUNTIME_CLASS)
    print(f"\ngVisor pod:\n{inside}")
    assert pod["spec"]["nodeName"] == S.NODE_NAME and pod["spec"]["runtimeClassName"] == "gvisor"
    version, release, dmesg, devices = inside.split("\n\n")[:4]
    assert "gvisor" in version and release.strip().endswith("-gvisor"), inside
    assert re.match(r"\[ *0\.000000\] Starting gVisor\.\.\.\n", dmesg), inside  # gVisor's own boot lines
    assert int(devices) < 25, inside  # gVisor's short /dev (~16 entries)

    control, outside = _probe(node, ns, "control", None)
    print(f"runc pod:\n{outside}")
    assert control["spec"]["nodeName"] == S.NODE_NAME
    assert os.uname().release in outside and "gvisor" not in outside.lower(), outside  # the host kernel
    assert "Starting gVisor" not in outside

    # a known gVisor failure mode is a pod kill that hangs (KillPodSandbox DeadlineExceeded): the pod's
    # runsc sandbox process (runsc-sandbox, under this node's runsc root) must be gone promptly, not just the object
    assert _sandboxes(node), "no runsc-sandbox process under this node's runsc root while the gVisor pod runs"
    t0 = time.monotonic()
    node.kubectl("-n", ns, "delete", "pod", "sandboxed", "--wait=true", timeout=90)
    wait_for(lambda: not _sandboxes(node), 30, "the gVisor pod's runsc sandbox to exit")
    print(f"gVisor pod deleted and its sandbox gone in {time.monotonic() - t0:.1f} s")
    node.kubectl("delete", "namespace", ns, "--wait=false")


def _sandboxes(node: Node) -> list[int]:
    """PIDs of runsc sandboxes whose --root is this node's runsc root (components.runsc_config)."""
    root = f"--root={node.spec.containerd_dir / 'runsc'}".encode()
    pids = []
    for p in Path("/proc").glob("[0-9]*"):
        try:
            argv = (p / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if argv[0].endswith(b"runsc-sandbox") and any(a.startswith(root) for a in argv):
            pids.append(int(p.name))
    return pids
