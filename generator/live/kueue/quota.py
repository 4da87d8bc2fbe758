"""A ClusterQueue's quota as Kueue applies it: its resource groups and flavors, what its cohort may lend it,
and the flavor assignment — each pod set takes, per resource group, the first flavor in order whose node
labels and taints it matches and whose quota still holds it (Kueue's flavor assigner)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from generator.live.client.selectors import selects, untolerated
from generator.live.kueue.gang import PodSet
from generator.quantity import qty


@dataclass
class Flavor:
    name: str
    nominal: dict[str, float]
    borrowing: dict[str, float | None]  # the resource's borrowingLimit; None: no limit
    lending: dict[str, float | None] = field(default_factory=dict)  # its lendingLimit; None: all of nominal


@dataclass
class Group:
    covered: list[str]
    flavors: list[Flavor]


def _limit(quota: dict[str, Any], key: str) -> float | None:
    return qty(quota[key]) if quota.get(key) is not None else None


def resource_groups(cq: dict[str, Any]) -> list[Group]:
    out = []
    for g in (cq.get("spec") or {}).get("resourceGroups") or []:
        flavors = []
        for f in g.get("flavors") or []:
            res = f.get("resources") or []
            flavors.append(Flavor(f["name"], {r["name"]: qty(r.get("nominalQuota", 0)) for r in res},
                                  {r["name"]: _limit(r, "borrowingLimit") for r in res},
                                  {r["name"]: _limit(r, "lendingLimit") for r in res}))
        out.append(Group(list(g.get("coveredResources") or []), flavors))
    return out


def cohort_of(cq: dict[str, Any]) -> str | None:
    return (cq.get("spec") or {}).get("cohortName") or None


def requested_sets(sets: list[PodSet], groups: list[Group]) -> list[PodSet]:
    """The pod sets with `pods` added to their requests when the ClusterQueue covers it (as Kueue does)."""
    if not any("pods" in g.covered for g in groups):
        return sets
    return [PodSet(ps.name, ps.count, ps.spec, {**ps.per_pod, "pods": 1.0}) for ps in sets]


def _restricted(spec: dict[str, Any], keys: set[str]) -> dict[str, Any]:
    """The pod's node selector and required node affinity on the flavors' label keys only (flavorSelector)."""
    out: dict[str, Any] = {"nodeSelector": {k: v for k, v in (spec.get("nodeSelector") or {}).items() if k in keys}}
    required = (((spec.get("affinity") or {}).get("nodeAffinity") or {})
                .get("requiredDuringSchedulingIgnoredDuringExecution") or {})
    terms: list[dict[str, Any]] = []
    for t in required.get("nodeSelectorTerms") or []:
        exprs = [e for e in t.get("matchExpressions") or [] if e.get("key") in keys]
        if not exprs:  # a term left empty matches every flavor: only the node selector is left
            terms = []
            break
        terms.append({"matchExpressions": exprs})
    if terms:
        out["affinity"] = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution":
                                            {"nodeSelectorTerms": terms}}}
    return out


def flavor_refusal(ps: PodSet, flavor: dict[str, Any] | None, name: str, keys: set[str]) -> str | None:
    """Why the pod set cannot take this ResourceFlavor (an untolerated taint, node labels it does not
    select), None when it can (checkFlavorForPodSets)."""
    if flavor is None:
        return f"ResourceFlavor {name} does not exist"
    fspec = flavor.get("spec") or {}
    tolerating = {"tolerations": (ps.spec.get("tolerations") or []) + (fspec.get("tolerations") or [])}
    taints = untolerated(tolerating, fspec.get("nodeTaints") or [])
    if taints:
        t = taints[0]
        return f"{ps.name} does not tolerate {name}'s taint {t.get('key')}={t.get('value') or ''}:{t.get('effect')}"
    if not selects(_restricted(ps.spec, keys), "", dict(fspec.get("nodeLabels") or {})):
        return f"{ps.name}'s node selector/affinity does not match {name}'s nodeLabels {fspec.get('nodeLabels')}"
    return None


@dataclass
class Assignment:
    """Pod sets to flavors under some cap per (flavor, resource)."""

    used: dict[tuple[str, str], float] = field(default_factory=dict)
    placed: dict[str, list[str]] = field(default_factory=dict)  # pod set -> its flavors
    unplaced: list[tuple[str, str]] = field(default_factory=list)  # (pod set, why)


def assign(sets: list[PodSet], groups: list[Group], flavors: dict[str, dict[str, Any] | None],
           cap: Any) -> Assignment:
    """Kueue's flavor assignment against `cap(flavor, resource)`: pod set by pod set, per resource group
    the first flavor (in order) that the pod set may use and whose cap still holds it."""
    out = Assignment()
    for ps in sets:
        for g in groups:
            need = {r: ps.total(r) for r in g.covered if ps.per_pod.get(r)}
            if not need:
                continue
            keys = {k for f in g.flavors for k in ((flavors.get(f.name) or {}).get("spec") or {}).get("nodeLabels")
                    or {}}
            why = []
            for f in g.flavors:
                refusal = flavor_refusal(ps, flavors.get(f.name), f.name, keys)
                if refusal:
                    why.append(refusal)
                    continue
                short = [r for r, v in need.items() if out.used.get((f.name, r), 0.0) + v > cap(f, r) + 1e-9]
                if short:
                    why.append(f"{f.name} has no room for its {', '.join(short)}")
                    continue
                for r, v in need.items():
                    out.used[(f.name, r)] = out.used.get((f.name, r), 0.0) + v
                out.placed.setdefault(ps.name, []).append(f.name)
                break
            else:
                out.unplaced.append((ps.name, "; ".join(why) or "the resource group has no flavor"))
    return out


def nominal_cap(f: Flavor, r: str) -> float:
    return f.nominal.get(r, 0.0)


@dataclass
class Borrowing:
    """What the ClusterQueue's cohort may lend it: `lendable` per (flavor, resource) summed over the cohort's
    other ClusterQueues (their nominal quota, capped by their lendingLimit), None when that is unknown
    (`unknown` says why: the ClusterQueues cannot be listed, or the cohort is an object with quota or a
    parent of its own)."""

    cohort: str | None = None
    lendable: dict[tuple[str, str], float] | None = None
    unknown: str = ""

    def cap(self, f: Flavor, r: str) -> float:
        """The most the ClusterQueue can hold of (flavor, resource): nominal, plus what it may borrow."""
        nominal = f.nominal.get(r, 0.0)
        if not self.cohort:
            return nominal
        limit = f.borrowing.get(r)
        lend = math.inf if self.lendable is None else self.lendable.get((f.name, r), 0.0)
        return nominal + min(math.inf if limit is None else limit, lend)


def lendable(cq: dict[str, Any], others: list[dict[str, Any]]) -> dict[tuple[str, str], float]:
    """What the other ClusterQueues of cq's cohort lend, per (flavor, resource)."""
    cohort = cohort_of(cq)
    out: dict[tuple[str, str], float] = {}
    for other in others:
        if other["metadata"]["name"] == cq["metadata"]["name"] or cohort_of(other) != cohort:
            continue
        for g in resource_groups(other):
            for f in g.flavors:
                for r, nominal in f.nominal.items():
                    limit = f.lending.get(r)
                    out[(f.name, r)] = out.get((f.name, r), 0.0) + (nominal if limit is None else min(limit, nominal))
    return out


def quota_of(groups: list[Group], resource: str, cap: Any) -> float:
    return sum(cap(f, resource) for g in groups if resource in g.covered for f in g.flavors)


def reserved_quota(cq: dict[str, Any]) -> dict[str, float]:
    out: dict[str, float] = {}
    for f in (cq.get("status") or {}).get("flavorsReservation") or []:
        for r in f.get("resources") or []:
            out[r["name"]] = out.get(r["name"], 0.0) + qty(r.get("total", 0))
    return out
