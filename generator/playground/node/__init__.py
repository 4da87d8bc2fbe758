"""The playground's real node (`playground up --real-node`): one CPU node that runs pods for real.

Hooks called by generator/playground/cluster.py:

    prepare(state, state_dir, argv)   before the control plane starts: checks, certificates,
                                      identities, the control plane's flags for a real node
    start(state, state_dir, say, deadline)   after the control plane is ready
    health(state) -> [(name, ok, detail)]    for `status` and the idempotent `up`
    teardown(state_dir, state)        at `down` and when `up` fails half way

Module map: spec (typed state, addresses, paths), components (configs and command lines),
host (namespaces, cgroups, teardown), images (OCI layouts), certs, relay (apiserver relay).
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

from generator.playground.node import components as C
from generator.playground.node import host
from generator.playground.node import spec as S

TOOLS = {  # cache entry -> versions.env key (hack/tools.sh node builds them all)
    "kubernetes-node": "KUBERNETES_VERSION",
    "runc": "RUNC_VERSION",
    "containerd": "CONTAINERD_VERSION",
    "cni-plugins": "CNI_PLUGINS_VERSION",
    "coredns": "COREDNS_VERSION",
    "kube-router": "KUBE_ROUTER_VERSION",
    "node-images": "NODE_IMAGES_VERSION",
}
NodeError = host.NodeError


def _tool_dirs() -> dict[str, Path]:
    from generator.tools import cache_dir, versions

    v = versions()
    return {t: cache_dir() / f"{t}-{v[k]}" for t, k in TOOLS.items()}


def ensure_binaries(say: Callable[[str], None]) -> C.Binaries:
    from generator.tools import REPO

    dirs = _tool_dirs()
    missing = [t for t, d in dirs.items() if not (d / ".complete").is_file()]
    if missing:
        say(f"  building the real node's tools ({', '.join(missing)}); a cold build takes ~10 min on 2 cores")
        rc = subprocess.call(["bash", str(REPO / "hack" / "tools.sh"), *missing])
        if rc != 0:
            raise NodeError(f"building the real node's tools failed (hack/tools.sh exit {rc})")
    return C.Binaries(
        containerd=dirs["containerd"], runc=dirs["runc"], cni=dirs["cni-plugins"],
        kubernetes_node=dirs["kubernetes-node"], kube_router=dirs["kube-router"],
        coredns=dirs["coredns"], images=dirs["node-images"],
    )


def preflight() -> None:
    """Raise NodeError naming what this machine lacks (one line) before anything is started."""
    missing = host.missing_features()
    deps = subprocess.run(["bash", str(Path(__file__).resolve().parents[3] / "hack" / "node-deps.sh"), "--check"],
                          capture_output=True, text=True)
    if deps.returncode != 0:
        missing.append(deps.stdout.strip() or "Debian packages (run `bash hack/node-deps.sh`)")
    if missing:
        raise NodeError("the real node needs " + "; ".join(missing) + ". Run without --real-node to use only simulated nodes.")
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
    namespace, the EndpointSlice controllers on, a client certificate for the kubelet, and kwok
    managing only its own (annotated) nodes."""
    api = argv["kube-apiserver"]
    _set_flag(api, "--service-cluster-ip-range=", f"--service-cluster-ip-range={S.SERVICE_CIDR}")
    _set_flag(api, "--kubelet-client-certificate=", f"--kubelet-client-certificate={kubelet_client[0]}")
    _set_flag(api, "--kubelet-client-key=", f"--kubelet-client-key={kubelet_client[1]}")
    kcm = argv["kube-controller-manager"]
    _set_flag(kcm, "--service-cluster-ip-range=", f"--service-cluster-ip-range={S.SERVICE_CIDR}")
    _set_flag(kcm, "--controllers=", None)
    _set_flag(argv["kwok"], "--manage-all-nodes", "--manage-nodes-with-annotation-selector=kwok.x-k8s.io/node=fake")


