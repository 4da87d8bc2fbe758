"""Whether this machine can host the playground's real node, checked without starting anything.

The real node needs root (it makes namespaces, cgroups and mounts), cgroup v1 (its kubelet runs the cgroupfs
driver over the v1 hierarchies, failCgroupV1 off), overlayfs (containerd's snapshotter) and network namespaces;
and a few commands its Debian packages bring (`bash hack/node-deps.sh` installs them, as root).

Stdlib only and free of the package's other modules: hack/suite.py loads this file by its path, before the
virtualenv exists, so that `make test` says in its first lines whether the real node's tests can run here.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

CGROUP_BASE = Path("/sys/fs/cgroup")
REQUIRED_COMMANDS = {
    "unshare": "util-linux", "nsenter": "util-linux", "mount": "mount", "umount": "mount",
    "ip": "iproute2", "iptables": "iptables", "ipset": "ipset", "conntrack": "conntrack",
}
# One line for a reader who has none of it.
NEEDS = "root, cgroup v1 (a memory hierarchy at /sys/fs/cgroup/memory), overlayfs and network namespaces"


def lacks(commands: bool = True) -> list[str]:
    """What this machine lacks for a real node, one short phrase each (empty: all there). `commands=False`
    leaves out the commands the node's Debian packages bring (a build as root installs them)."""
    missing = []
    if os.geteuid() != 0:
        missing.append("root (namespaces, cgroups and mounts need it)")
    if commands:
        for cmd, pkg in REQUIRED_COMMANDS.items():
            if not shutil.which(cmd):
                missing.append(f"the `{cmd}` command (Debian package {pkg}; run `bash hack/node-deps.sh`)")
    if not (CGROUP_BASE / "memory" / "cgroup.procs").exists():
        only_v2 = (CGROUP_BASE / "cgroup.controllers").exists()
        missing.append("cgroup v1 memory hierarchy at /sys/fs/cgroup/memory"
                       + (" (this machine mounts cgroup v2 only)" if only_v2 else ""))
    if "overlay" not in _read("/proc/filesystems"):
        missing.append("the overlay filesystem")
    if not Path("/proc/self/ns/net").exists():
        missing.append("network namespaces")
    return missing


def _read(path: str) -> str:
    try:
        return Path(path).read_text()
    except OSError:
        return ""
