"""kuberay.placement on the session playground: its simulated GPU nodes are tainted
`nvidia.com/gpu=present:NoSchedule` as a cloud GPU pool is, and its apiserver runs no
ExtendedResourceToleration (as EKS): the chart's own toleration is what lets the GPU fleets run. Without
it a fleet stays Pending on the taint, and `doctor` says ✗ naming the taint and the key to set."""

from __future__ import annotations

import re

import pytest
from kubernetes import client
from live_helpers import INFRA, RECIPE, cli, infra_variant, kube

pytestmark = pytest.mark.timeout(240)
GPU_TAINT = "nvidia.com/gpu=present:NoSchedule"


@pytest.fixture
def release(playground, namespace, capsys):
    yield "small"
    from generator.live.helm.records import release_records

    if release_records(kube(playground), "small", namespace):
        cli(capsys, "uninstall", "small", "-n", namespace, "--kubeconfig", playground.kubeconfig, "--timeout", 60)


def _rows(out: str) -> dict[str, str]:
    """doctor's table: check name -> its line."""
    return {line[2:26].strip(): line for line in out.splitlines() if line[:1] in "✓✗!" and line[1:2] == " "}


def _pods(playground, namespace: str, group: str) -> list:
    core = client.CoreV1Api(playground.api_client())
    return core.list_namespaced_pod(namespace, label_selector=f"ray.io/group={group}").items


def test_gpu_nodes_carry_the_cloud_pool_taint_and_the_defaults_run(playground, namespace, release, capsys):
    core = client.CoreV1Api(playground.api_client())
    for name in playground.gpu_node_names:
        node = core.read_node(name)
        assert [(t.key, t.value, t.effect) for t in node.spec.taints] == [("nvidia.com/gpu", "present", "NoSchedule")]
        assert node.metadata.labels["nvidia.com/gpu.present"] == "true"
    kc = playground.kubeconfig
    rc, out, err = cli(capsys, "doctor", RECIPE, INFRA, "-n", namespace, "--kubeconfig", kc)
    rows = _rows(out)
    assert rows["placement: trainer"].startswith("✓") and "can use 2 of 2 GPU node(s)" in rows["placement: trainer"]
    assert rows["placement: inference"].startswith("✓"), out
    assert rows["placement: head"].startswith("✓") and "1 without GPUs" in rows["placement: head"], out
    rc, out, err = cli(capsys, "run", RECIPE, INFRA, "-n", namespace, "--wait", "--kubeconfig", kc, "--timeout", 120)
    assert rc == 0, err
    for group in ("trainer", "inference"):
        (pod,) = _pods(playground, namespace, group)
        assert pod.status.phase == "Running" and pod.spec.node_name in playground.gpu_node_names, group
    (head,) = _head(playground, namespace)
    assert head.spec.node_name in playground.cpu_node_names  # no GPU toleration: never a GPU node's slot


def _head(playground, namespace: str) -> list:
    core = client.CoreV1Api(playground.api_client())
    return core.list_namespaced_pod(namespace, label_selector="ray.io/node-type=head").items


