"""`doctor`'s Kueue rows, made only when the infra spec sets `launch.queue` (no request otherwise).

    Kueue CRDs               kueue.x-k8s.io/v1beta2 (Kueue >= v0.15) serves workloads, clusterqueues, localqueues
    Kueue LocalQueue         launch.queue exists in the namespace and is Active
    Kueue ClusterQueue       the LocalQueue's ClusterQueue exists and is Active
    Kueue namespaceSelector  the ClusterQueue's namespaceSelector matches the namespace's labels
    Kueue quota: resources   every resource the gang requests is covered by a resourceGroup
    Kueue quota: gang        the gang fits the nominal quota (plus what borrowing allows), else by how much not
    Kueue priority class     launch.priorityClass names a WorkloadPriorityClass

The gang is counted as Kueue counts it (generator/live/kueue/gang.py) and held against the ClusterQueue's quota
with Kueue's flavor assignment and cohort borrowing (generator/live/kueue/quota.py). A 403 on a Kueue object is a
! row naming the verb and resource, never an abort.
"""

from __future__ import annotations

import math
from typing import Any

from generator.live.client.kube import Kube
from generator.live.client.selectors import selector_matches, selector_text
from generator.live.doctor.rows import FAIL, OK, WARN, Namespace, Row, forbidden
from generator.live.kueue.api import API, GROUP, VERSION
from generator.live.kueue.gang import PodSet, amounts, gang_needs, gang_text, pod_sets, queued_object
from generator.live.kueue.quota import (
    Borrowing,
    Group,
    assign,
    cohort_of,
    lendable,
    nominal_cap,
    quota_of,
    requested_sets,
    reserved_quota,
    resource_groups,
)
from generator.quantity import fmt

OLD_VERSION = "v1beta1"  # all Kueue older than v0.15 serves; asked only to say so when VERSION is not served

NEEDED = ("workloads", "clusterqueues", "localqueues")

ADMIN = "a cluster admin (Kueue's kueue-batch-admin-role reads ClusterQueues)"


def coverage_row(cq_name: str, groups: list[Group], sets: list[PodSet]) -> Row:
    covered = {r for g in groups for r in g.covered}
    missing: dict[str, list[str]] = {}
    for ps in sets:
        for r in ps.per_pod:
            if r not in covered:
                missing.setdefault(r, []).append(ps.name)
    if missing:
        what = "; ".join(f"{r} (by {', '.join(who)})" for r, who in sorted(missing.items()))
        return Row(FAIL, "Kueue quota: resources",
                   f"ClusterQueue {cq_name} covers {', '.join(sorted(covered)) or 'nothing'}; the gang also requests "
                   f"{what}: Kueue never admits a workload requesting a resource its ClusterQueue does not cover",
                   f"ask {ADMIN} to add {', '.join(sorted(missing))} to a resourceGroup of ClusterQueue {cq_name}, "
                   "or drop those requests from kuberay.spec")
    asked = sorted({r for ps in sets for r in ps.per_pod})
    return Row(OK, "Kueue quota: resources", f"ClusterQueue {cq_name} covers every resource the gang requests "
               f"({', '.join(asked)})")


def _quota_text(groups: list[Group], r: str, borrow: Borrowing) -> str:
    """'16', or inside a cohort 'nominal 8 + 4 borrowable in cohort C' ('+ borrowing with no known bound')."""
    nominal = quota_of(groups, r, nominal_cap)
    if not borrow.cohort:
        return fmt(r, nominal)
    extra = quota_of(groups, r, borrow.cap) - nominal
    more = "an unknown amount" if math.isinf(extra) else fmt(r, extra)
    return f"nominal {fmt(r, nominal)} + {more} borrowable in cohort {borrow.cohort}"

FLAVORS_FORBIDDEN = forbidden("get", f"resourceflavors.{GROUP}", None, "flavor match unknown")


