"""kuberay.network on the session playground: its GPU nodes advertise rdma/ib (2 each) and vpc.amazonaws.com/efa
(4 each) as those device plugins would (`playground up --gpu-node-devices`). The gang schedules with a device
profile on; a device the nodes lack leaves it unplaceable and `run --wait` refuses it before installing, in
doctor's words; a namespace labelled enforce=baseline refuses an rdma gang (the real apiserver's PodSecurity
admission decides) and doctor says so first; doctor names a Multus network that does not exist.

What only a cluster with the hardware proves (NCCL over the devices, Multus attaching the interface) is not
here: docs/fabric.md."""

from __future__ import annotations

import json
import time

import pytest
from kubernetes import client
from live_helpers import INFRA, RECIPE, cli, doctor_rows, infra_variant, kube

pytestmark = pytest.mark.timeout(300)

RDMA = {"profile": "rdma", "socketInterface": "eth0", "rdma": {"resourceName": "rdma/ib", "perPod": 2}}
EFA = {"profile": "efa", "efa": {"perPod": 4}}
BASELINE = {"pod-security.kubernetes.io/enforce": "baseline"}


@pytest.fixture
def release(playground, namespace, capsys):
    yield "small"
    from generator.live.helm.records import release_records

    if release_records(kube(playground), "small", namespace):
        cli(capsys, "uninstall", "small", "-n", namespace, "--kubeconfig", playground.kubeconfig, "--timeout", 60)


def _network(tmp_path, name: str, network: dict):
    return infra_variant(tmp_path, f"{name}.infra.yaml", lambda d: d["kuberay"].update(network=network))


def _workers(playground, namespace: str) -> list:
    core = client.CoreV1Api(playground.api_client())
    return core.list_namespaced_pod(namespace, label_selector="ray.io/node-type=worker").items


@pytest.mark.parametrize("network, device, count", [(RDMA, "rdma/ib", "2"), (EFA, "vpc.amazonaws.com/efa", "4")],
                         ids=["rdma", "efa"])
def test_the_gang_schedules_on_the_nodes_advertising_the_profiles_device(playground, namespace, release, capsys,
                                                                         tmp_path, network, device, count):
    infra, kc = _network(tmp_path, network["profile"], network), playground.kubeconfig
    rc, out, err = cli(capsys, "doctor", RECIPE, infra, "-n", namespace, "--kubeconfig", kc)
    row = doctor_rows(out)["fabric devices"]
    assert row.startswith("✓") and f"2/2 worker pods find {count} {device} beside their GPUs" in row, out
    rc, out, err = cli(capsys, "run", RECIPE, infra, "-n", namespace, "--wait", "--kubeconfig", kc, "--timeout", 120)
    assert rc == 0, err
    pods = _workers(playground, namespace)
    assert sorted(p.metadata.labels["ray.io/group"] for p in pods) == ["inference", "trainer"]
    assert {p.spec.node_name for p in pods} == set(playground.gpu_node_names)  # one per node: 2 devices each
    for pod in pods:
        assert pod.status.phase == "Running"
        assert pod.spec.containers[0].resources.requests[device] == count


def test_a_device_the_nodes_lack_is_refused_before_installing_in_doctors_words(playground, namespace, release,
                                                                                capsys, tmp_path):
    lacking = _network(tmp_path, "shared", {"profile": "rdma", "rdma": {"resourceName": "rdma/shared_device_a"}})
    kc = playground.kubeconfig
    rc, out, err = cli(capsys, "doctor", RECIPE, lacking, "-n", namespace, "--kubeconfig", kc)
    row = doctor_rows(out)["fabric devices"]
    assert rc == 1 and row.startswith("✗"), out
    assert "0/2 worker pods find 1 rdma/shared_device_a" in row and "0 of 2 GPU node(s) advertise" in row, row
    assert "2 worker pod(s) short: run the fabric's device plugin on the GPU nodes" in row, row
    t0 = time.monotonic()
    rc, out, err = cli(capsys, "run", RECIPE, lacking, "-n", namespace, "--wait", "--kubeconfig", kc,
                       "--timeout", 120)
    assert rc == 1 and time.monotonic() - t0 < 30, err  # refused before Helm, not after the wait
    assert "can never schedule this gang (fabric devices: 0/2 worker pods find 1 rdma/shared_device_a" in err, err
    assert "nothing was changed" in err, err
    from generator.live.helm.records import release_records

    assert release_records(kube(playground), "small", namespace) == []
    # more of the advertised device than a node has is refused alike
    more = _network(tmp_path, "more", {"profile": "rdma", "rdma": {"resourceName": "rdma/ib", "perPod": 3}})
    rc, out, err = cli(capsys, "doctor", RECIPE, more, "-n", namespace, "--kubeconfig", kc)
    assert rc == 1 and doctor_rows(out)["fabric devices"].startswith("✗"), out


