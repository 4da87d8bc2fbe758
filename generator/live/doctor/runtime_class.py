"""`doctor`'s RuntimeClass row (sandbox.runtimeClassName): the class exists, a node it schedules onto reports
its handler, and its pod overhead, which the API server adds to every sandbox pod, is counted in the pool's room.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any

from generator.live.client.kube import Kube
from generator.live.doctor.rows import FAIL, OK, WARN, Row, forbidden

CHECK = "RuntimeClass"
HOWTO = "docs/sandbox-pool.md#gvisor"


@dataclass
class Read:
    name: str
    obj: dict[str, Any] | None = None  # the RuntimeClass as the API served it
    status: int = 200  # 403: cannot read it; 404: it does not exist
    overhead: dict[str, str] = field(default_factory=dict)  # overhead.podFixed


def read(kube: Kube, name: str) -> Read:
    from kubernetes import client
    from kubernetes.client.exceptions import ApiException

    try:
        obj = client.NodeV1Api(kube.api).read_runtime_class(name)
    except ApiException as exc:
        if exc.status in (403, 404):
            return Read(name, status=exc.status)
        raise
    got = kube.api.sanitize_for_serialization(obj)
    return Read(name, got, overhead=dict((got.get("overhead") or {}).get("podFixed") or {}))


def with_overhead(template: dict[str, Any], rc: Read) -> dict[str, Any]:
    """The sandbox pod template as admitted: the RuntimeClass admission plugin sets spec.overhead."""
    if not rc.overhead:
        return template
    out = copy.deepcopy(template)
    out.setdefault("spec", {})["overhead"] = dict(rc.overhead)
    return out


def _matches(labels: dict[str, str], selector: dict[str, str]) -> bool:
    return all(labels.get(k) == v for k, v in selector.items())


def row(rc: Read, labels: dict[str, dict[str, str]], handlers: dict[str, set[str]], nodes_denied: bool) -> Row:
    """`labels` and `handlers` by node name (node.status.runtimeHandlers, reported by kubelets since v1.30)."""
    name = rc.name
    if rc.status == 403:
        return Row(WARN, CHECK,
                   forbidden("get", "runtimeclasses.node.k8s.io", None, f"whether {name} exists is unknown"),
                   f"ask a cluster admin whether RuntimeClass {name} exists")
    if rc.status == 404 or rc.obj is None:
        return Row(FAIL, CHECK, f"{name} does not exist: the API server refuses every sandbox pod that names it",
                   f"install the runtime on the CPU nodes and create RuntimeClass {name} ({HOWTO}), "
                   "or unset sandbox.runtimeClassName")
    handler = rc.obj.get("handler", "")
    selector = ((rc.obj.get("scheduling") or {}).get("nodeSelector")) or {}
    where = f" on nodes {','.join(f'{k}={v}' for k, v in selector.items())}" if selector else ""
    extra = f"; overhead {', '.join(f'{k} {v}' for k, v in rc.overhead.items())} per pod, counted in the pool's room" \
        if rc.overhead else ""
    head = f"{name} exists (handler {handler}{where}{extra})"
    if nodes_denied:
        return Row(WARN, CHECK, head + "; " + forbidden("list", "nodes", None, f"which nodes run {handler} is unknown"))
    fits = [n for n in labels if _matches(labels[n], selector)]
    if not fits:
        return Row(FAIL, CHECK, f"{head}: no schedulable node matches its nodeSelector",
                   f"label the nodes that have {handler} installed, or fix RuntimeClass {name}'s scheduling")
    having = [n for n in fits if handler in handlers.get(n, set())]
    if having:
        return Row(OK, CHECK, f"{head}: {handler} reported by {len(having)}/{len(fits)} node(s): {','.join(having)}")
    silent = [n for n in fits if not handlers.get(n)]
    if silent:  # a kubelet before v1.30 reports none: it may have the handler
        some = (f"no node{where} reports its runtime handlers" if len(silent) == len(fits)
                else f"{len(silent)} of the {len(fits)} node(s){where} report no runtime handlers")
        return Row(WARN, CHECK, f"{head}: {some} (kubelets before v1.30 do not), so whether {handler} is installed "
                   "there is unknown")
    return Row(FAIL, CHECK, f"{head}: none of the {len(fits)} node(s) it schedules onto has handler {handler} "
               f"(they report {', '.join(sorted(set().union(*(handlers.get(n, set()) for n in fits))))}): "
               f"the sandbox pods would fail to start",
               f"install {handler} in the nodes' container runtime ({HOWTO}), or choose a RuntimeClass they have")