def gang_row(cq: dict[str, Any], sets: list[PodSet], flavors: dict[str, dict[str, Any] | None] | None,
             borrow: Borrowing | None = None) -> Row:
    """Whether the gang fits the nominal quota (✓), only by borrowing from the cohort (!), or never (✗,
    with the numbers short per resource, or the pod set no flavor takes). `flavors` None: the ResourceFlavors
    could not be read (403): the quota is counted as if every flavor matched, and only a gang short of the
    whole quota is told (✗); otherwise the row is ! "flavor match unknown", never ✓."""
    borrow = borrow or Borrowing(cohort_of(cq), None, "the cohort's other ClusterQueues were not read")
    if flavors is not None:
        return _gang_row(cq, sets, flavors, borrow)
    groups = resource_groups(cq)
    every: dict[str, dict[str, Any] | None] = {f.name: {} for g in groups for f in g.flavors}
    row = _gang_row(cq, sets, every, borrow)
    need = gang_needs(requested_sets(sets, groups))
    if any(v > quota_of(groups, r, borrow.cap) + 1e-9 for r, v in need.items() if any(r in g.covered for g in groups)):
        return row  # more than all the flavors' quota together: it never fits, whichever flavors it matches
    counted = row.detail if row.mark != FAIL else f"the quota's flavors: {row.detail}"
    return Row(WARN, row.check, f"{FLAVORS_FORBIDDEN}; counted as if the gang matched every flavor: {counted}",
               f"ask {ADMIN} for get on resourceflavors.{GROUP} (cluster scope)",
               missing=[f"get resourceflavors.{GROUP}"])


def _gang_row(cq: dict[str, Any], sets: list[PodSet], flavors: dict[str, dict[str, Any] | None],
              borrow: Borrowing) -> Row:
    check, name = "Kueue quota: gang", cq["metadata"]["name"]
    groups = resource_groups(cq)
    sets = requested_sets(sets, groups)
    need = {r: v for r, v in gang_needs(sets).items() if any(r in g.covered for g in groups)}
    gang = gang_text(sets)
    nominal = assign(sets, groups, flavors, nominal_cap)
    if not nominal.unplaced:
        reserved = {r: v for r, v in reserved_quota(cq).items() if v and r in need}
        now = (f"; reserved now by admitted workloads: {amounts(reserved)} (it queues until that leaves room)"
               if any(reserved[r] + need[r] > quota_of(groups, r, nominal_cap) + 1e-9 for r in reserved) else "")
        return Row(OK, check, f"{gang} fit ClusterQueue {name}'s nominal quota: "
                   + ", ".join(f"{r} {fmt(r, v)} of {fmt(r, quota_of(groups, r, nominal_cap))}"
                               for r, v in sorted(need.items())) + now)
    best = assign(sets, groups, flavors, borrow.cap) if borrow.cohort else nominal
    raise_it = f"ask {ADMIN} to raise ClusterQueue {name}'s nominalQuota, or shrink cluster.trainer/inference"
    if not best.unplaced:
        over = {r: v - quota_of(groups, r, nominal_cap) for r, v in need.items()
                if v > quota_of(groups, r, nominal_cap) + 1e-9}
        said = "; ".join(f"{r}: needs {fmt(r, need[r])}, {fmt(r, v)} over the quota of "
                         f"{_quota_text(groups, r, borrow)}" for r, v in sorted(over.items()))
        known = (f"whether the cohort lends that much is unknown ({borrow.unknown})" if borrow.lendable is None
                 else "the other ClusterQueues of the cohort lend it only what they leave unused")
        return Row(WARN, check, f"{gang} exceed ClusterQueue {name}'s nominal quota and fit only by borrowing from "
                   f"cohort {borrow.cohort}: {said or 'the flavors fit only with borrowed quota'}; {known}: it "
                   "waits until they do", raise_it)
    short = {r: v - quota_of(groups, r, borrow.cap) for r, v in need.items()
             if v > quota_of(groups, r, borrow.cap) + 1e-9}
    allows = "quota, borrowing included" if borrow.cohort else "nominal quota (no cohort to borrow from)"
    if short:
        return Row(FAIL, check, f"{gang} never fit ClusterQueue {name}'s {allows}: "
                   + "; ".join(f"{r}: the gang needs {fmt(r, need[r])}, the quota is {_quota_text(groups, r, borrow)}, "
                               f"{fmt(r, v)} short" for r, v in sorted(short.items())), raise_it)
    return Row(FAIL, check, f"{gang} never fit ClusterQueue {name}'s {allows}: "
               + "; ".join(f"no flavor takes pod set {ps} ({why})" for ps, why in best.unplaced)[:500]
               + " (a pod set takes one flavor per resource group, all its pods alike)",
               "give the pod sets the tolerations and node selector of a flavor the ClusterQueue lists "
               f"(kuberay.placement), or ask {ADMIN} for quota in a flavor they match")