def test_the_devices_not_the_gpus_decide_where_the_gang_fits(playground, namespace, release, capsys, tmp_path, wait):
    """Three 4-GPU worker pods fit the two 8-GPU nodes on their GPUs (the tcp control), not with 2 rdma/ib each of
    the 2 a node has: doctor counts it, and the real scheduler leaves the third pod Pending on the device."""
    recipe = tmp_path / "three.yaml"
    recipe.write_text(RECIPE.read_text().replace("trainer:   {nodes: 1, gpusPerNode: 8}",
                                                 "trainer:   {nodes: 2, gpusPerNode: 4}")
                      .replace("inference: {nodes: 1, gpusPerNode: 8}", "inference: {nodes: 1, gpusPerNode: 4}"))
    kc = playground.kubeconfig
    rc, out, err = cli(capsys, "doctor", recipe, INFRA, "-n", namespace, "--kubeconfig", kc)
    rows = doctor_rows(out)
    assert rows["GPU capacity: gang"].startswith("✓") and "fabric devices" not in rows, out  # the control
    infra = _network(tmp_path, "rdma", RDMA)
    rc, out, err = cli(capsys, "doctor", recipe, infra, "-n", namespace, "--kubeconfig", kc)
    row = doctor_rows(out)["fabric devices"]
    assert rc == 1 and row.startswith("✗") and "2/3 worker pods find 2 rdma/ib" in row, out
    rc, out, err = cli(capsys, "run", recipe, infra, "-n", namespace, "--kubeconfig", kc, "--timeout", 60)
    assert rc == 0, err  # without --wait: installed, and the scheduler has the last word

    def pending_on_the_device():
        for pod in _workers(playground, namespace):
            for cond in pod.status.conditions or []:
                if cond.type == "PodScheduled" and cond.status == "False" and "Insufficient rdma/ib" in (
                        cond.message or ""):
                    return pod
        return None

    pod = wait(pending_on_the_device, 60, "a worker pod Pending on Insufficient rdma/ib")
    def two_running():
        running = [p for p in _workers(playground, namespace) if p.status.phase == "Running"]
        return running if len(running) == 2 else None

    running = wait(two_running, 60, "the two worker pods that found their devices Running")
    assert len({p.spec.node_name for p in running}) == 2, running  # one per node: 2 rdma/ib each
    assert pod.status.phase == "Pending"


@pytest.mark.parametrize("network, asked", [(RDMA, "IPC_LOCK"), ({"profile": "hostNetwork"}, "host")],
                         ids=["rdma", "hostNetwork"])
def test_a_baseline_namespace_refuses_the_gang_and_doctor_says_so_first(playground, make_namespace, capsys,
                                                                        tmp_path, network, asked):
    ns, kc = make_namespace(labels=BASELINE), playground.kubeconfig
    infra = _network(tmp_path, network["profile"], network)
    rc, out, err = cli(capsys, "doctor", RECIPE, infra, "-n", ns, "--kubeconfig", kc)
    row = doctor_rows(out)["PodSecurity admission"]
    assert rc == 1 and row.startswith("✗ PodSecurity admission") and "enforce=baseline" in row, out
    assert asked in row and "trainer:" in row and "inference:" in row, row  # the apiserver's own words
    assert f"kuberay.network.profile {network['profile']}" in row and "enforce=privileged" in row, row
    # the control: the same namespace admits the tcp gang, the same recipe
    rc, out, err = cli(capsys, "doctor", RECIPE, INFRA, "-n", ns, "--kubeconfig", kc)
    assert doctor_rows(out)["PodSecurity admission"].startswith("✓"), out
    # and it is the apiserver that refuses the pods: a worker pod of the rendered template is Forbidden
    from generator.live.doctor.admission import _dry_run_pod
    from generator.render.helm import template
    from generator.render.pod_templates import pod_templates

    rc, values, err = cli(capsys, "values", RECIPE, infra)
    import yaml

    docs = [d for d in yaml.safe_load_all(template(yaml.safe_load(values), "small", ns)) if d]
    pod = _dry_run_pod("trainer", pod_templates(docs)["trainer"], drop_priority_class=True)
    with pytest.raises(client.ApiException) as refused:
        client.CoreV1Api(playground.api_client()).create_namespaced_pod(ns, pod)
    message = json.loads(refused.value.body)["message"]
    assert refused.value.status == 403 and 'violates PodSecurity "baseline:' in message and asked in message, message