def prepare(state: dict, state_dir: Path, argv: dict[str, list[str]], say: Callable[[str], None] = print) -> None:
    from generator.playground import cluster
    from generator.playground.node import certs, gpus

    preflight()
    ensure_binaries(say)
    spec = S.NodeSpec(state_dir)
    spec.config_dir.mkdir(parents=True, exist_ok=True)
    # identities: static tokens appended to the apiserver's token file before it starts
    import secrets

    tokens = {ident: secrets.token_hex(24) for ident in C.IDENTITIES}
    with open(state_dir / "tokens.csv", "a") as fh:
        for ident, (user, uid, groups) in C.IDENTITIES.items():
            fh.write(f"{tokens[ident]},{user},{uid}" + (',"' + ",".join(groups) + '"' if groups else "") + "\n")
    for ident, token in tokens.items():
        doc = cluster._kubeconfig(state["server"], state["pki"]["ca_crt"], token, ident)
        cluster._write_yaml(spec.kubeconfig(ident), doc, private=True)
    client = certs.apiserver_kubelet_client(state["pki"], spec.pki_dir)
    serving = certs.kubelet_serving(state["pki"], spec.pki_dir)
    adjust_control_plane(argv, client)
    state["service_cidr"] = S.SERVICE_CIDR
    state["real_node"] = {
        "name": spec.name, "node_ip": S.NODE_IP, "pod_cidr": S.POD_CIDR, "service_cidr": S.SERVICE_CIDR,
        "dns_ip": S.DNS_IP, "netns": str(spec.netns_file), "mntns": str(spec.mntns_file),
        "cgroup_root": spec.cgroup_root, "host_link": spec.host_veth, "label": S.NODE_LABEL,
        "stand_ins": {"metadata": S.METADATA_IP, "host": S.STAND_IN_IP},
        "serving": list(serving), "components": {}, "gpus": gpus.requested(),
    }


def _write_configs(spec: S.NodeSpec, bins: C.Binaries, state: dict, pause_ref: str) -> None:
    import yaml

    c = spec.config_dir
    (c / "containerd.toml").write_text(C.containerd_config(spec, bins, pause_ref))
    spec.cni_conf_dir.mkdir(parents=True, exist_ok=True)
    (spec.cni_conf_dir / "10-dockyard.conflist").write_text(json.dumps(C.cni_conflist(spec), indent=2))
    (c / "kubelet.yaml").write_text(yaml.safe_dump(C.kubelet_config(spec, state["pki"]["ca_crt"], tuple(state["real_node"]["serving"]))))
    (c / "kube-proxy.yaml").write_text(yaml.safe_dump(C.kube_proxy_config(spec)))
    (c / "Corefile").write_text(C.corefile(spec))
    (spec.root / "pod-logs").mkdir(exist_ok=True)


def _containerd_sock(state: dict, spec: S.NodeSpec) -> Path:
    return spec.containerd_sock_from(state["real_node"]["components"]["containerd"]["pid"])


def _node_object(spec: S.NodeSpec) -> dict:
    """Created before kubelet registers: labels of a CPU node, the pod range, a taint; no kwok annotation."""
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
        "spec": {"podCIDR": S.POD_CIDR, "podCIDRs": [S.POD_CIDR],
                 # only pods that ask for the real node land on it (tolerate this and select the label)
                 "taints": [{"key": S.NODE_LABEL, "value": "true", "effect": "NoSchedule"}]},
    }


def _spawn(state: dict, state_dir: Path, spec: S.NodeSpec, name: str, argv: list[str], env: dict | None = None) -> None:
    from generator.playground import cluster
    from generator.playground import processes as procs

    if name == "relay":  # host network namespace, node mount namespace (so teardown finds it)
        full = ["nsenter", f"--mount={spec.mntns_file}", "--", *argv]
    else:
        full = host.in_node(spec, argv)
    rec = procs.spawn(f"node/{name}", full, state_dir / "logs" / f"node-{name}.log", cwd=state_dir, env=env)
    state["real_node"]["components"][name] = rec
    cluster.save_state(state_dir, state)


def _wait(what: str, check: Callable[[], tuple[bool, str]], deadline: float) -> None:
    from generator.playground import processes as procs

    detail = ""
    while time.monotonic() < deadline:
        ok, detail = check()
        if ok:
            return
        procs.reap()
        time.sleep(0.3)
    raise NodeError(f"timed out waiting for {what}: {detail}")


