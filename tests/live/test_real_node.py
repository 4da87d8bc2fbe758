"""The real node (`playground up --real-node`) itself: it joins beside kwok's nodes and kwok leaves it alone,
`playground status` shows its components and a second `up` changes nothing, and Services (ClusterIP,
EndpointSlices) and cluster DNS work on it.

The real node is the session's (conftest's `node`): one start for the modules of the real node part
(test_real_node*.py, in hack/suite.py's order), downed by the last, test_real_node_teardown.py, which checks the
host is exactly as it was.

Every address dialed here is loopback (the apiserver) or inside the node's network namespace (pods, Services, the
node).
"""

from __future__ import annotations

import io

import pytest
from session_env import wait_for

from generator.playground.node import spec as S

pytestmark = pytest.mark.real_node  # the machine's one real node: hack/suite.py runs this module in a real node part


def test_real_node_joins_beside_kwok_and_kwok_leaves_it_alone(node):
    nodes = {n["metadata"]["name"]: n for n in node.get("default", "nodes")["items"]}
    real = nodes[S.NODE_NAME]
    conds = {c["type"]: c["status"] for c in real["status"]["conditions"]}
    assert conds["Ready"] == "True"
    assert real["status"]["nodeInfo"]["containerRuntimeVersion"].startswith("containerd://")
    assert real["status"]["addresses"][0] == {"type": "InternalIP", "address": S.NODE_IP}
    assert "kwok.x-k8s.io/node" not in real["metadata"].get("annotations", {})
    assert real["metadata"]["labels"][S.NODE_LABEL] == "true" and "nvidia.com/gpu" not in real["status"]["capacity"]
    assert nodes["gpu-node-0"]["status"]["capacity"]["nvidia.com/gpu"] == "8"  # kwok's nodes stay
    # kubelet heartbeats the node's Lease (kwok would use its own holder identity)
    lease = node.get("kube-node-lease", "lease", S.NODE_NAME)
    assert lease["spec"]["holderIdentity"] == S.NODE_NAME


def test_status_shows_node_components_and_a_second_up_changes_nothing(node):
    from generator.playground.lifecycle import load_state, status, up
    from generator.playground.nodes import Shape

    out = io.StringIO()
    assert status(node.state_dir, out=out) == 0, out.getvalue()
    for name in ("relay", "containerd", "kubelet", "kube-proxy", "kube-router", "coredns", "metrics-server"):
        assert f"node/{name}" in out.getvalue() and "DOWN" not in out.getvalue()
    pids = {k: v["pid"] for k, v in node.state["real_node"]["components"].items()}
    out = io.StringIO()
    assert up(node.state_dir, Shape(gpu_nodes=1, gpus_per_node=8, cpu_nodes=0), out=out, real_node=True) == 0
    assert "already running" in out.getvalue()
    assert {k: v["pid"] for k, v in load_state(node.state_dir)["real_node"]["components"].items()} == pids


def test_clusterip_endpointslices_and_cluster_dns(node):
    ns = node.namespace()
    node.apply(ns, node.pod(ns, "echo", labels={"app": "echo"}),
               {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "echo"},
                "spec": {"selector": {"app": "echo"}, "ports": [{"port": 80, "targetPort": 9090}]}})
    pod = node.ready(ns, "echo")
    client = node.client(ns)
    slices = wait_for(lambda: [e for s in node.get(ns, "endpointslices", "-l",
                                                   "kubernetes.io/service-name=echo")["items"]
                               for e in s.get("endpoints") or []], 30, "an EndpointSlice for echo")
    assert slices[0]["addresses"] == [pod["status"]["podIP"]] and slices[0]["nodeName"] == S.NODE_NAME
    svc = node.get(ns, "service", "echo")
    import ipaddress

    assert ipaddress.ip_address(svc["spec"]["clusterIP"]) in ipaddress.ip_network(S.SERVICE_CIDR)
    rc, out = node.exec(ns, client, "nslookup", f"echo.{ns}.svc.cluster.local")
    assert rc == 0 and svc["spec"]["clusterIP"] in out, out
    answer = node.task(ns, client, f"http://echo.{ns}.svc.cluster.local/task/submit", "echo through-the-service")
    assert answer["exit_code"] == 0 and answer["stdout"] == "through-the-service\n"
    node.kubectl("delete", "namespace", ns, "--wait=false")
