"""Kueue in the playground (`up --kueue`): the real controller manager (sigs.k8s.io/kueue, cmd/kueue) as one
more loopback process, its CRDs, its RayJob/RayCluster and own webhooks registered by URL, and one queue
over the playground's capacity.

    kueue/config.yaml    Kueue's Configuration: leader election, internal cert management, metrics and the
                         visibility server off; the webhook and health probe on 127.0.0.1
    kueue/certs/         the webhook's serving certificate (the playground's: it names 127.0.0.1)
    kueue/etc/           upper layer of an overlay on /etc inside Kueue's own mount namespace, holding
                         kueue/metrics/certs/tls.{crt,key}: cmd/kueue reads that fixed path and exits
                         without it, even with metrics off. The host's /etc never changes; the
                         namespace ends with the process.

Objects made at `up`: ResourceFlavor `default-flavor`, ClusterQueue `playground` (quota: every node's
allocatable cpu, memory and nvidia.com/gpu; all namespaces), LocalQueue `training` in namespace `dockyard`
(values-examples/grpo_swe_kueue.infra.yaml uses it). With `up --topology`, also Topology `playground` (block,
rack, host), ResourceFlavor `gpu-topology` over the GPU nodes naming it, ClusterQueue `topology` (the GPU nodes'
capacity in that flavor, the CPU nodes' in `default-flavor`, for the head and the submitter) and LocalQueue
`topology` in namespace `dockyard` (values-examples/grpo_swe_topology.infra.yaml uses it). That queue admits
placed jobs only: Kueue never gives a topology flavor to a GPU pod set that asks for no level.
"""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path
from typing import Any

from generator.playground.errors import UpError
from generator.playground.kubeapi import Api, ApiError

FLAVOR = "default-flavor"
CLUSTER_QUEUE = "playground"
LOCAL_QUEUE = "training"
NAMESPACE = "dockyard"
FRAMEWORKS = ("ray.io/rayjob", "ray.io/raycluster")
WEBHOOKS = ("dockyard-playground-kueue-mutating", "dockyard-playground-kueue-validating")
API = "/apis/kueue.x-k8s.io/v1beta2"
TOPOLOGY = "playground"
TOPOLOGY_FLAVOR = "gpu-topology"
TOPOLOGY_QUEUE = "topology"  # the ClusterQueue's name and the LocalQueue's
GPU_NODES = {"nvidia.com/gpu.present": "true"}
# The mount namespace's one step: the overlay on /etc, then Kueue in place of the shell (same PID).
_MOUNT_SCRIPT = 'mount -t overlay overlay -o "lowerdir=/etc,upperdir=$1,workdir=$2" /etc && shift 2 && exec "$@"'


def folder(state_dir: Path) -> Path:
    return state_dir / "kueue"


def write_files(state_dir: Path, serving: tuple[str, str], webhook_port: int, probe_port: int) -> Path:
    """Kueue's configuration and certificates; returns the configuration's path."""
    import yaml

    base = folder(state_dir)
    certs = base / "certs"
    metrics = base / "etc" / "kueue" / "metrics" / "certs"
    for d in (certs, metrics, base / "work"):
        d.mkdir(parents=True, exist_ok=True)
    for d in (certs, metrics):
        shutil.copyfile(serving[0], d / "tls.crt")
        shutil.copyfile(serving[1], d / "tls.key")
        (d / "tls.key").chmod(0o600)
    config = {
        "apiVersion": "config.kueue.x-k8s.io/v1beta2",
        "kind": "Configuration",
        "health": {"healthProbeBindAddress": f"127.0.0.1:{probe_port}"},
        "metrics": {"bindAddress": "0"},
        "webhook": {"host": "127.0.0.1", "port": webhook_port, "certDir": str(certs)},
        "leaderElection": {"leaderElect": False},
        "internalCertManagement": {"enable": False},
        "clientConnection": {"qps": 50, "burst": 100},
        "integrations": {"frameworks": list(FRAMEWORKS)},
        "featureGates": {"VisibilityOnDemand": False},  # its own server on :8082, wanting certs of its own
    }
    path = base / "config.yaml"
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    return path


