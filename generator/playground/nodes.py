"""Simulated nodes: GPU nodes with `nvidia.com/gpu` capacity (and, when asked, fabric devices such as rdma/ib
or vpc.amazonaws.com/efa) and GPU-operator style labels, CPU nodes.

Every node reports InternalIP 127.0.0.1 (kwok's kubelet endpoint is there) and gets its own pod
CIDR inside 127.64.0.0/10, so every pod IP kwok hands out is a loopback address.

GPU nodes are tainted and labelled as a cloud GPU pool is (GKE, AKS, EKS: `nvidia.com/gpu=present:NoSchedule`,
the GPU operator's `nvidia.com/gpu.*` labels, an accelerator product label), so only a pod that tolerates
the taint lands there: the chart's own tolerations (kuberay.placement.gpu) are what let the GPU fleets
run, as on EKS, where no admission plugin adds them. Beside a real node (`up --real-node`) the CPU nodes
are tainted too (SIMULATED_TAINT: only pods that tolerate it land there), so a pod that asks for nothing
runs for real; there the apiserver also runs ExtendedResourceToleration (generator/playground/node).
"""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass

POD_CIDR = "127.64.0.0/10"  # per-node /20 slices: 1024 nodes of 4094 pods
NODE_IP = "127.0.0.1"
GPU_PRODUCT = "NVIDIA-H100-80GB-HBM3"
GPU_MEMORY_MIB = "81559"
GPU_TAINT = {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}
# An extended resource name: a domain prefix and a name (the API's qualified name).
DEVICE_RE = (r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*"
             r"/[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?")
SIMULATED_TAINT = {"key": "playground.dockyard.dev/simulated", "value": "true", "effect": "NoSchedule"}
# The network's place of a GPU node (`up --topology`), as GPU clouds label it (the labels of Kueue's own Topology
# examples): a block of racks of hosts; the hosts' level is kubernetes.io/hostname.
BLOCK_LABEL = "cloud.provider.com/topology-block"
RACK_LABEL = "cloud.provider.com/topology-rack"


@dataclass(frozen=True)
class Shape:
    """The simulated nodes; the defaults are `playground up`'s. Three 8-GPU nodes hold the README's example
    (values-examples/grpo_swe.yaml: trainer 2 × 8 GPUs, inference 1 × 8), so the plain `up` runs it."""

    gpu_nodes: int = 3
    gpus_per_node: int = 8
    cpu_nodes: int = 1
    node_cpu: str = "64"
    node_memory: str = "512Gi"
    # Fabric devices every GPU node advertises beside its GPUs, as an RDMA or EFA device plugin would:
    # "rdma/ib=2,vpc.amazonaws.com/efa=4" (`up --gpu-node-devices`); none by default.
    gpu_node_devices: str = ""
    # The GPU nodes' network topology, BLOCKSxRACKS (`up --topology 2x2`): each block holds RACKS racks, the GPU
    # nodes are dealt out to the racks in order (rack 0 of block 0 first); none by default.
    topology: str = ""

    def racks(self) -> tuple[int, int]:
        """topology as (blocks, racks per block), (0, 0) for none; ValueError naming what is wrong."""
        if not self.topology:
            return (0, 0)
        blocks, x, racks = self.topology.partition("x")
        if not (x and blocks.isascii() and blocks.isdigit() and racks.isascii() and racks.isdigit()) \
                or int(blocks) < 1 or int(racks) < 1:
            raise ValueError(f"{self.topology!r} is not BLOCKSxRACKS (e.g. 2x2: two blocks of two racks)")
        if int(blocks) * int(racks) > self.gpu_nodes:
            raise ValueError(f"{int(blocks) * int(racks)} racks for {self.gpu_nodes} GPU nodes: every rack needs a "
                             "node (more --gpu-nodes, or fewer racks)")
        return (int(blocks), int(racks))

    def place(self, index: int) -> dict[str, str]:
        """The topology labels of GPU node `index` ({} without a topology): node i of n sits in rack
        i * racks // n (so racks hold n // racks nodes or one more), numbered within the whole playground."""
        blocks, per_block = self.racks()
        if not blocks:
            return {}
        rack = index * blocks * per_block // self.gpu_nodes
        return {BLOCK_LABEL: f"block-{rack // per_block}", RACK_LABEL: f"rack-{rack}"}

    def devices(self) -> dict[str, int]:
        """gpu_node_devices as {resource: count}; ValueError naming what is wrong."""
        out: dict[str, int] = {}
        for item in filter(None, (i.strip() for i in self.gpu_node_devices.split(","))):
            name, eq, count = item.partition("=")
            number = count.isascii() and count.isdigit()
            if not eq or not re.fullmatch(DEVICE_RE, name) or not number or not 1 <= int(count) <= 1000:
                raise ValueError(f"{item!r} is not RESOURCE=COUNT (an extended resource with a domain, e.g. "
                                 "rdma/ib=2, a count 1..1000)")
            if name.split("/")[0].endswith("kubernetes.io") or name == "nvidia.com/gpu":
                raise ValueError(f"{name} is not a fabric device (kubernetes.io's, or the GPUs themselves)")
            out[name] = int(count)
        return out

    def names(self) -> tuple[list[str], list[str]]:
        return (
            [f"gpu-node-{i}" for i in range(self.gpu_nodes)],
            [f"cpu-node-{i}" for i in range(self.cpu_nodes)],
        )


