"""`doctor`'s rows on access: helm, the API server, the namespace, the release, RBAC, KubeRay, the
PriorityClass, pull secrets, PodSecurity admission and NetworkPolicy. Each function reads what its
row needs and returns the row (or rows); `generator.live.verbs.doctor.checks` puts them in order.
Rows on room (GPUs, the sandbox pool, quotas) are in `capacity`.
"""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass, field
from typing import Any

from generator.errors import CheckFailed
from generator.live.kube import RAY_GROUP, RAY_VERSION, Kube, describe_error

OK, FAIL, WARN = "✓", "✗", "!"

# Every (group, resource, verbs) the live path uses.
RBAC = [
    ("", "secrets", ("get", "list", "create", "update", "delete")),  # Helm's release records
    ("", "configmaps", ("get", "create", "patch", "delete")),
    ("", "services", ("get", "create", "patch", "delete")),
    ("", "serviceaccounts", ("get", "create", "patch", "delete")),
    ("", "pods", ("get", "list", "watch")),
    ("", "pods/log", ("get",)),
    ("", "pods/portforward", ("create",)),
    ("", "events", ("list",)),
    ("apps", "deployments", ("get", "list", "watch", "create", "patch", "delete")),
    ("apps", "replicasets", ("list",)),
    ("networking.k8s.io", "networkpolicies", ("get", "create", "patch", "delete")),
    ("policy", "poddisruptionbudgets", ("get", "create", "patch", "delete")),
    (RAY_GROUP, "rayjobs", ("get", "list", "create", "patch", "delete")),
    (RAY_GROUP, "rayclusters", ("get", "list", "create", "patch", "delete")),
    ("coordination.k8s.io", "leases", ("get", "create", "update", "patch", "delete")),
    ("", "namespaces", ("get",)),  # the namespace itself (exists? being deleted?)
    ("", "resourcequotas", ("list",)),  # doctor's quota headroom
    ("", "pods", ("create",)),  # doctor's server-side dry run of each pod template
]

# Only when the release renders a HorizontalPodAutoscaler (sandbox.autoscaling.enabled); list: status, uninstall.
HPA_RBAC = ("autoscaling", "horizontalpodautoscalers", ("get", "list", "create", "patch", "delete"))

# Cluster-scope reads: not needed to work in a namespace; without them a row says what is unknown.
CLUSTER_READS = [
    ("", "nodes", "list", "GPU and CPU capacity unknown"),
    ("", "pods", "list", "GPUs and CPU in use by other namespaces unknown"),
    ("apps", "deployments", "list", "whether a KubeRay operator runs in the cluster is unknown"),
    ("scheduling.k8s.io", "priorityclasses", "get", "whether infra.priorityClassName exists is unknown"),
    ("", "secrets", "list", "status, history and uninstall without -n look only in the kubeconfig context's namespace"),
]


@dataclass
class Row:
    mark: str
    check: str
    detail: str
    remedy: str = ""
    missing: list[str] = field(default_factory=list)  # RBAC rows: each denied "verb resource[.group]"


@dataclass
class Namespace:
    """The target namespace as doctor could read it."""

    name: str
    exists: bool | None  # None: RBAC forbids reading it, so whether it exists is unknown
    obj: Any = None  # the V1Namespace when it was read

    @property
    def deleting(self) -> bool:
        return self.obj is not None and self.obj.metadata.deletion_timestamp is not None


def forbidden(verb: str, resource: str, namespace: str | None, meaning: str) -> str:
    """A row's detail when RBAC refused the read it needs: what was refused and what it means."""
    scope = f"in namespace {namespace}" if namespace else "at cluster scope"
    return f"forbidden: cannot {verb} {resource} {scope}: {meaning}"


def _pair(group: str, resource: str, verb: str) -> str:
    return f"{verb} {resource}" + (f".{group}" if group else "")


def _grouped(pairs: list[tuple[str, str, str]]) -> str:
    """'rayjobs.ray.io (get, list); leases.coordination.k8s.io (create)' from (group, resource, verb)."""
    by: dict[str, list[str]] = {}
    for group, resource, verb in pairs:
        by.setdefault(resource + (f".{group}" if group else ""), []).append(verb)
    return "; ".join(f"{r} ({', '.join(v)})" for r, v in by.items())


