"""The real node's lifecycle hooks (generator/playground/node/hooks.py) without root or a cluster: the control plane's
flags for a real node (idempotent), and a machine that lacks what the node needs refused in one line. The hooks run
for real in tests/live/test_real_node*.py."""

from __future__ import annotations

import pytest


def test_control_plane_flags_for_a_real_node():
    from generator.playground.node import hooks

    argv = {
        "kube-apiserver": ["apiserver", "--service-cluster-ip-range=127.32.0.0/16", "--x=1",
                           "--enable-admission-plugins=NodeRestriction,PodSecurity"],
        "kube-controller-manager": ["kcm", "--controllers=*,-endpointslice-controller",
                                    "--service-cluster-ip-range=127.32.0.0/16"],
        "kwok": ["kwok", "--manage-all-nodes=true", "--cidr=1"],
    }
    hooks.adjust_control_plane(argv, ("/c.crt", "/c.key"))
    assert "--service-cluster-ip-range=10.96.0.0/16" in argv["kube-apiserver"]
    assert "--kubelet-client-certificate=/c.crt" in argv["kube-apiserver"] and "--x=1" in argv["kube-apiserver"]
    assert "--enable-aggregator-routing=true" in argv["kube-apiserver"]  # metrics-server at its endpoint
    # GPU pods tolerate the simulated GPU nodes' nvidia.com/gpu taint without asking (nodes.py)
    assert "--enable-admission-plugins=NodeRestriction,PodSecurity,ExtendedResourceToleration" in argv["kube-apiserver"]
    hooks.adjust_control_plane(argv, ("/c.crt", "/c.key"))  # idempotent: one flag, the plugin once
    plugins = [a for a in argv["kube-apiserver"] if a.startswith("--enable-admission-plugins=")]
    assert plugins == ["--enable-admission-plugins=NodeRestriction,PodSecurity,ExtendedResourceToleration"]
    assert not any(a.startswith("--controllers=") for a in argv["kube-controller-manager"])  # EndpointSlices on
    assert "--manage-all-nodes=true" not in argv["kwok"]  # kwok must not manage the real node
    assert "--manage-nodes-with-annotation-selector=kwok.x-k8s.io/node=fake" in argv["kwok"]


def test_missing_features_are_named_in_one_line(monkeypatch):
    from generator.playground.node import hooks, host

    monkeypatch.setattr(host, "missing_features", lambda: ["root (namespaces need it)", "the `ipset` command"])
    with pytest.raises(hooks.NodeError) as err:
        hooks.preflight()
    msg = str(err.value)
    assert "\n" not in msg and "ipset" in msg and "without --real-node" in msg

