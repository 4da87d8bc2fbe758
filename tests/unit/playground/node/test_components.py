"""The real node's components configured for this VM, the parts that need no root: containerd, the kubelet,
kube-proxy and CoreDNS."""

from __future__ import annotations

import tomllib
from pathlib import Path

from generator.playground.node import components as C
from generator.playground.node import spec as S


def _bins(tmp: Path) -> C.Binaries:
    return C.Binaries(*(tmp / n for n in ("containerd", "runc", "cni", "k8s", "kr", "dns", "img")))


def test_containerd_config_fits_this_vm(tmp_path):
    spec = S.NodeSpec(tmp_path / "pg")
    cfg = tomllib.loads(C.containerd_config(spec, _bins(tmp_path), "dockyard.local/pause:1"))
    runtime = cfg["plugins"]["io.containerd.cri.v1.runtime"]
    assert runtime["restrict_oom_score_adj"] is True  # no CAP_SYS_RESOURCE here
    assert runtime["containerd"]["runtimes"]["runc"]["options"]["SystemdCgroup"] is False
    assert cfg["plugins"]["io.containerd.cri.v1.images"]["pinned_images"]["sandbox"] == "dockyard.local/pause:1"
    assert "io.containerd.nri.v1.nri" in cfg["disabled_plugins"]
    # every path containerd writes is under the playground's state folder
    for path in (cfg["root"], cfg["state"], runtime["containerd"]["runtimes"]["runc"]["options"]["Root"]):
        assert path.startswith(str(tmp_path / "pg" / "node"))
    # but its sockets live in the node's private /run: a unix socket path must stay under 104 bytes
    assert cfg["grpc"]["address"].startswith("/run/") and len(cfg["ttrpc"]["address"]) < 104
    assert str(spec.containerd_sock_from(42)) == "/proc/42/root/run/dockyard-node/containerd.sock"


def test_kubelet_config_fits_this_vm_and_trusts_only_the_ca(tmp_path):
    spec = S.NodeSpec(tmp_path / "pg")
    cfg = C.kubelet_config(spec, "/ca.crt", ("/s.crt", "/s.key"))
    assert cfg["failCgroupV1"] is False and cfg["cgroupDriver"] == "cgroupfs"
    assert cfg["cgroupRoot"] == spec.cgroup_root and cfg["readOnlyPort"] == 0
    assert cfg["authentication"]["anonymous"]["enabled"] is False
    assert cfg["authentication"]["x509"]["clientCAFile"] == "/ca.crt"
    assert cfg["clusterDNS"] == [S.NODE_IP] and cfg["address"] == S.NODE_IP


def test_kube_proxy_leaves_global_conntrack_settings_alone(tmp_path):
    cfg = C.kube_proxy_config(S.NodeSpec(tmp_path))
    assert cfg["mode"] == "iptables" and cfg["iptables"]["masqueradeAll"] is True
    assert cfg["conntrack"]["maxPerCore"] == 0 and cfg["conntrack"]["tcpEstablishedTimeout"] == "0s"


def test_coredns_never_forwards(tmp_path):
    text = C.corefile(S.NodeSpec(tmp_path))
    assert not any(line.split()[:1] == ["forward"] for line in text.splitlines())
    assert f"bind {S.NODE_IP}" in text and "kubernetes cluster.local" in text

