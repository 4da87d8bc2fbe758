"""`$DOCKYARD_PLAYGROUND_KUBERNETES` picks the playground's control-plane minor (`make
test-matrix`): its own cache entry and hack/tools.sh target, the version kwok's nodes report, a minor without
a control-plane pin refused in one line naming the variable, and the real node (kubelet v1.36) refused
under an older control plane."""

from __future__ import annotations

import pytest

from generator.cli import main
from generator.pinned_tools import (
    PLAYGROUND_KUBERNETES_ENV,
    ToolMissing,
    kube_range,
    playground_kubernetes,
    playground_targets,
    tool_dir,
    versions,
)
from generator.playground import control_plane
from generator.playground.errors import NodeError


def test_unset_is_the_pinned_control_plane(monkeypatch):
    monkeypatch.delenv(PLAYGROUND_KUBERNETES_ENV, raising=False)
    assert playground_kubernetes() == versions()["KUBERNETES_VERSION"]
    assert tool_dir("kubernetes").name == f"kubernetes-{versions()['KUBERNETES_VERSION']}"
    assert playground_targets(("kubernetes", "etcd")) == ["kubernetes", "etcd"]


@pytest.mark.parametrize("given", ["1.33", "v1.33", versions()["KUBERNETES_1_33_VERSION"]])
def test_1_33_picks_its_own_cache_entry_and_build_target(monkeypatch, given):
    monkeypatch.setenv(PLAYGROUND_KUBERNETES_ENV, given)
    pin = versions()["KUBERNETES_1_33_VERSION"]
    assert pin.startswith("v1.33.") and playground_kubernetes() == pin
    assert tool_dir("kubernetes").name == f"kubernetes-{pin}"
    assert tool_dir("kube-validate").name == f"kube-validate-{versions()['KUBERNETES_VERSION']}"  # check's own
    assert playground_targets(("kubernetes", "kwok")) == ["kubernetes-1.33", "kwok"]
    monkeypatch.setenv(PLAYGROUND_KUBERNETES_ENV, versions()["KUBERNETES_VERSION"].rsplit(".", 1)[0])
    assert playground_targets(("kubernetes",)) == ["kubernetes"]


def test_the_chosen_version_reaches_the_playground_state(monkeypatch, tmp_path):
    """ensure_binaries' version is what the state records and kwok's nodes report as kubeletVersion."""
    monkeypatch.setenv("DOCKYARD_TOOLS_CACHE", str(tmp_path))
    monkeypatch.setenv(PLAYGROUND_KUBERNETES_ENV, "1.33")
    for tool in control_plane.TOOLS:  # a stand-in cache: every entry complete, every binary present
        d = tool_dir(tool)
        d.mkdir(parents=True)
        (d / ".complete").write_text("x\n")
    for path in control_plane._binaries().paths().values():
        open(path, "w").close()
    bins = control_plane.ensure_binaries(print)
    assert bins.kube_version == versions()["KUBERNETES_1_33_VERSION"]
    assert bins.kube_apiserver == str(tmp_path / f"kubernetes-{bins.kube_version}" / "kube-apiserver")


@pytest.mark.parametrize("given", ["1.34", "1.36", "1.32", "1.33.6", "latest"])
def test_a_minor_without_a_control_plane_pin_is_one_line(monkeypatch, tmp_path, capsys, given):
    monkeypatch.setenv(PLAYGROUND_KUBERNETES_ENV, given)
    with pytest.raises(ToolMissing, match=f"{PLAYGROUND_KUBERNETES_ENV}={given}: the playground's control plane"):
        tool_dir("kubernetes")
    assert main(["playground", "up", "--state-dir", str(tmp_path / "pg")]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"{PLAYGROUND_KUBERNETES_ENV}={given}" in err, err
    assert "1.33 (v1.33." in err and f"supports Kubernetes {kube_range()}" in err, err
    assert not (tmp_path / "pg").exists()  # refused before anything was written or started


def test_the_real_node_refuses_an_older_control_plane(monkeypatch):
    from generator.playground.node import hooks

    monkeypatch.setenv(PLAYGROUND_KUBERNETES_ENV, "1.33")
    with pytest.raises(NodeError, match=f"kubelet is {versions()['KUBERNETES_VERSION']}, newer than the control "
                                        f"plane's {versions()['KUBERNETES_1_33_VERSION']}"):
        hooks.preflight()