# helm and the API server: nothing else is checked when one of them fails ------------------------------

def helm_row() -> Row:
    """The helm the live verbs would run: refused (and nothing rendered with it) unless Helm 3 or 4."""
    from generator.render.helm import HELM_ENV, SUPPORTED, helm_binary, helm_version

    try:
        hv = helm_version(helm_binary())
    except CheckFailed as exc:
        ok, detail = False, str(exc)
    else:
        ok, detail = hv.supported, f"{hv.version} ({hv.path})"
    if ok:
        return Row(OK, "helm", detail)
    return Row(FAIL, "helm", f"{detail}: not {SUPPORTED}", f"pass --helm PATH or set {HELM_ENV} to a supported helm, "
               "or unset both for the pinned Helm 3 (`make tools`)")


def api_server_row(kube: Kube) -> Row:
    try:
        version = kube.git_version()
    except Exception as exc:
        return Row(FAIL, "API server", describe_error(exc, kube.server) or str(exc),
                   "check --kubeconfig / --context, or start the playground")
    return Row(OK, "API server", f"{kube.server} Kubernetes {version}")


# the namespace and the release ---------------------------------------------------------------------

def read_namespace(kube: Kube, namespace: str) -> Namespace:
    from kubernetes.client.exceptions import ApiException

    try:
        return Namespace(namespace, True, kube.core.read_namespace(namespace))
    except ApiException as exc:
        status = exc.status
        if status not in (403, 404):
            raise
        return Namespace(namespace, None if status == 403 else False)


def namespace_row(ns: Namespace) -> Row:
    if ns.exists is None:
        return Row(WARN, "namespace", forbidden("get", "namespaces", ns.name, "whether it exists is unknown"),
                   f"ask a cluster admin for `get namespaces` in {ns.name} (part of the built-in admin role)")
    if ns.deleting:
        return Row(FAIL, "namespace", f"{ns.name} is being deleted (since {ns.obj.metadata.deletion_timestamp})",
                   "wait until it is gone and create it again, or use another namespace")
    if ns.exists:
        return Row(OK, "namespace", f"{ns.name} exists")
    return Row(WARN, "namespace", f"{ns.name} does not exist", "`run --create-namespace` creates it")


def release_row(kube: Kube, release: str, namespace: str) -> Row:
    """Whose release of this name exists: ours (upgraded by `run`), another chart's (refused), or none."""
    from kubernetes.client.exceptions import ApiException

    from generator.live.guard import foreign_chart
    from generator.live.snapshot import labels, release_records

    try:
        records = release_records(kube, release, namespace)
    except ApiException as exc:
        if exc.status != 403:
            raise
        return Row(WARN, "release",
                   forbidden("list", "secrets", namespace, f"whether release {release} exists is unknown"))
    if not records:
        return Row(OK, "release", f"no release {release} in {namespace}: `run` installs it")
    other = foreign_chart(records[-1])
    if other:
        return Row(FAIL, "release", f"{release} in {namespace} was made by {other}, not by dockyard-k8s's chart: "
                   "run, rollback and uninstall refuse to touch it", "pick another name (--release NAME) or namespace")
    last = labels(records[-1])
    return Row(OK, "release", f"{release} revision {last.get('version')} ({last.get('status')}) is this chart's: "
               "`run` upgrades it")


# RBAC ----------------------------------------------------------------------------------------------

def _allowed(kube: Kube, group: str, resource: str, verb: str, namespace: str | None) -> bool:
    """A SelfSubjectAccessReview: may the kubeconfig's user do `verb` on `resource` (resource/sub)?"""
    from kubernetes import client

    res, sub = (resource.split("/") + [None])[:2]
    review = client.V1SelfSubjectAccessReview(spec=client.V1SelfSubjectAccessReviewSpec(
        resource_attributes=client.V1ResourceAttributes(group=group, resource=res, subresource=sub,
                                                        verb=verb, namespace=namespace)))
    status = client.AuthorizationV1Api(kube.api).create_self_subject_access_review(review).status
    return bool(status and status.allowed)


