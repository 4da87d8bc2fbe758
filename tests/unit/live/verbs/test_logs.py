"""verbs/logs.py (`logs --role ROLE`): the logs of one fleet's scheduled pods (a pod not on a node yet has none),
printed in pod-name order, each line prefixed with its pod when there are several, `--tail` passed on; `-f`
streams every pod at once. The release is resolved as every verb resolves it; the pods are the client's."""

from __future__ import annotations

from argparse import Namespace
from types import SimpleNamespace

import pytest

from generator.errors import CheckFailed
from generator.live.verbs import logs as logs_mod


def pod(name, node="node-0"):
    return SimpleNamespace(metadata=SimpleNamespace(name=name),
                           spec=SimpleNamespace(node_name=node, containers=[SimpleNamespace(name="ray-worker")]))


class Core:
    def __init__(self, pods, texts):
        self.pods, self.texts, self.asked = pods, texts, []

    def list_namespaced_pod(self, namespace, label_selector):
        self.asked.append(("list", namespace, label_selector))
        return SimpleNamespace(items=self.pods)

    def read_namespaced_pod_log(self, name, namespace, container, follow=False, _preload_content=True, **kw):
        self.asked.append(("log", name, container, follow, kw))
        text = self.texts[name]
        return [text.encode()] if follow else text


@pytest.fixture
def cluster(monkeypatch):
    core = Core([], {})
    monkeypatch.setattr(logs_mod, "Kube", lambda kubeconfig, context: SimpleNamespace(core=core))
    monkeypatch.setattr(logs_mod, "resolve", lambda kube, release, namespace: ("small", "rec", []))
    return core


def args(**over):
    base = {"kubeconfig": None, "context": None, "release": None, "namespace": None, "role": "trainer", "tail": None,
            "follow": False, "timeout": None, "attempt": None, "job": None}
    return Namespace(**{**base, **over})


def test_one_pod_prints_its_lines_as_they_are(cluster, capsys):
    cluster.pods = [pod("small-trainer-0")]
    cluster.texts = {"small-trainer-0": "step 1\nstep 2\n"}
    assert logs_mod.logs(args(tail=5)) == 0
    assert capsys.readouterr().out == "step 1\nstep 2\n"
    assert cluster.asked[0] == ("list", "rec", "app.kubernetes.io/instance=small,dockyard.dev/fleet=trainer")
    assert cluster.asked[1] == ("log", "small-trainer-0", "ray-worker", False, {"tail_lines": 5})


def test_several_pods_in_name_order_each_line_prefixed_and_unscheduled_ones_left_out(cluster, capsys):
    cluster.pods = [pod("small-trainer-1"), pod("small-trainer-2", node=None), pod("small-trainer-0")]
    cluster.texts = {"small-trainer-0": "a\n", "small-trainer-1": "b\nc\n"}
    logs_mod.logs(args())
    assert capsys.readouterr().out == "[small-trainer-0] a\n[small-trainer-1] b\n[small-trainer-1] c\n"


def test_follow_streams_every_pod(cluster, capsys):
    cluster.pods = [pod("small-trainer-0"), pod("small-trainer-1")]
    cluster.texts = {"small-trainer-0": "a\n", "small-trainer-1": "b\n"}
    assert logs_mod.logs(args(follow=True, timeout=5)) == 0
    assert sorted(capsys.readouterr().out.splitlines()) == ["[small-trainer-0] a", "[small-trainer-1] b"]
    assert all(call[3] for call in cluster.asked if call[0] == "log")


def test_no_scheduled_pod_of_the_role_is_a_failed_check_naming_it(cluster):
    cluster.pods = [pod("small-inference-0", node=None)]
    with pytest.raises(CheckFailed, match="no scheduled inference pod for release small in rec"):
        logs_mod.logs(args(role="inference"))


# Ray's driver and head logs, as `ray job logs` and the head's stdout print them: colours, bold, a link.
COLOURED = "\x1b[36m\x1b[1m--block\x1b[22m\x1b[39m done\n\x1b]8;;http://x\x1b\\link\x1b]8;;\x1b\\ \x1b[2Kend\n"


@pytest.mark.parametrize("follow", [False, True])
def test_escape_sequences_go_unless_the_output_is_a_terminal(cluster, capsys, monkeypatch, follow):
    cluster.pods = [pod("small-head-0")]
    cluster.texts = {"small-head-0": COLOURED}
    assert logs_mod.logs(args(role="head", follow=follow)) == 0
    assert capsys.readouterr().out == "--block done\nlink end\n"  # a pipe, a file: no escape sequences
    monkeypatch.setattr(logs_mod.sys.stdout, "isatty", lambda: True)
    assert logs_mod.logs(args(role="head", follow=follow)) == 0
    assert capsys.readouterr().out == COLOURED  # a terminal: the colours as Ray wrote them


def test_an_attempts_kept_log_loses_its_escape_sequences_in_a_pipe(cluster, capsys, monkeypatch):
    monkeypatch.setattr(logs_mod, "live_manifest", lambda records: "")
    monkeypatch.setattr(logs_mod.kept_logs, "read", lambda *a, **kw: COLOURED)
    assert logs_mod.logs(args(role=None, attempt=1)) == 0
    assert capsys.readouterr().out == "--block done\nlink end\n"


def test_the_other_escapes_go_too():
    from generator.live.output.show import for_output

    assert for_output("\x1b(Bplain\x1b=\x1b7 text\x1b8\x1b>", tty=False) == "plain text"