def _alive(state: dict, name: str) -> tuple[bool, str]:
    from generator.playground import processes as procs

    rec = state["real_node"]["components"][name]
    if not procs.is_running(rec):
        raise NodeError(f"node component {name} exited during start-up (log: {rec['log']}):\n{procs.tail(rec['log'], 15)}")
    return True, ""


def start(state: dict, state_dir: Path, say: Callable[[str], None], deadline: float) -> None:
    from generator.playground import cluster
    from generator.playground.kubeapi import ApiError
    from generator.playground.node import images
    from generator.tools import versions

    t0 = time.monotonic()
    spec = S.NodeSpec(state_dir)
    bins = ensure_binaries(say)
    layouts = images.ensure_layouts(bins.images, versions()["NODE_IMAGES_VERSION"])
    state["real_node"]["images"] = {k: ref for k, (ref, _p) in layouts.items()}
    _write_configs(spec, bins, state, layouts["pause"][0])
    host.create_cgroups(spec)
    host.create_namespaces(spec)
    cluster.save_state(state_dir, state)
    env = {"PATH": f"{bins.containerd}:{bins.runc}:/usr/sbin:/usr/bin:/sbin:/bin"}

    _spawn(state, state_dir, spec, "relay", C.argv("relay", spec, bins, state["ports"]["apiserver"], sys.executable))
    _spawn(state, state_dir, spec, "containerd", C.argv("containerd", spec, bins, 0, ""), env=env)
    sock = spec.containerd_sock_from(state["real_node"]["components"]["containerd"]["pid"])
    _wait("containerd's socket", lambda: (_alive(state, "containerd") and sock.exists(), "no socket yet"), deadline)
    for name, (ref, tarball) in layouts.items():
        host.run([str(bins.containerd / "ctr"), f"--address={_containerd_sock(state, spec)}", "-n", "k8s.io",
                  "images", "import", "--local", str(tarball)])
    extra = _import_ray_image(spec, bins, state, say)
    say(f"  real node: containerd up, images imported{extra} ({time.monotonic() - t0:.1f} s)")
    api = cluster.api_for(state)
    try:
        api.create("/api/v1/nodes", _node_object(spec))
    except ApiError as exc:
        if exc.status != 409:
            raise
    for name in ("kubelet", "kube-proxy", "coredns"):
        _spawn(state, state_dir, spec, name, C.argv(name, spec, bins, 0, ""), env=env)

    def registered() -> tuple[bool, str]:
        _alive(state, "kubelet")
        node = api.get(f"/api/v1/nodes/{spec.name}", timeout=5)
        addrs = [a["address"] for a in (node.get("status") or {}).get("addresses") or [] if a["type"] == "InternalIP"]
        return addrs == [S.NODE_IP], f"InternalIP {addrs or 'not reported yet'}"

    # kube-router reads the node's address from the Node object: start it once kubelet reported it
    _wait("kubelet to register the node's address", registered, deadline)
    if state["real_node"].get("gpus"):  # fake GPUs through the kubelet's device-plugin API (gpus.py)
        from generator.playground.node import gpus

        binary = gpus.ensure_binary(say)
        _spawn(state, state_dir, spec, gpus.NAME, gpus.argv(binary, state["real_node"]["gpus"]), env=env)
    _spawn(state, state_dir, spec, "kube-router", C.argv("kube-router", spec, bins, 0, ""), env=env)

    def ready() -> tuple[bool, str]:
        for n in ("kubelet", "kube-proxy", "kube-router", "coredns"):
            _alive(state, n)
        for n, ok, detail in health(state):
            if not ok:
                return False, f"{n}: {detail}"
        return True, ""

    _wait("the real node's components and its Ready condition", ready, deadline)
    state["real_node"]["ready_seconds"] = round(time.monotonic() - t0, 1)
    cluster.save_state(state_dir, state)
    say(f"  real node {spec.name} Ready ({S.NODE_IP}; pods {S.POD_CIDR}, Services {S.SERVICE_CIDR}) in {time.monotonic() - t0:.1f} s")


