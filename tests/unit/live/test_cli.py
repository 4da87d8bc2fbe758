"""The live CLI (generator/live/cli.py, registered by generator/cli.py): every live verb is registered, parses and
has help; the reading verbs take output formats; starting the CLI imports neither kubernetes nor pyhelm3."""

from __future__ import annotations

import subprocess
import sys

import pytest

from generator.cli import build_parser

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


def test_each_groups_verbs_are_the_ones_it_registers_and_a_verb_builds_its_group_alone():
    """generator.cli builds only the group a verb belongs to (EXTENSIONS): the table and the registered parsers
    agree, and a group's verb parses the same whether built alone or with every group."""
    import argparse
    import importlib

    from generator.cli import EXTENSIONS

    for module, verbs in EXTENSIONS.items():
        sub = argparse.ArgumentParser().add_subparsers()
        importlib.import_module(module).add_parser(sub)
        assert tuple(sub.choices) == verbs, module
    alone = build_parser(verb="status")
    assert set(alone._subparsers._group_actions[0].choices) == {"status"}  # the verb's parser alone
    for verb in EXTENSIONS["generator.live.cli"]:  # each verb built alone is the verb built with the rest
        assert build_parser(verb=verb)._subparsers._group_actions[0].choices[verb].format_help() == \
            build_parser()._subparsers._group_actions[0].choices[verb].format_help()
    argv = ["status", "r", "-n", "ns", "--no-progress", "-o", "json"]
    assert vars(alone.parse_args(argv)).keys() == vars(build_parser().parse_args(argv)).keys()
    # an unknown word builds every group, so the usage error lists them all
    assert "playground" in build_parser(verb="statsu")._subparsers._group_actions[0].choices
    code = ("import sys; from generator.cli import build_parser; build_parser(verb='status'); "
            "print(sorted(m for m in ('generator.playground', 'generator.pinned_tools') if m in sys.modules))")
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True).stdout.strip() == "[]"
