"""What the real node does on the host, and how every bit of it is undone.

- two namespaces bound to files under the state folder: a network namespace (no default route, a
  veth link to the host that carries only the node's own ranges) and a private mount namespace
  (scratch files over the global kernel settings kubelet writes; every mount kubelet, containerd and
  runc make stays in it);
- one cgroup directory per v1 hierarchy (kubelet's cgroupRoot);
- nothing else: the host's sysctls, cgroup mounts and firewall are never touched.

`teardown` finds its processes by namespace and cgroup membership (never by name) and removes each
piece; it works from the state folder alone, so it also cleans up after a crash.
"""

from __future__ import annotations

import ctypes
import os
import signal
import subprocess
import threading
import time
from pathlib import Path

from generator.playground.errors import NodeError
from generator.playground.node import machine
from generator.playground.node import spec as S
from generator.playground.node.machine import CGROUP_BASE

CLONE_NEWNET = 0x40000000


def run(argv: list[str], check: bool = True) -> subprocess.CompletedProcess:
    proc = subprocess.run(argv, capture_output=True, text=True)
    if check and proc.returncode != 0:
        said = (proc.stderr or proc.stdout).strip()[:400]
        raise NodeError(f"`{' '.join(argv)}` failed (exit {proc.returncode}): {said}")
    return proc


def in_netns(spec: S.NodeSpec, argv: list[str]) -> list[str]:
    return ["nsenter", f"--net={spec.netns_file}", "--", *argv]


def in_node(spec: S.NodeSpec, argv: list[str]) -> list[str]:
    """argv run inside both of the node's namespaces (nsenter execs it: the PID is the command's)."""
    return ["nsenter", f"--mount={spec.mntns_file}", f"--net={spec.netns_file}", "--", *argv]


# ---------------------------------------------------------------- preflight


def missing_features() -> list[str]:
    """What this machine lacks for a real node, one short phrase each (empty: all there): machine.lacks, the
    check `make test` makes up front too."""
    return machine.lacks()


def range_in_use() -> str | None:
    """A host route already covering the node's pod range means another real node is up."""
    out = run(["ip", "-o", "route", "show", S.POD_CIDR], check=False).stdout.strip()
    return out or None


# ---------------------------------------------------------------- namespaces


# Paths the components write whatever their configuration says: containerd's shim sockets
# (/run/containerd/s), iptables' lock (/run/xtables.lock), libcni's result cache (/var/lib/cni), the
# kubelet's device-plugin socket (/var/lib/kubelet/device-plugins). A tmpfs over each of these inside
# the private mount namespace keeps all of it off the host (the state folder must not be below them).
PRIVATE_DIRS = ["/run", "/var/lib"]


def _shield_script(spec: S.NodeSpec) -> str:
    lines = ["set -e"]
    for d in PRIVATE_DIRS:
        if Path(d).is_dir():
            lines.append(f"mount -n -t tmpfs -o mode=0755 dockyard-node '{d}'")
    for key in S.SHIELDED_SYSCTLS:
        src = Path("/proc/sys") / key
        if not src.exists():
            continue
        scratch = spec.sysctl_dir / key.replace("/", ".")
        scratch.write_text(src.read_text())
        lines.append(f"mount -n --bind '{scratch}' '{src}'")
    # Name lookups by the node's own processes (containerd, kubelet) go to the namespace's loopback,
    # where nothing answers: never to the machine's resolver.
    resolv = spec.sysctl_dir / "resolv.conf"
    resolv.write_text("nameserver 127.0.0.1\n")
    if Path("/etc/resolv.conf").exists():
        lines.append(f"mount -n --bind '{resolv}' /etc/resolv.conf")
    return "\n".join(lines)


