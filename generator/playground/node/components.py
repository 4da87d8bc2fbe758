"""The real node's components: each one's configuration files and command line (no process handling).

containerd (+ runc, CNI bridge) runs the pods; kubelet registers the node; kube-proxy (iptables
mode) routes Service ClusterIPs; kube-router (firewall only) enforces NetworkPolicy; CoreDNS
answers *.svc.cluster.local on the node's address. All of them run inside the node's network and
mount namespaces (host.in_node) and reach the apiserver through the loopback relay.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from generator.playground.node import spec as S

# start order; `down` stops them in reverse (containerd last: its shims are then killed by host.py)
ORDER = ["relay", "containerd", "kubelet", "kube-proxy", "kube-router", "coredns"]
# identities in the apiserver's token file: user, uid, groups
IDENTITIES = {
    "kubelet": (f"system:node:{S.NODE_NAME}", "dockyard-node", ["system:nodes"]),
    "kube-proxy": ("system:kube-proxy", "dockyard-kube-proxy", []),  # bound to system:node-proxier by default
    # playground-only shortcut: the policy engine and DNS read cluster-wide, so they get admin
    "kube-router": ("system:kube-router", "dockyard-kube-router", ["system:masters"]),
    "coredns": ("system:coredns", "dockyard-coredns", ["system:masters"]),
    "metrics-server": ("system:metrics-server", "dockyard-metrics-server", ["system:masters"]),
    # makes PVs and its helper pods cluster-wide (storage.py)
    "local-path-provisioner": ("system:local-path-provisioner", "dockyard-local-path-provisioner", ["system:masters"]),
}


@dataclass(frozen=True)
class Binaries:
    containerd: Path  # dir with containerd, containerd-shim-runc-v2, ctr
    runc: Path  # dir with runc
    cni: Path  # dir with bridge, host-local, loopback, portmap
    kubernetes_node: Path  # dir with kubelet, kube-proxy
    kube_router: Path
    coredns: Path
    images: Path  # node-images dir
    gvisor: Path | None = None  # dir with runsc, containerd-shim-runsc-v1 (the `runsc` handler of RuntimeClass gvisor)
    metrics_server: Path | None = None  # dir with metrics-server (the HPA's metrics API, metrics.py)
    local_path: Path | None = None  # dir with local-path-provisioner (StorageClass local-path, storage.py)


def containerd_config(spec: S.NodeSpec, bins: Binaries, pause_ref: str) -> str:
    d = spec.containerd_dir
    q = json.dumps  # TOML basic strings accept JSON string escapes
    return f"""version = 3
root = {q(str(d / 'root'))}
state = {q(str(d / 'state'))}
imports = []
# NRI would create /var/run/nri on the host; nothing here needs it
disabled_plugins = ["io.containerd.nri.v1.nri"]

[grpc]
  address = {q(str(spec.containerd_sock))}

[ttrpc]
  address = {q(str(spec.containerd_sock) + '.ttrpc')}

[debug]
  level = "info"

[plugins.'io.containerd.internal.v1.opt']
  path = {q(str(d / 'opt'))}  # default /opt/containerd: on the host

[plugins.'io.containerd.cri.v1.images']
  snapshotter = "overlayfs"
  [plugins.'io.containerd.cri.v1.images'.pinned_images]
    sandbox = {q(pause_ref)}

[plugins.'io.containerd.cri.v1.runtime']
  # no CAP_SYS_RESOURCE in this VM: runc must not lower oom_score_adj
  restrict_oom_score_adj = true
  disable_apparmor = true
  netns_mounts_under_state_dir = true
  [plugins.'io.containerd.cri.v1.runtime'.containerd]
    default_runtime_name = "runc"
    [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc.options]
        BinaryName = {q(str(bins.runc / 'runc'))}
        Root = {q(str(d / 'runc'))}
        SystemdCgroup = false
{_runsc_runtime(spec) if bins.gvisor else ""}  [plugins.'io.containerd.cri.v1.runtime'.cni]
    bin_dirs = [{q(str(bins.cni))}]
    conf_dir = {q(str(spec.cni_conf_dir))}

[plugins.'io.containerd.grpc.v1.cri']
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"
"""


# gVisor, the sandbox pool's user-space kernel: the handler RuntimeClass `gvisor` names, and runsc's platform on
# this machine kind
# (/dev/kvm here is not hardware virtualization: systrap, gVisor's default, needs only CAP_SYS_PTRACE)
RUNSC_HANDLER = "runsc"
RUNTIME_CLASS = "gvisor"
RUNSC_PLATFORM = "systrap"


def _runsc_runtime(spec: S.NodeSpec) -> str:
    # config version 3's table; the v2 `io.containerd.grpc.v1.cri` one is silently ignored there
    t = f"[plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.{RUNSC_HANDLER}]"
    return f"""    {t}
      runtime_type = "io.containerd.runsc.v1"
      {t[:-1]}.options]
        TypeUrl = "io.containerd.runsc.v1.options"
        ConfigPath = {json.dumps(str(spec.config_dir / 'runsc.toml'))}