def _get(kube: Kube, path: str) -> tuple[dict[str, Any] | None, int | None]:
    """(the object, None), or (None, 403/404) when forbidden or absent; any other failure raises."""
    from kubernetes.client.exceptions import ApiException

    try:
        return kube.request("GET", path), None
    except ApiException as exc:
        if exc.status in (403, 404):
            return None, exc.status
        raise


def _active(obj: dict[str, Any]) -> tuple[bool | None, str]:
    """(Active condition's status — None when Kueue has set none —, its reason: message)."""
    cond = next((c for c in (obj.get("status") or {}).get("conditions") or [] if c.get("type") == "Active"), None)
    if cond is None:
        return None, ""
    return cond.get("status") == "True", f"{cond.get('reason', '')}: {cond.get('message', '')}".strip(": ")


def crds_row(kube: Kube) -> tuple[Row, str | None]:
    """(the row, the served version to read Kueue's objects with, None when not served). Only kueue_api.VERSION
    is read: a Kueue that serves only v1beta1 (older than v0.15) is ✗, asked only when VERSION is absent."""
    path = f"/apis/{GROUP}/{VERSION}"
    doc, status = _get(kube, path)
    if status == 403:
        return Row(WARN, "Kueue CRDs", forbidden("get", path, None, "whether Kueue is installed is unknown"),
                   missing=[f"get {path}"]), None
    if doc is None:
        old, _ = _get(kube, f"/apis/{GROUP}/{OLD_VERSION}")
        if old is not None:
            return Row(FAIL, "Kueue CRDs", f"the cluster serves {GROUP}/{OLD_VERSION} but not {VERSION}: Kueue older "
                       f"than v0.15 serves only {OLD_VERSION}; the launcher reads {VERSION}",
                       "upgrade Kueue to v0.15 or newer (the playground runs v0.17.0), or unset launch.queue"), None
        return Row(FAIL, "Kueue CRDs", f"the cluster does not serve {GROUP} (launch.queue is set): Kueue is not "
                   "installed, and its LocalQueue cannot admit the job",
                   "install Kueue (https://kueue.sigs.k8s.io), or unset launch.queue"), None
    served = {r["name"] for r in doc.get("resources") or []}
    missing = [p for p in NEEDED if p not in served]
    if missing:
        return Row(FAIL, "Kueue CRDs", f"{GROUP}/{VERSION} does not serve {', '.join(missing)}",
                   "install Kueue (its manifests or Helm chart) with its CRDs"), None
    return Row(OK, "Kueue CRDs", f"{GROUP}/{VERSION} serves {', '.join(NEEDED)}"), VERSION


def local_queue_row(kube: Kube, api: str, queue: str, ns: Namespace) -> tuple[Row, dict[str, Any] | None]:
    check = "Kueue LocalQueue"
    if ns.exists is False:
        return Row(FAIL, check, f"namespace {ns.name} does not exist, so neither does LocalQueue {queue} "
                   "(launch.queue): the job would wait in no queue", f"create namespace {ns.name} and a LocalQueue "
                   f"{queue} in it naming a ClusterQueue"), None
    lq, status = _get(kube, f"{api}/namespaces/{ns.name}/localqueues/{queue}")
    if status == 403:
        return Row(WARN, check, forbidden("get", f"localqueues.{GROUP}", ns.name, f"whether {queue} exists is unknown"),
                   f"ask a cluster admin for get on localqueues.{GROUP} in {ns.name} (Kueue's kueue-batch-user-role)",
                   missing=[f"get localqueues.{GROUP}"]), None
    if lq is None:
        others = _local_queue_names(kube, api, ns.name)
        return Row(FAIL, check, f"no LocalQueue {queue} in namespace {ns.name} (launch.queue): Kueue keeps the job "
                   "suspended, waiting in no queue" + (f"; the namespace has: {', '.join(others)}" if others else ""),
                   (f"set launch.queue to one of: {', '.join(others)}, or create LocalQueue {queue}" if others
                    else f"create LocalQueue {queue} in {ns.name} (spec.clusterQueue: a ClusterQueue), or ask a "
                         "cluster admin which queue to use")), None
    cq = (lq.get("spec") or {}).get("clusterQueue")
    active, why = _active(lq)
    if active is None:
        return Row(WARN, check, f"{queue} → ClusterQueue {cq}: no Active condition yet (is Kueue's controller "
                   "running?)", "check the kueue-controller-manager's pods and logs"), lq
    if not active:
        stop = (lq.get("spec") or {}).get("stopPolicy") or "None"
        return Row(FAIL, check, f"{queue} → ClusterQueue {cq} is not active ({why}): nothing is admitted from it",
                   f"LocalQueue {queue} has stopPolicy {stop}: ask its owner to set None" if stop != "None"
                   else "see the Kueue ClusterQueue row"), lq
    return Row(OK, check, f"{queue} in {ns.name} is active → ClusterQueue {cq}"), lq


