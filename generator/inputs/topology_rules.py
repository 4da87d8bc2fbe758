"""Topology-aware placement (`launch.topology`): the Kueue annotations the chart renders on the trainer and
inference pod templates, and the rules on them that need more than one model (the recipe's fleet sizes, the
kuberay.spec overlay). Plain data in and out: the models, the schema-checked fast path and the chart's
values.schema.json twin say the same."""

from __future__ import annotations

TYPE_CHECKING = False  # typing's import costs ~3 ms at start-up (the happy path imports this): for type checkers
if TYPE_CHECKING:
    from typing import Any

# Kueue's Topology Aware Scheduling annotations on a pod template (v0.17): one of required, preferred or
# unconstrained names the level; two pod sets with the same group name are placed in one domain together.
REQUIRED = "kueue.x-k8s.io/podset-required-topology"
PREFERRED = "kueue.x-k8s.io/podset-preferred-topology"
GROUP = "kueue.x-k8s.io/podset-group-name"
# Every Kueue pod-set annotation (the three levels, slices, the group) starts so: the chart owns them on the
# fleets it places.
PODSET_PREFIX = "kueue.x-k8s.io/podset-"
# The PodSet group of trainer and inference placed together.
FLEETS_GROUP = "gpu-fleets"
FLEETS = ("trainer", "inference")

TOGETHER = ("Kueue places two pod sets in one domain only as a PodSet group of two where one of them is a single "
            "pod (v0.17): trainer and inference together need one of the two fleets to be one node")
OVERLAY_OWNED = ("launch.topology places the trainer and inference pods: their Kueue pod-set annotations are the "
                 "chart's")
MULTI_HOST = ("launch.topology places a fleet as one pod a node: a group of several hosts per replica (numOfHosts) "
              "is not placed by it")
HEAD_GROUPED = ("a Kueue PodSet group holds two pod sets, the trainer and the inference under launch.topology: the "
                "head cannot join it")


def pod_annotations(topology: dict[str, Any] | None) -> dict[str, str]:
    """The annotations a placed fleet's pod template carries ({} without launch.topology)."""
    if not topology:
        return {}
    out = {REQUIRED if topology.get("mode", "required") == "required" else PREFERRED: topology["level"]}
    if topology.get("groups") == "together":
        out[GROUP] = FLEETS_GROUP
    return out


def together_problem(topology: dict[str, Any] | None, cluster: dict[str, Any]) -> tuple[str, str] | None:
    """(message, expected) when trainer and inference together cannot be one PodSet group, else None."""
    if not topology or topology.get("groups") != "together":
        return None
    nodes = {fleet: int((cluster.get(fleet) or {}).get("nodes", 1)) for fleet in FLEETS}
    if min(nodes.values()) == 1:
        return None
    return (f"{TOGETHER}; the recipe has trainer {nodes['trainer']} and inference {nodes['inference']} nodes",
            "launch.topology.groups: each, or recipe.cluster.inference.nodes (or trainer.nodes) 1")


def overlay_problem(topology: dict[str, Any] | None, worker_overlays: list[dict[str, Any]],
                    head_overlay: dict[str, Any] | None = None) -> tuple[tuple[str | int, ...], str, str] | None:
    """(path inside kuberay.spec, message, expected) when the overlay would undo launch.topology, else None: a
    placed fleet's own Kueue pod-set annotation, a placed fleet of several hosts per replica (numOfHosts: the
    rules count a fleet's pods as its nodes), or the head joining the fleets' PodSet group."""
    if not topology:
        return None
    for i, group in enumerate(worker_overlays):
        given = ((group.get("template") or {}).get("metadata") or {}).get("annotations") or {}
        for key in given:
            if isinstance(key, str) and key.startswith(PODSET_PREFIX):
                sets = ", ".join(sorted(pod_annotations(topology)))
                return (("workerGroupSpecs", i, "template", "metadata", "annotations", key), OVERLAY_OWNED,
                        f"no {key} in the {group.get('groupName')} overlay (launch.topology sets {sets})")
        if group.get("numOfHosts") not in (None, 1):
            return (("workerGroupSpecs", i, "numOfHosts"), MULTI_HOST, "no numOfHosts (or 1) beside launch.topology")
    head = ((((head_overlay or {}).get("template") or {}).get("metadata") or {}).get("annotations")) or {}
    if GROUP in head:
        return (("headGroupSpec", "template", "metadata", "annotations", GROUP), HEAD_GROUPED,
                f"no {GROUP} in the head overlay")
    return None


def _nodes_at_least(n: int) -> dict[str, Any]:
    return {"required": ["nodes"], "properties": {"nodes": {"minimum": n}}}


# JSON Schema twins (values.schema.json), so plain Helm refuses the same values.
TOGETHER_RULE: dict[str, Any] = {
    "if": {"required": ["launch"], "properties": {"launch": {"required": ["topology"], "properties": {
        "topology": {"type": "object", "required": ["groups"], "properties": {"groups": {"const": "together"}}}}}}},
    "then": {"properties": {"recipe": {"properties": {"cluster": {"not": {
        "required": list(FLEETS), "properties": {f: _nodes_at_least(2) for f in FLEETS}}}}}}},
}
OVERLAY_RULE: dict[str, Any] = {
    "if": {"required": ["launch"], "properties": {"launch": {"required": ["topology"], "properties": {
        "topology": {"type": "object"}}}}},
    "then": {"properties": {"kuberay": {"properties": {"spec": {"properties": {
        "workerGroupSpecs": {"items": {"properties": {
            "numOfHosts": {"const": 1},
            "template": {"properties": {"metadata": {"properties": {"annotations": {
                "propertyNames": {"not": {"pattern": "^" + PODSET_PREFIX.replace(".", "\\.")}}}}}}}}}},
        "headGroupSpec": {"properties": {"template": {"properties": {"metadata": {"properties": {"annotations": {
            "propertyNames": {"not": {"const": GROUP}}}}}}}}},
    }}}}}},
}
