"""The fabric's rules a JSON Schema keyword cannot say, as plain functions without pydantic: what a trainer or
inference overlay may not set because kuberay.network owns it in both groups. The models
(generator/inputs/models/kuberay.py) and their fast path (generator/inputs/schema_check.py) both call it; the
chart replaces the same fields after the overlay (ray/_fabric.tpl)."""

from __future__ import annotations

TYPE_CHECKING = False  # typing's import costs ~3 ms at start-up: for type checkers only
if TYPE_CHECKING:
    from typing import Any

MULTUS_ANNOTATION = "k8s.v1.cni.cncf.io/networks"
# The label every host-network trainer and inference pod carries, which its anti-affinity selects (one per node).
HOST_NETWORK_LABEL = "dockyard.dev/host-network"
# The env the fabric owns in every container of the trainer and inference groups (the chart reads them as
# dockyard.const.fabricEnv, written from here by `make schema`): infra.env and the overlay may not set them.
FABRIC_ENV = ("NCCL_SOCKET_IFNAME", "GLOO_SOCKET_IFNAME", "NCCL_IB_HCA", "FI_PROVIDER")


def _map(node: Any, key: str) -> dict[str, Any]:
    value = node.get(key) if isinstance(node, dict) else None
    return value if isinstance(value, dict) else {}


def fabric_overlay_problem(group: dict[str, Any]) -> tuple[tuple[str | int, ...], str, str] | None:
    """What a trainer or inference group overlay sets of the fabric: (its path inside the group, message,
    expected), or None. The overlay's shape is checked before (rules.overlay_shape_problem)."""
    template = _map(group, "template")
    pod, meta = _map(template, "spec"), _map(template, "metadata")
    owned = "kuberay.network owns it in both worker groups"
    if "hostNetwork" in pod:
        return (("template", "spec", "hostNetwork"), f"hostNetwork in one group's overlay: {owned}",
                "kuberay.network.profile: hostNetwork")
    if HOST_NETWORK_LABEL in _map(meta, "labels"):
        return (("template", "metadata", "labels", HOST_NETWORK_LABEL),
                f"the host-network label in one group's overlay: {owned}", "no such label (the chart sets it)")
    if MULTUS_ANNOTATION in _map(meta, "annotations"):
        return (("template", "metadata", "annotations", MULTUS_ANNOTATION),
                f"Multus networks in one group's overlay: {owned}", "kuberay.network.rdma.networks")
    for n, container in enumerate(pod.get("containers") or []):
        for m, env in enumerate(_map({"c": container}, "c").get("env") or []):
            if isinstance(env, dict) and env.get("name") in FABRIC_ENV:
                return (("template", "spec", "containers", n, "env", m, "name"),
                        f"{env['name']} is the fabric's: {owned}",
                        "kuberay.network.socketInterface, rdma.hca or profile efa")
    return None