def create_namespaces(spec: S.NodeSpec) -> None:
    """The node's network namespace (addresses, link, routes) and its private mount namespace."""
    state = str(spec.state_dir.resolve())
    for d in PRIVATE_DIRS:
        if state == d or state.startswith(d + "/"):
            raise NodeError(f"the state folder {spec.state_dir} is below {d}, which the real node keeps private; "
                            "pick another --state-dir")
    spec.netns_file.parent.mkdir(parents=True, exist_ok=True)
    spec.sysctl_dir.mkdir(parents=True, exist_ok=True)
    spec.netns_file.touch()
    spec.mntns_file.touch()
    run(["unshare", f"--net={spec.netns_file}", "true"])
    n = lambda *a: run(in_netns(spec, ["ip", *a]))  # noqa: E731
    n("link", "set", "lo", "up")
    # The veth pair: the node's end stays inside, the host's end is moved to this process's namespace.
    n("link", "add", spec.node_veth, "type", "veth", "peer", "name", spec.host_veth, "netns", str(os.getpid()))
    n("addr", "add", f"{S.NODE_IP}/30", "dev", spec.node_veth)
    n("link", "set", spec.node_veth, "up")
    # The stand-in hosts are addresses of the namespace's own loopback device (this kernel has no
    # dummy links): packets to them are delivered inside the namespace, past the policy engine.
    for ip in (S.METADATA_IP, S.STAND_IN_IP):
        n("addr", "add", f"{ip}/32", "dev", "lo")
    # No default route and no route for Service addresses: what kube-proxy does not rewrite is
    # unreachable.
    run(["ip", "addr", "add", f"{S.HOST_IP}/30", "dev", spec.host_veth])
    run(["ip", "link", "set", spec.host_veth, "up"])
    for cidr in (S.POD_CIDR, S.SERVICE_CIDR):
        run(["ip", "route", "add", cidr, "via", S.NODE_IP, "dev", spec.host_veth])
    # The mount namespace is made from inside the network namespace, so /proc/sys/net is the node's.
    run(in_netns(spec, ["unshare", f"--mount={spec.mntns_file}", "--propagation", "private",
                        "sh", "-c", _shield_script(spec)]))


def ns_inode(path: Path) -> int | None:
    try:
        return os.stat(path).st_ino if path.exists() and _is_nsfs(path) else None
    except OSError:
        return None


def _is_nsfs(path: Path) -> bool:
    target = str(path.resolve())
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        fields = line.split()
        if fields[4] == target and "nsfs" in line.split(" - ", 1)[1].split()[0]:
            return True
    return False


def our_mounts(spec: S.NodeSpec) -> list[str]:
    """Host mount points under the node's folder (only the two namespace files, while it is up)."""
    root = str(spec.root.resolve())
    out = []
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        point = line.split()[4]
        if point == root or point.startswith(root + "/"):
            out.append(point)
    return out


# ---------------------------------------------------------------- netns-local HTTP (status, tests)


def _setns(fd: int) -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.setns(fd, CLONE_NEWNET) != 0:
        err = ctypes.get_errno()
        raise OSError(err, os.strerror(err))


def netns_http_get(spec: S.NodeSpec, port: int, path: str, host: str = "127.0.0.1",
                   timeout: float = 3.0) -> tuple[int, str]:
    """GET http://host:port/path from inside the node's network namespace (a thread enters it)."""
    import http.client

    if host not in ("127.0.0.1", S.NODE_IP):
        raise ValueError(f"refusing {host}: only the node namespace's own addresses")
    result: dict = {}

    def work() -> None:
        try:
            fd = os.open(spec.netns_file, os.O_RDONLY)
            try:
                _setns(fd)  # this thread only; it ends right after
            finally:
                os.close(fd)
            conn = http.client.HTTPConnection(host, port, timeout=timeout)
            conn.request("GET", path)
            resp = conn.getresponse()
            result["v"] = (resp.status, resp.read().decode(errors="replace"))
            conn.close()
        except OSError as exc:
            result["e"] = exc

    t = threading.Thread(target=work, daemon=True)
    t.start()
    t.join(timeout + 2)
    if "v" in result:
        return result["v"]
    raise result.get("e") or OSError(f"no answer from {host}:{port} in the node namespace")


# ---------------------------------------------------------------- cgroups


