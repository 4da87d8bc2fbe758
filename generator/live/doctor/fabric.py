"""`doctor`'s rows on the fabric (kuberay.network): the GPU nodes advertise the profile's device in the count
the gang needs, and each Multus network named exists. Whether the namespace's PodSecurity level admits what a
profile asks (IPC_LOCK, the host network) is the apiserver's own answer to a dry run (admission.py); this module
only says which profile asked for it (`admission_remedy`)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from generator.live.client.kube import GPU, Kube
from generator.live.doctor.capacity import IN_USE_UNKNOWN, Room
from generator.live.doctor.rows import FAIL, OK, WARN, Row, forbidden

EFA = "vpc.amazonaws.com/efa"
NAD = ("k8s.cni.cncf.io", "v1", "network-attachment-definitions")  # Multus' NetworkAttachmentDefinition


def device_of(network: dict[str, Any] | None) -> tuple[str, int] | None:
    """The extended resource and count each trainer and inference pod asks for under the profile, or None."""
    network = network or {}
    if network.get("profile") == "rdma":
        return network["rdma"]["resourceName"], int(network["rdma"].get("perPod", 1))
    if network.get("profile") == "efa":
        return EFA, int(network["efa"]["perPod"])
    return None


def place_pairs(free: dict[str, tuple[float, float]], want: list[tuple[float, float]],
                budget: int = 200_000) -> int | None:
    """How many pods (GPUs, devices each) fit the nodes' free (GPUs, devices). First fit, biggest pod first; when
    that leaves pods out, an exhaustive search (a gang is a handful of pods) decides whether all fit, and None
    when it runs out of `budget` steps without deciding."""
    def greedy() -> int:
        left, placed = dict(free), 0
        for gpus, devices in sorted(want, reverse=True):
            node = next((n for n, (g, d) in sorted(left.items(), key=lambda x: x[1]) if g >= gpus and d >= devices),
                        None)
            if node:
                g, d = left[node]
                left[node] = (g - gpus, d - devices)
                placed += 1
        return placed

    placed = greedy()
    if placed == len(want):
        return placed
    pods, steps = sorted(want, reverse=True), 0

    def fits(i: int, left: dict[str, tuple[float, float]]) -> bool | None:
        nonlocal steps
        steps += 1
        if steps > budget:
            return None
        if i == len(pods):
            return True
        gpus, devices = pods[i]
        tried = set()
        for node, (g, d) in left.items():
            if g >= gpus and d >= devices and (g, d) not in tried:  # nodes with the same room are one choice
                tried.add((g, d))
                found = fits(i + 1, {**left, node: (g - gpus, d - devices)})
                if found is not False:
                    return found
        return False

    found = fits(0, dict(free))
    return len(want) if found else (placed if found is False else None)


def _host_network_row(room: Room, cluster: Any, empty: bool) -> Row:
    """hostNetwork: one trainer or inference pod per node (the anti-affinity): as many GPU nodes as pods, each with
    the GPUs of the pod it takes."""
    check = "fabric: host network"
    if room.nodes_denied:
        return Row(WARN, check, forbidden("list", "nodes", None, "whether one pod per node fits is unknown"),
                   "ask a cluster admin how many GPU nodes there are")
    free = sorted(room.alloc[n].get(GPU, 0.0) - (0.0 if empty else room.used[n].get(GPU, 0.0))
                  for n, a in room.alloc.items() if a.get(GPU, 0.0) > 0)
    want = sorted([float(cluster.trainer.gpusPerNode)] * cluster.trainer.nodes
                  + [float(cluster.inference.gpusPerNode)] * cluster.inference.nodes, reverse=True)
    placed = 0
    for gpus in want:  # the biggest pod takes the smallest node it fits: optimal when each node takes one pod
        node = next((i for i, g in enumerate(free) if g >= gpus), None)
        if node is not None:
            free.pop(node)
            placed += 1
    detail = (f"{placed}/{len(want)} worker pods find a GPU node of their own ({'allocatable' if empty else 'free'}): "
              "the host network takes one trainer or inference pod per node")
    if placed < len(want):
        return Row(FAIL, check, detail, f"{len(want) - placed} pod(s) short: add GPU nodes, or use profile rdma, "
                                        "efa or tcp (several pods per node)")
    return Row(OK, check, detail)


def gang_rows(cluster: Any, network: dict[str, Any] | None) -> Callable[[Room, bool], list[Row]]:
    """The fabric's rows for capacity.refuse_never_fits: (room, empty) -> device_rows."""
    return lambda room, empty: device_rows(room, cluster, network, empty)


