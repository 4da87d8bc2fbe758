"""`doctor`'s rows for `launch.topology` (made only when it is set, beside the Kueue rows):

    Kueue topology       the LocalQueue's ClusterQueue has a flavor naming a Topology (TAS on for it), the Topology
                         exists and the level is one of its levels
    Kueue topology: fit  the placed fleets fit one domain of the level (each, or together): from the nodes of the
                         topology flavor, their labels and allocatable GPUs (and the fabric's devices): ✗ when no
                         domain can ever hold them (! under `preferred`: Kueue then spreads them), ! when one could
                         but none has room now, naming the largest domain and its free GPUs

A domain is what Kueue calls one: the nodes sharing the values of every level down to the one asked for (rack-0
of block-0 is not rack-0 of block-1). RBAC that hides the flavors, the Topology or the nodes is a ! row with what
is then unknown.
"""

from __future__ import annotations

from typing import Any

from generator.live.client.kube import GPU, Kube
from generator.live.doctor.capacity import IN_USE_UNKNOWN, Room
from generator.live.doctor.fabric import device_of, place_pairs
from generator.live.doctor.kueue_rows import ADMIN, _get
from generator.live.doctor.rows import FAIL, OK, WARN, Namespace, Row, forbidden
from generator.live.kueue.api import API, GROUP

CHECK, FIT = "Kueue topology", "Kueue topology: fit"
FLEETS = ("trainer", "inference")


def _tas_flavor(kube: Kube, queue: str, ns: Namespace,
                seen: dict[str, Any]) -> tuple[Row | None, dict[str, Any] | None, str]:
    """(a row when the topology flavor cannot be told, the flavor, the ClusterQueue's name), from the ClusterQueue
    and flavors the Kueue rows read (`seen`)."""
    cq, flavors = seen.get("cq"), seen.get("flavors")
    if cq is None:
        return Row(WARN, CHECK, f"LocalQueue {queue}'s ClusterQueue in {ns.name} could not be read (see the Kueue "
                   "rows): whether it places by topology is unknown"), None, ""
    cq_name = cq["metadata"]["name"]
    if flavors is None:
        return Row(WARN, CHECK, forbidden("get", f"resourceflavors.{GROUP}", None,
                                          "whether a flavor names a Topology is unknown"),
                   f"ask {ADMIN} for get on resourceflavors.{GROUP}", missing=[f"get resourceflavors.{GROUP}"]), \
            None, cq_name
    tas = [f for f in flavors.values() if f and (f.get("spec") or {}).get("topologyName")]
    if not tas:
        return Row(FAIL, CHECK, f"no flavor of ClusterQueue {cq_name} ({', '.join(sorted(flavors))}) names a Topology: "
                   "Topology Aware Scheduling is off for it, and Kueue never admits a pod set that asks for a level",
                   f"use a LocalQueue whose ClusterQueue has a ResourceFlavor with spec.topologyName, or ask {ADMIN} "
                   "to add one; or unset launch.topology"), None, cq_name
    return None, tas[0], cq_name


def _domains(room: Room, flavor: dict[str, Any], levels: list[str], level: str) -> dict[tuple[str, ...], list[str]]:
    """The topology flavor's nodes (its nodeLabels) by domain of `level` (values of every level down to it)."""
    want = (flavor.get("spec") or {}).get("nodeLabels") or {}
    keys = levels[:levels.index(level) + 1]
    out: dict[tuple[str, ...], list[str]] = {}
    for node, labels in room.labels.items():
        if all(labels.get(k) == v for k, v in want.items()) and all(k in labels for k in keys):
            out.setdefault(tuple(labels[k] for k in keys), []).append(node)
    return out


def _fit(room: Room, nodes: list[str], want: list[tuple[float, float]], device: str | None, empty: bool) -> bool:
    placed = place_pairs({n: (room.free(n, GPU, empty), room.free(n, device, empty) if device else float("inf"))
                          for n in nodes}, want)
    return placed is not None and placed >= len(want)


def _gpus(room: Room, nodes: list[str], empty: bool) -> float:
    return sum(room.free(n, GPU, empty) for n in nodes)


def _placements(room: Room, domains: dict[tuple[str, ...], list[str]], asks: dict[str, list[tuple[float, float]]],
                device: str | None, empty: bool) -> list[tuple[tuple[str, ...], ...]]:
    """Every choice of one domain per ask (trainer's, inference's; or the one of both together) that holds them
    all at once: two asks in the same domain must fit it together."""
    fits = {what: [d for d in sorted(domains) if _fit(room, domains[d], want, device, empty)]
            for what, want in asks.items()}
    wants = list(asks.values())
    if len(wants) == 1:
        return [(d,) for d in fits[next(iter(asks))]]
    first, second = fits.values()
    return [(a, b) for a in first for b in second
            if a != b or _fit(room, domains[a], wants[0] + wants[1], device, empty)]


