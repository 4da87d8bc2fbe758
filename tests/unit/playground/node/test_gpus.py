"""playground/node/gpus.py: how many fake GPUs the real node advertises ($DOCKYARD_REAL_NODE_GPUS or
`--real-node-gpus`, 0..64, a bad count one line), and whether the Node's allocatable shows them."""

from __future__ import annotations

import pytest

from generator.playground.node import gpus


@pytest.mark.parametrize("raw,want", [("", 0), ("0", 0), ("2", 2), ("64", 64)])
def test_gpu_count_from_the_environment(monkeypatch, raw, want):
    monkeypatch.setenv(gpus.ENV, raw)
    assert gpus.requested() == want


@pytest.mark.parametrize("raw", ["-1", "65", "two", "1.5"])
def test_a_bad_gpu_count_is_one_line(monkeypatch, raw):
    from generator.playground.node.host import NodeError

    monkeypatch.setenv(gpus.ENV, raw)
    with pytest.raises(NodeError, match=r"expected a whole number of GPUs 0\.\.64"):
        gpus.requested()


def test_advertised_reads_the_nodes_allocatable():
    node = {"status": {"allocatable": {"nvidia.com/gpu": "2"}}}
    assert gpus.advertised(node, 2) == (True, "nvidia.com/gpu allocatable 2 of 2")
    assert gpus.advertised({"status": {}}, 2)[0] is False


@pytest.mark.parametrize("argv", [["--real-node-gpus", "2"], ["--real-node", "--real-node-gpus", "65"],
                                  ["--real-node", "--real-node-gpus", "-1"]])
def test_real_node_gpus_flag_needs_the_real_node_and_a_count(capsys, argv, tmp_path):
    from generator.cli import main

    assert main(["playground", "up", "--state-dir", str(tmp_path / "pg"), *argv]) == 2
    assert "--real-node-gpus needs --real-node and a count 0..64" in capsys.readouterr().err
    assert not (tmp_path / "pg").exists()
