"""The real node's pieces that need no root and no cluster: images, configs, flags, names, checks."""

from __future__ import annotations

import hashlib
import io
import json
import tarfile
import tomllib
from pathlib import Path

import pytest

from generator.playground.node import components as C
from generator.playground.node import images
from generator.playground.node import spec as S


def _fake_bins(tmp: Path) -> Path:
    for name in ("pause", "executor", "busybox", "bash"):
        (tmp / name).write_bytes(f"#!{name}\n".encode() * 10)
    return tmp


def _members(tar_path: Path) -> dict[str, bytes]:
    with tarfile.open(tar_path) as tar:
        return {m.name: tar.extractfile(m).read() for m in tar.getmembers() if m.isfile()}


def test_oci_layouts_are_complete_and_content_addressed(tmp_path):
    out = images.ensure_layouts(_fake_bins(tmp_path), "7")
    assert out["pause"][0] == "dockyard.local/pause:7"
    assert out["executor"][0] == "dockyard.local/playground-executor:7"
    files = _members(out["executor"][1])
    for name, data in files.items():
        if name.startswith("blobs/sha256/"):
            assert hashlib.sha256(data).hexdigest() == name.rsplit("/", 1)[1]
    index = json.loads(files["index.json"])
    desc = index["manifests"][0]
    assert desc["annotations"]["io.containerd.image.name"] == "dockyard.local/playground-executor:7"
    manifest = json.loads(files["blobs/sha256/" + desc["digest"].split(":")[1]])
    config = json.loads(files["blobs/sha256/" + manifest["config"]["digest"].split(":")[1]])
    layer = files["blobs/sha256/" + manifest["layers"][0]["digest"].split(":")[1]]
    assert config["rootfs"]["diff_ids"] == ["sha256:" + hashlib.sha256(layer).hexdigest()]
    assert config["config"]["Entrypoint"] == ["/executor"]
    with tarfile.open(fileobj=io.BytesIO(layer)) as rootfs:
        entries = {m.name: m for m in rootfs.getmembers()}
    assert entries["bin/sh"].issym() and entries["bin/sh"].linkname == "busybox"
    assert entries["bin/bash"].isfile() and entries["executor"].mode & 0o111
    assert entries["tmp"].mode == 0o1777
    assert all(m.mtime == 0 and m.uid == 0 for m in entries.values())


def test_oci_layouts_are_reproducible_and_cached(tmp_path):
    bins = _fake_bins(tmp_path)
    first = images.ensure_layouts(bins, "1")["executor"][1]
    data = first.read_bytes()
    first.unlink()
    assert images.ensure_layouts(bins, "1")["executor"][1].read_bytes() == data
    first.write_bytes(b"kept")  # an existing tarball is reused, not rewritten
    assert images.ensure_layouts(bins, "1")["executor"][1].read_bytes() == b"kept"


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


def test_addresses_stay_off_loopback_and_the_machine_link():
    import ipaddress

    ranges = [ipaddress.ip_network(c) for c in (S.POD_CIDR, S.SERVICE_CIDR, S.LINK_CIDR)]
    for a, b in [(x, y) for i, x in enumerate(ranges) for y in ranges[i + 1:]]:
        assert not a.overlaps(b)
    for net in ranges:
        assert net.is_private and not net.is_loopback
    assert ipaddress.ip_address(S.NODE_IP) in ranges[2] and ipaddress.ip_address(S.HOST_IP) in ranges[2]


def test_names_are_per_state_folder_and_fit_interface_limits(tmp_path):
    a, b = S.NodeSpec(tmp_path / "a"), S.NodeSpec(tmp_path / "b")
    assert a.host_veth != b.host_veth and a.cgroup_root != b.cgroup_root
    assert len(a.host_veth) <= 15 and len(a.node_veth) <= 15
    assert a.netns_file.is_relative_to(tmp_path / "a")


def test_cli_accepts_real_node():
    import argparse

    from generator.playground.cli import add_parser

    parser = argparse.ArgumentParser()
    add_parser(parser.add_subparsers())
    assert parser.parse_args(["playground", "up", "--real-node"]).real_node is True
    assert parser.parse_args(["playground", "up"]).real_node is False


def test_cli_accepts_the_real_node_as_the_only_node(tmp_path, monkeypatch, capsys):
    from generator.cli import main
    from generator.playground import lifecycle

    calls = []
    monkeypatch.setattr(lifecycle, "up", lambda _dir, shape, timeout, real_node, kueue, agent_sandbox:
                        calls.append((shape, real_node, kueue, agent_sandbox)) or 0)
    argv = ["playground", "up", "--state-dir", str(tmp_path / "pg"), "--gpu-nodes", "0", "--cpu-nodes", "0"]
    assert main([*argv, "--real-node"]) == 0, capsys.readouterr().err
    assert main([*argv, "--real-node", "--kueue"]) == 0, capsys.readouterr().err
    assert main([*argv, "--real-node", "--agent-sandbox"]) == 0, capsys.readouterr().err
    assert [(s.gpu_nodes, s.cpu_nodes, real, kueue, sandbox) for s, real, kueue, sandbox in calls] == [
        (0, 0, True, False, False), (0, 0, True, True, False), (0, 0, True, False, True)]
    assert main(argv) == 2 and len(calls) == 3  # without it there is no node at all
    assert "needs at least one node (--gpu-nodes, --cpu-nodes or --real-node)" in capsys.readouterr().err


