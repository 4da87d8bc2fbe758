"""Topology-aware placement on the session playground, with the real Kueue controller (Topology Aware
Scheduling) and the real kube-scheduler. The session playground's two GPU nodes are two racks of one node each
in two blocks (`playground up --topology 2x1`: cloud.provider.com/topology-block, -rack). Each test makes its own
namespace, a ClusterQueue over the playground's `gpu-topology` flavor (the GPU nodes, Topology `playground`)
and `default-flavor` (the head and the submitter, which are not placed) with LocalQueue `q`, and one over
`default-flavor` alone with LocalQueue `plain` for the unplaced jobs.

A rack here holds 8 GPUs: a fleet of one 8-GPU node fits one rack, two fleets of 8 GPUs do not fit one rack
together, and a fleet of two 5-GPU pods fits no rack."""

from __future__ import annotations

import json
import time
import uuid

import bounds
import pytest
from kubernetes import client
from live_helpers import KUEUE, RECIPE, cli, create_custom_object, delete_custom_objects, infra_variant

RACK = "cloud.provider.com/topology-rack"
WAIT = 60  # --timeout of a `run --wait` that is admitted
SHORT = 8  # --timeout of a `run --wait` that ends while queued
SETTLE = 5  # seconds after an uninstall before the next gang (_uninstall)
VERB = 60


@pytest.fixture
def topology_queue(namespace, k8s, playground):
    """ClusterQueue `<namespace>` (admitting that namespace only) over the playground's topology flavor, and
    LocalQueue `q`; ClusterQueue `<namespace>-plain` and LocalQueue `plain` for unplaced jobs; deleted at
    teardown."""
    assert playground.shape.get("topology"), "the session playground runs `up --topology`"
    api = client.CustomObjectsApi(k8s)
    made: list = []
    resources = ["cpu", "memory", "nvidia.com/gpu"]
    quota = {"gpu-topology": {"cpu": "1000", "memory": "4Ti", "nvidia.com/gpu": "16"},
             "default-flavor": {"cpu": "1000", "memory": "4Ti", "nvidia.com/gpu": "0"}}
    spec = {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": namespace}},
            "resourceGroups": [{"coveredResources": resources, "flavors": [
                {"name": f, "resources": [{"name": r, "nominalQuota": q[r]} for r in resources]}
                for f, q in quota.items()]}]}
    create_custom_object(api, made, KUEUE, "clusterqueues", None,
                         {"kind": "ClusterQueue", "metadata": {"name": namespace}, "spec": spec})
    create_custom_object(api, made, KUEUE, "localqueues", namespace,
                         {"kind": "LocalQueue", "metadata": {"name": "q"}, "spec": {"clusterQueue": namespace}})
    # an unplaced GPU pod set never takes a topology flavor (Kueue: it "supports only TopologyAwareScheduling"):
    # the negative controls queue on LocalQueue `plain`, over default-flavor with the GPUs in it
    plain = {"namespaceSelector": spec["namespaceSelector"], "resourceGroups": [{"coveredResources": resources,
             "flavors": [{"name": "default-flavor", "resources": [{"name": r, "nominalQuota": q}
                                                                  for r, q in quota["gpu-topology"].items()]}]}]}
    create_custom_object(api, made, KUEUE, "clusterqueues", None,
                         {"kind": "ClusterQueue", "metadata": {"name": f"{namespace}-plain"}, "spec": plain})
    create_custom_object(api, made, KUEUE, "localqueues", namespace, {
        "kind": "LocalQueue", "metadata": {"name": "plain"}, "spec": {"clusterQueue": f"{namespace}-plain"}})
    yield "q"
    delete_custom_objects(api, made)


def _infra(tmp_path, namespace, topology: dict | None):
    def change(d):
        d["infra"]["namespace"] = namespace
        d["launch"].update(queue="q", topology=topology) if topology else d["launch"].update(queue="plain")

    return infra_variant(tmp_path, f"topology-{uuid.uuid4().hex[:6]}.yaml", change)


def _run(capsys, playground, infra, name, *more):
    return cli(capsys, "run", RECIPE, infra, f"name={name}", *more, "--kubeconfig", playground.kubeconfig)


