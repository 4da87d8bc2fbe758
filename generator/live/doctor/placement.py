"""`doctor`'s placement rows: can each Ray pod land on a node, given the nodes' taints and labels?

One row per GPU fleet (trainer, inference): the GPU nodes it could use (allocatable nvidia.com/gpu,
its nodeSelector and required node affinity matching) and whether it tolerates their taints; ✗ names
the taint and the key to set. One row each for the head and the submitter: ! when no node takes them.
Read from the rendered pod templates (the overlay included) and `capacity.Room`'s nodes: no request
of its own. The scheduler's own rules (TaintToleration, NodeAffinity) are mirrored in client/selectors.py.
"""

from __future__ import annotations

from typing import Any

from generator.live.client.kube import GPU
from generator.live.client.selectors import selects, taint_text, untolerated
from generator.live.doctor.rows import FAIL, OK, WARN, Row, forbidden

FLEETS = ("trainer", "inference")

CPU_PODS = ("head", "submitter")


def _suggest(taint: dict[str, Any]) -> str:
    """The toleration to add: Exists, so any value the pool gives the key is tolerated (as cloud docs write it)."""
    return f"{{key: {taint.get('key')}, operator: Exists, effect: {taint.get('effect')}}}"


def _blocking(spec: dict[str, Any], nodes: list[str], taints: dict[str, list[dict[str, Any]]]) -> list[str]:
    """The taints keeping the pod off `nodes`, most frequent first, each with its node count."""
    count: dict[str, int] = {}
    for n in nodes:
        for t in untolerated(spec, taints.get(n) or []):
            count[taint_text(t)] = count.get(taint_text(t), 0) + 1
    return [f"{t} ({c} node(s))" for t, c in sorted(count.items(), key=lambda x: -x[1])]


def fleet_row(role: str, spec: dict[str, Any], room: Any) -> Row:
    """Whether the GPU fleet can use any GPU node: ✗ naming the taint it does not tolerate."""
    check = f"placement: {role}"
    gpu_nodes = [n for n, a in room.alloc.items() if a.get(GPU, 0.0) > 0]
    if not gpu_nodes:
        return Row(WARN, check, f"no node has allocatable {GPU}: nothing to place the fleet on (see GPU capacity)")
    matching = [n for n in gpu_nodes if selects(spec, n, room.labels.get(n) or {})]
    if not matching:
        return Row(FAIL, check,
                   f"none of the {len(gpu_nodes)} GPU node(s) matches the fleet's nodeSelector "
                   f"{spec.get('nodeSelector') or {}} and required node affinity",
                   f"set kuberay.placement.{role}.nodeSelector (or kuberay.placement.gpu.nodeSelector) to labels "
                   "the GPU nodes carry")
    usable = [n for n in matching if not untolerated(spec, room.taints.get(n) or [])]
    blocked = _blocking(spec, [n for n in matching if n not in usable], room.taints)
    if not usable:
        first = next(t for n in matching for t in untolerated(spec, room.taints.get(n) or []))
        return Row(FAIL, check,
                   f"tolerates no taint of the {len(matching)} GPU node(s) it could use: {', '.join(blocked)}"
                   + (" (the ExtendedResourceToleration admission plugin would add it; EKS and most clusters "
                      "do not run it)" if first.get("key") == GPU else ""),
                   f"add {_suggest(first)} to kuberay.placement.gpu.tolerations "
                   f"(or kuberay.placement.{role}.tolerations)")
    more = f"; {len(matching) - len(usable)} more carry {', '.join(blocked)}" if blocked else ""
    return Row(OK, check, f"can use {len(usable)} of {len(gpu_nodes)} GPU node(s){more}")


def cpu_pod_row(role: str, spec: dict[str, Any], room: Any) -> Row:
    """Whether the head or the submitter can land on any node (! when none takes it)."""
    check = f"placement: {role}"
    nodes = [n for n in room.alloc if selects(spec, n, room.labels.get(n) or {})]
    usable = [n for n in nodes if not untolerated(spec, room.taints.get(n) or [])]
    if not usable:
        why = (f"taints {', '.join(_blocking(spec, nodes, room.taints))}" if nodes
               else f"no node matches its nodeSelector {spec.get('nodeSelector') or {}} and required node affinity")
        return Row(WARN, check, f"no node takes it: {why}",
                   f"set kuberay.placement.{role}.tolerations or .nodeSelector to match a CPU node")
    cpu = [n for n in usable if not room.alloc[n].get(GPU, 0.0)]
    return Row(OK, check, f"{len(usable)} node(s) take it, {len(cpu)} without GPUs")


def placement_rows(room: Any, templates: dict[str, dict[str, Any]]) -> list[Row]:
    """A row per GPU fleet, the head and the submitter (those rendered), against the nodes' taints and labels."""
    if room.nodes_denied:
        return [Row(WARN, f"placement: {role}", forbidden("list", "nodes", None, "node taints and labels unknown"))
                for role in (*FLEETS, *CPU_PODS) if role in templates]
    rows = []
    for role in (*FLEETS, *CPU_PODS):
        if role in templates:
            spec = templates[role].get("spec") or {}
            rows.append((fleet_row if role in FLEETS else cpu_pod_row)(role, spec, room))
    return rows