def _local_queue_names(kube: Kube, api: str, namespace: str) -> list[str]:
    from kubernetes.client.exceptions import ApiException

    try:
        return sorted(q["metadata"]["name"] for q in kube.list(f"{api}/namespaces/{namespace}/localqueues"))
    except ApiException as exc:
        if exc.status == 403:
            return []
        raise


def cluster_queue_row(kube: Kube, api: str, name: str, sets: list[PodSet]) -> tuple[Row, dict[str, Any] | None]:
    check = "Kueue ClusterQueue"
    cq, status = _get(kube, f"{api}/clusterqueues/{name}")
    if status == 403:
        return Row(WARN, check, forbidden("get", f"clusterqueues.{GROUP}", None,
                                          f"whether {name} is active, admits the namespace and has quota is unknown"),
                   f"ask {ADMIN} for get on clusterqueues.{GROUP}, or whether {name} has quota for "
                   f"{amounts(gang_needs(sets))}", missing=[f"get clusterqueues.{GROUP}"]), None
    if cq is None:
        return Row(FAIL, check, f"ClusterQueue {name} (the LocalQueue's spec.clusterQueue) does not exist: "
                   "nothing is admitted",
                   f"ask {ADMIN} to create ClusterQueue {name}, or use a LocalQueue of another one"), None
    active, why = _active(cq)
    if active is None:
        return Row(WARN, check, f"{name}: no Active condition yet (is Kueue's controller running?)",
                   "check the kueue-controller-manager's pods and logs"), cq
    if not active:
        return Row(FAIL, check, f"{name} is not active ({why}): nothing is admitted", f"ask {ADMIN} to fix it"), cq
    cohort = cohort_of(cq)
    return Row(OK, check, f"{name} is active" + (f" (cohort {cohort})" if cohort else "")), cq


def namespace_selector_row(cq: dict[str, Any], ns: Namespace) -> Row:
    check, name = "Kueue namespaceSelector", cq["metadata"]["name"]
    selector = (cq.get("spec") or {}).get("namespaceSelector")
    if ns.obj is None:
        return Row(WARN, check, forbidden("get", "namespaces", ns.name, f"whether {name}'s namespaceSelector "
                                          f"({selector_text(selector)}) matches it is unknown"))
    labels = dict(ns.obj.metadata.labels or {})
    if selector_matches(selector, labels):
        return Row(OK, check, f"{name}'s namespaceSelector {selector_text(selector)} matches {ns.name}")
    return Row(FAIL, check, f"{name}'s namespaceSelector {selector_text(selector)} does not match namespace {ns.name} "
               f"(labels: {', '.join(f'{k}={v}' for k, v in sorted(labels.items())) or 'none'}): Kueue admits "
               "nothing from it",
               f"label namespace {ns.name} to match, or use a LocalQueue whose ClusterQueue admits it")


def flavors_of(kube: Kube, api: str, cq: dict[str, Any]) -> dict[str, dict[str, Any] | None] | None:
    """The ResourceFlavors the ClusterQueue names (a value None: absent); None when they cannot be read
    (403): the flavor match is unknown (gang_row says so)."""
    names = {f["name"] for g in (cq.get("spec") or {}).get("resourceGroups") or [] for f in g.get("flavors") or []}
    out: dict[str, dict[str, Any] | None] = {}
    for n in sorted(names):
        obj, status = _get(kube, f"{api}/resourceflavors/{n}")
        if status == 403:
            return None
        out[n] = obj
    return out


