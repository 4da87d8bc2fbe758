"""`check --security`: each control read from the rendered pod templates."""

from __future__ import annotations

import yaml

from generator.cli import main
from generator.render.security_report import controls
from tests.conftest import INFRA_EXAMPLES, RECIPE, chart_values, render_values


def table(**over):
    out = render_values(chart_values(**over))
    return dict(controls([d for d in yaml.safe_load_all(out.text) if d]))


def test_defaults_harden_the_sandbox_and_leave_gpu_fleets_opt_in():
    t = table()
    assert t["allowPrivilegeEscalation: false"] == {"sandbox": "set", "test": "set", "submitter": "not set",
                                                    "head": "not set", "trainer": "not set", "inference": "not set"}
    assert t["cloud metadata egress blocked"]["sandbox"] == "set"
    assert t["runAsNonRoot"]["sandbox"] == "not set"
    assert t["PodDisruptionBudget"] == {"sandbox": "set", "test": "n/a", "submitter": "n/a",
                                        "head": "n/a", "trainer": "n/a", "inference": "n/a"}
    assert t["no service-account token"]["head"] == "n/a"


def test_switches_show_up_in_the_table():
    t = table(sandbox={"security": {"profile": "restricted"}, "networkPolicy": {"blockCloudMetadata": False}},
              infra={"security": {"enabled": True}, "priorityClassName": "training",
                     "image": {"digest": "sha256:" + "a" * 64}},
              launch={"mode": "bringup"}, kuberay={"pdb": {"enabled": True}})
    assert t["runAsNonRoot"]["sandbox"] == "set" and t["writable work dir (emptyDir)"]["sandbox"] == "set"
    assert t["allowPrivilegeEscalation: false"]["trainer"] == "set"
    assert t["cloud metadata egress blocked"]["sandbox"] == "not set"
    assert set(t["priorityClassName"].values()) == {"set"}
    assert set(t["image pinned by digest"].values()) == {"set"}
    assert t["PodDisruptionBudget"]["inference"] == "set"


def test_the_runtime_class_row_names_the_class():
    assert table()["runtimeClassName"]["sandbox"] == "not set"
    t = table(sandbox={"runtimeClassName": "gvisor"})
    assert t["runtimeClassName"] == {"sandbox": "gvisor", "test": "n/a", "submitter": "n/a",
                                     "head": "n/a", "trainer": "n/a", "inference": "n/a"}


def test_check_security_prints_the_table(capsys):
    assert main(["check", str(RECIPE), str(INFRA_EXAMPLES[0]), "--security"]) == 0
    out = capsys.readouterr().out
    assert "control" in out and "capabilities drop ALL" in out and "submitter" in out
