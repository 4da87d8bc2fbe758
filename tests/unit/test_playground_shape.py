"""The newcomer's path holds: a plain `dockyard-k8s playground up` makes nodes whose GPUs hold the README's
example job, as `run --wait` judges it (its gang from the example through the generator, against the Node
objects the playground creates), so `run --wait` of the example on it is not refused."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from generator.live.changes.plan import plan
from generator.live.doctor import capacity
from generator.live.doctor.rows import FAIL, OK
from generator.playground import cli, nodes
from generator.quantity import qty

EXAMPLES = Path(__file__).resolve().parents[2] / "values-examples"
RECIPE = EXAMPLES / "grpo_swe.yaml"
# every infra of the example the README and `make demo` run on simulated nodes (the playground one is for the
# real node's fake GPUs and is used with a smaller gang: docs/playground.md, "Real Ray")
INFRAS = sorted(p.name for p in EXAMPLES.glob("grpo_swe*.infra.yaml") if p.name != "grpo_swe_playground.infra.yaml")


def default_shape() -> nodes.Shape:
    """The shape `dockyard-k8s playground up` gets with no flag, read from the CLI's own parser."""
    parser = argparse.ArgumentParser()
    cli.add_parser(parser.add_subparsers())
    a = parser.parse_args(["playground", "up"])
    return nodes.Shape(gpu_nodes=a.gpu_nodes, gpus_per_node=a.gpus_per_node, cpu_nodes=a.cpu_nodes,
                       node_cpu=a.node_cpu, node_memory=a.node_memory)


def gpu_rows(shape: nodes.Shape, infra: str) -> list:
    """`run --wait`'s test of the gang (capacity.refuse_never_fits: every node's allocatable, no other pod)."""
    room = capacity.Room()
    for node in nodes.manifests(shape, "v1.36.3"):
        name = node["metadata"]["name"]
        room.alloc[name] = {k: qty(v) for k, v in node["status"]["allocatable"].items()}
        room.used[name] = {}
    return capacity.gpu_rows(room, plan(str(RECIPE), str(EXAMPLES / infra), [], None, None).cluster, empty=True)


def test_the_examples_are_found():
    assert "grpo_swe.infra.yaml" in INFRAS and len(INFRAS) >= 4, INFRAS


@pytest.mark.parametrize("infra", INFRAS)
def test_the_default_playground_holds_the_readme_example(infra):
    rows = gpu_rows(default_shape(), infra)
    assert [r.check for r in rows] == ["GPU capacity: trainer", "GPU capacity: inference", "GPU capacity: gang"]
    assert all(r.mark == OK for r in rows), [(r.check, r.mark, r.detail) for r in rows]


def test_a_playground_one_gpu_node_smaller_would_refuse_it():
    """The negative control: the check above can fail (the gang is not smaller than any playground)."""
    shape = default_shape()
    smaller = nodes.Shape(gpu_nodes=shape.gpu_nodes - 1, gpus_per_node=shape.gpus_per_node)
    gang = next(r for r in gpu_rows(smaller, "grpo_swe.infra.yaml") if r.check == "GPU capacity: gang")
    assert gang.mark == FAIL, gang


def test_topology_deals_the_gpu_nodes_out_to_blocks_of_racks():
    shape = nodes.Shape(gpu_nodes=8, cpu_nodes=1, topology="2x2")
    by_node = {n["metadata"]["name"]: n["metadata"]["labels"] for n in nodes.manifests(shape, "v1.37.2")}
    racks = {name: (lab.get(nodes.BLOCK_LABEL), lab.get(nodes.RACK_LABEL)) for name, lab in by_node.items()}
    assert racks == {"gpu-node-0": ("block-0", "rack-0"), "gpu-node-1": ("block-0", "rack-0"),
                     "gpu-node-2": ("block-0", "rack-1"), "gpu-node-3": ("block-0", "rack-1"),
                     "gpu-node-4": ("block-1", "rack-2"), "gpu-node-5": ("block-1", "rack-2"),
                     "gpu-node-6": ("block-1", "rack-3"), "gpu-node-7": ("block-1", "rack-3"),
                     "cpu-node-0": (None, None)}  # CPU nodes are not placed
    uneven = [nodes.Shape(gpu_nodes=5, topology="1x2").place(i)[nodes.RACK_LABEL] for i in range(5)]
    assert uneven == ["rack-0", "rack-0", "rack-0", "rack-1", "rack-1"]
    assert nodes.Shape(gpu_nodes=3).place(0) == {}


@pytest.mark.parametrize("topology, fragment", [("2", "is not BLOCKSxRACKS"), ("0x2", "is not BLOCKSxRACKS"),
                                                ("2x-1", "is not BLOCKSxRACKS"), ("3x2", "6 racks for 4 GPU nodes")])
def test_a_topology_that_cannot_be_made_is_refused(topology, fragment):
    with pytest.raises(ValueError, match=fragment):
        nodes.Shape(gpu_nodes=4, topology=topology).racks()


def test_the_topology_queue_gives_the_gpu_nodes_to_its_topology_flavor_and_the_rest_to_the_default():
    from generator.playground import kueue

    made = nodes.manifests(nodes.Shape(gpu_nodes=4, cpu_nodes=2, topology="1x2"), "v1.37.2")
    objects = {obj["kind"]: obj for _, obj in kueue.topology_objects(made)}
    assert [lvl["nodeLabel"] for lvl in objects["Topology"]["spec"]["levels"]] == [
        nodes.BLOCK_LABEL, nodes.RACK_LABEL, "kubernetes.io/hostname"]  # the hosts' level last
    flavor = objects["ResourceFlavor"]["spec"]
    assert flavor["topologyName"] == "playground" and all(
        n["metadata"]["labels"].get(k) == v for n in made[:4] for k, v in flavor["nodeLabels"].items())
    quota = {f["name"]: {r["name"]: r["nominalQuota"] for r in f["resources"]}
             for f in objects["ClusterQueue"]["spec"]["resourceGroups"][0]["flavors"]}
    assert quota["gpu-topology"]["nvidia.com/gpu"] == "32" and quota["default-flavor"]["nvidia.com/gpu"] == "0"
    assert quota["default-flavor"]["cpu"] == "128000m"  # the two CPU nodes' 64 cores each
    assert objects["LocalQueue"]["spec"]["clusterQueue"] == "topology"
