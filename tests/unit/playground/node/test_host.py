"""What the real node does on the host, the parts that need no root: the mount namespace's script keeps hardcoded
paths and kernel settings private, and a state folder the node would hide is refused."""

from __future__ import annotations

from pathlib import Path

import pytest

from generator.playground.node import host
from generator.playground.node import spec as S


def test_mount_namespace_keeps_hardcoded_paths_and_kernel_settings_private(tmp_path):
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
    with pytest.raises(host.NodeError, match="below /var/lib"):
        host.create_namespaces(S.NodeSpec(Path("/var/lib/dockyard/pg")))