def hierarchies(v1_only: bool = True) -> list[Path]:
    out = []
    for d in sorted(CGROUP_BASE.iterdir()):
        if d.is_symlink() or not (d / "cgroup.procs").exists():
            continue
        if v1_only and d.name == "unified":
            continue
        out.append(d)
    return out


def create_cgroups(spec: S.NodeSpec) -> None:
    rel = spec.cgroup_root.lstrip("/")
    for h in hierarchies():
        d = h / rel
        d.mkdir(exist_ok=True)
        if h.name == "cpuset":
            for f in ("cpuset.cpus", "cpuset.mems"):
                (d / f).write_text((h / f).read_text())


def our_cgroup_dirs(spec: S.NodeSpec) -> list[Path]:
    rel = spec.cgroup_root.lstrip("/")
    return [h / rel for h in hierarchies(v1_only=False) if (h / rel).exists()]


def remove_cgroups(spec: S.NodeSpec) -> list[str]:
    """rmdir the cgroupRoot trees bottom-up; returns what could not be removed."""
    left = []
    for top in our_cgroup_dirs(spec):
        for dirpath, _dirs, _files in sorted(os.walk(top, topdown=False), key=lambda w: -len(w[0])):
            try:
                os.rmdir(dirpath)
            except OSError as exc:
                left.append(f"{dirpath}: {exc.strerror}")
    return left


# ---------------------------------------------------------------- processes


def our_pids(spec: S.NodeSpec) -> list[int]:
    """Every live process inside the node's namespaces or cgroups (containers, shims, components)."""
    inodes = {i for i in (ns_inode(spec.netns_file), ns_inode(spec.mntns_file)) if i}
    marker = spec.cgroup_root
    pids = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            ours = any(os.stat(entry / "ns" / kind).st_ino in inodes for kind in ("net", "mnt")) if inodes else False
            if not ours:
                cg = (entry / "cgroup").read_text()
                ours = any(line.split(":", 2)[2] == marker or line.split(":", 2)[2].startswith(marker + "/")
                           for line in cg.splitlines() if line.count(":") >= 2)
        except (OSError, IndexError):
            continue
        if ours and _state(int(entry.name)) not in ("Z", "X", None):  # a zombie holds nothing
            pids.append(int(entry.name))
    return pids


def kill_all(spec: S.NodeSpec, timeout: float = 20.0) -> list[int]:
    """SIGKILL every process of the node until none is left; returns the PIDs still there."""
    deadline = time.monotonic() + timeout
    while True:
        live = our_pids(spec)
        if not live:
            return []
        if time.monotonic() > deadline:
            return live
        for pid in live:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        _reap_children()
        time.sleep(0.2)


def _state(pid: int) -> str | None:
    try:
        raw = Path(f"/proc/{pid}/stat").read_text()
        return raw[raw.rfind(")") + 2]
    except OSError:
        return None


def _reap_children() -> None:
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


# ---------------------------------------------------------------- teardown


def teardown(spec: S.NodeSpec) -> list[str]:
    """Undo everything the node made on the host; returns problems left (empty: clean)."""
    problems = []
    left = kill_all(spec)
    if left:
        problems.append(f"processes still running: {left}")
    if run(["ip", "link", "show", spec.host_veth], check=False).returncode == 0:
        run(["ip", "link", "del", spec.host_veth], check=False)
    for f in (spec.mntns_file, spec.netns_file):
        if f.exists() and _is_nsfs(f):
            r = run(["umount", "-n", str(f)], check=False)
            if r.returncode != 0:
                run(["umount", "-n", "-l", str(f)], check=False)
    for m in our_mounts(spec):
        run(["umount", "-n", "-l", m], check=False)
    if our_mounts(spec):
        problems.append(f"mounts left: {our_mounts(spec)}")
    problems += remove_cgroups(spec)
    if run(["ip", "link", "show", spec.host_veth], check=False).returncode == 0:
        problems.append(f"host link {spec.host_veth} still exists")
    return problems