def device_rows(room: Room, cluster: Any, network: dict[str, Any] | None, empty: bool = False) -> list[Row]:
    """One row when the profile asks for a device: every worker pod finds a node with its GPUs and its devices
    free now (`empty`: allocatable, as if no other pod ran)."""
    if (network or {}).get("profile") == "hostNetwork":
        return [_host_network_row(room, cluster, empty)]
    device = device_of(network)
    if device is None:
        return []
    name, per_pod = device
    check = "fabric devices"
    if room.nodes_denied:
        return [Row(WARN, check, forbidden("list", "nodes", None, f"whether the GPU nodes advertise {name} is unknown"),
                    "ask a cluster admin whether the fabric's device plugin runs on the GPU nodes")]
    nodes = {n: (room.free(n, GPU, empty), room.free(n, name, empty)) for n, a in room.alloc.items()
             if a.get(GPU, 0.0) > 0}
    want = ([(float(cluster.trainer.gpusPerNode), float(per_pod))] * cluster.trainer.nodes
            + [(float(cluster.inference.gpusPerNode), float(per_pod))] * cluster.inference.nodes)
    found = place_pairs(nodes, want)
    advertising = sorted(n for n in nodes if room.alloc[n].get(name, 0.0) > 0)
    if found is None:
        return [Row(WARN, check, f"whether {len(want)} worker pods find {per_pod} {name} beside their GPUs could "
                                 "not be decided (too many ways to place them)", "check the GPU nodes by hand")]
    placed = found
    detail = (f"{placed}/{len(want)} worker pods find {per_pod} {name} beside their GPUs "
              f"({'allocatable' if empty else 'free'}); {len(advertising)} of {len(nodes)} GPU node(s) advertise "
              f"{name}" + (f"; {IN_USE_UNKNOWN}" if room.pods_denied and not empty else ""))
    if placed < len(want):
        short = len(want) - placed
        remedy = (f"{short} worker pod(s) short: run the fabric's device plugin on the GPU nodes (it advertises "
                  f"{name}), or lower kuberay.network.{'efa' if name == EFA else 'rdma'}.perPod")
        return [Row(FAIL, check, detail, remedy)]
    if room.pods_denied and not empty:
        return [Row(WARN, check, detail, "ask a cluster admin whether the devices are free")]
    return [Row(OK, check, detail)]


def _nad(ref: str, namespace: str) -> tuple[str, str]:
    """The namespace and name of a Multus reference [namespace/]name[@interface]."""
    ref = ref.split("@", 1)[0]
    ns, _, name = ref.rpartition("/")
    return ns or namespace, name


def networks_rows(kube: Kube, namespace: str, network: dict[str, Any] | None) -> list[Row]:
    """One row when rdma names Multus networks: each NetworkAttachmentDefinition exists (in its namespace, else
    the release's)."""
    from kubernetes.client.exceptions import ApiException

    refs = ((network or {}).get("rdma") or {}).get("networks") or []
    if (network or {}).get("profile") != "rdma" or not refs:
        return []
    check = "fabric: networks"
    missing: list[str] = []
    group, version, plural = NAD
    for ref in refs:
        ns, name = _nad(ref, namespace)
        try:
            kube.request("GET", f"/apis/{group}/{version}/namespaces/{ns}/{plural}/{name}")
        except ApiException as exc:
            if exc.status == 403:
                return [Row(WARN, check, forbidden("get", f"{plural}.{group}", ns, "whether the networks exist is "
                                                   "unknown"), "ask a cluster admin whether they exist")]
            if exc.status != 404:
                raise
            if not missing and not _served(kube):  # asked once: the first 404 says whether Multus is there
                return [Row(FAIL, check,
                            f"NetworkAttachmentDefinition ({group}/{version}) is not served: Multus is not installed",
                            "install Multus, or name no kuberay.network.rdma.networks")]
            missing.append(f"{ns}/{name}")
    if missing:
        return [Row(FAIL, check, f"no NetworkAttachmentDefinition {', '.join(missing)}",
                    "create them (the cluster's Multus setup names them), or fix kuberay.network.rdma.networks")]
    return [Row(OK, check, f"{len(refs)} NetworkAttachmentDefinition(s) exist: {', '.join(refs)}")]


def _served(kube: Kube) -> bool:
    """Whether the apiserver serves NetworkAttachmentDefinitions (a 404 on a name is then only that name's)."""
    from kubernetes.client.exceptions import ApiException

    try:
        resources = kube.request("GET", f"/apis/{NAD[0]}/{NAD[1]}")
    except ApiException as exc:
        if exc.status == 404:
            return False
        raise
    return any(r.get("name") == NAD[2] for r in (resources or {}).get("resources", []))


def network_policy_rows(values: dict[str, Any]) -> list[Row]:
    """hostNetwork beside the sandbox pool's NetworkPolicy: its ingress admits pods by selector, and a host-network
    pod's traffic comes from its node's address, which no pod selector matches."""
    network = ((values.get("kuberay") or {}).get("network") or {})
    policy = ((values.get("sandbox") or {}).get("networkPolicy") or {})
    if network.get("profile") != "hostNetwork" or not policy.get("enabled"):
        return []
    return [Row(WARN, "fabric: sandbox reach", "the trainer and inference pods use the host network, which the "
                "sandbox NetworkPolicy's ingress (pods of this namespace) does not match: with a CNI that enforces "
                "it, they may not reach the executors", "check that the CNI lets node traffic reach the executors, "
                "or set sandbox.networkPolicy.enabled: false, or use profile rdma or efa")]


def admission_remedy(network: dict[str, Any] | None) -> str:
    """What a profile asks of PodSecurity, for the admission row's remedy when the namespace refuses the GPU pods."""
    profile = (network or {}).get("profile")
    if profile == "rdma":
        return ("kuberay.network.profile rdma adds IPC_LOCK, which only the privileged level admits: label the "
                "namespace pod-security.kubernetes.io/enforce=privileged, or use profile efa or tcp")
    if profile == "hostNetwork":
        return ("kuberay.network.profile hostNetwork uses the host's network, which only the privileged level "
                "admits: label the namespace pod-security.kubernetes.io/enforce=privileged, or use profile tcp")
    return ""