def read_borrowing(kube: Kube, api: str, cq: dict[str, Any]) -> Borrowing:
    """The cohort's lending to cq: its other ClusterQueues (one list), and the Cohort object of that name
    when the cluster serves it (quota or a parent of its own make the total unknown here)."""
    from kubernetes.client.exceptions import ApiException

    cohort = cohort_of(cq)
    if not cohort:
        return Borrowing()
    obj, status = _get(kube, f"{api}/cohorts/{cohort}")
    if status == 403:
        return Borrowing(cohort, None, forbidden("get", f"cohorts.{GROUP}", None, "its own quota is unknown"))
    spec = (obj or {}).get("spec") or {}
    if spec.get("parentName") or spec.get("resourceGroups"):
        return Borrowing(cohort, None, f"Cohort {cohort} has quota or a parent of its own")
    try:
        others = kube.list(f"{api}/clusterqueues")
    except ApiException as exc:
        if exc.status != 403:
            raise
        return Borrowing(cohort, None, forbidden("list", f"clusterqueues.{GROUP}", None,
                                                 "the cohort's lenders are unknown"))
    return Borrowing(cohort, lendable(cq, others))


def priority_class_row(kube: Kube, api: str, name: str) -> Row:
    check = "Kueue priority class"
    obj, status = _get(kube, f"{api}/workloadpriorityclasses/{name}")
    if status == 403:
        return Row(WARN, check, forbidden("get", f"workloadpriorityclasses.{GROUP}", None,
                                          f"whether {name} exists is unknown"),
                   f"ask a cluster admin whether WorkloadPriorityClass {name} exists",
                   missing=[f"get workloadpriorityclasses.{GROUP}"])
    if obj is None:
        return Row(FAIL, check, f"WorkloadPriorityClass {name} (launch.priorityClass) does not exist: Kueue makes no "
                   "Workload for the job", f"create WorkloadPriorityClass {name}, or unset launch.priorityClass")
    return Row(OK, check, f"WorkloadPriorityClass {name} exists (value {obj.get('value')})")


def doctor_rows(kube: Kube, values: dict[str, Any], docs: list[dict[str, Any]], ns: Namespace,
                seen: dict[str, Any] | None = None) -> list[Row]:
    """The Kueue rows for the composed values' launch.queue; none (and no request) when it is unset. `seen`
    keeps the ClusterQueue and its flavors as read ("cq", "flavors"), for the topology rows to reuse."""
    launch = values.get("launch") or {}
    queue, priority = launch.get("queue"), launch.get("priorityClass")
    if not queue:
        return []
    crds, version = crds_row(kube)
    if version is None:
        return [crds]
    api = API
    rows = [crds]
    obj = queued_object(docs)
    sets = pod_sets(obj) if obj else []
    lq_row, lq = local_queue_row(kube, api, queue, ns)
    rows.append(lq_row)
    cq_name = ((lq or {}).get("spec") or {}).get("clusterQueue")
    if cq_name:
        cq_row, cq = cluster_queue_row(kube, api, cq_name, sets)
        rows.append(cq_row)
        if cq is not None:
            rows.append(namespace_selector_row(cq, ns))
            groups = resource_groups(cq)
            coverage = coverage_row(cq_name, groups, requested_sets(sets, groups))
            rows.append(coverage)
            flavors = flavors_of(kube, api, cq)
            if seen is not None:
                seen.update(cq=cq, flavors=flavors)
            if coverage.mark != FAIL:
                rows.append(gang_row(cq, sets, flavors, read_borrowing(kube, api, cq)))
    if priority:
        rows.append(priority_class_row(kube, api, priority))
    return rows


def refuse_never_admitted(kube: Kube, values: dict[str, Any], release: str, namespace: str, what: str) -> None:
    """CheckFailed (exit 1) before anything is installed when a Kueue row is ✗ (no such LocalQueue, a gang
    the ClusterQueue can never hold, ...): the queued job would wait out its whole --timeout."""
    import yaml

    from generator.errors import CheckFailed
    from generator.live.doctor.rows import read_namespace
    from generator.render.helm import template

    docs = [d for d in yaml.safe_load_all(template(values, release, namespace)) if isinstance(d, dict)]
    row = next((r for r in doctor_rows(kube, values, docs, read_namespace(kube, namespace)) if r.mark == FAIL), None)
    if row is not None:
        raise CheckFailed(f"Kueue would never admit this gang ({row.check}: {row.detail}): {what} would wait out its "
                          f"whole --timeout; nothing was changed. {row.remedy}")
