"""The playground's command line: `up --real-node` is accepted, the real node may be the only node, and no node at
all is refused in one line."""

from __future__ import annotations

import argparse

from generator.cli import main
from generator.playground import lifecycle
from generator.playground.cli import add_parser


def test_cli_accepts_real_node():
    parser = argparse.ArgumentParser()
    add_parser(parser.add_subparsers())
    assert parser.parse_args(["playground", "up", "--real-node"]).real_node is True
    assert parser.parse_args(["playground", "up"]).real_node is False


def test_cli_accepts_the_real_node_as_the_only_node(tmp_path, monkeypatch, capsys):
    calls = []
    monkeypatch.setattr(lifecycle, "up", lambda _dir, shape, timeout, real_node, kueue, agent_sandbox:
                        calls.append((shape, real_node, kueue, agent_sandbox)) or 0)
    argv = ["playground", "up", "--state-dir", str(tmp_path / "pg"), "--gpu-nodes", "0", "--cpu-nodes", "0"]
    assert main([*argv, "--real-node"]) == 0, capsys.readouterr().err
    assert main([*argv, "--real-node", "--kueue"]) == 0, capsys.readouterr().err
    assert main([*argv, "--real-node", "--agent-sandbox"]) == 0, capsys.readouterr().err
    assert [(s.gpu_nodes, s.cpu_nodes, real, kueue, sandbox) for s, real, kueue, sandbox in calls] == [
        (0, 0, True, False, False), (0, 0, True, True, False), (0, 0, True, False, True)]
    assert main(argv) == 2 and len(calls) == 3  # without it there is no node at all
    assert "needs at least one node (--gpu-nodes, --cpu-nodes or --real-node)" in capsys.readouterr().err