def argv(binary: str, config: Path, state_dir: Path) -> list[str]:
    """Kueue in a private mount namespace of its own (a user namespace too when not root)."""
    base = folder(state_dir)
    userns = [] if os.geteuid() == 0 else ["--user", "--map-root-user"]
    return ["unshare", *userns, "--mount", "--propagation", "private", "--", "/bin/sh", "-c", _MOUNT_SCRIPT,
            "kueue-mount", str(base / "etc"), str(base / "work"), binary, f"--config={config}"]


def webhook_configurations(manifest: Path, port: int, ca_file: str) -> list[dict[str, Any]]:
    """Kueue's own webhook manifest cut to the Ray integrations and Kueue's objects, each webhook pointed at
    https://127.0.0.1:PORT<path> with the playground CA (the pod/deployment/... ones would refuse every pod)."""
    import base64

    import yaml

    ca = base64.b64encode(Path(ca_file).read_bytes()).decode()
    out = []
    for doc in yaml.safe_load_all(manifest.read_text()):
        if not doc or doc.get("kind") not in ("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"):
            continue
        kept = []
        for hook in doc.get("webhooks") or []:
            rules = hook.get("rules") or []
            groups = {g for r in rules for g in r.get("apiGroups") or []}
            resources = {x for r in rules for x in r.get("resources") or []}
            if groups == {"ray.io"} and not resources <= {"rayjobs", "rayclusters"}:
                continue
            if not groups or not groups <= {"ray.io", "kueue.x-k8s.io"}:
                continue
            path = hook["clientConfig"]["service"]["path"]
            hook["clientConfig"] = {"url": f"https://127.0.0.1:{port}{path}", "caBundle": ca}
            kept.append(hook)
        name = WEBHOOKS[0] if doc["kind"].startswith("Mutating") else WEBHOOKS[1]
        out.append({"apiVersion": "admissionregistration.k8s.io/v1", "kind": doc["kind"],
                    "metadata": {"name": name}, "webhooks": kept})
    if len(out) != 2 or not all(c["webhooks"] for c in out):
        raise UpError(f"{manifest}: no Ray/Kueue webhooks found (is it Kueue's config/components/webhook?)")
    return out


def register_webhooks(api: Api, configs: list[dict[str, Any]]) -> None:
    for doc in configs:
        plural = "mutatingwebhookconfigurations" if doc["kind"].startswith("Mutating") else \
            "validatingwebhookconfigurations"
        api.apply(f"/apis/admissionregistration.k8s.io/v1/{plural}/{doc['metadata']['name']}", doc)


def quota(nodes: list[dict[str, Any]]) -> dict[str, str]:
    """The sum of every node's allocatable cpu (millicores), memory (Mi) and nvidia.com/gpu."""
    from generator.quantity import qty

    total = {"cpu": 0.0, "memory": 0.0, "nvidia.com/gpu": 0.0}
    for node in nodes:
        alloc = (node.get("status") or {}).get("allocatable") or {}
        for key in total:
            total[key] += qty(alloc.get(key, "0"))
    return {"cpu": f"{int(total['cpu'] * 1000)}m", "memory": f"{int(total['memory'] // 2**20)}Mi",
            "nvidia.com/gpu": str(int(total["nvidia.com/gpu"]))}