def fit_row(room: Room, flavor: dict[str, Any], levels: list[str], topology: dict[str, Any], cluster: Any,
            network: dict[str, Any] | None) -> Row:
    level, mode = topology["level"], topology.get("mode") or "required"
    if room.nodes_denied:
        return Row(WARN, FIT, forbidden("list", "nodes", None, f"whether a {level} domain holds the gang is unknown"),
                   "ask a cluster admin for list on nodes, or how many GPUs a domain of the level has")
    domains = _domains(room, flavor, levels, level)
    dev = device_of(network)
    device, per_pod = (dev[0], float(dev[1])) if dev else (None, 0.0)
    shapes = {f: [(float(getattr(cluster, f).gpusPerNode), per_pod)] * getattr(cluster, f).nodes for f in FLEETS}
    asks = ({"trainer and inference": shapes["trainer"] + shapes["inference"]}
            if topology.get("groups") == "together" else {f"the {f}": shapes[f] for f in FLEETS})
    name = lambda d: "/".join(d)  # noqa: E731
    if not domains:
        return Row(FAIL if mode == "required" else WARN, FIT,
                   f"no node of flavor {flavor['metadata']['name']} carries {level} (and the levels above it): "
                   "there is no domain to place the gang in", "label the GPU nodes with the Topology's levels, or "
                   "set launch.topology.level to a level they carry")
    pods = {what: f"{what} ({len(want)} pod(s) × {int(want[0][0])} {GPU}"
                  + (f", {int(per_pod)} {device}" if device else "") + ")" for what, want in asks.items()}
    allocatable = {d: _gpus(room, nodes, True) for d, nodes in domains.items()}
    largest = max(domains, key=lambda d: (allocatable[d], d))
    biggest = (f"the largest domain is {name(largest)}: {len(domains[largest])} node(s), {allocatable[largest]:g} "
               f"{GPU} allocatable, {_gpus(room, domains[largest], False):g} free")
    unknown = f"; {IN_USE_UNKNOWN}" if room.pods_denied else ""
    ever = _placements(room, domains, asks, device, True)
    if not ever:
        alone = [pods[w] for w, want in asks.items()
                 if not any(_fit(room, nodes, want, device, True) for nodes in domains.values())]
        what = (" or ".join(alone) if alone else
                f"{' and '.join(pods.values())} at once (each fits a domain, but no two domains, nor one, hold both)")
        spread = "Kueue spreads it over several domains (preferred)" if mode == "preferred" else \
            "Kueue never admits it (required)"
        return Row(FAIL if mode == "required" else WARN, FIT,
                   f"no {level} domain can ever hold {what}: {spread}; {biggest}",
                   "shrink cluster.trainer/inference, pick a higher level (launch.topology.level), or "
                   + ("mode preferred" if mode == "required" else "accept the spread"))
    now = _placements(room, domains, asks, device, False)
    if not now:
        return Row(WARN, FIT, f"{level} domains could hold {' and '.join(pods.values())}, but none has room now: it "
                   f"waits in the queue until they do; {biggest}{unknown}",
                   "wait, or free GPUs in one domain; mode preferred places it across domains instead")
    first = now[0]
    where = "; ".join(f"{pods[w]} in {name(d)}" for w, d in zip(asks, first, strict=True))
    return Row(OK, FIT, f"{where} now ({len(now)} way(s) to place {'it' if len(asks) == 1 else 'them'} among "
               f"{len(domains)} domain(s); {level}, {mode}){unknown}")


def rows(kube: Kube, values: dict[str, Any], ns: Namespace, room: Room, cluster: Any,
         seen: dict[str, Any]) -> list[Row]:
    """The topology rows; none (and no request) without launch.topology. `seen`: the ClusterQueue and flavors
    the Kueue rows read (kueue_rows.doctor_rows), not read again."""
    launch = values.get("launch") or {}
    topology = launch.get("topology")
    if not topology or not launch.get("queue"):
        return []
    row, flavor, cq_name = _tas_flavor(kube, launch["queue"], ns, seen)
    if row is not None or flavor is None:
        return [row] if row else []
    fname, tname = flavor["metadata"]["name"], flavor["spec"]["topologyName"]
    topo, status = _get(kube, f"{API}/topologies/{tname}")
    if status == 403:
        return [Row(WARN, CHECK, forbidden("get", f"topologies.{GROUP}", None,
                                           f"whether {topology['level']} is one of Topology {tname}'s levels is "
                                           "unknown"), f"ask {ADMIN} for get on topologies.{GROUP}",
                    missing=[f"get topologies.{GROUP}"])]
    if topo is None:
        return [Row(FAIL, CHECK, f"Topology {tname} (flavor {fname}'s topologyName) does not exist: Kueue admits "
                    f"nothing to flavor {fname}", f"ask {ADMIN} to create Topology {tname}")]
    levels = [lvl.get("nodeLabel") for lvl in (topo.get("spec") or {}).get("levels") or []]
    if topology["level"] not in levels:
        return [Row(FAIL, CHECK, f"{topology['level']} (launch.topology.level) is not a level of Topology {tname} "
                    f"({', '.join(levels)}): Kueue never admits a pod set that asks for it",
                    f"set launch.topology.level to one of: {', '.join(levels)}")]
    head = Row(OK, CHECK, f"ClusterQueue {cq_name}'s flavor {fname} → Topology {tname} (levels {', '.join(levels)}): "
               f"{topology['level']} is level {levels.index(topology['level']) + 1} of {len(levels)}")
    return [head, fit_row(room, flavor, levels, topology, cluster, (values.get("kuberay") or {}).get("network"))]
