"""`render` and `check` start helm as soon as the inputs are read, for the release and namespace the
raw text most likely gives, and send it the values once validated; a wrong guess costs a second helm,
never a different output."""

from __future__ import annotations

import importlib.metadata

import pytest

from generator.cli import main
from generator.inputs.reading import release_guess
from generator.render import helm, kubeconform
from tests.conftest import INFRA_EXAMPLES, RECIPE, write


def _run(args: list[str], capsys, monkeypatch) -> tuple[int, str, str, list[tuple[str, bool]]]:
    started: list[tuple[str, bool]] = []
    start, cancel = helm.Template.__init__, helm.Template.cancel

    def counting_start(self, values, release, namespace, **kw):
        started.append(("start", values is None))
        start(self, values, release, namespace, **kw)

    def counting_cancel(self):
        started.append(("cancel", False))
        cancel(self)

    monkeypatch.setattr(helm.Template, "__init__", counting_start)
    monkeypatch.setattr(helm.Template, "cancel", counting_cancel)
    code = main(args)
    out, err = capsys.readouterr()
    monkeypatch.undo()
    return code, out, err, started


@pytest.mark.parametrize("verb", ["render", "check"])
def test_one_helm_started_before_the_values_are_known(verb, capsys, monkeypatch):
    code, out, _, started = _run([verb, str(RECIPE), str(INFRA_EXAMPLES[0])], capsys, monkeypatch)
    assert code == 0
    assert started == [("start", True)]  # no values yet when it started; the only helm
    assert "grpo-swe" in out


@pytest.mark.parametrize("verb", ["render", "check"])
def test_a_wrong_guess_is_a_second_helm_and_the_same_output(verb, capsys, monkeypatch):
    right = _run([verb, str(RECIPE), str(INFRA_EXAMPLES[0]), "name=grpo-swe-x"], capsys, monkeypatch)
    assert right[0] == 0 and right[3] == [("start", True)]
    # The raw override is `'grpo-swe-x'` with its quotes: the helm started for that name is stopped.
    assert release_guess(str(RECIPE), str(INFRA_EXAMPLES[0]), ["name='grpo-swe-x'"])[0] == "'grpo-swe-x'"
    wrong = _run([verb, str(RECIPE), str(INFRA_EXAMPLES[0]), "name='grpo-swe-x'"], capsys, monkeypatch)
    assert wrong[3] == [("start", True), ("cancel", False), ("start", False)]
    assert wrong[:2] == right[:2]


def test_no_guess_no_early_helm(tmp_path, capsys, monkeypatch):
    recipe = write(tmp_path, "r.yaml", RECIPE.read_text().replace("name: grpo-swe", "name: &n grpo-swe", 1))
    assert release_guess(str(recipe), str(INFRA_EXAMPLES[0]), []) is None  # an anchor: not read from raw text
    code, out, _, started = _run(["render", str(recipe), str(INFRA_EXAMPLES[0])], capsys, monkeypatch)
    assert code == 0 and started == [("start", False)] and "grpo-swe-sandbox" in out


def test_bad_input_stops_the_early_helm(tmp_path, capsys, monkeypatch):
    infra = write(tmp_path, "i.yaml", INFRA_EXAMPLES[0].read_text().replace("replicas: 4", "replicas: -1"))
    code, _, err, started = _run(["render", str(RECIPE), str(infra)], capsys, monkeypatch)
    assert code == 2 and "sandbox.replicas: -1 is out of range" in err
    assert started == [("start", True), ("cancel", False)]


def test_the_kubernetes_validate_version_is_read_without_importlib_metadata():
    assert kubeconform._kubernetes_validate_version() == importlib.metadata.version("kubernetes-validate")


def test_helm_template_runs_without_go_collector_unless_the_user_set_gogc(monkeypatch):
    seen = []
    real = helm.subprocess.Popen

    def popen(cmd, **kw):
        seen.append(kw.get("env"))
        return real(cmd, **kw)

    monkeypatch.setattr(helm.subprocess, "Popen", popen)
    monkeypatch.delenv("GOGC", raising=False)
    helm.Template({}, "r", "ns").cancel()
    monkeypatch.setenv("GOGC", "50")
    helm.Template({}, "r", "ns").cancel()
    assert seen[0]["GOGC"] == "off" and seen[0]["GOMEMLIMIT"] == "128MiB"
    assert seen[1] is None  # the user's environment, GOGC=50 included


def test_a_helm_started_before_the_parser_is_stopped_when_the_command_fails_first(capsys, monkeypatch):
    from generator import cli
    from generator.errors import InputError, Problem

    def failing(args):
        raise InputError([Problem("<command line>", None, "", "refused before rendering")])

    monkeypatch.setattr(cli, "cmd_render", failing)
    started: list[str] = []
    start, cancel = helm.Template.__init__, helm.Template.cancel
    monkeypatch.setattr(helm.Template, "__init__",
                        lambda self, *a, **kw: (started.append("start"), start(self, *a, **kw))[1])
    monkeypatch.setattr(helm.Template, "cancel", lambda self: (started.append("cancel"), cancel(self))[1])
    assert main(["render", str(RECIPE), str(INFRA_EXAMPLES[0])]) == 2
    assert started == ["start", "cancel"]  # started before argparse, stopped at exit
    assert not helm._prestarted