def test_a_fleet_without_the_toleration_stays_pending_and_doctor_names_the_taint(playground, namespace, release,
                                                                                 capsys, tmp_path, wait):
    bare = infra_variant(tmp_path, "bare.infra.yaml",
                         lambda d: d["kuberay"]["placement"].update(trainer={"tolerations": []}))
    kc = playground.kubeconfig
    rc, out, err = cli(capsys, "doctor", RECIPE, bare, "-n", namespace, "--kubeconfig", kc)
    rows = _rows(out)
    assert rc == 1 and rows["placement: trainer"].startswith("✗"), out
    assert f"tolerates no taint of the 2 GPU node(s) it could use: {GPU_TAINT} (2 node(s))" in out, out
    assert "add {key: nvidia.com/gpu, operator: Exists, effect: NoSchedule} to kuberay.placement.gpu.tolerations" in out
    assert rows["placement: inference"].startswith("✓"), out

    rc, out, err = cli(capsys, "run", RECIPE, bare, "-n", namespace, "--kubeconfig", kc, "--timeout", 60)
    assert rc == 0, err

    def unschedulable():
        pods = _pods(playground, namespace, "trainer")
        conds = [c for p in pods for c in (p.status.conditions or [])
                 if c.type == "PodScheduled" and c.status == "False" and c.reason == "Unschedulable"]
        return conds[0] if conds else None

    cond = wait(unschedulable, 60, "the trainer pod Unschedulable")
    # no admission plugin added the toleration: the two GPU nodes refuse it on their taint
    assert "2 node(s) had untolerated taint" in cond.message, cond.message
    (pod,) = _pods(playground, namespace, "trainer")
    assert pod.status.phase == "Pending" and not pod.spec.node_name
    assert not any(t.key == "nvidia.com/gpu" for t in pod.spec.tolerations or [])
    wait(lambda: [p for p in _pods(playground, namespace, "inference") if p.status.phase == "Running"], 60,
         "the inference pod (default toleration) Running")


def test_doctor_checks_the_sandbox_runtime_class_its_handler_and_counts_its_overhead(playground, namespace, capsys,
                                                                                    tmp_path):
    """sandbox.runtimeClassName: a class that does not exist is ✗ (the API server refuses the pods), one
    whose nodeSelector matches no node is ✗, and the kwok nodes report no runtime handlers, so which handler they
    run is unknown (!). The class's pod overhead is added to the pool's room row, as admission adds it to the pods.
    (The real node, which reports runsc, is test_real_node_gvisor's: there the row is ✓.)"""
    node_api = client.NodeV1Api(playground.api_client())
    kc = playground.kubeconfig

    def doctor(runtime_class: str | None) -> tuple[int, dict[str, str]]:
        change = (lambda d: d["sandbox"].update(runtimeClassName=runtime_class)) if runtime_class else (lambda d: d)
        infra = infra_variant(tmp_path, f"{runtime_class}.infra.yaml", change)
        rc, out, err = cli(capsys, "doctor", RECIPE, infra, "-n", namespace, "--kubeconfig", kc)
        return rc, _rows(out)

    rc, plain = doctor(None)
    assert "RuntimeClass" not in plain  # no row, and no read, when none is set
    rc, rows = doctor(f"absent-{namespace}")
    assert rc == 1 and rows["RuntimeClass"].startswith("✗ ") and "does not exist" in rows["RuntimeClass"], rows
    assert "RuntimeClass" in rows["PodSecurity admission"] and "not found" in rows["PodSecurity admission"]  # the claim

    made = [f"overhead-{namespace}", f"nowhere-{namespace}"]
    for name, spec in ((made[0], {"handler": "kata", "overhead": {"podFixed": {"cpu": "250m", "memory": "64Mi"}}}),
                       (made[1], {"handler": "runsc", "scheduling": {"nodeSelector": {"no-such-label": "true"}}})):
        node_api.create_runtime_class({"apiVersion": "node.k8s.io/v1", "kind": "RuntimeClass",
                                       "metadata": {"name": name}, **spec})
    try:
        rc, rows = doctor(made[0])
        line = rows["RuntimeClass"]
        assert line.startswith("! ") and "handler kata" in line and "no node reports its runtime handlers" in line, line
        assert "overhead cpu 250m, memory 64Mi per pod" in line, line
        cpu = lambda row: re.search(r"\(cpu (\d+)m", row).group(1)  # noqa: E731
        assert int(cpu(rows["sandbox pool fits"])) == int(cpu(plain["sandbox pool fits"])) + 250, rows

        rc, rows = doctor(made[1])
        line = rows["RuntimeClass"]
        assert rc == 1 and line.startswith("✗ ") and "no schedulable node matches" in line, line
    finally:
        for name in made:
            node_api.delete_runtime_class(name)