"""


def runsc_config(spec: S.NodeSpec, bins: Binaries) -> str:
    """The runsc shim's options (gvisor pkg/shim/v1/runsc/options.go): runsc by path, its state under
    the state folder, and runsc's own flags in [runsc_config] (cgroupfs: this node has no systemd;
    oci-seccomp: runsc ignores a pod's seccomp profile without it, so RuntimeDefault would not apply)."""
    assert bins.gvisor is not None
    q = json.dumps
    d = spec.containerd_dir
    return f"""binary_name = {q(str(bins.gvisor / 'runsc'))}
root = {q(str(d / 'runsc'))}
log_path = {q(str(spec.root / 'runsc-logs' / '%ID%' / 'shim.log'))}
log_level = "info"

[runsc_config]
  platform = "{RUNSC_PLATFORM}"
  systemd-cgroup = "false"
  oci-seccomp = "true"
  debug-log = {q(str(spec.root / 'runsc-logs' / '%ID%' / 'runsc.%COMMAND%.log'))}
"""


def runtime_class() -> dict[str, Any]:
    """RuntimeClass `gvisor` (handler runsc): only the real node has the handler, so its pods are
    scheduled there (the kwok nodes would "run" them without any runtime)."""
    return {
        "apiVersion": "node.k8s.io/v1",
        "kind": "RuntimeClass",
        "metadata": {"name": RUNTIME_CLASS, "labels": {"app.kubernetes.io/managed-by": "dockyard-playground"}},
        "handler": RUNSC_HANDLER,
        "scheduling": {"nodeSelector": {S.NODE_LABEL: "true"}},
    }


def api_endpoint(apiserver_port: int) -> dict[str, Any]:
    """The `kubernetes` Service's endpoint while the real node is up: the relay on the node's address. The
    apiserver advertises 127.0.0.1 and reconciles no endpoint of its own (--endpoint-reconciler-type=none), so
    without it a pod's in-cluster client (KUBERNETES_SERVICE_HOST, the ClusterIP its certificate names) reaches
    nothing."""
    return {
        "apiVersion": "discovery.k8s.io/v1",
        "kind": "EndpointSlice",
        "metadata": {"name": "kubernetes-real-node", "namespace": "default",
                     "labels": {"kubernetes.io/service-name": "kubernetes",
                                "endpointslice.kubernetes.io/managed-by": "dockyard-playground"}},
        "addressType": "IPv4",
        "endpoints": [{"addresses": [S.NODE_IP], "conditions": {"ready": True}, "nodeName": S.NODE_NAME}],
        "ports": [{"name": "https", "port": apiserver_port, "protocol": "TCP"}],
    }


def cni_conflist(spec: S.NodeSpec) -> dict:
    return {
        "cniVersion": "1.0.0",
        "name": "dockyard-playground",
        "plugins": [
            {
                "type": "bridge",
                "bridge": "cni0",
                "isGateway": True,
                "ipMasq": False,
                "hairpinMode": True,
                "ipam": {
                    "type": "host-local",
                    "ranges": [[{"subnet": S.POD_CIDR, "gateway": S.POD_GATEWAY}]],
                    "routes": [{"dst": "0.0.0.0/0"}],
                    "dataDir": str(spec.root / "cni" / "ipam"),
                },
            },
            {"type": "portmap", "capabilities": {"portMappings": True}},
        ],
    }


def kubelet_config(spec: S.NodeSpec, ca_file: str, serving: tuple[str, str]) -> dict:
    return {
        "apiVersion": "kubelet.config.k8s.io/v1beta1",
        "kind": "KubeletConfiguration",
        "failCgroupV1": False,  # this machine has cgroup v1 only
        "cgroupDriver": "cgroupfs",
        "cgroupRoot": spec.cgroup_root,
        "containerRuntimeEndpoint": f"unix://{spec.containerd_sock}",
        "address": S.NODE_IP,
        "port": 10250,
        "readOnlyPort": 0,
        "healthzBindAddress": "127.0.0.1",
        "healthzPort": S.KUBELET_HEALTHZ_PORT,
        "tlsCertFile": serving[0],
        "tlsPrivateKeyFile": serving[1],
        # only the apiserver (client certificate from the playground CA) may call the kubelet
        "authentication": {"anonymous": {"enabled": False}, "webhook": {"enabled": False},
                           "x509": {"clientCAFile": ca_file}},
        "authorization": {"mode": "AlwaysAllow"},
        "clusterDNS": [S.DNS_IP],
        "clusterDomain": S.CLUSTER_DOMAIN,
        "resolvConf": "",
        "podLogsDir": str(spec.root / "pod-logs"),
        "failSwapOn": False,
        "protectKernelDefaults": False,  # its writes land in scratch files (host.py)
        "evictionHard": {"memory.available": "100Mi", "nodefs.available": "1%", "imagefs.available": "1%",
                         "nodefs.inodesFree": "1%"},
        "imageGCHighThresholdPercent": 100,
        "imageGCLowThresholdPercent": 99,
        "maxPods": 40,
        "serializeImagePulls": False,
        "shutdownGracePeriod": "0s",
        "rotateCertificates": False,
        "serverTLSBootstrap": False,
    }


