"""The real node's lifecycle: the hooks generator/playground/lifecycle.py calls (`state` is the typed
`PlaygroundState`; the node's own record is `state.real_node`):

    prepare(state, state_dir, argv)   before the control plane starts: checks, certificates,
                                      identities, the control plane's flags for a real node
    start(state, state_dir, say, deadline)   after the control plane is ready
    health(state) -> [(name, ok, detail)]    for `status` and the idempotent `up`
    teardown(state_dir, state)        at `down` and when `up` fails half way

Processes start through ../startup.py, as the control plane's do.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from generator.playground import startup
from generator.playground.errors import NodeError
from generator.playground.node import components as C
from generator.playground.node import host
from generator.playground.node import spec as S
from generator.playground.state import PlaygroundState, Process, RealNodeState

Say = Callable[[str], None]

TOOLS = {  # cache entry -> its pin in the table of tools, generator/tool_table.toml (`hack/tools.sh node` builds all)
    "kubernetes-node": "KUBERNETES_VERSION",
    "runc": "RUNC_VERSION",
    "containerd": "CONTAINERD_VERSION",
    "cni-plugins": "CNI_PLUGINS_VERSION",
    "coredns": "COREDNS_VERSION",
    "kube-router": "KUBE_ROUTER_VERSION",
    "node-images": "NODE_IMAGES_VERSION",
    "gvisor": "GVISOR_VERSION",  # runsc + its shim: the `runsc` handler of RuntimeClass gvisor (components.py)
    "metrics-server": "METRICS_SERVER_VERSION",  # the resource metrics API an HPA reads (metrics.py)
    "local-path-provisioner": "LOCAL_PATH_PROVISIONER_VERSION",  # the default StorageClass (local_path.py)
}
ADMISSION = "--enable-admission-plugins="
__all__ = ["NodeError", "adjust_control_plane", "health", "preflight", "prepare", "start", "teardown"]


def _tool_dirs() -> dict[str, Path]:
    from generator.pinned_tools import cache_dir, versions

    v = versions()
    return {t: cache_dir() / f"{t}-{v[k]}" for t, k in TOOLS.items()}


def ensure_binaries(say: Say) -> C.Binaries:
    from generator.pinned_tools import tools_script

    dirs = _tool_dirs()
    missing = [t for t, d in dirs.items() if not (d / ".complete").is_file()]
    if missing:
        say(f"  building the real node's tools ({', '.join(missing)}); a cold build takes ~10 min on 2 cores")
        rc = subprocess.call(["bash", str(tools_script()), *missing])
        if rc != 0:
            raise NodeError(f"building the real node's tools failed (hack/tools.sh exit {rc})")
    return C.Binaries(
        containerd=dirs["containerd"], runc=dirs["runc"], cni=dirs["cni-plugins"],
        kubernetes_node=dirs["kubernetes-node"], kube_router=dirs["kube-router"],
        coredns=dirs["coredns"], images=dirs["node-images"], gvisor=dirs["gvisor"],
        metrics_server=dirs["metrics-server"], local_path=dirs["local-path-provisioner"],
    )


def preflight() -> None:
    """Raise NodeError naming what this machine lacks (one line) before anything is started."""
    from generator.pinned_tools import PLAYGROUND_KUBERNETES_ENV, playground_kubernetes, tools_script, versions

    kubelet, control = versions()["KUBERNETES_VERSION"], playground_kubernetes()
    if control != kubelet:  # a kubelet newer than its apiserver is outside Kubernetes' version skew
        raise NodeError(f"the real node's kubelet is {kubelet}, newer than the control plane's {control} "
                        f"(${PLAYGROUND_KUBERNETES_ENV}); unset it for --real-node")
    missing = host.missing_features()
    deps = subprocess.run(["bash", str(tools_script().with_name("node-deps.sh")), "--check"],
                          capture_output=True, text=True)
    if deps.returncode != 0:
        missing.append(deps.stdout.strip() or "Debian packages (run `bash hack/node-deps.sh`)")
    if missing:
        raise NodeError("the real node needs " + "; ".join(missing)
                        + ". Run without --real-node to use only simulated nodes.")
    busy = host.range_in_use()
    if busy:
        raise NodeError(f"another playground's real node holds {S.POD_CIDR} ({busy}); `down` it first, "
                        "or run without --real-node")


def _set_flag(args: list[str], prefix: str, value: str | None) -> None:
    """Replace (or drop, value None) the `prefix...` flag in `args`; append it when absent."""
    hits = [i for i, a in enumerate(args) if a.startswith(prefix)]
    for i in reversed(hits):
        del args[i]
    if value is not None:
        args.append(value)


def adjust_control_plane(argv: dict[str, list[str]], kubelet_client: tuple[str, str]) -> None:
    """The control plane's flags with a real node: a Service range that routes inside the node's
    namespace, the EndpointSlice controllers on, a client certificate for the kubelet, kwok
    managing only its own (annotated) nodes, and ExtendedResourceToleration (GPU pods tolerate the
    GPU nodes' taint, nodes.py); aggregated APIs routed to their endpoints (metrics-server, metrics.py)."""
    api = argv["kube-apiserver"]
    plugins = [p for a in api if a.startswith(ADMISSION) for p in a.removeprefix(ADMISSION).split(",") if p]
    _set_flag(api, ADMISSION, ADMISSION + ",".join(dict.fromkeys([*plugins, "ExtendedResourceToleration"])))
    _set_flag(api, "--service-cluster-ip-range=", f"--service-cluster-ip-range={S.SERVICE_CIDR}")
    _set_flag(api, "--kubelet-client-certificate=", f"--kubelet-client-certificate={kubelet_client[0]}")
    _set_flag(api, "--kubelet-client-key=", f"--kubelet-client-key={kubelet_client[1]}")
    # aggregated APIs (metrics-server) dialed at their EndpointSlice's address, over the link to the node
    _set_flag(api, "--enable-aggregator-routing=", "--enable-aggregator-routing=true")
    kcm = argv["kube-controller-manager"]
    _set_flag(kcm, "--service-cluster-ip-range=", f"--service-cluster-ip-range={S.SERVICE_CIDR}")
    _set_flag(kcm, "--controllers=", None)
    _set_flag(argv["kwok"], "--manage-all-nodes", "--manage-nodes-with-annotation-selector=kwok.x-k8s.io/node=fake")


def prepare(state: PlaygroundState, state_dir: Path, argv: dict[str, list[str]], say: Say = print) -> None:
    import secrets

    from generator.playground import files
    from generator.playground.node import certs, gpus

    preflight()
    ensure_binaries(say)
    spec = S.NodeSpec(state_dir)
    spec.config_dir.mkdir(parents=True, exist_ok=True)
    # identities: static tokens appended to the apiserver's token file before it starts
    tokens = {ident: secrets.token_hex(24) for ident in C.IDENTITIES}
    with open(state_dir / "tokens.csv", "a") as fh:
        for ident, identity in C.IDENTITIES.items():
            fh.write(files.token_line(tokens[ident], identity) + "\n")
    for ident, token in tokens.items():
        doc = files.kubeconfig(state.server, state.ca_file, token, ident)
        files.write_yaml(spec.kubeconfig(ident), doc, private=True)
    client = certs.apiserver_kubelet_client(state.pki_files, spec.pki_dir)
    serving = certs.kubelet_serving(state.pki_files, spec.pki_dir)
    adjust_control_plane(argv, client)
    state.service_cidr = S.SERVICE_CIDR
    state.real_node = RealNodeState(
        name=spec.name, node_ip=S.NODE_IP, pod_cidr=S.POD_CIDR, service_cidr=S.SERVICE_CIDR,
        dns_ip=S.DNS_IP, netns=str(spec.netns_file), mntns=str(spec.mntns_file),
        cgroup_root=spec.cgroup_root, host_link=spec.host_veth, label=S.NODE_LABEL,
        stand_ins={"metadata": S.METADATA_IP, "host": S.STAND_IN_IP},
        serving=serving, gpus=gpus.requested(),
    )


def _node(state: PlaygroundState) -> RealNodeState:
    if state.real_node is None:
        raise NodeError("the playground has no real node (prepare() was not run)")
    return state.real_node


def _write_configs(spec: S.NodeSpec, bins: C.Binaries, state: PlaygroundState, pause_ref: str) -> None:
    import yaml

    c = spec.config_dir
    (c / "containerd.toml").write_text(C.containerd_config(spec, bins, pause_ref))
    spec.cni_conf_dir.mkdir(parents=True, exist_ok=True)
    (spec.cni_conf_dir / "10-dockyard.conflist").write_text(json.dumps(C.cni_conflist(spec), indent=2))
    kubelet = C.kubelet_config(spec, state.ca_file, _node(state).serving)
    (c / "kubelet.yaml").write_text(yaml.safe_dump(kubelet))
    (c / "kube-proxy.yaml").write_text(yaml.safe_dump(C.kube_proxy_config(spec)))
    (c / "Corefile").write_text(C.corefile(spec))
    if bins.gvisor:
        (c / "runsc.toml").write_text(C.runsc_config(spec, bins))
        (spec.root / "runsc-logs").mkdir(exist_ok=True)
    (spec.root / "pod-logs").mkdir(exist_ok=True)


def _containerd_sock(state: PlaygroundState, spec: S.NodeSpec) -> Path:
    return spec.containerd_sock_from(_node(state).components["containerd"].pid)


def _spawn(state: PlaygroundState, state_dir: Path, spec: S.NodeSpec, name: str, argv: list[str],
           env: dict[str, str] | None = None) -> Process:
    if name == "relay":  # host network namespace, node mount namespace (so teardown finds it)
        full = ["nsenter", f"--mount={spec.mntns_file}", "--", *argv]
    else:
        full = host.in_node(spec, argv)
    return startup.start(state, state_dir, _node(state).components, name, f"node/{name}", full, env)


def _wait(what: str, check: startup.Check, deadline: float) -> None:
    startup.wait(what, check, deadline, error=NodeError, interval=0.3)


def _alive(state: PlaygroundState, name: str) -> tuple[bool, str]:
    from generator.playground import processes as procs

    rec = _node(state).components[name]
    if not procs.is_running(rec):
        raise NodeError(f"node component {name} exited during start-up (log: {rec.log}):\n{procs.tail(rec.log, 15)}")
    return True, ""


def start(state: PlaygroundState, state_dir: Path, say: Say, deadline: float) -> None:
    from generator.pinned_tools import versions
    from generator.playground.health import api_for
    from generator.playground.kubeapi import ApiError
    from generator.playground.node import images

    t0 = time.monotonic()
    node = _node(state)
    spec = S.NodeSpec(state_dir)
    bins = ensure_binaries(say)
    layouts = images.ensure_layouts(bins.images, versions()["NODE_IMAGES_VERSION"])
    node.images = {k: ref for k, (ref, _p) in layouts.items()}
    _write_configs(spec, bins, state, layouts["pause"][0])
    host.create_cgroups(spec)
    host.create_namespaces(spec)
    state.save(state_dir)
    # containerd finds each runtime's shim on its PATH (containerd-shim-runsc-v1 for io.containerd.runsc.v1)
    shims = ":".join(str(p) for p in (bins.containerd, bins.runc, bins.gvisor) if p)
    env = {"PATH": f"{shims}:/usr/sbin:/usr/bin:/sbin:/bin"}

    _spawn(state, state_dir, spec, "relay", C.argv("relay", spec, bins, state.ports.apiserver, sys.executable))
    _spawn(state, state_dir, spec, "containerd", C.argv("containerd", spec, bins, 0, ""), env=env)
    sock = _containerd_sock(state, spec)
    _wait("containerd's socket", lambda: (_alive(state, "containerd")[0] and sock.exists(), "no socket yet"), deadline)
    for _name, (_ref, tarball) in layouts.items():
        host.run([str(bins.containerd / "ctr"), f"--address={_containerd_sock(state, spec)}", "-n", "k8s.io",
                  "images", "import", "--local", str(tarball)])
    extra = _import_ray_image(spec, bins, state, say)
    say(f"  real node: containerd up, images imported{extra} ({time.monotonic() - t0:.1f} s)")
    api = api_for(state)
    try:
        api.create("/api/v1/nodes", C.node_object(spec))
    except ApiError as exc:
        if exc.status != 409:
            raise
    for name in ("kubelet", "kube-proxy", "coredns"):
        _spawn(state, state_dir, spec, name, C.argv(name, spec, bins, 0, ""), env=env)

    def registered() -> tuple[bool, str]:
        _alive(state, "kubelet")
        obj = api.get(f"/api/v1/nodes/{spec.name}", timeout=5)
        addrs = [a["address"] for a in (obj.get("status") or {}).get("addresses") or [] if a["type"] == "InternalIP"]
        return addrs == [S.NODE_IP], f"InternalIP {addrs or 'not reported yet'}"

    # kube-router reads the node's address from the Node object: start it once kubelet reported it
    _wait("kubelet to register the node's address", registered, deadline)
    if bins.gvisor:  # pods with runtimeClassName gvisor run under runsc here (components.runtime_class)
        try:
            api.create("/apis/node.k8s.io/v1/runtimeclasses", C.runtime_class())
        except ApiError as exc:
            if exc.status != 409:
                raise
    # the pods' in-cluster API path: the `kubernetes` Service's endpoint is the relay on the node's address
    api.apply("/apis/discovery.k8s.io/v1/namespaces/default/endpointslices/kubernetes-real-node",
              C.api_endpoint(state.ports.apiserver))
    if bins.metrics_server:  # the resource metrics API (metrics.py): its objects, then the server
        _start_metrics_server(state, state_dir, spec, bins.metrics_server, api, env)
    if bins.local_path:  # the default StorageClass local-path: its objects, then the provisioner (local_path.py)
        _start_local_path(state, state_dir, spec, bins.local_path, api)
    if node.gpus:  # fake GPUs through the kubelet's device-plugin API (gpus.py)
        from generator.playground.node import gpus

        binary = gpus.ensure_binary(say)
        _spawn(state, state_dir, spec, gpus.NAME, gpus.argv(binary, node.gpus), env=env)
    _spawn(state, state_dir, spec, "kube-router", C.argv("kube-router", spec, bins, 0, ""), env=env)

    def ready() -> tuple[bool, str]:
        for n in ("kubelet", "kube-proxy", "kube-router", "coredns", *(["metrics-server"] if bins.metrics_server
                                                                        else []),
                  *(["local-path-provisioner"] if bins.local_path else [])):
            _alive(state, n)
        for n, ok, detail in health(state):
            if not ok:
                return False, f"{n}: {detail}"
        return _metrics_available(state) if bins.metrics_server else (True, "")

    _wait("the real node's components and its Ready condition", ready, deadline)
    node.ready_seconds = round(time.monotonic() - t0, 1)
    state.save(state_dir)
    say(f"  real node {spec.name} Ready ({S.NODE_IP}; pods {S.POD_CIDR}, Services {S.SERVICE_CIDR}) "
        f"in {time.monotonic() - t0:.1f} s")


def _start_metrics_server(state: PlaygroundState, state_dir: Path, spec: S.NodeSpec, binary_dir: Path,
                          api: Any, env: dict[str, str]) -> None:
    from generator.playground.node import certs, metrics

    serving = certs.metrics_server_serving(state.pki_files, spec.pki_dir, metrics.SERVICE_DNS)
    client = certs.metrics_server_kubelet_client(state.pki_files, spec.pki_dir)
    for path, obj in metrics.objects(state.ca_file):  # applied: a leftover APIService gets this CA
        api.apply(f"{path}/{obj['metadata']['name']}", obj)
    _spawn(state, state_dir, spec, metrics.NAME, metrics.argv(binary_dir, spec, state.ca_file, serving, client),
           env=env)


def _start_local_path(state: PlaygroundState, state_dir: Path, spec: S.NodeSpec, binary_dir: Path,
                      api: Any) -> None:
    """On the host like the KubeRay operator, supervised; recorded with the node's components (`down` stops it
    before the node's folder, which holds every volume, is removed)."""
    from generator.playground.node import local_path

    for path, obj in local_path.objects(spec):
        api.apply(f"{path}/{obj['metadata']['name']}", obj)
    image = _node(state).images["executor"]
    cfg, pod = local_path.write_files(spec, image)
    startup.start(state, state_dir, _node(state).components, local_path.NAME, f"node/{local_path.NAME}",
                  local_path.argv(binary_dir, spec, cfg, pod, image), supervised=True)


def _import_ray_image(spec: S.NodeSpec, bins: C.Binaries, state: PlaygroundState, say: Say) -> str:
    """With --real-node-gpus (a node for Ray): import the playground's Ray image (ray_image.py),
    building it first when missing (`hack/tools.sh ray-image`, ~3 min cold)."""
    from generator.pinned_tools import cache_dir, tools_script, versions
    from generator.playground.node import ray_image

    node = _node(state)
    if not node.gpus:
        return ""
    entry = cache_dir() / f"ray-image-{versions()['RAY_VERSION']}"
    if not ray_image.layout(entry):
        say("  building the playground's Ray image (hack/tools.sh ray-image; ~3 min cold)")
        if subprocess.call(["bash", str(tools_script()), "ray-image"]) != 0 or not ray_image.layout(entry):
            raise NodeError("building the playground's Ray image failed (bash hack/tools.sh ray-image)")
    built = ray_image.layout(entry)
    if built is None:
        raise NodeError(f"the playground's Ray image is missing from {entry} (bash hack/tools.sh ray-image)")
    ref, tarball = built
    host.run([str(bins.containerd / "ctr"), f"--address={_containerd_sock(state, spec)}", "-n", "k8s.io",
              "images", "import", "--local", str(tarball)])
    node.images["ray"] = ref
    return f" (+ {ref})"


def _get_node(state: PlaygroundState, name: str) -> dict[str, Any]:
    from generator.playground.health import api_for

    node: dict[str, Any] = api_for(state).get(f"/api/v1/nodes/{name}", timeout=5)
    return node


def _gpus_advertised(state: PlaygroundState, node: RealNodeState) -> tuple[bool, str]:
    from generator.playground.node import gpus

    try:
        obj = _get_node(state, node.name)
    except Exception as exc:
        return False, str(exc)
    return gpus.advertised(obj, node.gpus)


def _metrics_available(state: PlaygroundState) -> tuple[bool, str]:
    from generator.playground.health import api_for
    from generator.playground.node import metrics

    try:
        obj = api_for(state).get(f"/apis/apiregistration.k8s.io/v1/apiservices/{metrics.API_SERVICE}", timeout=5)
    except Exception as exc:
        return False, str(exc)
    return metrics.available(obj)


def _node_ready(state: PlaygroundState, name: str) -> tuple[bool, str]:
    try:
        obj = _get_node(state, name)
    except Exception as exc:
        return False, str(exc)
    conds = {c["type"]: c for c in (obj.get("status") or {}).get("conditions") or []}
    ready = conds.get("Ready", {})
    return ready.get("status") == "True", f"Ready={ready.get('status', '?')} {ready.get('reason', '')}".strip()


def _endpoint(spec: S.NodeSpec, name: str) -> tuple[bool, str]:
    """(ok, detail) of a component's health endpoint inside the node's namespace ((True, "") without one)."""
    hp = C.health_port(name)
    if not hp:
        return True, ""
    port, path = hp
    try:
        status, body = host.netns_http_get(spec, port, path)
    except OSError as exc:
        return False, f", 127.0.0.1:{port}{path}: {exc}"
    ok = status == 200
    return ok, f", 127.0.0.1:{port}{path} in the node namespace: HTTP {status}" + ("" if ok else f" {body[:120]}")


def health(state: PlaygroundState) -> list[tuple[str, bool, str]]:
    """(component, ok, detail) for every node component, kubelet's line carrying the Node's Ready."""
    from generator.playground import processes as procs

    node = state.real_node
    if not node:
        return []
    spec = S.NodeSpec(Path(state.state_dir))
    out = []
    extra = [n for n in ("metrics-server", "local-path-provisioner") if n in node.components]
    for name in C.ORDER + extra + (["device-plugin"] if node.gpus else []):
        rec = node.components.get(name)
        if not rec:
            out.append((f"node/{name}", False, "not started"))
            continue
        if not procs.is_running(rec):
            out.append((f"node/{name}", False, f"process {rec.pid} is not running (log: {rec.log})"))
            continue
        ok, endpoint = _endpoint(spec, name)
        detail = f"pid {rec.pid}" + endpoint
        if ok and name == "kubelet":
            ok, ready = _node_ready(state, node.name)
            detail += f", node {node.name} {ready}"
        if ok and name == "metrics-server":  # Available is shown, not judged: a busy moment must not fail `up`
            detail += f", {_metrics_available(state)[1]}"
        if ok and name == "local-path-provisioner":  # the supervisor runs: is the provisioner it supervises up?
            from generator.playground.node import local_path

            ok, child = local_path.child_health(Path(state.state_dir), rec)
            detail += f", {child}"
        if ok and name == "device-plugin":
            ok, gpus_detail = _gpus_advertised(state, node)
            detail += f", {gpus_detail}"
        out.append((f"node/{name}", ok, detail))
    return out


def teardown(state_dir: Path, state: PlaygroundState | None, say: Say = print) -> list[str]:
    """Stop the node's components, then remove every trace on the host; returns problems left."""
    from generator.playground import processes as procs

    spec = S.NodeSpec(state_dir)
    comps = state.real_node.components if state and state.real_node else {}
    recs = [comps.get(n) for n in ["device-plugin", "local-path-provisioner", "metrics-server", *reversed(C.ORDER)]]
    procs.stop([r for r in recs if r and r.name != "node/containerd"], timeout=5)
    if not spec.root.exists() and not host.our_cgroup_dirs(spec) and \
            host.run(["ip", "link", "show", spec.host_veth], check=False).returncode != 0:
        return []
    problems = host.teardown(spec)
    for p in problems:
        say(f"  real node teardown: {p}")
    return problems
