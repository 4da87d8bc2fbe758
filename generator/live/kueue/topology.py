"""Where Kueue's Topology Aware Scheduling placed a Workload's pod sets: its `topologyAssignment` (v1beta2's
compressed slices) decoded to (domain values, pod count), and the one line `status` shows.

Kueue records the assignment at the lowest level it needs (the hosts, when the Topology ends with
`kubernetes.io/hostname`); the domain of the level the job asked for is then the hosts' label of that level,
read from the nodes by the caller.
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing's import costs ~3 ms at start-up: for type checkers only
if TYPE_CHECKING:
    from typing import Any

HOSTNAME = "kubernetes.io/hostname"


class PodSetPlacement:
    """One pod set's request and assignment. (A plain class: `status` reads it, and dataclasses' import is ~7 ms
    of its start; the records of generator/live/state/record.py are a layer above this package.)"""

    def __init__(self, name: str, mode: str | None = None, level: str | None = None) -> None:
        self.name = name
        self.mode = mode  # required | preferred (None: not placed by topology)
        self.level = level  # the level asked for
        self.levels: list[str] = []  # the assignment's levels, highest first
        self.domains: list[tuple[tuple[str, ...], int]] = []  # (values per level, pods)


def _value(per_level: dict[str, Any], i: int) -> str:
    if "universal" in per_level:
        return str(per_level["universal"])
    ind = per_level.get("individual") or {}
    return f"{ind.get('prefix') or ''}{(ind.get('roots') or [])[i]}{ind.get('suffix') or ''}"


def domains(assignment: dict[str, Any]) -> list[tuple[tuple[str, ...], int]]:
    """(values per level, pod count) of each assigned domain: v1beta2's slices (a value and a count that
    are `universal` to the slice or `individual` per domain, values as prefix + root + suffix)."""
    out = []
    for piece in assignment.get("slices") or []:
        counts = piece.get("podCounts") or {}
        for i in range(int(piece.get("domainCount") or 0)):
            values = tuple(_value(v, i) for v in piece.get("valuesPerLevel") or [])
            count = counts["universal"] if "universal" in counts else (counts.get("individual") or [])[i]
            out.append((values, int(count)))
    return out


def placements(wl: dict[str, Any]) -> list[PodSetPlacement]:
    """The pod sets of a Workload that asked for a topology, with what Kueue assigned them (none yet: no
    domains)."""
    requested = {}
    for ps in (wl.get("spec") or {}).get("podSets") or []:
        req = ps.get("topologyRequest") or {}
        for mode in ("required", "preferred"):
            if req.get(mode):
                requested[ps.get("name")] = PodSetPlacement(ps.get("name"), mode, req[mode])
    for psa in (((wl.get("status") or {}).get("admission") or {}).get("podSetAssignments")) or []:
        got = requested.get(psa.get("name"))
        ta = psa.get("topologyAssignment")
        if got is not None and ta:
            got.levels, got.domains = list(ta.get("levels") or []), domains(ta)
    return list(requested.values())


def hosts_level(placed: list[PodSetPlacement]) -> str | None:
    """The level whose labels the caller must read from the nodes: the one asked for, when some assignment
    was recorded below it only (at the hosts); None when every assignment names it."""
    for p in placed:
        if p.domains and p.level and p.level not in p.levels and p.levels[-1:] == [HOSTNAME]:
            return p.level
    return None


def line(placed: list[PodSetPlacement], node_level: dict[str, str] | None) -> str | None:
    """`trainer in rack-0 (gpu-node-0, gpu-node-1); inference in rack-1 (gpu-node-2) — cloud.provider.com/
    topology-rack, required`; a pod set over several domains of its level is `across`. `node_level`: each
    host's value of the level asked for (None: the nodes could not be read, the hosts alone are shown)."""
    parts, asked = [], set()
    for p in placed:
        if not p.domains:
            continue
        asked.add(f"{p.level}, {p.mode}")
        lowest = [values[-1] for values, _ in p.domains]
        on_hosts = p.levels[-1:] == [HOSTNAME] and p.level != HOSTNAME  # the hosts, beside the level's domains
        if p.level in p.levels:
            at = p.levels.index(p.level)
            names = sorted({values[at] for values, _ in p.domains})
        elif node_level is not None and on_hosts:
            names = sorted({node_level.get(h, "?") for h in lowest})
        else:
            names = []
        if not names:
            parts.append(f"{p.name} on {', '.join(lowest)}")
            continue
        where = ("in " if len(names) == 1 else f"across {len(names)} domains: ") + ", ".join(names)
        parts.append(f"{p.name} {where}" + (f" ({', '.join(lowest)})" if on_hosts else ""))
    if not parts:
        return None
    return "; ".join(parts) + f" — {'; '.join(sorted(asked))}"