def _racks(k8s, namespace, release) -> dict[str, set[str]]:
    """Each GPU fleet's racks, read from its pods' nodes."""
    core = client.CoreV1Api(k8s)
    rack = {n.metadata.name: n.metadata.labels.get(RACK) for n in core.list_node().items}
    out: dict[str, set[str]] = {}
    for pod in core.list_namespaced_pod(namespace, label_selector=f"app.kubernetes.io/instance={release}").items:
        fleet = pod.metadata.labels.get("dockyard.dev/fleet")
        if fleet in ("trainer", "inference"):
            assert pod.spec.node_name, pod.metadata.name
            out.setdefault(fleet, set()).add(rack[pod.spec.node_name])
    return out


def _gpu_holders(k8s) -> list[str]:
    """Every pod on a GPU node that asks for GPUs, for a failure's message: what Kueue's placement counted."""
    out = []
    for pod in client.CoreV1Api(k8s).list_pod_for_all_namespaces().items:
        gpus = sum(int(((c.resources and c.resources.requests) or {}).get("nvidia.com/gpu", 0))
                   for c in pod.spec.containers)
        if gpus:
            out.append(f"{pod.metadata.namespace}/{pod.metadata.name} on {pod.spec.node_name} ({pod.status.phase}, "
                       f"{gpus} GPUs{', deleting' if pod.metadata.deletion_timestamp else ''})")
    return out


def _gang_pods(k8s, namespace, release) -> list:
    return client.CoreV1Api(k8s).list_namespaced_pod(
        namespace, label_selector=f"app.kubernetes.io/instance={release},app.kubernetes.io/component=ray").items


def _uninstall(capsys, playground, namespace, release) -> None:
    """Gone, pods and all, before the next gang asks for a rack; then SETTLE seconds. Kueue's placement counts
    every pod on the nodes from its own cache of them, and once (1 run in 4) a gang submitted right after an
    uninstall was judged on pods already gone and stayed pending past its timeout: nothing in its queue changed
    to have Kueue look at it again."""
    rc, out, err = cli(capsys, "uninstall", release, "-n", namespace, "--kubeconfig", playground.kubeconfig,
                       "--timeout", VERB)
    assert rc == 0, out + err
    time.sleep(SETTLE)


def _table(capsys, playground, namespace, release) -> str:
    rc, out, err = cli(capsys, "status", release, "-n", namespace, "--kubeconfig", playground.kubeconfig)
    assert rc == 0, err
    return out


def _placement_line(table: str) -> list[str]:
    """status's placement line (its label starts the line; the rayjob line may say "placement" in prose)."""
    return [line for line in table.splitlines() if line.startswith("placement ")]


@pytest.mark.timeout(2 * bounds.verb(WAIT) + 2 * bounds.verb(SHORT) + 6 * bounds.verb(VERB) + 3 * SETTLE + 60)
def test_together_shares_a_rack_or_waits_where_none_holds_both_and_each_places_them_in_a_rack_apiece(
        playground, k8s, namespace, topology_queue, capsys, tmp_path):
    # together, where a rack holds both (4 GPUs each): both fleets land in the same rack
    fit = _infra(tmp_path, namespace, {"level": RACK, "groups": "together"})
    half = ("cluster.trainer.gpusPerNode=4", "cluster.inference.gpusPerNode=4")
    rc, out, err = _run(capsys, playground, fit, "fit", *half, "--wait", "--timeout", WAIT)
    assert rc == 0, out + err
    racks = _racks(k8s, namespace, "fit")
    assert len(racks["trainer"] | racks["inference"]) == 1, racks
    _uninstall(capsys, playground, namespace, "fit")

    # together: trainer and inference (8 GPUs each) in one rack of 8 GPUs: no rack can ever hold them
    together = _infra(tmp_path, namespace, {"level": RACK, "groups": "together"})
    rc, out, err = _run(capsys, playground, together, "tog", "--wait", "--timeout", SHORT)
    assert rc == 1 and "still queued after the timeout" in err, out + err
    table = _table(capsys, playground, namespace, "tog")
    # Kueue's reason, in its own words: with a second flavor in the ClusterQueue they name the last one tried
    assert "Pending: couldn't assign flavors to pod set trainer" in table, table
    assert not _placement_line(table)
    assert _gang_pods(k8s, namespace, "tog") == []  # nothing of the gang was started
    _uninstall(capsys, playground, namespace, "tog")

    # each: the same fleets, each within one rack: admitted, and they must sit in different racks
    each = _infra(tmp_path, namespace, {"level": RACK, "groups": "each"})
    rc, out, err = _run(capsys, playground, each, "each", "--wait", "--timeout", WAIT)
    assert rc == 0, out + err
    racks = _racks(k8s, namespace, "each")
    assert len(racks["trainer"]) == len(racks["inference"]) == 1 and racks["trainer"] != racks["inference"], racks
    table = _table(capsys, playground, namespace, "each")
    (trainer,), (inference,) = racks["trainer"], racks["inference"]
    assert f"placement  trainer in {trainer} (" in table and f"inference in {inference} (" in table, table
    assert f"— {RACK}, required" in table, table
    rc, out, err = cli(capsys, "status", "each", "-n", namespace, "-o", "json", "--kubeconfig", playground.kubeconfig)
    assert json.loads(out)["queue"]["placement"].startswith(f"trainer in {trainer}")
    _uninstall(capsys, playground, namespace, "each")


