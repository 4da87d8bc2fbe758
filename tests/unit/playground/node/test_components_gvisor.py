"""gVisor on the real node (RuntimeClass gvisor for the sandbox pool), the parts that need no root: containerd's
runsc handler,
the runsc shim's options, the RuntimeClass, and the build recipe."""

from __future__ import annotations

import subprocess
import tomllib
from pathlib import Path

from generator.playground.node import components as C
from generator.playground.node import spec as S

REPO = Path(__file__).resolve().parents[4]


def _bins(tmp: Path, gvisor: bool = True) -> C.Binaries:
    dirs = (tmp / n for n in ("containerd", "runc", "cni", "k8s", "kr", "dns", "img"))
    return C.Binaries(*dirs, gvisor=tmp / "gvisor" if gvisor else None)


def test_containerd_config_v3_has_the_runsc_handler(tmp_path):
    spec = S.NodeSpec(tmp_path / "pg")
    cfg = tomllib.loads(C.containerd_config(spec, _bins(tmp_path), "dockyard.local/pause:1"))
    assert cfg["version"] == 3
    runtimes = cfg["plugins"]["io.containerd.cri.v1.runtime"]["containerd"]["runtimes"]
    runsc = runtimes[C.RUNSC_HANDLER]
    assert runsc["runtime_type"] == "io.containerd.runsc.v1"  # -> containerd-shim-runsc-v1 on its PATH
    assert runsc["options"] == {"TypeUrl": "io.containerd.runsc.v1.options",
                                "ConfigPath": str(spec.config_dir / "runsc.toml")}
    assert runtimes["runc"]["runtime_type"] == "io.containerd.runc.v2"  # runc stays the default
    assert cfg["plugins"]["io.containerd.cri.v1.runtime"]["containerd"]["default_runtime_name"] == "runc"
    # the v2 table would be silently ignored under version 3: nothing of the runtimes may sit there
    assert "containerd" not in cfg["plugins"]["io.containerd.grpc.v1.cri"]


def test_without_gvisor_there_is_no_runsc_handler(tmp_path):
    cfg = tomllib.loads(C.containerd_config(S.NodeSpec(tmp_path), _bins(tmp_path, gvisor=False), "p:1"))
    assert set(cfg["plugins"]["io.containerd.cri.v1.runtime"]["containerd"]["runtimes"]) == {"runc"}


def test_runsc_options_use_systrap_cgroupfs_and_the_state_folder(tmp_path):
    spec = S.NodeSpec(tmp_path / "pg")
    opts = tomllib.loads(C.runsc_config(spec, _bins(tmp_path)))
    assert opts["binary_name"] == str(tmp_path / "gvisor" / "runsc")
    assert opts["runsc_config"]["platform"] == "systrap" and opts["runsc_config"]["systemd-cgroup"] == "false"
    assert opts["runsc_config"]["oci-seccomp"] == "true"  # else a pod's seccompProfile is ignored under gVisor
    for path in (opts["root"], opts["log_path"], opts["runsc_config"]["debug-log"]):
        assert path.startswith(str(spec.root))
    # only keys the shim knows (gvisor pkg/shim/v1/runsc/options.go); an unknown one is dropped silently
    assert set(opts) <= {"shim_cgroup", "io_uid", "io_gid", "binary_name", "root", "log_level", "log_path",
                         "grouping", "enable_hibernate_server", "runsc_config"}


def test_runtime_class_gvisor_schedules_onto_the_real_node():
    rc = C.runtime_class()
    assert rc["apiVersion"] == "node.k8s.io/v1" and rc["metadata"]["name"] == "gvisor"
    assert rc["handler"] == "runsc" and rc["scheduling"]["nodeSelector"] == {S.NODE_LABEL: "true"}


def _key(tool: str, env: dict | None = None) -> str:
    return subprocess.run(["bash", str(REPO / "hack" / "tools.sh"), "--key", tool], capture_output=True, text=True,
                          check=True, env=env).stdout.strip()


def test_gvisor_is_a_node_tool_keyed_by_its_pin(tmp_path):
    import os

    node = subprocess.run(["bash", str(REPO / "hack" / "tools.sh"), "--key", "node"], capture_output=True,
                          text=True, check=True).stdout
    from generator.pinned_tools import TOOLS_TABLE

    pin = tomllib.loads(TOOLS_TABLE.read_text())["pins"]["GVISOR_VERSION"]
    assert f"gvisor {pin} " in node and _key("gvisor").split()[:2] == ["gvisor", pin]
    bumped = tmp_path / "tool_table.toml"
    bumped.write_text(TOOLS_TABLE.read_text().replace(f'"{pin}"', f'"{pin}-x"'))
    # a bumped pin is another cache entry (gvisor-<pin>), so a rebuild
    assert _key("gvisor", {**os.environ, "DOCKYARD_TOOLS_TABLE": str(bumped)}).split()[:2] == ["gvisor", pin + "-x"]