def rbac_rows(kube: Kube, namespace: str, hpa: bool = False) -> list[Row]:
    """Every verb the live path uses in the namespace (the HPA's with `hpa`), then the optional cluster-scope reads."""
    from kubernetes.client.exceptions import ApiException

    needed = [(g, r, v) for g, r, verbs in [*RBAC, *([HPA_RBAC] if hpa else [])] for v in verbs]
    try:
        denied = [(g, r, v) for g, r, v in needed if not _allowed(kube, g, r, v, namespace)]
        cluster_denied = [(g, r, v, m) for g, r, v, m in CLUSTER_READS if not _allowed(kube, g, r, v, None)]
    except ApiException as exc:
        if exc.status != 403:
            raise
        return [Row(WARN, "RBAC", forbidden("create", "selfsubjectaccessreviews.authorization.k8s.io", None,
                                            "which verbs you have is unknown"),
                    "ask a cluster admin for the built-in system:basic-user role")]
    in_namespace = Row(FAIL if denied else OK, "RBAC",
                       f"{len(needed) - len(denied)}/{len(needed)} verbs allowed in {namespace}"
                       + (f"; denied: {_grouped(denied)}" if denied else ""),
                       f"ask a cluster admin for a Role granting these verbs in {namespace}" if denied else "",
                       missing=[_pair(g, r, v) for g, r, v in denied])
    if not cluster_denied:
        return [in_namespace, Row(OK, "RBAC: cluster scope", f"all {len(CLUSTER_READS)} cluster-scope reads allowed")]
    return [in_namespace, Row(WARN, "RBAC: cluster scope",
                              "; ".join(f"cannot {_pair(g, r, v)} at cluster scope: {m}"
                                        for g, r, v, m in cluster_denied),
                              "not needed to work in the namespace; a ClusterRole granting these reads makes the rows "
                              "marked ! complete", missing=[_pair(g, r, v) for g, r, v, _ in cluster_denied])]


# KubeRay ---------------------------------------------------------------------------------------------

def kuberay_crds_row(kube: Kube) -> Row:
    served = kube.ray_resources()
    need = ("rayjobs", "rayclusters")
    missing = [p for p in need if p not in served]
    if missing:
        return Row(FAIL, "KubeRay CRDs", f"{RAY_GROUP}/{RAY_VERSION} does not serve {', '.join(missing)}",
                   "install the KubeRay operator and its CRDs (helm chart kuberay-operator)")
    return Row(OK, "KubeRay CRDs", f"{RAY_GROUP}/{RAY_VERSION} serves {', '.join(sorted(served & set(need)))}")


def kuberay_operator_row(kube: Kube) -> Row:
    from kubernetes.client.exceptions import ApiException

    from generator.tools import kuberay_range

    try:
        deployments = kube.apps.list_deployment_for_all_namespaces().items
    except ApiException as exc:
        if exc.status != 403:
            raise
        return Row(WARN, "KubeRay operator",
                   forbidden("list", "deployments", None, "whether a KubeRay operator runs is unknown"),
                   f"ask a cluster admin whether a KubeRay operator ({kuberay_range()}) watches this namespace")
    ops = [d for d in deployments if "kuberay-operator" in d.metadata.name
           or (d.metadata.labels or {}).get("app.kubernetes.io/name") == "kuberay-operator"]
    if not ops:
        return Row(WARN, "KubeRay operator",
                   "no in-cluster operator Deployment found (an operator running outside the cluster, as on the "
                   "playground, cannot be seen from the API)",
                   f"make sure a KubeRay operator ({kuberay_range()}) watches this namespace, or RayJobs will not "
                   "progress")
    ready = [d for d in ops if (d.status.ready_replicas or 0) > 0]
    d = ops[0]
    return Row(OK if ready else FAIL, "KubeRay operator",
               f"Deployment {d.metadata.namespace}/{d.metadata.name} {'ready' if ready else 'not ready'}",
               "" if ready else "check the operator's pods and logs")


LEADER_LEASE = "ray-operator-leader"  # KubeRay's LeaderElectionID (ray-operator main.go)
RECONCILE_WATCH = 5.0  # seconds a live leader surely renews in (controller-runtime renews every 2 s)


