"""Is the playground well? Each component's process and health endpoint, and the nodes the
apiserver reports (for `status`, the idempotent `up` and the wait at the end of `up`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from generator.playground import processes as procs
from generator.playground import restarts
from generator.playground.control_plane import health_url
from generator.playground.kubeapi import Api
from generator.playground.state import PlaygroundState


@dataclass
class NodeSummary:
    total: int = 0
    ready: int = 0
    gpu_nodes: int = 0
    cpu_nodes: int = 0
    gpus: int = 0
    names: list[str] = field(default_factory=list)


def api_for(state: PlaygroundState) -> Api:
    return Api(state.server, state.tokens["admin"], state.ca_file)


def component_health(state: PlaygroundState, name: str) -> tuple[bool, str]:
    """(healthy, detail) of one component: its process is ours and alive, and its endpoint says ok. For a
    supervised component, the process is its supervisor's child now, and the detail ends with its restarts."""
    rec = state.components.get(name)
    if not rec:
        return False, "not started"
    if not procs.is_running(rec):
        return False, f"process {rec.pid} is not running (log: {rec.log})"
    record = restarts.of(state.state_dir, rec)
    if record is None:
        return _endpoint_health(state, name, rec.pid)
    if record.child is None or not procs.is_running(record.child):
        return False, record.waiting()
    ok, detail = _endpoint_health(state, name, record.child.pid)
    return ok, f"{detail}; {record.summary()}"


def supervised(state: PlaygroundState, name: str) -> restarts.Record | None:
    """The record of the component's supervisor while that supervisor runs (it restarts the component)."""
    rec = state.components.get(name)
    return restarts.of(state.state_dir, rec) if rec and procs.is_running(rec) else None


def _endpoint_health(state: PlaygroundState, name: str, pid: int) -> tuple[bool, str]:
    from generator.playground.kubeapi import get_raw

    url = health_url(state, name)
    token = state.tokens["admin"] if name == "kube-apiserver" else None
    try:
        status, body = get_raw(url, ca_file=state.ca_file, token=token, timeout=3)
    except OSError as exc:
        return False, f"pid {pid}, {url}: {exc}"
    text = body.decode(errors="replace").strip()
    if status != 200:
        return False, f"pid {pid}, {url}: HTTP {status} {text[:200]}"
    if name == "etcd" and '"health":"true"' not in text.replace(" ", ""):
        return False, f"pid {pid}, {url}: {text[:200]}"
    return True, f"pid {pid}, {url}"


def node_summary(state: PlaygroundState) -> NodeSummary:
    """Node counts and GPU capacity as the apiserver reports them."""
    nodes: list[dict[str, Any]] = api_for(state).get("/api/v1/nodes", timeout=10)["items"]
    out = NodeSummary(total=len(nodes))
    for n in nodes:
        out.names.append(n["metadata"]["name"])
        conds = {c["type"]: c["status"] for c in (n.get("status") or {}).get("conditions") or []}
        if conds.get("Ready") == "True":
            out.ready += 1
        gpus = int(n.get("status", {}).get("capacity", {}).get("nvidia.com/gpu", "0") or 0)
        out.gpus += gpus
        if gpus:
            out.gpu_nodes += 1
        else:
            out.cpu_nodes += 1
    return out
