"""The live CLI's offline parts: every verb is registered and parses, the RayJob diff names paths."""

from __future__ import annotations

import subprocess
import sys

import pytest

from generator.cli import build_parser
from generator.live.changes.diff import diff_paths

VERBS = [["run"], ["cluster", "up"], ["cluster", "down"], ["cluster", "list"], ["status"], ["logs"], ["job", "submit"],
         ["job", "list"], ["job", "stop"], ["dev"], ["doctor"], ["history"], ["rollback"], ["uninstall"]]


@pytest.mark.parametrize("verb", VERBS, ids=" ".join)
def test_every_live_verb_has_help(verb, capsys):
    with pytest.raises(SystemExit) as exc:
        build_parser().parse_args([*verb, "--help"])
    assert exc.value.code == 0
    out = capsys.readouterr().out
    if verb[-1] not in ("stop", "down") or verb == ["cluster", "down"]:
        assert "--kubeconfig" in out and "--context" in out and "--namespace" in out


def test_reading_verbs_take_output_formats():
    for verb in (["status"], ["history"], ["cluster", "list"], ["job", "list"], ["doctor", "r", "i"]):
        args = build_parser().parse_args([*verb, "-o", "yaml"])
        assert args.output == "yaml"


def test_cli_start_does_not_import_kubernetes_or_pyhelm3():
    code = ("import sys; from generator.cli import build_parser; build_parser(); "
            "print(any(m.split('.')[0] in ('kubernetes', 'pyhelm3') for m in sys.modules))")
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True).stdout.strip() == "False"


def test_rayjob_diff_indexes_groups_and_containers():
    def pod(image):
        return {"spec": {"containers": [{"name": "ray-worker", "image": image}]}}

    old = {"rayClusterSpec": {"workerGroupSpecs": [
        {"groupName": "trainer", "replicas": 1, "template": pod("a")},
        {"groupName": "inference", "replicas": 1}]}}
    new = {"rayClusterSpec": {"workerGroupSpecs": [
        {"groupName": "inference", "replicas": 1},
        {"groupName": "trainer", "replicas": 2, "template": pod("b")}]}}
    assert diff_paths(old, new) == [
        "rayClusterSpec.workerGroupSpecs[trainer].replicas: 1 -> 2",
        "rayClusterSpec.workerGroupSpecs[trainer].template.spec.containers[ray-worker].image: 'a' -> 'b'",
    ]
    assert diff_paths(old, old) == []


def test_job_submit_quotes_the_config_path_like_the_chart():
    import shlex

    from generator.live.verbs.jobs import rayjob_body

    values = {"recipe": {"name": "small", "entrypoint": "python -m dockyard_rl.train"},
              "launch": {"configMountPath": "/etc/dock yard/$HOME"}, "sandbox": {"injectUrls": True}}
    entry = rayjob_body("j", "c", values)["spec"]["entrypoint"]
    assert shlex.split(entry) == ["python", "-m", "dockyard_rl.train", "--config", "/etc/dock yard/$HOME/recipe.yaml",
                                  "env.code.sandbox_urls=null"]