def kuberay_reconciling_row(kube: Kube, watch: float = RECONCILE_WATCH) -> Row:
    """Whether a KubeRay operator is reconciling: its leader Lease changes while this process watches
    it (judged on our own clock, never by comparing the holder's renewTime with ours)."""
    import time

    from kubernetes.client.exceptions import ApiException

    path = "/apis/coordination.k8s.io/v1/leases"
    try:
        leases = kube.list(path, field_selector=f"metadata.name={LEADER_LEASE}")
    except ApiException as exc:
        if exc.status != 403:
            raise
        return Row(WARN, "KubeRay reconciling", forbidden("list", "leases.coordination.k8s.io", None,
                                                          "whether the operator reconciles is unknown"))
    if not leases:
        return Row(WARN, "KubeRay reconciling",
                   f"no leader Lease {LEADER_LEASE} in any namespace (leader election off?): whether an operator "
                   "reconciles is unknown", "run the KubeRay operator with --enable-leader-election (its chart's "
                   "default) so this can be checked")
    lease = leases[0]
    where = f"{lease['metadata']['namespace']}/{LEADER_LEASE}"
    holder = (lease.get("spec") or {}).get("holderIdentity")
    if not holder:
        return Row(FAIL, "KubeRay reconciling", f"leader Lease {where} has no holder: no operator leads",
                   "start the KubeRay operator; RayJobs and RayClusters do not progress, and their finalizers "
                   "(ray.io/rayjob-finalizer) are not removed, until one runs")
    seen, t0 = lease["metadata"]["resourceVersion"], time.monotonic()
    while time.monotonic() - t0 < watch:
        time.sleep(0.5)
        now = kube.request("GET", f"/apis/coordination.k8s.io/v1/namespaces/{lease['metadata']['namespace']}"
                                  f"/leases/{LEADER_LEASE}")
        if now["metadata"]["resourceVersion"] != seen:
            return Row(OK, "KubeRay reconciling", f"leader Lease {where} renewed by {holder} "
                                                  f"({time.monotonic() - t0:.1f}s after it was first read)")
    return Row(FAIL, "KubeRay reconciling",
               f"leader Lease {where} (holder {holder}) was not renewed in {watch:.0f}s of watching: the operator is "
               "stopped or stuck", "check the KubeRay operator's pods and logs; RayJobs and RayClusters do not "
               "progress, and their finalizers (ray.io/rayjob-finalizer) are not removed, until it reconciles")


# what the values name: a PriorityClass, pull secrets --------------------------------------------------

def priority_class_row(kube: Kube, name: str | None) -> Row:
    if not name:
        return Row(OK, "PriorityClass", "none requested")
    from kubernetes import client
    from kubernetes.client.exceptions import ApiException

    try:
        client.SchedulingV1Api(kube.api).read_priority_class(name)
    except ApiException as exc:
        status = exc.status
        if status == 403:
            return Row(WARN, "PriorityClass",
                       forbidden("get", "priorityclasses", None, f"whether {name} exists is unknown"),
                       f"ask a cluster admin whether PriorityClass {name} exists")
        if status == 404:
            return Row(FAIL, "PriorityClass", f"{name} does not exist",
                       f"create PriorityClass {name}, or unset infra.priorityClassName")
        raise
    return Row(OK, "PriorityClass", f"{name} exists")


def pull_secrets_row(kube: Kube, secrets: list[str], ns: Namespace) -> Row:
    from kubernetes.client.exceptions import ApiException

    if not secrets:
        return Row(OK, "image pull secrets", "none requested")
    have: set[str] = set()
    if ns.exists is not False:
        try:
            have = {s.metadata.name for s in kube.core.list_namespaced_secret(ns.name).items}
        except ApiException as exc:
            if exc.status != 403:
                raise
            return Row(WARN, "image pull secrets",
                       forbidden("list", "secrets", ns.name, f"whether {', '.join(secrets)} exist is unknown"))
    absent = [s for s in secrets if s not in have]
    if absent:
        return Row(FAIL, "image pull secrets", f"missing in {ns.name}: {', '.join(absent)}",
                   f"kubectl -n {ns.name} create secret docker-registry NAME ...")
    return Row(OK, "image pull secrets", f"{', '.join(secrets)} exist")


# admission ---------------------------------------------------------------------------------------------

