"""gVisor on the real node: RuntimeClass gvisor names the runsc handler, doctor sees the handler the node reports
(and refuses one it lacks), a gVisor pod sees gVisor's kernel where a runc pod beside it (the negative control) sees
the host's, and a deleted gVisor pod's runsc sandbox is gone promptly.

The real node is the session's (conftest's `node`): one start for the modules of the real node part
(test_real_node*.py, in hack/suite.py's order), downed by the last, test_real_node_teardown.py, which checks the
host is exactly as it was.

Every address dialed here is loopback (the apiserver) or inside the node's network namespace (pods).
"""

from __future__ import annotations

import os
import re
import time
from pathlib import Path

import pytest
import yaml
from real_node_pods import REAL, RECIPE, TOLERATE, Node
from session_env import wait_for

from generator.playground.node import components as C
from generator.playground.node import spec as S

pytestmark = pytest.mark.real_node  # the machine's one real node: hack/suite.py runs this module in a real node part


# The same probes on a gVisor pod and on a runc pod beside it (the negative control).

# Blocks: the kernel's version, its release, its boot lines, the device count, the seccomp mode (the probe pods are
# Unconfined: 0 under both runtimes, where the chart's RuntimeDefault pool shows 2), then three syscalls the host
# kernel serves and containerd's default seccomp profile allows but gVisor does not implement (linux64.go ENOSYS):
# remap_file_pages (216), vmsplice (278) on a bad fd, io_pgetevents (333) on no context.
SYSCALLS = {216: "0 0 0 0 0", 278: "-1 0 0 0", 333: "0 0 0 0 0 0"}
PROBE = ("cat /proc/version; echo; uname -r; echo; dmesg 2>&1 | head -5; echo; ls /dev | wc -l; echo; "
         "grep Seccomp: /proc/self/status; echo; "
         + "; ".join(f"/executor syscall {nr} {args}" for nr, args in SYSCALLS.items()))


def test_runtime_class_gvisor_names_the_runsc_handler(node):
    rc = node.get("default", "runtimeclass", C.RUNTIME_CLASS)
    assert rc["handler"] == C.RUNSC_HANDLER
    assert rc["scheduling"]["nodeSelector"] == {S.NODE_LABEL: "true"}


def test_doctor_sees_the_runsc_handler_on_the_real_node_and_refuses_one_it_lacks(node, capsys, tmp_path):
    """doctor's RuntimeClass row reads what the node reports (status.runtimeHandlers): ✓ for gvisor's runsc; a class
    naming a handler this node lacks (kata), scheduling onto the same node, is ✗: the check can fail."""
    from kubernetes import client, config
    from live_helpers import cli, doctor_rows

    ns = node.namespace("dr")
    api = config.new_client_from_config(config_file=node.kubeconfig)
    client.NodeV1Api(api).create_runtime_class({
        "apiVersion": "node.k8s.io/v1", "kind": "RuntimeClass", "metadata": {"name": f"kata-{ns}"},
        "handler": "kata", "scheduling": {"nodeSelector": {S.NODE_LABEL: "true"}}})
    try:
        rows = {}
        for runtime in (C.RUNTIME_CLASS, f"kata-{ns}"):
            image = {"repository": node.image.rsplit(":", 1)[0], "tag": node.image.rsplit(":", 1)[1]}
            infra = {"infra": {"namespace": ns, "image": image},
                     "launch": {"mode": "attach", "clusterName": "shared-gpu-cluster"},
                     "sandbox": {"replicas": 1, "nodeSelector": REAL, "tolerations": TOLERATE,
                                 "runtimeClassName": runtime}}
            path = tmp_path / f"{runtime}.infra.yaml"
            path.write_text(yaml.safe_dump(infra))
            rc, out, err = cli(capsys, "doctor", RECIPE, path, "-n", ns, "--kubeconfig", node.kubeconfig)
            assert "RuntimeClass" in doctor_rows(out), out + err
            rows[runtime] = (rc, doctor_rows(out)["RuntimeClass"])
        rc, line = rows[C.RUNTIME_CLASS]
        assert line.startswith("✓ ") and f"runsc reported by 1/1 node(s): {S.NODE_NAME}" in line, line
        rc, line = rows[f"kata-{ns}"]
        assert rc == 1 and line.startswith("✗ ") and "kata" in line and "runsc" in line, line
    finally:
        client.NodeV1Api(api).delete_runtime_class(f"kata-{ns}")
        api.close()
    node.kubectl("delete", "namespace", ns, "--wait=false")


def _probe(node: Node, ns: str, name: str, runtime: str | None) -> tuple[dict, str]:
    extra = {"runtimeClassName": runtime} if runtime else {}
    t0 = time.monotonic()
    node.apply(ns, node.pod(ns, name, ["sleep", "3600"], securityContext={"seccompProfile": {"type": "Unconfined"}},
                            **extra))
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
    version, release, dmesg, devices, seccomp, syscalls = inside.split("\n\n")[:6]
    assert "gvisor" in version and release.strip().endswith("-gvisor"), inside
    assert re.match(r"\[ *0\.000000\] Starting gVisor\.\.\.\n", dmesg), inside  # gVisor's own boot lines
    assert int(devices) < 25, inside  # gVisor's short /dev (~16 entries)
    assert seccomp.split() == ["Seccomp:", "0"], inside
    assert syscalls.splitlines() == ["errno 38 ENOSYS"] * len(SYSCALLS), inside  # gVisor's kernel answers

    control, outside = _probe(node, ns, "control", None)
    print(f"runc pod:\n{outside}")
    assert control["spec"]["nodeName"] == S.NODE_NAME
    assert os.uname().release in outside and "gvisor" not in outside.lower(), outside  # the host kernel
    assert "Starting gVisor" not in outside
    blocks = outside.split("\n\n")
    assert blocks[4].split() == ["Seccomp:", "0"], outside
    # the host kernel serves them (a bad argument, not a missing syscall): EINVAL, EBADF, EINVAL
    assert blocks[5].splitlines() == ["errno 22 EINVAL", "errno 9 EBADF", "errno 22 EINVAL"], outside

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
