"""Which helm runs: the pinned Helm 3 by default, `--helm PATH` or $DOCKYARD_HELM; Helm 3 and 4 are
supported, anything else is refused by the live verbs and by `doctor` (a row)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from generator.cli import main
from generator.errors import CheckFailed, InputError
from generator.pinned_tools import REPO, tool_dir
from generator.render.helm import HELM_ENV, helm_binary, helm_version, using

HELM3 = tool_dir("helm") / "helm"
HELM4 = tool_dir("helm4") / "helm"
RECIPE = REPO / "values-examples" / "grpo_swe.yaml"
INFRA = REPO / "values-examples" / "grpo_swe.infra.yaml"


def fake_helm(tmp_path: Path, version: str) -> str:
    """A script that answers `helm version` like a helm of `version` would."""
    path = tmp_path / f"helm-{version}"
    path.write_text(f"#!/bin/sh\necho {version}\n")
    path.chmod(0o755)
    return str(path)


def unreachable_kubeconfig(tmp_path: Path) -> str:
    doc = {"apiVersion": "v1", "kind": "Config", "current-context": "x",
           "clusters": [{"name": "x", "cluster": {"server": "https://127.0.0.1:1", "insecure-skip-tls-verify": True}}],
           "users": [{"name": "x", "user": {"token": "t"}}],
           "contexts": [{"name": "x", "context": {"cluster": "x", "user": "x"}}]}
    path = tmp_path / "kubeconfig"
    path.write_text(yaml.safe_dump(doc))
    return str(path)


def test_default_is_the_pinned_helm3_then_env_then_flag(monkeypatch, tmp_path):
    monkeypatch.delenv(HELM_ENV, raising=False)
    assert helm_binary() == str(HELM3)
    monkeypatch.setenv(HELM_ENV, str(HELM4))
    assert helm_binary() == str(HELM4)
    other = fake_helm(tmp_path, "v3.9.0")
    with using(other):
        assert helm_binary() == other
    assert helm_binary() == str(HELM4)  # the flag lasts one invocation


def test_pinned_majors_report_their_versions():
    from generator.pinned_tools import versions

    h3, h4 = helm_version(str(HELM3)), helm_version(str(HELM4))
    assert (h3.major, h3.version, h3.supported) == (3, versions()["HELM_VERSION"], True)
    assert (h4.major, h4.version, h4.supported) == (4, versions()["HELM4_VERSION"], True)


@pytest.mark.parametrize("version, ok", [("v2.17.0", False), ("v3.7.2", False), ("v3.8.0", True),
                                         ("v4.0.0", True), ("v5.0.0", False)])
def test_supported_versions(tmp_path, version, ok):
    assert helm_version(fake_helm(tmp_path, version)).supported is ok


def test_missing_helm_is_a_usage_error(monkeypatch, tmp_path, capsys):
    monkeypatch.setenv(HELM_ENV, str(tmp_path / "nope"))
    with pytest.raises(InputError, match=r"DOCKYARD_HELM=.*nope: no such executable"):
        helm_binary()
    rc = main(["history", "x", "-n", "ns", "--helm", str(tmp_path / "gone"), "--kubeconfig",
               unreachable_kubeconfig(tmp_path)])
    err = capsys.readouterr().err
    assert rc == 2 and "--helm" in err and "gone: no such executable" in err and "Traceback" not in err


def test_live_verbs_refuse_an_unsupported_helm_and_pick_helm4s_flag(tmp_path):
    from generator.live.client.kube import Kube
    from generator.live.helm.runner import Helm

    kube = Kube(unreachable_kubeconfig(tmp_path))
    refusal = r"is v2\.17\.0: dockyard-k8s supports Helm 3"
    with using(fake_helm(tmp_path, "v2.17.0")), pytest.raises(CheckFailed, match=refusal):
        Helm(kube)
    with using(str(HELM4), "oci://127.0.0.1:1/charts/dockyard", "1.2.3"):
        h = Helm(kube)
        assert (h.version.major, h.atomic_arg, h.server_side, h.chart, h.chart_version) == (
            4, "--rollback-on-failure", "false", "oci://127.0.0.1:1/charts/dockyard", "1.2.3")
    h = Helm(kube)
    assert (h.version.major, h.atomic_arg, h.server_side, h.chart_version) == (3, "--atomic", None, None)
    assert h.chart == str(REPO / "charts" / "dockyard")


def _doctor(capsys, tmp_path, helm: str) -> tuple[int, list[dict]]:
    rc = main(["doctor", str(RECIPE), str(INFRA), "-o", "json", "--kubeconfig", unreachable_kubeconfig(tmp_path),
               "--helm", helm])
    out = capsys.readouterr().out
    return rc, json.loads(out)["checks"]


def test_doctor_reports_the_helm_version_and_refuses_an_unsupported_one(capsys, tmp_path):
    rc, rows = _doctor(capsys, tmp_path, fake_helm(tmp_path, "v2.17.0"))
    assert rc == 1
    assert rows[0]["check"] == "helm" and rows[0]["mark"] == "✗" and "v2.17.0" in rows[0]["detail"]
    assert "--helm" in rows[0]["remedy"]
    assert len(rows) == 1  # nothing is rendered or asked of the cluster with it

    rc, rows = _doctor(capsys, tmp_path, str(HELM4))
    assert (rows[0]["mark"], rows[0]["check"], rows[0]["detail"]) == ("✓", "helm", f"v4.3.2 ({HELM4})")
    assert rows[1]["check"] == "API server" and rows[1]["mark"] == "✗"  # the unreachable test kubeconfig


def test_check_names_the_helm_that_rendered(monkeypatch, capsys):
    from generator.cli import main
    from generator.pinned_tools import REPO, binary, versions

    monkeypatch.setenv("DOCKYARD_HELM", binary("helm", tool="helm4"))
    ex = REPO / "values-examples"
    assert main(["check", str(ex / "grpo_swe.yaml"), str(ex / "grpo_swe.infra.yaml")]) == 0
    assert f"rendered (helm {versions()['HELM4_VERSION']})" in capsys.readouterr().out