def node_pod_cidr(index: int) -> str:
    net = ipaddress.ip_network(POD_CIDR)
    base = int(net.network_address) + index * (1 << 12)
    if index < 0 or base >= int(net.broadcast_address):
        raise ValueError("too many nodes for the playground pod CIDR")
    return f"{ipaddress.ip_address(base)}/20"


def node_manifest(name: str, index: int, shape: Shape, gpus: int, kube_version: str,
                  beside_real_node: bool = False) -> dict:
    labels = {
        "kubernetes.io/hostname": name,
        "kubernetes.io/os": "linux",
        "kubernetes.io/arch": "amd64",
        "node.kubernetes.io/instance-type": "kwok-gpu" if gpus else "kwok-cpu",
        "type": "kwok",
    }
    capacity = {
        "cpu": shape.node_cpu,
        "memory": shape.node_memory,
        "pods": "110",
        "ephemeral-storage": "1Ti",
    }
    if gpus:
        labels.update(
            {
                "nvidia.com/gpu.present": "true",
                "nvidia.com/gpu.count": str(gpus),
                "nvidia.com/gpu.product": GPU_PRODUCT,
                "nvidia.com/gpu.memory": GPU_MEMORY_MIB,
                "nvidia.com/gpu.family": "hopper",
                "nvidia.com/gpu.machine": "kwok-simulated",
                "nvidia.com/gpu.deploy.device-plugin": "true",
                "cloud.google.com/gke-accelerator": "nvidia-h100-80gb",  # GKE's product label
            }
        )
        labels.update(shape.place(index))
        capacity["nvidia.com/gpu"] = str(gpus)
        capacity.update({name: str(count) for name, count in shape.devices().items()})
    cidr = node_pod_cidr(index)
    spec: dict = {"podCIDR": cidr, "podCIDRs": [cidr]}
    if gpus:
        spec["taints"] = [dict(GPU_TAINT)]
    elif beside_real_node:
        spec["taints"] = [dict(SIMULATED_TAINT)]
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "labels": labels,
            "annotations": {
                "kwok.x-k8s.io/node": "fake",
                "node.alpha.kubernetes.io/ttl": "0",
            },
        },
        "spec": spec,
        "status": {
            "capacity": capacity,
            "allocatable": dict(capacity),
            "addresses": [
                {"type": "InternalIP", "address": NODE_IP},
                {"type": "Hostname", "address": name},
            ],
            "nodeInfo": {
                "architecture": "amd64",
                "operatingSystem": "linux",
                "kubeletVersion": kube_version,
                "kubeProxyVersion": kube_version,
                "containerRuntimeVersion": "kwok://simulated",
                "osImage": "dockyard-k8s playground (kwok)",
                "kernelVersion": "simulated",
                "bootID": "",
                "machineID": "",
                "systemUUID": "",
            },
        },
    }


def manifests(shape: Shape, kube_version: str, real_node: bool = False) -> list[dict]:
    """The simulated Node objects: GPU nodes tainted; `real_node`: CPU nodes too, so the real node takes the
    pods that ask for nothing."""
    gpu, cpu = shape.names()
    out = [node_manifest(n, i, shape, shape.gpus_per_node, kube_version, real_node) for i, n in enumerate(gpu)]
    out += [node_manifest(n, len(gpu) + i, shape, 0, kube_version, real_node) for i, n in enumerate(cpu)]
    return out
