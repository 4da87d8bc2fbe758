"""The real node's typed state: its name, addresses, paths and identities, derived from the state folder.

Everything here is a pure function of the playground's state folder, so `down` can find and undo
what `up` made even when state.json is gone (a crash half way through `up`).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from pathlib import Path

NODE_NAME = "real-node-0"
NODE_LABEL = "playground.dockyard.dev/real-node"  # "true" on the real node: nodeSelector target
# Addresses. All of them live inside the node's network namespace (the host holds only its end of
# the link, HOST_IP, and routes POD_CIDR and SERVICE_CIDR into the namespace: nowhere else).
LINK_CIDR = "10.250.0.0/30"
HOST_IP = "10.250.0.1"  # the host's end of the veth link
NODE_IP = "10.250.0.2"  # the node's InternalIP; kubelet, CoreDNS (port 53) listen here
POD_CIDR = "10.244.0.0/24"
POD_GATEWAY = "10.244.0.1"  # the CNI bridge inside the node's namespace
SERVICE_CIDR = "10.96.0.0/16"  # the apiserver's ClusterIP range while a real node is up
SERVICE_IP = "10.96.0.1"  # its `kubernetes` Service's ClusterIP (the first address), in the serving certificate
DNS_IP = NODE_IP
CLUSTER_DOMAIN = "cluster.local"
# Stand-in hosts on a dummy interface inside the node's namespace, for the egress proofs: nothing
# listens there until a test starts a listener; packets to them never leave the namespace.
METADATA_IP = "169.254.169.254"
STAND_IN_IP = "10.250.9.9"
# Fixed ports inside the node's namespace (its loopback is its own).
KUBELET_HEALTHZ_PORT = 10248
KUBE_PROXY_HEALTHZ_PORT = 10256
KUBE_ROUTER_HEALTH_PORT = 20244
COREDNS_HEALTH_PORT = 8181
# Kernel settings kubelet (and kube-proxy) write globally: scratch files are bind-mounted over them
# inside the node's private mount namespace, so the writes never reach the host.
SHIELDED_SYSCTLS = [
    "kernel/panic",
    "kernel/panic_on_oops",
    "kernel/keys/root_maxkeys",
    "kernel/keys/root_maxbytes",
    "vm/overcommit_memory",
    "vm/panic_on_oom",
    "net/netfilter/nf_conntrack_max",
]


@dataclass(frozen=True)
class NodeSpec:
    state_dir: Path
    name: str = NODE_NAME
    tag: str = field(init=False)

    def __post_init__(self) -> None:
        digest = hashlib.sha256(str(self.state_dir.resolve()).encode()).hexdigest()[:6]
        object.__setattr__(self, "tag", digest)

    # ---- host-visible names
    @property
    def host_veth(self) -> str:
        return f"dyk{self.tag}h"  # <= 15 characters

    @property
    def node_veth(self) -> str:
        return f"dyk{self.tag}n"

    @property
    def cgroup_root(self) -> str:
        return f"/dockyard-{self.tag}"

    # ---- paths
    @property
    def root(self) -> Path:
        return self.state_dir / "node"

    @property
    def netns_file(self) -> Path:
        return self.root / "ns" / "net"

    @property
    def mntns_file(self) -> Path:
        return self.root / "ns" / "mnt"

    @property
    def containerd_dir(self) -> Path:
        return self.root / "containerd"

    @property
    def containerd_sock(self) -> Path:
        """Inside the node's mount namespace (its private /run): a unix socket path must stay under
        104 bytes, which a state folder's path need not. From the host: `containerd_sock_from`."""
        return Path("/run/dockyard-node/containerd.sock")

    def containerd_sock_from(self, containerd_pid: int) -> Path:
        """The socket as the host reaches it: through the containerd process's root."""
        return Path(f"/proc/{containerd_pid}/root") / self.containerd_sock.relative_to("/")

    @property
    def kubelet_dir(self) -> Path:
        return self.root / "kubelet"

    @property
    def pki_dir(self) -> Path:
        return self.root / "pki"

    @property
    def config_dir(self) -> Path:
        return self.root / "config"

    @property
    def cni_conf_dir(self) -> Path:
        return self.root / "cni" / "net.d"

    @property
    def sysctl_dir(self) -> Path:
        return self.root / "sysctl"

    def kubeconfig(self, component: str) -> Path:
        return self.config_dir / f"{component}.kubeconfig"
