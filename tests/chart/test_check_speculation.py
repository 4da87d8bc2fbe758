"""`check` renders speculatively on values guessed without the models; the outcome must be exactly
the one of rendering the validated values, and the guess must hit for the main example."""

from __future__ import annotations

import copy

import pytest
import yaml

from generator import check, compose, helm
from generator.cli import main
from tests.conftest import INFRA_EXAMPLES, RECIPE


def _run(args: list[str], capsys, monkeypatch, speculate: bool) -> tuple[int, str, str, list[str]]:
    events: list[str] = []
    start, cancel = helm.Template.__init__, check._Speculation.discard

    def counting_start(self, *a, **kw):  # type: ignore[no-untyped-def]
        events.append("helm")
        start(self, *a, **kw)

    def counting_discard(self):  # type: ignore[no-untyped-def]
        events.append("discard")
        cancel(self)

    monkeypatch.setattr(helm.Template, "__init__", counting_start)
    monkeypatch.setattr(check._Speculation, "discard", counting_discard)
    if not speculate:
        monkeypatch.setattr(compose, "guess_values", lambda *a, **kw: None)
    code = main(args)
    out, err = capsys.readouterr()
    monkeypatch.undo()
    return code, out, err, events


@pytest.mark.parametrize("infra", INFRA_EXAMPLES, ids=lambda p: p.name)
def test_speculation_changes_nothing(infra, capsys, monkeypatch):
    args = ["check", str(RECIPE), str(infra), "cluster.trainer.nodes=3"]
    fast = _run(args, capsys, monkeypatch, speculate=True)
    plain = _run(args, capsys, monkeypatch, speculate=False)
    assert fast[:3] == plain[:3]
    assert plain[3] == ["helm"]
    assert fast[3] in (["helm"], ["helm", "discard", "helm"])


def test_the_guess_hits_for_the_main_example(capsys, monkeypatch):
    code, _, _, events = _run(["check", str(RECIPE), str(INFRA_EXAMPLES[0])], capsys, monkeypatch, speculate=True)
    assert code == 0 and events == ["helm"]  # one helm process, its speculative output used


def test_a_wrong_guess_is_discarded(tmp_path, capsys, monkeypatch):
    # The models add a default inside a list item, which the guess cannot know.
    infra = copy.deepcopy(yaml.safe_load(INFRA_EXAMPLES[0].read_text()))
    infra["sandbox"]["topologySpreadConstraints"] = [{"topologyKey": "kubernetes.io/hostname", "maxSkew": 1}]
    path = tmp_path / "spread.infra.yaml"
    path.write_text(yaml.safe_dump(infra))
    args = ["check", str(RECIPE), str(path)]
    fast = _run(args, capsys, monkeypatch, speculate=True)
    plain = _run(args, capsys, monkeypatch, speculate=False)
    assert fast[3] == ["helm", "discard", "helm"]
    assert fast[:3] == plain[:3] and fast[0] == 0


def test_bad_input_and_invalid_objects_keep_their_exit_codes(tmp_path, capsys, monkeypatch):
    infra = copy.deepcopy(yaml.safe_load(INFRA_EXAMPLES[0].read_text()))
    infra["kuberay"]["spec"]["headGroupSpecTypo"] = {}  # only kubeconform (the CRD schema) catches it
    typo = tmp_path / "typo.infra.yaml"
    typo.write_text(yaml.safe_dump(infra))
    infra["sandbox"] = {"replicas": -1}
    bad = tmp_path / "bad.infra.yaml"
    bad.write_text(yaml.safe_dump(infra))
    for path, code in ((typo, 1), (bad, 2)):
        fast = _run(["check", str(RECIPE), str(path)], capsys, monkeypatch, speculate=True)
        plain = _run(["check", str(RECIPE), str(path)], capsys, monkeypatch, speculate=False)
        assert fast[:3] == plain[:3] and fast[0] == code