def kube_proxy_config(spec: S.NodeSpec) -> dict:
    return {
        "apiVersion": "kubeproxy.config.k8s.io/v1alpha1",
        "kind": "KubeProxyConfiguration",
        "mode": "iptables",
        "clientConnection": {"kubeconfig": str(spec.kubeconfig("kube-proxy"))},
        "hostnameOverride": spec.name,
        "bindAddress": S.NODE_IP,
        "healthzBindAddress": f"127.0.0.1:{S.KUBE_PROXY_HEALTHZ_PORT}",
        "metricsBindAddress": "127.0.0.1:10249",
        "clusterCIDR": S.POD_CIDR,
        # masquerade everything: pod -> Service -> pod on the same bridge works without relying on
        # bridge netfilter; conntrack sizes and timeouts (global settings) are left alone
        "iptables": {"masqueradeAll": True, "localhostNodePorts": False},
        "conntrack": {"maxPerCore": 0, "min": 0, "tcpEstablishedTimeout": "0s", "tcpCloseWaitTimeout": "0s",
                      "udpTimeout": "0s", "udpStreamTimeout": "0s"},
        "nodePortAddresses": [f"{S.NODE_IP}/32"],
    }


def corefile(spec: S.NodeSpec) -> str:
    # no `forward`: names outside the cluster get no answer from anywhere (the network rule)
    return f""".:53 {{
    bind {S.DNS_IP}
    errors
    health 127.0.0.1:{S.COREDNS_HEALTH_PORT}
    kubernetes {S.CLUSTER_DOMAIN} in-addr.arpa ip6.arpa {{
        kubeconfig {spec.kubeconfig('coredns')} dockyard-playground
        pods insecure
        fallthrough in-addr.arpa ip6.arpa
        ttl 5
    }}
    cache 5
}}
"""


def argv(name: str, spec: S.NodeSpec, bins: Binaries, apiserver_port: int, python: str) -> list[str]:
    c = spec.config_dir
    return {
        "relay": [python, "-m", "generator.playground.node.relay", str(spec.netns_file), str(apiserver_port),
                  S.NODE_IP],
        "containerd": [str(bins.containerd / "containerd"), f"--config={c / 'containerd.toml'}"],
        "kubelet": [
            str(bins.kubernetes_node / "kubelet"),
            f"--config={c / 'kubelet.yaml'}",
            f"--kubeconfig={spec.kubeconfig('kubelet')}",
            f"--root-dir={spec.kubelet_dir}",
            f"--hostname-override={spec.name}",
            f"--node-ip={S.NODE_IP}",
            "--v=1",
        ],
        "kube-proxy": [str(bins.kubernetes_node / "kube-proxy"), f"--config={c / 'kube-proxy.yaml'}", "--v=1"],
        "kube-router": [
            str(bins.kube_router / "kube-router"),
            f"--kubeconfig={spec.kubeconfig('kube-router')}",
            "--run-firewall=true",
            "--run-router=false",
            "--run-service-proxy=false",
            "--enable-cni=false",
            f"--hostname-override={spec.name}",
            f"--service-cluster-ip-range={S.SERVICE_CIDR}",
            "--metrics-port=0",
            f"--health-port={S.KUBE_ROUTER_HEALTH_PORT}",
        ],
        "coredns": [str(bins.coredns / "coredns"), "-conf", str(c / "Corefile")],
    }[name]


def health_port(name: str) -> tuple[int, str] | None:
    """(port, path) of a component's health endpoint on the node namespace's loopback."""
    return {
        "kubelet": (S.KUBELET_HEALTHZ_PORT, "/healthz"),
        "kube-proxy": (S.KUBE_PROXY_HEALTHZ_PORT, "/livez"),
        "kube-router": (S.KUBE_ROUTER_HEALTH_PORT, "/healthz"),
        "coredns": (S.COREDNS_HEALTH_PORT, "/health"),
    }.get(name)


def node_object(spec: S.NodeSpec) -> dict[str, Any]:
    """Created before kubelet registers: labels of a CPU node, the pod range; no kwok annotation and no
    taint: the simulated nodes beside it are tainted instead (nodes.py), so pods that ask for nothing
    (the sandbox pool, `helm test`, a Ray head) run here for real."""
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": spec.name, "labels": {
            S.NODE_LABEL: "true",
            "type": "real",
            "node.kubernetes.io/instance-type": "playground-real-cpu",
            "kubernetes.io/os": "linux",
            "kubernetes.io/arch": "amd64",
            "kubernetes.io/hostname": spec.name,
        }},
        "spec": {"podCIDR": S.POD_CIDR, "podCIDRs": [S.POD_CIDR]},
    }
