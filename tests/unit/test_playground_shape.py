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
