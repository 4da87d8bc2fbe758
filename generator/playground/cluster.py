"""Bring the playground up, report on it, and tear it down.

State lives in one folder outside the repo (see `generator.playground.default_state_dir`):

    state.json        ports, options, and one record per process {pid, start_time, exe, log}
    kubeconfig        the admin kubeconfig (token auth) printed as `export KUBECONFIG=...`
    kubeconfigs/      one kubeconfig per component identity
    pki/              CA, loopback serving certificate, service-account key pair
    tokens.csv        the apiserver's static token file
    kwok.yaml         kwok's configuration: stages and the ClusterLogs rule
    pod.log           the CRI-format log file kwok serves for `kubectl logs` of any simulated pod
    etcd/             etcd's data
    logs/<component>.log

Every component binds 127.0.0.1 on a port picked free at `up`, so playgrounds in different state
folders do not collide.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path
from typing import TextIO

from generator.playground import processes as procs
from generator.playground.nodes import POD_CIDR, Shape

COMPONENTS = [
    "etcd",
    "kube-apiserver",
    "kube-controller-manager",
    "kube-scheduler",
    "kwok",
    "kuberay-operator",
]
SERVICE_CIDR = "127.32.0.0/16"  # the apiserver accepts a loopback range; nothing routes it
SERVICE_IP = "127.32.0.1"  # the `kubernetes` Service's ClusterIP (first address of the range)
FALLBACK_POD_CIDR = "127.63.0.0/16"  # kwok's --cidr, only for nodes created without a podCIDR
KWOK_STAGES = [
    "node/fast/node-initialize.yaml",
    "node/heartbeat-with-lease/node-heartbeat-with-lease.yaml",
    "pod/fast/pod-ready.yaml",
    "pod/fast/pod-delete.yaml",
    # pod/fast/pod-complete.yaml is left out on purpose: Job pods (the RayJob submitter) stay Running.
]
STATE_FILE = "state.json"


class UpError(RuntimeError):
    def __init__(self, message: str, component: str | None = None):
        super().__init__(message)
        self.component = component


# ---------------------------------------------------------------- state


def load_state(state_dir: Path) -> dict | None:
    try:
        return json.loads((state_dir / STATE_FILE).read_text())
    except (FileNotFoundError, ValueError):
        return None


def save_state(state_dir: Path, state: dict) -> None:
    tmp = state_dir / (STATE_FILE + ".tmp")
    tmp.write_text(json.dumps(state, indent=2, sort_keys=True))
    tmp.replace(state_dir / STATE_FILE)


@contextlib.contextmanager
def locked(state_dir: Path):
    """Serialise up/down on one state folder (the lock file sits beside it, so `down` can remove it)."""
    state_dir.parent.mkdir(parents=True, exist_ok=True)
    lock = state_dir.parent / f".{state_dir.name}.lock"
    with open(lock, "w") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def _removable(state_dir: Path) -> bool:
    """Only a folder we made (it has state.json) or an empty one is ever deleted."""
    return (state_dir / STATE_FILE).exists() or not any(state_dir.iterdir())


def records(state: dict) -> list[dict]:
    return [state["components"][c] for c in COMPONENTS if c in state.get("components", {})]


# ---------------------------------------------------------------- health


def _health_url(state: dict, name: str) -> str:
    p = state["ports"]
    return {
        "etcd": f"http://127.0.0.1:{p['etcd']}/health",
        "kube-apiserver": f"https://127.0.0.1:{p['apiserver']}/readyz",
        "kube-controller-manager": f"https://127.0.0.1:{p['controller_manager']}/healthz",
        "kube-scheduler": f"https://127.0.0.1:{p['scheduler']}/healthz",
        "kwok": f"https://127.0.0.1:{p['kwok']}/healthz",
        "kuberay-operator": f"http://127.0.0.1:{p['kuberay_probe']}/readyz",
    }[name]


def component_health(state: dict, name: str) -> tuple[bool, str]:
    """(healthy, detail) of one component: its process is ours and alive, and its endpoint says ok."""
    from generator.playground.kubeapi import get_raw

    rec = state.get("components", {}).get(name)
    if not rec:
        return False, "not started"
    if not procs.is_running(rec):
        return False, f"process {rec['pid']} is not running (log: {rec['log']})"
    url = _health_url(state, name)
    token = state["tokens"]["admin"] if name == "kube-apiserver" else None
    try:
        status, body = get_raw(url, ca_file=state["pki"]["ca_crt"], token=token, timeout=3)
    except OSError as exc:
        return False, f"pid {rec['pid']}, {url}: {exc}"
    text = body.decode(errors="replace").strip()
    if status != 200:
        return False, f"pid {rec['pid']}, {url}: HTTP {status} {text[:200]}"
    if name == "etcd" and '"health":"true"' not in text.replace(" ", ""):
        return False, f"pid {rec['pid']}, {url}: {text[:200]}"
    return True, f"pid {rec['pid']}, {url}"


def api_for(state: dict):
    from generator.playground.kubeapi import Api

    return Api(state["server"], state["tokens"]["admin"], state["pki"]["ca_crt"])


def node_summary(state: dict) -> dict:
    """{'total', 'ready', 'gpu_nodes', 'cpu_nodes', 'gpus'} as the apiserver reports them."""
    nodes = api_for(state).get("/api/v1/nodes", timeout=10)["items"]
    out = {"total": len(nodes), "ready": 0, "gpu_nodes": 0, "cpu_nodes": 0, "gpus": 0, "names": []}
    for n in nodes:
        out["names"].append(n["metadata"]["name"])
        conds = {c["type"]: c["status"] for c in (n.get("status") or {}).get("conditions") or []}
        if conds.get("Ready") == "True":
            out["ready"] += 1
        gpus = int(n.get("status", {}).get("capacity", {}).get("nvidia.com/gpu", "0") or 0)
        out["gpus"] += gpus
        out["gpu_nodes" if gpus else "cpu_nodes"] += 1
    return out


# ---------------------------------------------------------------- config files


def _kubeconfig(server: str, ca_file: str, token: str, user: str) -> dict:
    import base64

    ca = base64.b64encode(Path(ca_file).read_bytes()).decode()
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "dockyard-playground", "cluster": {"server": server, "certificate-authority-data": ca}}],
        "users": [{"name": user, "user": {"token": token}}],
        "contexts": [{"name": "dockyard-playground", "context": {"cluster": "dockyard-playground", "user": user}}],
        "current-context": "dockyard-playground",
        "preferences": {},
    }


def _write_yaml(path: Path, docs: list[dict] | dict, private: bool = False) -> None:
    import yaml

    if isinstance(docs, dict):
        text = yaml.safe_dump(docs, sort_keys=False)
    else:
        text = yaml.safe_dump_all(docs, sort_keys=False)
    path.write_text(text)
    if private:
        path.chmod(0o600)


def _write_pod_log(path: Path, state_dir: Path) -> None:
    ts = time.strftime("%Y-%m-%dT%H:%M:%S.000000000Z", time.gmtime())
    lines = [
        "[dockyard-k8s playground] this pod runs on a simulated kwok node: it was scheduled, admitted",
        "[dockyard-k8s playground] and marked Running/Ready, but no container process exists.",
        f"[dockyard-k8s playground] these lines are served by kwok from {path}",
        f"[dockyard-k8s playground] component logs: {state_dir / 'logs'}",
    ]
    path.write_text("".join(f"{ts} stdout F {line}\n" for line in lines))


def _kwok_config(state_dir: Path, kwok_dir: Path, lease_seconds: int) -> list[dict]:
    import yaml

    docs: list[dict] = [
        {
            "apiVersion": "config.kwok.x-k8s.io/v1alpha1",
            "kind": "KwokConfiguration",
            "metadata": {"name": "dockyard-playground"},
            "options": {
                "enableDebuggingHandlers": True,
                "enableProfilingHandler": False,
                "nodeLeaseDurationSeconds": lease_seconds,
                # kwok does not default these when a KwokConfiguration is given: its defaults, spelt out
                "podPlayStageParallelism": 4,
                "nodePlayStageParallelism": 4,
                "nodeLeaseParallelism": 4,
                "podsOnNodeSyncParallelism": 1,
                "enablePodsOnNodeSyncListPager": True,
                "enablePodsOnNodeSyncStreamWatch": False,
            },
        }
    ]
    for rel in KWOK_STAGES:
        src = kwok_dir / "stages" / rel
        docs.extend(d for d in yaml.safe_load_all(src.read_text()) if d)
    docs.append(
        {
            "apiVersion": "kwok.x-k8s.io/v1alpha1",
            "kind": "ClusterLogs",
            "metadata": {"name": "dockyard-playground-logs"},
            "spec": {"logs": [{"logsFile": str(state_dir / "pod.log"), "follow": False}]},
        }
    )
    # Port-forwards to the Ray dashboard and the sandbox executor reach a stub over stdin/stdout.
    stub = str(Path(__file__).with_name("forward_stub.py"))
    docs.append(
        {
            "apiVersion": "kwok.x-k8s.io/v1alpha1",
            "kind": "ClusterPortForward",
            "metadata": {"name": "dockyard-playground-forwards"},
            "spec": {"forwards": [
                {"ports": [8265], "command": [sys.executable, stub, "Ray dashboard"]},
                {"ports": [9090], "command": [sys.executable, stub, "sandbox executor"]},
            ]},
        }
    )
    return docs


# ---------------------------------------------------------------- binaries


def _binaries() -> dict[str, str]:
    from generator.tools import tool_dir

    k8s = tool_dir("kubernetes")
    return {
        "etcd": str(tool_dir("etcd") / "etcd"),
        "kube-apiserver": str(k8s / "kube-apiserver"),
        "kube-controller-manager": str(k8s / "kube-controller-manager"),
        "kube-scheduler": str(k8s / "kube-scheduler"),
        "kubectl": str(k8s / "kubectl"),
        "kwok": str(tool_dir("kwok") / "kwok"),
        "kuberay-operator": str(tool_dir("kuberay") / "ray-operator"),
    }


def ensure_binaries(say: Callable[[str], None]) -> dict[str, str]:
    """Build whatever playground tool is missing (hack/tools.sh), then return the binary paths."""
    from generator.tools import REPO, tool_dir, versions

    bins = _binaries()
    missing = [t for t in ("kubernetes", "etcd", "kwok", "kuberay") if not (tool_dir(t) / ".complete").is_file()]
    if missing or not all(Path(p).is_file() for p in bins.values()):
        script = REPO / "hack" / "tools.sh"
        targets = missing or ["kubernetes", "etcd", "kwok", "kuberay"]
        say(f"building missing tools ({', '.join(targets)}) with {script}; a cold build takes ~15-25 min on 2 cores")
        rc = subprocess.call(["bash", str(script), *targets])  # progress goes to our stderr
        if rc != 0:
            raise UpError(f"building the playground tools failed (hack/tools.sh exit {rc})")
        bins = _binaries()
    for name, path in bins.items():
        if not Path(path).is_file():
            raise UpError(f"{name} is missing at {path}; run `make tools`")
    bins["kube_version"] = versions()["KUBERNETES_VERSION"]
    return bins


# ---------------------------------------------------------------- up


def _wait(what: str, check: Callable[[], tuple[bool, str]], deadline: float, component: str | None = None) -> None:
    detail = ""
    while time.monotonic() < deadline:
        ok, detail = check()
        if ok:
            return
        procs.reap()
        time.sleep(0.2)
    raise UpError(f"timed out waiting for {what}: {detail}", component)


def _alive_check(state: dict, name: str) -> Callable[[], tuple[bool, str]]:
    def check() -> tuple[bool, str]:
        rec = state["components"][name]
        if not procs.is_running(rec):
            raise UpError(f"{name} exited during start-up", name)
        return component_health(state, name)

    return check


def _start(state: dict, state_dir: Path, name: str, argv: list[str], env: dict | None = None) -> None:
    rec = procs.spawn(name, argv, state_dir / "logs" / f"{name}.log", cwd=state_dir, env=env)
    state["components"][name] = rec
    save_state(state_dir, state)


def _argv(state: dict, bins: dict[str, str], state_dir: Path) -> dict[str, list[str]]:
    p, k = state["ports"], state["pki"]
    kc = state_dir / "kubeconfigs"
    serving = [f"--tls-cert-file={k['serving_crt']}", f"--tls-private-key-file={k['serving_key']}"]
    etcd_url = f"http://127.0.0.1:{p['etcd']}"
    peer_url = f"http://127.0.0.1:{p['etcd_peer']}"
    return {
        "etcd": [
            bins["etcd"],
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
            bins["kube-apiserver"],
            f"--etcd-servers={etcd_url}",
            "--bind-address=127.0.0.1",
            "--advertise-address=127.0.0.1",
            f"--secure-port={p['apiserver']}",
            *serving,
            f"--client-ca-file={k['ca_crt']}",
            f"--requestheader-client-ca-file={k['ca_crt']}",
            "--requestheader-allowed-names=front-proxy-client",
            "--requestheader-username-headers=X-Remote-User",
            "--requestheader-group-headers=X-Remote-Group",
            "--requestheader-extra-headers-prefix=X-Remote-Extra-",
            f"--proxy-client-cert-file={k['front_proxy_crt']}",
            f"--proxy-client-key-file={k['front_proxy_key']}",
            f"--token-auth-file={state_dir / 'tokens.csv'}",
            "--authorization-mode=Node,RBAC",
            "--enable-admission-plugins=NodeRestriction,PodSecurity,ResourceQuota,LimitRanger,Priority,ServiceAccount",
            "--service-account-issuer=https://kubernetes.default.svc.cluster.local",
            f"--service-account-key-file={k['sa_pub']}",
            f"--service-account-signing-key-file={k['sa_key']}",
            f"--service-cluster-ip-range={SERVICE_CIDR}",
            "--endpoint-reconciler-type=none",
            "--kubelet-preferred-address-types=InternalIP",
            f"--kubelet-certificate-authority={k['ca_crt']}",
            "--allow-privileged=true",
            "--profiling=false",
            "--event-ttl=2h",
        ],
        "kube-controller-manager": [
            bins["kube-controller-manager"],
            f"--kubeconfig={kc / 'kube-controller-manager.kubeconfig'}",
            f"--authentication-kubeconfig={kc / 'kube-controller-manager.kubeconfig'}",
            f"--authorization-kubeconfig={kc / 'kube-controller-manager.kubeconfig'}",
            "--bind-address=127.0.0.1",
            f"--secure-port={p['controller_manager']}",
            *serving,
            "--leader-elect=false",
            f"--service-account-private-key-file={k['sa_key']}",
            f"--root-ca-file={k['ca_crt']}",
            f"--cluster-signing-cert-file={k['ca_crt']}",
            f"--cluster-signing-key-file={k['ca_key']}",
            # Endpoints/EndpointSlices cannot hold loopback addresses (API validation), and every pod
            # IP here is loopback: these controllers could only fail, so they are off.
            "--controllers=*,-endpoints-controller,-endpointslice-controller,-endpointslice-mirroring-controller",
            f"--service-cluster-ip-range={SERVICE_CIDR}",
            "--profiling=false",
        ],
        "kube-scheduler": [
            bins["kube-scheduler"],
            f"--kubeconfig={kc / 'kube-scheduler.kubeconfig'}",
            f"--authentication-kubeconfig={kc / 'kube-scheduler.kubeconfig'}",
            f"--authorization-kubeconfig={kc / 'kube-scheduler.kubeconfig'}",
            "--bind-address=127.0.0.1",
            f"--secure-port={p['scheduler']}",
            *serving,
            "--leader-elect=false",
            "--profiling=false",
        ],
        "kwok": [
            bins["kwok"],
            f"--kubeconfig={kc / 'kwok.kubeconfig'}",
            f"--config={state_dir / 'kwok.yaml'}",
            "--manage-all-nodes=true",
            "--node-ip=127.0.0.1",
            f"--node-port={p['kwok']}",
            f"--server-address=127.0.0.1:{p['kwok']}",
            *serving,
            f"--cidr={FALLBACK_POD_CIDR}",
            "--node-lease-duration-seconds=40",
        ],
        "kuberay-operator": [
            bins["kuberay-operator"],
            f"--kubeconfig={kc / 'kuberay-operator.kubeconfig'}",
            "--enable-leader-election=false",
            # The dashboard of a RayJob's cluster is reached through the apiserver's service proxy,
            # never by resolving `<head-svc>.<ns>.svc.cluster.local`: see docs/playground.md.
            "--use-kubernetes-proxy=true",
            "--metrics-addr=0",
            f"--health-probe-bind-address=127.0.0.1:{p['kuberay_probe']}",
            "--log-stdout-encoder=console",
        ],
    }


def _install_crds(api, crd_dir: Path) -> list[str]:
    import yaml

    """Server-side apply each CRD file's YAML as it is (parsing 4 MB of YAML in Python costs seconds)."""
    import re
    from concurrent.futures import ThreadPoolExecutor

    docs = []
    for path in sorted(crd_dir.glob("*.yaml")):
        text = path.read_text()
        body = re.sub(r"\A(\s*---\s*\n)", "", text)
        head = body[:2000]
        name = re.search(r"^metadata:\n(?:  .*\n)*?  name: (\S+)$", head, re.M)
        if "\n---" in body or "kind: CustomResourceDefinition" not in head or not name:
            # not the one-CRD-per-file layout controller-gen writes: parse it properly
            for doc in yaml.load_all(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader)):
                if doc and doc.get("kind") == "CustomResourceDefinition":
                    docs.append((doc["metadata"]["name"], doc))
            continue
        docs.append((name.group(1), body))
    if not docs:
        raise UpError(f"no CustomResourceDefinition found under {crd_dir}")

    def apply(item: tuple[str, object]) -> str:
        name, doc = item
        api.apply(f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{name}", doc)
        return name

    with ThreadPoolExecutor(max_workers=len(docs)) as pool:  # one connection each
        return list(pool.map(apply, docs))


def _crds_established(api, names: list[str]) -> tuple[bool, str]:
    from generator.playground.kubeapi import ApiError

    for name in names:
        try:
            crd = api.get(f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{name}")
        except (ApiError, OSError) as exc:
            return False, f"{name}: {exc}"
        conds = {c["type"]: c["status"] for c in (crd.get("status") or {}).get("conditions") or []}
        if conds.get("Established") != "True":
            return False, f"{name} not Established yet"
    return True, "all Established"


def _cluster_ready(state: dict, expected_nodes: int) -> tuple[bool, str]:
    from generator.playground.kubeapi import ApiError

    for name in COMPONENTS:
        ok, detail = component_health(state, name)
        if not ok:
            if not procs.is_running(state["components"][name]):
                raise UpError(f"{name} exited during start-up", name)
            return False, f"{name}: {detail}"
    try:
        summary = node_summary(state)
        api_for(state).get("/api/v1/namespaces/default/serviceaccounts/default")
    except (ApiError, OSError) as exc:
        return False, str(exc)
    if summary["ready"] < expected_nodes:
        return False, f"{summary['ready']}/{expected_nodes} nodes Ready"
    return True, "ready"


def up(state_dir: Path, shape: Shape, timeout: float = 120.0, out: TextIO = sys.stdout, real_node: bool = False) -> int:
    def say(msg: str) -> None:
        print(msg, file=out, flush=True)

    with locked(state_dir):
        state = load_state(state_dir)
        if state and not state.get("failed"):
            unhealthy = [(n, d) for n in COMPONENTS for ok, d in [component_health(state, n)] if not ok]
            unhealthy += [(n, d) for n, ok, d in _node_health(state) if not ok]  # the real node, if any
            if real_node != bool(state.get("real_node")):
                unhealthy.append(("real node", "wanted" if real_node else "not wanted"))
            if not unhealthy:
                say(f"playground already running ({state_dir})")
                if state.get("shape") != asdict(shape):
                    say(f"  note: it was started with {state.get('shape')}; `down` first to change its shape")
                _print_summary(state, say)
                return 0
            say(f"playground at {state_dir} is not healthy ({'; '.join(f'{n}: {d}' for n, d in unhealthy)}); restarting it")
        if state:
            _node_teardown(state_dir, state, say)
            procs.stop(list(reversed(records(state))))
        if state_dir.exists():
            if not _removable(state_dir):
                say(f"error: {state_dir} exists and is not a playground state folder (no {STATE_FILE}); pick another --state-dir")
                return 2
            shutil.rmtree(state_dir)
        try:
            bins = ensure_binaries(say)
        except UpError as exc:
            say(f"error: {exc}")
            return 1
        return _fresh_up(state_dir, shape, bins, timeout, say, real_node)


def _fresh_up(state_dir: Path, shape: Shape, bins: dict[str, str], timeout: float, say: Callable[[str], None],
              real_node: bool = False) -> int:
    from generator.playground import pki
    from generator.playground.nodes import manifests
    from generator.tools import tool_dir

    t0 = time.monotonic()
    deadline = t0 + timeout
    state_dir.mkdir(parents=True, exist_ok=True)
    state_dir.chmod(0o700)
    (state_dir / STATE_FILE).write_text("{}")  # marks the folder as ours before anything else
    (state_dir / "logs").mkdir()
    (state_dir / "kubeconfigs").mkdir()
    port_names = ["etcd", "etcd_peer", "apiserver", "controller_manager", "scheduler", "kwok", "kuberay_probe"]
    ports = dict(zip(port_names, procs.free_ports(len(port_names))))
    server = f"https://127.0.0.1:{ports['apiserver']}"
    state: dict = {
        "version": 1,
        "state_dir": str(state_dir),
        "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "shape": asdict(shape),
        "ports": ports,
        "server": server,
        "service_cidr": SERVICE_CIDR,
        "pod_cidr": POD_CIDR,
        "kubeconfig": str(state_dir / "kubeconfig"),
        "kube_version": bins["kube_version"],
        "components": {},
    }
    try:
        state["pki"] = pki.generate(state_dir / "pki", SERVICE_IP)
        state["tokens"] = pki.write_tokens(state_dir / "tokens.csv")
        for ident, token in state["tokens"].items():
            doc = _kubeconfig(server, state["pki"]["ca_crt"], token, ident)
            _write_yaml(state_dir / "kubeconfigs" / f"{ident}.kubeconfig", doc, private=True)
        _write_yaml(state_dir / "kubeconfig", _kubeconfig(server, state["pki"]["ca_crt"], state["tokens"]["admin"], "admin"), private=True)
        _write_pod_log(state_dir / "pod.log", state_dir)
        _write_yaml(state_dir / "kwok.yaml", _kwok_config(state_dir, tool_dir("kwok"), 40))
        save_state(state_dir, state)
        argv = _argv(state, bins, state_dir)
        if real_node:  # generator/playground/node: checks, identities, the control plane's flags
            from generator.playground import node as real

            real.prepare(state, state_dir, argv, say)
            save_state(state_dir, state)

        _start(state, state_dir, "etcd", argv["etcd"])
        _wait("etcd", _alive_check(state, "etcd"), deadline, "etcd")
        _start(state, state_dir, "kube-apiserver", argv["kube-apiserver"])
        _wait("kube-apiserver /readyz", _alive_check(state, "kube-apiserver"), deadline, "kube-apiserver")
        say(f"  apiserver ready on {server} ({time.monotonic() - t0:.1f} s)")
        for name in ("kube-controller-manager", "kube-scheduler", "kwok"):
            _start(state, state_dir, name, argv[name])

        api = api_for(state)
        crds = _install_crds(api, tool_dir("kuberay") / "crds")
        for node in manifests(shape, bins["kube_version"]):
            api.create("/api/v1/nodes", node)
        _wait("KubeRay CRDs to be Established", lambda: _crds_established(api, crds), deadline)
        say(f"  {len(crds)} KubeRay CRDs installed server-side ({time.monotonic() - t0:.1f} s)")
        _start(state, state_dir, "kuberay-operator", argv["kuberay-operator"],
               env={"KUBECONFIG": str(state_dir / "kubeconfigs" / "kuberay-operator.kubeconfig")})
        expected = shape.gpu_nodes + shape.cpu_nodes
        _wait("all components healthy and nodes Ready", lambda: _cluster_ready(state, expected), deadline)
        if real_node:
            real.start(state, state_dir, say, time.monotonic() + max(timeout, 240.0))
    except BaseException as exc:
        component = getattr(exc, "component", None)
        say(f"error: playground start-up failed: {exc}")
        if not isinstance(exc, (UpError, KeyboardInterrupt)):
            import traceback

            say(traceback.format_exc().rstrip())
        if component and component in state.get("components", {}):
            say(f"--- last lines of {state['components'][component]['log']}:\n{procs.tail(state['components'][component]['log'])}")
        _node_teardown(state_dir, state, say)
        procs.stop(list(reversed(records(state))))
        state["failed"] = True
        with contextlib.suppress(OSError):
            save_state(state_dir, state)
        say(f"logs kept in {state_dir / 'logs'}; `down` removes them")
        if not isinstance(exc, Exception):
            raise
        return 1
    state["ready_seconds"] = round(time.monotonic() - t0, 1)
    save_state(state_dir, state)
    say(f"playground up in {state['ready_seconds']} s ({state_dir})")
    _print_summary(state, say)
    return 0


def _print_summary(state: dict, say: Callable[[str], None]) -> None:
    try:
        s = node_summary(state)
        say(f"  nodes: {s['total']} ({s['ready']} Ready): {s['gpu_nodes']} GPU with {s['gpus']} nvidia.com/gpu in all, {s['cpu_nodes']} CPU")
    except Exception as exc:
        say(f"  nodes: unknown ({exc})")
    say(f"export KUBECONFIG={state['kubeconfig']}")


# ---------------------------------------------------------------- status, down


def status(state_dir: Path, out: TextIO = sys.stdout) -> int:
    def say(msg: str) -> None:
        print(msg, file=out, flush=True)

    state = load_state(state_dir)
    if not state:
        say(f"no playground at {state_dir} (start one with `dockyard-k8s playground up`)")
        return 1
    say(f"playground {state_dir}" + (" (last start-up FAILED)" if state.get("failed") else ""))
    healthy = True
    for name in COMPONENTS:
        ok, detail = component_health(state, name)
        healthy &= ok
        say(f"  {name:<25} {'ok  ' if ok else 'DOWN'} {detail}")
    for name, ok, detail in _node_health(state):
        healthy &= ok
        say(f"  {name:<25} {'ok  ' if ok else 'DOWN'} {detail}")
    if healthy:
        _print_summary(state, say)
    return 0 if healthy and not state.get("failed") else 1


def down(state_dir: Path, out: TextIO = sys.stdout) -> int:
    def say(msg: str) -> None:
        print(msg, file=out, flush=True)

    with locked(state_dir):
        state = load_state(state_dir)
        if not state:
            if state_dir.exists() and (state_dir / STATE_FILE).exists():
                if _node_teardown(state_dir, None, say):
                    return 1
                shutil.rmtree(state_dir)  # a start-up that died before recording any process
                say(f"removed {state_dir} (no process was recorded)")
            else:
                say(f"no playground at {state_dir}")
            return 0
        if _node_teardown(state_dir, state, say):
            say("error: the real node could not be removed completely (see above); run `down` again")
            return 1
        recs = records(state)
        # stop the operator and kwok first, etcd last
        stopped = procs.stop(list(reversed(recs)))
        left = [r for r in recs if procs.is_running(r)]
        if left:
            say("error: still running: " + ", ".join(f"{r['name']} (pid {r['pid']})" for r in left))
            return 1
        shutil.rmtree(state_dir)
        say(f"playground down: stopped {len(stopped)} processes ({', '.join(stopped) or 'none running'}); removed {state_dir}")
        return 0


def _node_health(state: dict) -> list[tuple[str, bool, str]]:
    if not state.get("real_node"):
        return []
    from generator.playground import node

    return node.health(state)


def _node_teardown(state_dir: Path, state: dict | None, say: Callable[[str], None]) -> list[str]:
    """Remove the real node (generator/playground/node) when this playground has or had one."""
    if not (state or {}).get("real_node") and not (state_dir / "node").exists():
        return []
    from generator.playground import node

    return node.teardown(state_dir, state, say)


def pids(state_dir: Path) -> list[int]:
    state = load_state(state_dir) or {}
    return [int(r["pid"]) for r in records(state)] if state else []