def _dry_run_pod(role: str, template: dict[str, Any], drop_priority_class: bool) -> dict[str, Any]:
    """A Pod made of a rendered pod template, for a server-side dry run."""
    spec: dict[str, Any] = copy.deepcopy(template.get("spec") or {})
    spec.pop("serviceAccountName", None)  # created by the release itself
    for c in spec.get("containers", []) + spec.get("initContainers", []):
        for part in ("limits", "requests"):
            block = (c.get("resources") or {}).get(part)
            if block:
                c["resources"][part] = {k: str(v) for k, v in block.items()}
    if drop_priority_class:
        spec.pop("priorityClassName", None)
    labels = (template.get("metadata") or {}).get("labels") or {}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"generateName": f"doctor-{role}-", "labels": labels},
            "spec": spec}


def pod_security_row(kube: Kube, ns: Namespace, templates: dict[str, dict[str, Any]], drop_priority_class: bool) -> Row:
    """A server-side dry run of each rendered pod (drop_priority_class: the PriorityClass is not known to exist)."""
    from kubernetes.client.exceptions import ApiException

    if ns.deleting:
        return Row(WARN, "PodSecurity admission", f"namespace {ns.name} is being deleted: nothing can be created in it")
    if ns.exists is False:
        return Row(WARN, "PodSecurity admission", "namespace does not exist yet: the cluster's default level applies",
                   "create the namespace first to check its level")
    level = ((ns.obj.metadata.labels or {}).get("pod-security.kubernetes.io/enforce", "cluster default") if ns.obj
             else "unknown (the namespace cannot be read)")
    refused = []
    for role, tpl in templates.items():
        try:
            kube.core.create_namespaced_pod(ns.name, _dry_run_pod(role, tpl, drop_priority_class), dry_run="All")
        except ApiException as exc:
            status = exc.status
            if status not in (400, 403, 422):
                raise
            try:
                msg = json.loads(exc.body or "").get("message", exc.reason)
            except ValueError:
                msg = exc.reason
            if status == 403 and 'cannot create resource "pods"' in str(msg):  # RBAC, not admission
                return Row(WARN, "PodSecurity admission",
                           forbidden("create", "pods", ns.name, "whether the namespace admits the pods is unknown "
                                     "(a server-side dry run needs the create verb)"))
            refused.append(f"{role}: {msg}")
    if refused:
        return Row(FAIL, "PodSecurity admission", f"enforce={level}: " + "; ".join(refused)[:600],
                   "relax the namespace's pod-security.kubernetes.io/enforce label, or harden "
                   "sandbox.security / infra.security (profile: restricted)")
    return Row(OK, "PodSecurity admission",
               f"enforce={level}: admits all {len(templates)} pod templates (server-side dry run)")


def network_policy_rows(values: dict[str, Any]) -> list[Row]:
    if not (values.get("sandbox") or {}).get("networkPolicy", {}).get("enabled"):
        return []
    return [Row(WARN, "NetworkPolicy", "the sandbox NetworkPolicy is only enforced by a CNI that implements it",
                "use Calico, Cilium or another enforcing CNI; elsewhere the policy is an inert no-op")]


# the versions users run (issue 19 items 5-6) ----------------------------------------------------------

def _chart_kube_floor() -> int | None:
    """The minor of the chart's `kubeVersion: >=1.N` (helm install refuses an older server), when it says so."""
    import re

    from generator.tools import CHART_DIR

    m = re.search(r'^kubeVersion:\s*["\']?>=\s*v?1\.(\d+)', (CHART_DIR / "Chart.yaml").read_text(), re.M)
    return int(m.group(1)) if m else None