def _import_ray_image(spec: S.NodeSpec, bins: C.Binaries, state: dict, say: Callable[[str], None]) -> str:
    """With --real-node-gpus (a node for Ray): import the playground's Ray image (ray_image.py),
    building it first when missing (`hack/tools.sh ray-image`, ~3 min cold)."""
    from generator.playground.node import ray_image
    from generator.tools import REPO, cache_dir, versions

    if not state["real_node"].get("gpus"):
        return ""
    entry = cache_dir() / f"ray-image-{versions()['RAY_VERSION']}"
    if not ray_image.layout(entry):
        say("  building the playground's Ray image (hack/tools.sh ray-image; ~3 min cold)")
        if subprocess.call(["bash", str(REPO / "hack" / "tools.sh"), "ray-image"]) != 0 or not ray_image.layout(entry):
            raise NodeError("building the playground's Ray image failed (bash hack/tools.sh ray-image)")
    built = ray_image.layout(entry)
    ref, tarball = built
    host.run([str(bins.containerd / "ctr"), f"--address={_containerd_sock(state, spec)}", "-n", "k8s.io",
              "images", "import", "--local", str(tarball)])
    state["real_node"]["images"]["ray"] = ref
    return f" (+ {ref})"


def _gpus_advertised(state: dict, node: dict) -> tuple[bool, str]:
    from generator.playground import cluster
    from generator.playground.node import gpus

    try:
        obj = cluster.api_for(state).get(f"/api/v1/nodes/{node['name']}", timeout=5)
    except Exception as exc:
        return False, str(exc)
    return gpus.advertised(obj, node["gpus"])


def _node_ready(state: dict, name: str) -> tuple[bool, str]:
    from generator.playground import cluster

    try:
        node = cluster.api_for(state).get(f"/api/v1/nodes/{name}", timeout=5)
    except Exception as exc:
        return False, str(exc)
    conds = {c["type"]: c for c in (node.get("status") or {}).get("conditions") or []}
    ready = conds.get("Ready", {})
    return ready.get("status") == "True", f"Ready={ready.get('status', '?')} {ready.get('reason', '')}".strip()


def health(state: dict) -> list[tuple[str, bool, str]]:
    """(component, ok, detail) for every node component, kubelet's line carrying the Node's Ready."""
    from generator.playground import processes as procs

    node = state.get("real_node")
    if not node:
        return []
    spec = S.NodeSpec(Path(state["state_dir"]))
    out = []
    for name in C.ORDER + (["device-plugin"] if node.get("gpus") else []):
        rec = node["components"].get(name)
        if not rec:
            out.append((f"node/{name}", False, "not started"))
            continue
        if not procs.is_running(rec):
            out.append((f"node/{name}", False, f"process {rec['pid']} is not running (log: {rec['log']})"))
            continue
        hp = C.health_port(name)
        detail = f"pid {rec['pid']}"
        ok = True
        if hp:
            try:
                status, body = host.netns_http_get(spec, hp[0], hp[1])
                ok = status == 200
                detail += f", 127.0.0.1:{hp[0]}{hp[1]} in the node namespace: HTTP {status}" + ("" if ok else f" {body[:120]}")
            except OSError as exc:
                ok, detail = False, detail + f", 127.0.0.1:{hp[0]}{hp[1]}: {exc}"
        if ok and name == "kubelet":
            ok, ready = _node_ready(state, node["name"])
            detail += f", node {node['name']} {ready}"
        if ok and name == "device-plugin":
            ok, gpus_detail = _gpus_advertised(state, node)
            detail += f", {gpus_detail}"
        out.append((f"node/{name}", ok, detail))
    return out


def teardown(state_dir: Path, state: dict | None, say: Callable[[str], None] = print) -> list[str]:
    """Stop the node's components, then remove every trace on the host; returns problems left."""
    from generator.playground import processes as procs

    spec = S.NodeSpec(state_dir)
    node = (state or {}).get("real_node") or {}
    recs = [node.get("components", {}).get(n) for n in ["device-plugin", *reversed(C.ORDER)]]
    procs.stop([r for r in recs if r and r["name"] != "node/containerd"], timeout=5)
    if not spec.root.exists() and not host.our_cgroup_dirs(spec) and \
            host.run(["ip", "link", "show", spec.host_veth], check=False).returncode != 0:
        return []
    problems = host.teardown(spec)
    for p in problems:
        say(f"  real node teardown: {p}")
    return problems
