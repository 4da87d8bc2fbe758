"""The control plane's components: which binary, which flags, which port, which health endpoint.

No process handling here (startup.py, processes.py) and no file writing (files.py): `argv` is a pure
function of the state, the binaries and the state folder.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from generator.playground.errors import UpError
from generator.playground.state import PlaygroundState

# start order; `down` stops them in reverse (the operator and kwok first, etcd last)
COMPONENTS = [
    "etcd",
    "kube-apiserver",
    "kube-controller-manager",
    "kube-scheduler",
    "kwok",
    "kuberay-operator",
    "volume-provisioner",  # provisioner.py: the simulated nodes' PVs on demand
    "kueue",  # only with `up --kueue` (wanted())
    "agent-sandbox",  # only with `up --agent-sandbox`
]
# component -> the PlaygroundState flag that wants it
OPTIONAL = {"kueue": "kueue", "agent-sandbox": "agent_sandbox"}
# Started through a supervisor that restarts them when they exit (supervise.py), as a kubelet restarts a
# pod's containers: the clients of the apiserver, which end by design when they lose it (the operator's
# leader election). etcd and the apiserver are the cluster's state, not supervised: docs/playground.md.
SUPERVISED = ("kube-controller-manager", "kube-scheduler", "kwok", "kuberay-operator", "volume-provisioner", "kueue",
              "agent-sandbox")
SERVICE_CIDR = "127.32.0.0/16"  # the apiserver accepts a loopback range; nothing routes it
SERVICE_IP = "127.32.0.1"  # the `kubernetes` Service's ClusterIP (first address of the range)
FALLBACK_POD_CIDR = "127.63.0.0/16"  # kwok's --cidr, only for nodes created without a podCIDR
KWOK_LEASE_SECONDS = 40
TOOLS = ("kubernetes", "etcd", "kwok", "kuberay")  # tool cache entries (hack/tools.sh)

# component -> (scheme, Ports field, path) of its health endpoint on 127.0.0.1
HEALTH = {
    "etcd": ("http", "etcd", "/health"),
    "kube-apiserver": ("https", "apiserver", "/readyz"),
    "kube-controller-manager": ("https", "controller_manager", "/healthz"),
    "kube-scheduler": ("https", "scheduler", "/healthz"),
    "kwok": ("https", "kwok", "/healthz"),
    "kuberay-operator": ("http", "kuberay_probe", "/readyz"),
    "volume-provisioner": ("http", "provisioner_probe", "/healthz"),
    "kueue": ("http", "kueue_probe", "/readyz"),
    "agent-sandbox": ("http", "agent_sandbox_probe", "/readyz"),
}


def wanted(state: PlaygroundState, core_only: bool = False) -> list[str]:
    """The components this playground runs, in start order (`core_only`: without the optional ones)."""
    return [c for c in COMPONENTS
            if c not in OPTIONAL or (not core_only and getattr(state, OPTIONAL[c]))]


@dataclass(frozen=True)
class Binaries:
    etcd: str
    kube_apiserver: str
    kube_controller_manager: str
    kube_scheduler: str
    kubectl: str
    kwok: str
    kuberay_operator: str
    kube_version: str = ""

    def paths(self) -> dict[str, str]:
        return {f.replace("_", "-"): p for f, p in vars(self).items() if f != "kube_version"}


def health_url(state: PlaygroundState, name: str) -> str:
    scheme, port, path = HEALTH[name]
    return f"{scheme}://127.0.0.1:{getattr(state.ports, port)}{path}"


def _binaries(kube_version: str = "") -> Binaries:
    from generator.pinned_tools import tool_dir

    k8s = tool_dir("kubernetes")
    return Binaries(
        etcd=str(tool_dir("etcd") / "etcd"),
        kube_apiserver=str(k8s / "kube-apiserver"),
        kube_controller_manager=str(k8s / "kube-controller-manager"),
        kube_scheduler=str(k8s / "kube-scheduler"),
        kubectl=str(k8s / "kubectl"),
        kwok=str(tool_dir("kwok") / "kwok"),
        kuberay_operator=str(tool_dir("kuberay") / "ray-operator"),
        kube_version=kube_version,
    )


def ensure_binaries(say: Callable[[str], None]) -> Binaries:
    """Build whatever playground tool is missing (hack/tools.sh), then return the binary paths."""
    from generator.pinned_tools import playground_kubernetes, playground_targets, tool_dir, tools_script

    bins = _binaries()
    missing = [t for t in TOOLS if not (tool_dir(t) / ".complete").is_file()]
    if missing or not all(Path(p).is_file() for p in bins.paths().values()):
        script = tools_script()
        targets = playground_targets(tuple(missing or TOOLS))  # e.g. kubernetes-1.33 ($DOCKYARD_PLAYGROUND_KUBERNETES)
        say(f"building missing tools ({', '.join(targets)}) with {script}; a cold build takes ~15-25 min on 2 cores")
        rc = subprocess.call(["bash", str(script), *targets])  # progress goes to our stderr
        if rc != 0:
            raise UpError(f"building the playground tools failed (hack/tools.sh exit {rc})")
        bins = _binaries()
    for name, path in bins.paths().items():
        if not Path(path).is_file():
            raise UpError(f"{name} is missing at {path}; run `make tools`")
    return _binaries(playground_kubernetes())


def ensure_kueue(say: Callable[[str], None]) -> Path:
    """The Kueue tool cache entry (binary, CRDs, webhook manifest), built by hack/tools.sh when missing."""
    from generator.pinned_tools import tool_dir, tools_script

    kdir = tool_dir("kueue")
    if not (kdir / ".complete").is_file():
        say("building Kueue with hack/tools.sh kueue (a cold build takes ~5-10 min on 2 cores)")
        if subprocess.call(["bash", str(tools_script()), "kueue"]) != 0:
            raise UpError("building Kueue failed (hack/tools.sh kueue)", "kueue")
    return kdir


def ensure_agent_sandbox(say: Callable[[str], None]) -> Path:
    """The agent-sandbox tool cache entry (controller, CRDs), built by hack/tools.sh when missing."""
    from generator.pinned_tools import tool_dir, tools_script

    adir = tool_dir("agent-sandbox")
    if not (adir / ".complete").is_file():
        say("building agent-sandbox with hack/tools.sh agent-sandbox (a cold build takes ~4 min on 2 cores)")
        if subprocess.call(["bash", str(tools_script()), "agent-sandbox"]) != 0:
            raise UpError("building agent-sandbox failed (hack/tools.sh agent-sandbox)", "agent-sandbox")
    return adir


def agent_sandbox_argv(binary: str, state: PlaygroundState) -> list[str]:
    """agent-sandbox's controller with its extensions (SandboxTemplate, SandboxClaim, SandboxWarmPool), its
    probe on 127.0.0.1, no metrics server; leader election on in kube-system, as KubeRay's operator here, so
    `doctor` judges whether it reconciles by its Lease. Its kubeconfig comes from KUBECONFIG (`env`)."""
    return [binary, "--extensions", "--leader-elect=true", "--leader-election-namespace=kube-system",
            "--metrics-bind-address=0", f"--health-probe-bind-address=127.0.0.1:{state.ports.agent_sandbox_probe}"]


def argv(state: PlaygroundState, bins: Binaries, state_dir: Path) -> dict[str, list[str]]:
    """Every component's command line (node/hooks.py adjusts a few flags for a real node)."""
    p, k = state.ports, state.pki_files
    kc = state_dir / "kubeconfigs"
    serving = [f"--tls-cert-file={k.serving_crt}", f"--tls-private-key-file={k.serving_key}"]
    etcd_url = f"http://127.0.0.1:{p.etcd}"
    peer_url = f"http://127.0.0.1:{p.etcd_peer}"

    def client(name: str) -> list[str]:  # a component's own identity, for the API and for delegated auth
        path = kc / f"{name}.kubeconfig"
        return [f"--kubeconfig={path}", f"--authentication-kubeconfig={path}", f"--authorization-kubeconfig={path}"]

    return {
        "etcd": [
            bins.etcd,
            "--name=playground",
            f"--data-dir={state_dir / 'etcd'}",
            f"--listen-client-urls={etcd_url}",
            f"--advertise-client-urls={etcd_url}",
            f"--listen-peer-urls={peer_url}",
            f"--initial-advertise-peer-urls={peer_url}",
            f"--initial-cluster=playground={peer_url}",
            "--initial-cluster-state=new",
            "--unsafe-no-fsync=true",
            "--log-level=warn",
        ],
        "kube-apiserver": [
            bins.kube_apiserver,
            f"--etcd-servers={etcd_url}",
            "--bind-address=127.0.0.1",
            "--advertise-address=127.0.0.1",
            f"--secure-port={p.apiserver}",
            *serving,
            f"--client-ca-file={k.ca_crt}",
            f"--requestheader-client-ca-file={k.ca_crt}",
            "--requestheader-allowed-names=front-proxy-client",
            "--requestheader-username-headers=X-Remote-User",
            "--requestheader-group-headers=X-Remote-Group",
            "--requestheader-extra-headers-prefix=X-Remote-Extra-",
            f"--proxy-client-cert-file={k.front_proxy_crt}",
            f"--proxy-client-key-file={k.front_proxy_key}",
            f"--token-auth-file={state_dir / 'tokens.csv'}",
            "--authorization-mode=Node,RBAC",
            "--enable-admission-plugins=NodeRestriction,PodSecurity,ResourceQuota,LimitRanger,Priority,ServiceAccount",
            "--service-account-issuer=https://kubernetes.default.svc.cluster.local",
            f"--service-account-key-file={k.sa_pub}",
            f"--service-account-signing-key-file={k.sa_key}",
            f"--service-cluster-ip-range={SERVICE_CIDR}",
            "--endpoint-reconciler-type=none",
            "--kubelet-preferred-address-types=InternalIP",
            f"--kubelet-certificate-authority={k.ca_crt}",
            "--allow-privileged=true",
            "--profiling=false",
            "--event-ttl=2h",
        ],
        "kube-controller-manager": [
            bins.kube_controller_manager,
            *client("kube-controller-manager"),
            "--bind-address=127.0.0.1",
            f"--secure-port={p.controller_manager}",
            *serving,
            "--leader-elect=false",
            f"--service-account-private-key-file={k.sa_key}",
            f"--root-ca-file={k.ca_crt}",
            f"--cluster-signing-cert-file={k.ca_crt}",
            f"--cluster-signing-key-file={k.ca_key}",
            # Endpoints/EndpointSlices cannot hold loopback addresses (API validation), and every pod
            # IP here is loopback: these controllers could only fail, so they are off.
            "--controllers=*,-endpoints-controller,-endpointslice-controller,-endpointslice-mirroring-controller",
            f"--service-cluster-ip-range={SERVICE_CIDR}",
            "--profiling=false",
        ],
        "kube-scheduler": [
            bins.kube_scheduler,
            *client("kube-scheduler"),
            "--bind-address=127.0.0.1",
            f"--secure-port={p.scheduler}",
            *serving,
            "--leader-elect=false",
            "--profiling=false",
        ],
        "kwok": [
            bins.kwok,
            f"--kubeconfig={kc / 'kwok.kubeconfig'}",
            f"--config={state_dir / 'kwok.yaml'}",
            "--manage-all-nodes=true",
            "--node-ip=127.0.0.1",
            f"--node-port={p.kwok}",
            f"--server-address=127.0.0.1:{p.kwok}",
            *serving,
            f"--cidr={FALLBACK_POD_CIDR}",
            f"--node-lease-duration-seconds={KWOK_LEASE_SECONDS}",
        ],
        "kuberay-operator": [
            bins.kuberay_operator,
            f"--kubeconfig={kc / 'kuberay-operator.kubeconfig'}",
            # on, as in KubeRay's own chart: `doctor` judges whether it reconciles by its leader Lease
            "--enable-leader-election=true",
            "--leader-election-namespace=kube-system",
            # The dashboard of a RayJob's cluster is reached through the apiserver's service proxy,
            # never by resolving `<head-svc>.<ns>.svc.cluster.local`: see docs/playground.md.
            "--use-kubernetes-proxy=true",
            "--metrics-addr=0",
            f"--health-probe-bind-address=127.0.0.1:{p.kuberay_probe}",
            "--log-stdout-encoder=console",
        ],
        "volume-provisioner": [sys.executable, "-m", "generator.playground.provisioner", "--state-dir", str(state_dir),
                               "--port", str(p.provisioner_probe)],
    }


def env(name: str, state_dir: Path) -> dict[str, str] | None:
    """Extra environment of a component (the operator and Kueue read their kubeconfig from KUBECONFIG)."""
    if name in ("kuberay-operator", "kueue", "agent-sandbox"):
        return {"KUBECONFIG": str(state_dir / "kubeconfigs" / f"{name}.kubeconfig")}
    return None