def queue_objects(nominal: dict[str, str]) -> list[tuple[str, dict[str, Any]]]:
    """(collection path, object) of the playground's flavor, ClusterQueue, namespace and LocalQueue."""
    resources = list(nominal)
    return [
        (f"{API}/resourceflavors", {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ResourceFlavor",
                                    "metadata": {"name": FLAVOR}}),
        (f"{API}/clusterqueues", {
            "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue", "metadata": {"name": CLUSTER_QUEUE},
            "spec": {"namespaceSelector": {}, "resourceGroups": [{
                "coveredResources": resources,
                "flavors": [{"name": FLAVOR, "resources": [{"name": r, "nominalQuota": nominal[r]}
                                                           for r in resources]}],
            }]},
        }),
        ("/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}}),
        (f"{API}/namespaces/{NAMESPACE}/localqueues", {
            "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "LocalQueue",
            "metadata": {"name": LOCAL_QUEUE, "namespace": NAMESPACE}, "spec": {"clusterQueue": CLUSTER_QUEUE},
        }),
    ]


def topology_objects(nodes: list[dict[str, Any]]) -> list[tuple[str, dict[str, Any]]]:
    """(collection path, object) of `up --topology`'s Topology, its flavor, ClusterQueue and LocalQueue. The
    Topology ends with the hosts' level, so Kueue places each pod on a node and honours taints and selectors;
    the flavor's node label is the GPU nodes' own. Head and submitter (not placed) take `default-flavor`:
    Kueue gives a ClusterQueue's topology flavor only to pod sets that ask for a level when it has others."""
    from generator.playground.nodes import BLOCK_LABEL, RACK_LABEL

    labels = [((n.get("metadata") or {}).get("labels") or {}) for n in nodes]
    on_gpus = [all(lab.get(k) == v for k, v in GPU_NODES.items()) for lab in labels]  # the flavor's nodes
    gpu = [n for n, yes in zip(nodes, on_gpus, strict=True) if yes]
    cpu = [n for n, yes in zip(nodes, on_gpus, strict=True) if not yes]
    resources = ["cpu", "memory", "nvidia.com/gpu"]
    flavors = [(TOPOLOGY_FLAVOR, quota(gpu)), (FLAVOR, {**quota(cpu), "nvidia.com/gpu": "0"})]
    return [
        (f"{API}/topologies", {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Topology",
                               "metadata": {"name": TOPOLOGY},
                               "spec": {"levels": [{"nodeLabel": BLOCK_LABEL}, {"nodeLabel": RACK_LABEL},
                                                   {"nodeLabel": "kubernetes.io/hostname"}]}}),
        (f"{API}/resourceflavors", {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ResourceFlavor",
                                    "metadata": {"name": TOPOLOGY_FLAVOR},
                                    "spec": {"nodeLabels": dict(GPU_NODES), "topologyName": TOPOLOGY}}),
        (f"{API}/clusterqueues", {
            "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue", "metadata": {"name": TOPOLOGY_QUEUE},
            "spec": {"namespaceSelector": {}, "resourceGroups": [{
                "coveredResources": resources,
                "flavors": [{"name": name, "resources": [{"name": r, "nominalQuota": q[r]} for r in resources]}
                            for name, q in flavors],
            }]},
        }),
        (f"{API}/namespaces/{NAMESPACE}/localqueues", {
            "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "LocalQueue",
            "metadata": {"name": TOPOLOGY_QUEUE, "namespace": NAMESPACE}, "spec": {"clusterQueue": TOPOLOGY_QUEUE},
        }),
    ]


def create_queues(api: Api, deadline: float, topology: bool = False) -> dict[str, str]:
    """Create the playground's queue objects (retrying while Kueue's webhooks warm up), with `topology` the
    topology's too; wait until every queue is Active; return the ClusterQueue `playground`'s quota."""
    nodes = api.get("/api/v1/nodes")["items"]
    nominal = quota(nodes)
    objects = queue_objects(nominal) + (topology_objects(nodes) if topology else [])
    for path, obj in objects:
        while True:
            try:
                api.create(path, obj)
                break
            except (ApiError, OSError) as exc:
                if time.monotonic() > deadline:
                    raise UpError(f"creating {obj['kind']} {obj['metadata']['name']}: {exc}", "kueue") from None
                time.sleep(0.3)
    queues = [(CLUSTER_QUEUE, LOCAL_QUEUE)] + ([(TOPOLOGY_QUEUE, TOPOLOGY_QUEUE)] if topology else [])
    paths = [p for cq, lq in queues
             for p in (f"{API}/clusterqueues/{cq}", f"{API}/namespaces/{NAMESPACE}/localqueues/{lq}")]
    for path in paths:
        while not active(api, path):
            if time.monotonic() > deadline:
                raise UpError(f"timed out waiting for {path} to be Active", "kueue")
            time.sleep(0.2)
    return nominal


def active(api: Api, path: str) -> bool:
    try:
        obj = api.get(path)
    except (ApiError, OSError):
        return False
    return any(c.get("type") == "Active" and c.get("status") == "True"
               for c in (obj.get("status") or {}).get("conditions") or [])