NAD_CRD = {
    "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
    "metadata": {"name": "network-attachment-definitions.k8s.cni.cncf.io"},
    "spec": {"group": "k8s.cni.cncf.io", "scope": "Namespaced",
             "names": {"plural": "network-attachment-definitions", "singular": "network-attachment-definition",
                       "kind": "NetworkAttachmentDefinition", "shortNames": ["net-attach-def"]},
             "versions": [{"name": "v1", "served": True, "storage": True, "schema": {"openAPIV3Schema": {
                 "type": "object", "properties": {"spec": {"type": "object", "properties": {
                     "config": {"type": "string"}}}}}}}]},
}


@pytest.fixture
def multus_crd(playground):
    """Multus' NetworkAttachmentDefinition CRD (its group, version and names; the schema of its spec only), served
    by the session playground's apiserver for one test."""
    ext = client.ApiextensionsV1Api(playground.api_client())
    ext.create_custom_resource_definition(NAD_CRD)
    yield ext
    ext.delete_custom_resource_definition(NAD_CRD["metadata"]["name"])


def test_doctor_names_each_multus_network_that_does_not_exist(playground, namespace, capsys, tmp_path, wait):
    networks = dict(RDMA, rdma=dict(RDMA["rdma"], networks=["ib-a", f"{namespace}/ib-b@net2"]))
    infra, kc = _network(tmp_path, "multus", networks), playground.kubeconfig
    rc, out, err = cli(capsys, "doctor", RECIPE, infra, "-n", namespace, "--kubeconfig", kc)
    assert rc == 1 and "NetworkAttachmentDefinition (k8s.cni.cncf.io/v1) is not served: Multus is not installed" \
        in doctor_rows(out)["fabric: networks"], out


def test_doctor_finds_the_multus_networks_once_they_exist(playground, namespace, capsys, tmp_path, wait, multus_crd):
    networks = dict(RDMA, rdma=dict(RDMA["rdma"], networks=["ib-a", f"{namespace}/ib-b@net2"]))
    infra, kc = _network(tmp_path, "multus", networks), playground.kubeconfig
    custom = client.CustomObjectsApi(playground.api_client())
    group, version, plural = "k8s.cni.cncf.io", "v1", "network-attachment-definitions"

    def served() -> bool:
        try:
            custom.list_namespaced_custom_object(group, version, namespace, plural)
            return True
        except client.ApiException:
            return False

    wait(served, 30, "the NetworkAttachmentDefinition CRD served")
    rc, out, err = cli(capsys, "doctor", RECIPE, infra, "-n", namespace, "--kubeconfig", kc)
    row = doctor_rows(out)["fabric: networks"]
    assert row.startswith("✗") and f"no NetworkAttachmentDefinition {namespace}/ib-a, {namespace}/ib-b" in row, out
    for name in ("ib-a", "ib-b"):
        custom.create_namespaced_custom_object(group, version, namespace, plural, {
            "apiVersion": f"{group}/{version}", "kind": "NetworkAttachmentDefinition",
            "metadata": {"name": name}, "spec": {"config": "{}"}})
    rc, out, err = cli(capsys, "doctor", RECIPE, infra, "-n", namespace, "--kubeconfig", kc)
    assert doctor_rows(out)["fabric: networks"].startswith("✓ fabric: networks"), out