@pytest.mark.timeout(bounds.verb(WAIT) + bounds.verb(SHORT) + 5 * bounds.verb(VERB) + 2 * SETTLE + 60)
def test_a_fleet_no_rack_holds_waits_when_required_and_spreads_when_preferred(
        playground, k8s, namespace, topology_queue, capsys, tmp_path):
    two_nodes = ("cluster.trainer.nodes=2", "cluster.trainer.gpusPerNode=5", "cluster.inference.gpusPerNode=1")
    # required: a trainer of two 5-GPU pods fits no rack of one 8-GPU node: it waits, with Kueue's reason
    required = _infra(tmp_path, namespace, {"level": RACK})
    rc, out, err = cli(capsys, "doctor", RECIPE, required, "name=req", *two_nodes,
                       "--kubeconfig", playground.kubeconfig)
    assert rc == 1 and "✓ Kueue topology " in out, out + err  # before the run: doctor names the level it never fits
    assert f"✗ Kueue topology: fit      no {RACK} domain can ever hold the trainer (2 pod(s) × 5 nvidia.com/gpu)" \
        in out, out
    rc, out, err = _run(capsys, playground, required, "req", *two_nodes, "--wait", "--timeout", SHORT)
    assert rc == 1 and "still queued after the timeout" in err, out + err
    assert "Pending: couldn't assign flavors to pod set trainer" in _table(capsys, playground, namespace, "req")
    assert _gang_pods(k8s, namespace, "req") == []
    _uninstall(capsys, playground, namespace, "req")

    # preferred: the same fleet is admitted across both racks, and status says so
    preferred = _infra(tmp_path, namespace, {"level": RACK, "mode": "preferred"})
    rc, out, err = _run(capsys, playground, preferred, "pref", *two_nodes, "--wait", "--timeout", WAIT)
    assert rc == 0, out + err
    assert len(_racks(k8s, namespace, "pref")["trainer"]) == 2
    table = _table(capsys, playground, namespace, "pref")
    assert "placement  trainer across 2 domains: rack-0, rack-1 (" in table and f"{RACK}, preferred" in table, table
    _uninstall(capsys, playground, namespace, "pref")


@pytest.mark.timeout(2 * bounds.verb(WAIT) + 4 * bounds.verb(VERB) + 2 * SETTLE + 60)
def test_required_keeps_a_fleet_in_one_rack_where_the_scheduler_alone_spreads_it(
        playground, k8s, namespace, topology_queue, capsys, tmp_path):
    """Negative control first: the same gang, queued without launch.topology, on the same empty nodes, has its two
    trainer pods spread over both racks by the kube-scheduler (its default scoring prefers the emptier node);
    with the level required, Kueue admits them into one rack, and both land there."""
    gang = ("cluster.trainer.nodes=2", "cluster.trainer.gpusPerNode=4", "cluster.inference.gpusPerNode=1")
    plain = _infra(tmp_path, namespace, None)
    rc, out, err = _run(capsys, playground, plain, "plain", *gang, "--wait", "--timeout", WAIT)
    assert rc == 0, out + err
    assert len(_racks(k8s, namespace, "plain")["trainer"]) == 2
    assert not _placement_line(_table(capsys, playground, namespace, "plain"))
    _uninstall(capsys, playground, namespace, "plain")

    placed = _infra(tmp_path, namespace, {"level": RACK})
    rc, out, err = _run(capsys, playground, placed, "placed", *gang, "--wait", "--timeout", WAIT)
    assert rc == 0, out + err + "\nGPU pods: " + "; ".join(_gpu_holders(k8s))
    (rack,) = _racks(k8s, namespace, "placed")["trainer"]
    assert f"placement  trainer in {rack} (" in _table(capsys, playground, namespace, "placed")
    _uninstall(capsys, playground, namespace, "placed")