def kubernetes_version_verdict(git_version: str) -> Row:
    """The row for a server reporting `git_version`: ✓ in the supported range, ! outside it, ✗ below the
    chart's kubeVersion (helm install refuses it)."""
    import re

    from generator.tools import KUBE_MINORS, kube_range

    check = "Kubernetes version"
    m = re.match(r"^v?(\d+)\.(\d+)", git_version)
    if not m:
        return Row(WARN, check, f"the server reports version {git_version!r}: not v1.N; supported {kube_range()}")
    major, minor = int(m.group(1)), int(m.group(2))
    if major == 1 and minor in KUBE_MINORS:
        return Row(OK, check, f"{git_version} (supported {kube_range()})")
    floor = _chart_kube_floor()
    if major == 1 and floor is not None and minor < floor:
        return Row(FAIL, check, f"{git_version}: the chart requires Kubernetes >= 1.{floor} (helm install refuses "
                   f"it); dockyard-k8s supports {kube_range()}", f"use a cluster of Kubernetes {kube_range()}")
    side = "older" if (major, minor) < (1, KUBE_MINORS[0]) else "newer"
    return Row(WARN, check, f"{git_version}: {side} than the supported {kube_range()} (untested there)",
               f"use a cluster of Kubernetes {kube_range()}, or check the chart against the nearest minor: "
               f"`check --kube-version 1.{KUBE_MINORS[0] if side == 'older' else KUBE_MINORS[-1]}`")


def kubernetes_version_row(kube: Kube) -> Row:
    """The server's version (/version) inside the supported range."""
    try:
        version = kube.git_version()
    except Exception as exc:
        return Row(WARN, "Kubernetes version", f"unknown: {describe_error(exc, kube.server) or exc}")
    return kubernetes_version_verdict(version)


def _crd_probe(obj: dict[str, Any]) -> dict[str, Any]:
    """A rendered RayJob/RayCluster for a dry-run create: a generated name (an installed release's object is
    never touched, nor its name's CEL rules hit), the labels and spec as rendered."""
    meta = obj.get("metadata") or {}
    return {**obj, "metadata": {"generateName": "doctor-", "labels": meta.get("labels") or {}}}


def _unknown_fields(message: str) -> list[str]:
    """The field paths of the apiserver's strict decoding error (`unknown field "spec.x"`)."""
    import re

    return re.findall(r'unknown field "([^"]+)"', message)


def kuberay_fields_rows(kube: Kube, docs: list[dict[str, Any]], namespace: str) -> list[Row]:
    """The installed KubeRay CRDs accept what the chart renders: each RayJob/RayCluster sent as a dry-run
    create with fieldValidation=Strict (a field the CRD lacks is an error, not pruned); ✗ naming the field.
    No row when nothing of ray.io is rendered (attach) or the CRDs are not served (their own row says ✗)."""
    from kubernetes.client.exceptions import ApiException

    check = "KubeRay CRDs accept"
    ray = [d for d in docs if str(d.get("apiVersion", "")).startswith(f"{RAY_GROUP}/")]
    if not ray:
        return []
    served = kube.ray_resources()
    ray = [d for d in ray if f"{d['kind'].lower()}s" in served]
    if not ray:
        return []
    refused, unknown = [], []
    for d in ray:
        plural = f"{d['kind'].lower()}s"
        path = f"/apis/{d['apiVersion']}/namespaces/{namespace}/{plural}"
        try:
            kube.request("POST", path, {"dryRun": "All", "fieldValidation": "Strict"}, _crd_probe(d))
        except ApiException as exc:
            try:
                msg = json.loads(exc.body or "").get("message", exc.reason)
            except ValueError:
                msg = exc.reason
            if exc.status == 403:
                return [Row(WARN, check, forbidden("create", f"{plural}.{RAY_GROUP}", namespace,
                                                   "whether the installed CRDs accept the rendered fields is unknown"))]
            if exc.status == 404:
                return [Row(WARN, check, f"namespace {namespace} does not exist yet: the rendered {d['kind']} "
                            "cannot be dry-run", "create the namespace first to check the CRDs' fields")]
            if exc.status not in (400, 422):
                raise
            fields = _unknown_fields(str(msg))
            unknown += fields
            refused.append(f"{d['kind']}: " + (f"unknown field(s) {', '.join(fields)}" if fields else str(msg)))
    if refused:
        return [Row(FAIL, check, "; ".join(refused)[:600],
                    ("the installed KubeRay CRDs lack what the chart renders: upgrade KubeRay's CRDs (and operator) "
                     f"to v1.6, or drop {', '.join(unknown)} from kuberay.spec; `check --kuberay-version X` "
                     "shows it offline") if unknown else "see the apiserver's message; `check --server` lists it too")]
    kinds = ", ".join(sorted({d["kind"] for d in ray}))
    return [Row(OK, check, f"the installed CRDs accept the rendered {kinds} (dry-run create, fieldValidation=Strict)")]