# ---------------------------------------------------------------- where pods land beside a real node


def _tolerated(taint: dict, tolerations: list[dict]) -> bool:
    def one(t: dict) -> bool:
        if t.get("effect") not in (None, "", taint["effect"]):
            return False
        if t.get("operator") == "Exists":
            return t.get("key") in (None, "", taint["key"])
        return t.get("key") == taint["key"] and t.get("value", "") == taint.get("value", "")

    return any(one(t) for t in tolerations)


def _admitted(pod: dict) -> dict:
    """The pod spec as the playground's apiserver stores it: ExtendedResourceToleration (asserted on the
    flags above) adds an `nvidia.com/gpu` toleration to every pod that requests the resource."""
    spec = dict(pod)
    if any(_gpus(c) for c in spec.get("containers") or []):
        spec["tolerations"] = [*(spec.get("tolerations") or []),
                               {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]
    return spec


def _gpus(container: dict) -> int:
    res = container.get("resources") or {}
    return int({**(res.get("limits") or {}), **(res.get("requests") or {})}.get("nvidia.com/gpu", 0))


def _fits(pod: dict, node: dict) -> bool:
    """The scheduler's filters that tell these nodes apart: taints, nodeSelector, nvidia.com/gpu."""
    labels, spec = node["metadata"]["labels"], node.get("spec") or {}
    if any(labels.get(k) != v for k, v in (pod.get("nodeSelector") or {}).items()):
        return False
    if not all(_tolerated(t, pod.get("tolerations") or []) for t in spec.get("taints") or []
               if t["effect"] in ("NoSchedule", "NoExecute")):
        return False
    have = int(((node.get("status") or {}).get("allocatable") or {}).get("nvidia.com/gpu", 0))
    return all(_gpus(c) <= have for c in pod.get("containers") or [])


def _where(rendered, nodes: list[dict]) -> dict[str, list[str]]:
    return {role: [n["metadata"]["name"] for n in nodes if _fits(_admitted(pod), n)]
            for role, pod in rendered.pod_specs().items()}


def test_beside_a_real_node_pods_that_ask_for_nothing_run_on_it(tmp_path, render):
    """`up --real-node` with the default shape: the chart's sandbox pool, its `helm test` pod, the Ray
    head and the submitter fit only the real node; the GPU workers only the simulated GPU nodes. Asked
    (a toleration of the simulated taint), a pod may still go to a simulated CPU node."""
    from generator.playground import nodes

    real = C.node_object(S.NodeSpec(tmp_path / "pg"))
    kwok = nodes.manifests(nodes.Shape(), "v1.36.3", real_node=True)
    gpu_nodes = nodes.Shape().names()[0]
    where = _where(render(), [*kwok, real])
    assert where == {"sandbox": ["real-node-0"], "test": ["real-node-0"], "submitter": ["real-node-0"],
                     "head": ["real-node-0"], "trainer": gpu_nodes, "inference": gpu_nodes}, where
    asked = [{"key": nodes.SIMULATED_TAINT["key"], "operator": "Exists", "effect": "NoSchedule"}]
    where = _where(render(sandbox={"tolerations": asked, "nodeSelector": {"type": "kwok"}}), [*kwok, real])
    assert where["sandbox"] == where["test"] == ["cpu-node-0"], where
    # without a real node only the GPU nodes are tainted, as a cloud GPU pool is; the CPU nodes take anything
    alone = {n["metadata"]["name"]: n["spec"].get("taints") for n in nodes.manifests(nodes.Shape(), "v1.36.3")}
    assert alone == {**{g: [nodes.GPU_TAINT] for g in gpu_nodes}, "cpu-node-0": None}


def test_mount_namespace_keeps_hardcoded_paths_and_kernel_settings_private(tmp_path):
    from generator.playground.node import host

    spec = S.NodeSpec(tmp_path / "pg")
    spec.sysctl_dir.mkdir(parents=True)
    script = host._shield_script(spec).splitlines()
    # containerd's shim sockets, iptables' lock, libcni's cache, the kubelet's device-plugin dir
    assert "mount -n -t tmpfs -o mode=0755 dockyard-node '/run'" in script
    assert "mount -n -t tmpfs -o mode=0755 dockyard-node '/var/lib'" in script
    assert any(line.endswith("'/proc/sys/kernel/panic'") and "--bind" in line for line in script)
    assert any(line.endswith(" /etc/resolv.conf") for line in script)
    assert (spec.sysctl_dir / "kernel.panic").read_text() == Path("/proc/sys/kernel/panic").read_text()


def test_a_state_folder_the_node_would_hide_is_refused(tmp_path):
    from generator.playground.node import host

    with pytest.raises(host.NodeError, match="below /var/lib"):
        host.create_namespaces(S.NodeSpec(Path("/var/lib/dockyard/pg")))
