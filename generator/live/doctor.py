"""`doctor RECIPE INFRA`: preflight checks on the target cluster, each a row ✓ / ✗ / ! with a remedy."""

from __future__ import annotations

import copy
from dataclasses import asdict, dataclass, field
from typing import Any

from generator.errors import EXIT_FAILED, EXIT_OK
from generator.live.kube import RAY_GROUP, RAY_VERSION, Kube, describe_error, is_forbidden
from generator.render.pod_templates import pod_templates

OK, FAIL, WARN = "✓", "✗", "!"
GPU = "nvidia.com/gpu"

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


def _qty(value: Any) -> float:
    """A Kubernetes quantity as a float (cpu in cores, bytes for memory)."""
    if value is None:
        return 0.0
    s = str(value)
    units = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60,
             "n": 1e-9, "u": 1e-6, "m": 1e-3, "k": 1e3, "K": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "P": 1e15, "E": 1e18}
    for suffix in sorted(units, key=len, reverse=True):
        if s.endswith(suffix):
            return float(s[: -len(suffix)]) * units[suffix]
    return float(s)


def _requests(template: dict[str, Any]) -> dict[str, float]:
    total: dict[str, float] = {}
    for c in (template.get("spec") or {}).get("containers") or []:
        res = c.get("resources") or {}
        req = dict(res.get("limits") or {})
        req.update(res.get("requests") or {})
        for k, v in req.items():
            total[k] = total.get(k, 0.0) + _qty(v)
    return total


def _release_row(kube: Kube, release: str, namespace: str) -> Row:
    """Whose release of this name exists: ours (upgraded by `run`), another chart's (refused), or none."""
    from kubernetes.client.exceptions import ApiException

    from generator.live.guard import foreign_chart
    from generator.live.snapshot import labels, release_records

    try:
        records = release_records(kube, release, namespace)
    except ApiException as exc:
        if exc.status != 403:
            raise
        return Row(WARN, "release", forbidden("list", "secrets", namespace, f"whether release {release} exists is unknown"))
    if not records:
        return Row(OK, "release", f"no release {release} in {namespace}: `run` installs it")
    other = foreign_chart(records[-1])
    if other:
        return Row(FAIL, "release", f"{release} in {namespace} was made by {other}, not by dockyard-k8s's chart: "
                   "run, rollback and uninstall refuse to touch it", "pick another name (--release NAME) or namespace")
    last = labels(records[-1])
    return Row(OK, "release", f"{release} revision {last.get('version')} ({last.get('status')}) is this chart's: "
               "`run` upgrades it")


def checks(kube: Kube, inputs: Any, values: dict[str, Any], release: str, namespace: str,
           rows: list[Row] | None = None) -> list[Row]:
    """The rows, appended to `rows` as they are made (the caller keeps them if a check raises)."""
    from kubernetes import client
    from kubernetes.client.exceptions import ApiException

    from generator.render.helm import template

    rows = [] if rows is None else rows
    from generator.errors import CheckFailed
    from generator.render.helm import HELM_ENV, SUPPORTED, helm_binary, helm_version

    try:  # the helm the live verbs would run: refused (and nothing rendered with it) unless Helm 3 or 4
        hv = helm_version(helm_binary())
        helm_ok, helm_detail = hv.supported, f"{hv.version} ({hv.path})"
    except CheckFailed as exc:
        helm_ok, helm_detail = False, str(exc)
    rows.append(Row(OK if helm_ok else FAIL, "helm", helm_detail + ("" if helm_ok else f": not {SUPPORTED}"),
                    "" if helm_ok else f"pass --helm PATH or set {HELM_ENV} to a supported helm, or unset both "
                    "for the pinned Helm 3 (`make tools`)"))
    if not helm_ok:
        return rows
    try:
        ver = client.VersionApi(kube.api).get_code()
    except Exception as exc:
        rows.append(Row(FAIL, "API server", describe_error(exc, kube.server) or str(exc),
                        "check --kubeconfig / --context, or start the playground"))
        return rows
    rows.append(Row(OK, "API server", f"{kube.server} Kubernetes {ver.git_version}"))

    # the namespace: None when RBAC forbids reading it (whether it exists is then unknown)
    ns_exists: bool | None
    try:
        ns_obj = kube.core.read_namespace(namespace)
        ns_exists = True
    except ApiException as exc:
        if exc.status not in (403, 404):
            raise
        ns_obj, ns_exists = None, (None if exc.status == 403 else False)
    deleting = ns_obj is not None and ns_obj.metadata.deletion_timestamp is not None
    if ns_exists is None:
        rows.append(Row(WARN, "namespace", forbidden("get", "namespaces", namespace, "whether it exists is unknown"),
                        f"ask a cluster admin for `get namespaces` in {namespace} (part of the built-in admin role)"))
    elif deleting:
        rows.append(Row(FAIL, "namespace", f"{namespace} is being deleted (since {ns_obj.metadata.deletion_timestamp})",
                        "wait until it is gone and create it again, or use another namespace"))
    else:
        rows.append(Row(OK if ns_exists else WARN, "namespace", f"{namespace} exists" if ns_exists else f"{namespace} does not exist",
                        "" if ns_exists else "`run --create-namespace` creates it"))

    rows.append(_release_row(kube, release, namespace))

    # RBAC: every verb the live path uses in the namespace, then the optional cluster-scope reads
    authz = client.AuthorizationV1Api(kube.api)

    def allowed(group: str, resource: str, verb: str, ns: str | None) -> bool:
        res, sub = (resource.split("/") + [None])[:2]
        review = client.V1SelfSubjectAccessReview(spec=client.V1SelfSubjectAccessReviewSpec(
            resource_attributes=client.V1ResourceAttributes(group=group, resource=res, subresource=sub,
                                                            verb=verb, namespace=ns)))
        return bool(authz.create_self_subject_access_review(review).status.allowed)

    needed = [(g, r, v) for g, r, verbs in RBAC for v in verbs]
    try:
        denied = [(g, r, v) for g, r, v in needed if not allowed(g, r, v, namespace)]
        cluster_denied = [(g, r, v, m) for g, r, v, m in CLUSTER_READS if not allowed(g, r, v, None)]
    except ApiException as exc:
        if exc.status != 403:
            raise
        rows.append(Row(WARN, "RBAC", forbidden("create", "selfsubjectaccessreviews.authorization.k8s.io", None,
                                               "which verbs you have is unknown"),
                        "ask a cluster admin for the built-in system:basic-user role"))
    else:
        rows.append(Row(FAIL if denied else OK, "RBAC",
                        f"{len(needed) - len(denied)}/{len(needed)} verbs allowed in {namespace}"
                        + (f"; denied: {_grouped(denied)}" if denied else ""),
                        f"ask a cluster admin for a Role granting these verbs in {namespace}" if denied else "",
                        missing=[_pair(g, r, v) for g, r, v in denied]))
        rows.append(Row(WARN if cluster_denied else OK, "RBAC: cluster scope",
                        "; ".join(f"cannot {_pair(g, r, v)} at cluster scope: {m}" for g, r, v, m in cluster_denied)
                        if cluster_denied else f"all {len(CLUSTER_READS)} cluster-scope reads allowed",
                        "not needed to work in the namespace; a ClusterRole granting these reads makes the rows "
                        "marked ! complete" if cluster_denied else "",
                        missing=[_pair(g, r, v) for g, r, v, _ in cluster_denied]))

    # KubeRay
    served = kube.ray_resources()
    need = ("rayjobs", "rayclusters")
    missing = [p for p in need if p not in served]
    rows.append(Row(FAIL if missing else OK, "KubeRay CRDs",
                    f"{RAY_GROUP}/{RAY_VERSION} serves {', '.join(sorted(served & set(need)))}" if not missing
                    else f"{RAY_GROUP}/{RAY_VERSION} does not serve {', '.join(missing)}",
                    "install the KubeRay operator and its CRDs (helm chart kuberay-operator)" if missing else ""))
    try:
        apps_all = client.AppsV1Api(kube.api).list_deployment_for_all_namespaces().items
    except ApiException as exc:
        if exc.status != 403:
            raise
        apps_all = None
    ops = [d for d in apps_all or [] if "kuberay-operator" in d.metadata.name
           or (d.metadata.labels or {}).get("app.kubernetes.io/name") == "kuberay-operator"]
    if apps_all is None:
        rows.append(Row(WARN, "KubeRay operator",
                        forbidden("list", "deployments", None, "whether a KubeRay operator runs is unknown"),
                        "ask a cluster admin whether a KubeRay operator (>= v1.6) watches this namespace"))
    elif ops:
        ready = [d for d in ops if (d.status.ready_replicas or 0) > 0]
        d = ops[0]
        rows.append(Row(OK if ready else FAIL, "KubeRay operator",
                        f"Deployment {d.metadata.namespace}/{d.metadata.name} {'ready' if ready else 'not ready'}",
                        "" if ready else "check the operator's pods and logs"))
    else:
        rows.append(Row(WARN, "KubeRay operator",
                        "no in-cluster operator Deployment found (an operator running outside the cluster, as on the "
                        "playground, cannot be seen from the API)",
                        "make sure a KubeRay operator (>= v1.6) watches this namespace, or RayJobs will not progress"))

    # PriorityClass
    pc = (values.get("infra") or {}).get("priorityClassName")
    if pc:
        try:
            client.SchedulingV1Api(kube.api).read_priority_class(pc)
            rows.append(Row(OK, "PriorityClass", f"{pc} exists"))
        except ApiException as exc:
            if exc.status == 403:
                rows.append(Row(WARN, "PriorityClass", forbidden("get", "priorityclasses", None, f"whether {pc} exists is unknown"),
                                f"ask a cluster admin whether PriorityClass {pc} exists"))
            elif exc.status == 404:
                rows.append(Row(FAIL, "PriorityClass", f"{pc} does not exist", f"create PriorityClass {pc}, or unset infra.priorityClassName"))
            else:
                raise
    else:
        rows.append(Row(OK, "PriorityClass", "none requested"))

    # pull secrets
    secrets = (values.get("infra") or {}).get("imagePullSecrets") or []
    have: set[str] | None = set()
    if secrets and ns_exists is not False:
        try:
            have = {s.metadata.name for s in kube.core.list_namespaced_secret(namespace).items}
        except ApiException as exc:
            if exc.status != 403:
                raise
            have = None
    if secrets and have is None:
        rows.append(Row(WARN, "image pull secrets", forbidden("list", "secrets", namespace,
                                                              f"whether {', '.join(secrets)} exist is unknown")))
    elif secrets:
        absent = [s for s in secrets if s not in have]
        rows.append(Row(FAIL if absent else OK, "image pull secrets",
                        f"missing in {namespace}: {', '.join(absent)}" if absent else f"{', '.join(secrets)} exist",
                        f"kubectl -n {namespace} create secret docker-registry NAME ..." if absent else ""))
    else:
        rows.append(Row(OK, "image pull secrets", "none requested"))

    # capacity: rendered pods against nodes
    docs = [d for d in __import__("yaml").safe_load_all(template(values, release, namespace)) if isinstance(d, dict)]
    templates = pod_templates(docs)
    nodes_denied = pods_denied = False  # RBAC: nodes / pods of every namespace cannot be listed
    try:
        nodes = [n for n in kube.core.list_node().items if not n.spec.unschedulable]
    except ApiException as exc:
        if exc.status != 403:
            raise
        nodes, nodes_denied = [], True
    try:
        pods = kube.core.list_pod_for_all_namespaces(field_selector="status.phase!=Succeeded,status.phase!=Failed").items
    except ApiException as exc:
        if exc.status != 403:
            raise
        pods, pods_denied = [], True
    in_use_unknown = forbidden("list", "pods", None, "what other namespaces use is unknown")
    used: dict[str, dict[str, float]] = {n.metadata.name: {} for n in nodes}
    for p in pods:
        if (p.metadata.labels or {}).get("app.kubernetes.io/instance") == release and p.metadata.namespace == namespace:
            continue  # this release's own pods (an upgrade replaces them)
        if p.spec.node_name in used:
            for c in p.spec.containers or []:
                req = dict((c.resources.limits or {}) if c.resources else {})
                req.update((c.resources.requests or {}) if c.resources else {})
                for k, v in req.items():
                    used[p.spec.node_name][k] = used[p.spec.node_name].get(k, 0.0) + _qty(v)
    alloc = {n.metadata.name: {k: _qty(v) for k, v in (n.status.allocatable or {}).items()} for n in nodes}
    cluster = inputs.recipe.cluster
    if inputs.infra.launch.mode != "attach" and nodes_denied:
        for group in ("trainer", "inference", "gang"):
            rows.append(Row(WARN, f"GPU capacity: {group}", forbidden("list", "nodes", None, "GPU capacity unknown"),
                            "ask a cluster admin whether the GPUs are there (or for a ClusterRole to list nodes)"))
    elif inputs.infra.launch.mode != "attach":
        gpu_nodes = {n: a.get(GPU, 0.0) for n, a in alloc.items() if a.get(GPU, 0.0) > 0}
        for group in ("trainer", "inference"):
            g = getattr(cluster, group)
            fit = [n for n, c in gpu_nodes.items() if c >= g.gpusPerNode]
            mark = OK if len(fit) >= g.nodes else FAIL
            rows.append(Row(mark, f"GPU capacity: {group}",
                            f"{g.nodes} pod(s) × {g.gpusPerNode} {GPU}: {len(fit)} node(s) have ≥ {g.gpusPerNode} allocatable",
                            "" if mark == OK else f"add GPU nodes with ≥ {g.gpusPerNode} GPUs, or lower cluster.{group}"))
        # the whole gang at once, against what is free now (first fit, biggest first)
        free = {n: c - used[n].get(GPU, 0.0) for n, c in gpu_nodes.items()}
        want = sorted([cluster.trainer.gpusPerNode] * cluster.trainer.nodes + [cluster.inference.gpusPerNode] * cluster.inference.nodes, reverse=True)
        placed = 0
        for w in want:
            node = next((n for n, c in sorted(free.items(), key=lambda x: x[1]) if c >= w), None)
            if node:
                free[node] -= w
                placed += 1
        total_gpu = sum(gpu_nodes.values())
        fits = placed == len(want)
        rows.append(Row(OK if fits and not pods_denied else WARN if fits else FAIL, "GPU capacity: gang",
                        f"{placed}/{len(want)} worker pods fit in the free GPUs "
                        + ("if no other pod used any" if pods_denied else "now")
                        + f" ({int(sum(want))} wanted, {int(total_gpu)} allocatable on {len(gpu_nodes)} node(s))"
                        + (f"; {in_use_unknown}" if pods_denied else ""),
                        "" if fits and not pods_denied else "free GPUs (other jobs), add GPU nodes, or shrink cluster.trainer/inference"
                        if not fits else "ask a cluster admin whether the GPUs are free"))

    sb = templates.get("sandbox")
    replicas = int((values.get("sandbox") or {}).get("replicas", 0))
    if sb and nodes_denied:
        rows.append(Row(WARN, "sandbox pool fits", forbidden("list", "nodes", None, "CPU and memory room unknown")))
    elif sb:
        per = _requests(sb)
        short = []
        for key in ("cpu", "memory", "ephemeral-storage"):
            need_one = per.get(key, 0.0)
            free_by_node = {n: alloc[n].get(key, 0.0) - used[n].get(key, 0.0) for n in alloc}
            slots = sum(int(f // need_one) if need_one else replicas for f in free_by_node.values() if f > 0)
            if slots < replicas:
                short.append(f"{key}: room for {slots} of {replicas} replicas at {_fmt(key, need_one)} each")
        rows.append(Row(FAIL if short else WARN if pods_denied else OK, "sandbox pool fits",
                        "; ".join(short) if short else
                        f"{replicas} × (cpu {_fmt('cpu', per.get('cpu'))}, memory {_fmt('memory', per.get('memory'))}, "
                        f"ephemeral-storage {_fmt('ephemeral-storage', per.get('ephemeral-storage'))}) fit the schedulable nodes"
                        + (f" if no other pod used any; {in_use_unknown}" if pods_denied else ""),
                        "lower sandbox.replicas or sandbox.resources (requests are what the scheduler reserves)" if short else ""))

    # ResourceQuota headroom for everything the release creates
    quotas = None
    if ns_exists is not False:
        try:
            quotas = kube.core.list_namespaced_resource_quota(namespace).items
        except ApiException as exc:
            if exc.status != 403:
                raise
            rows.append(Row(WARN, "ResourceQuota headroom",
                            forbidden("list", "resourcequotas", namespace, "whether a quota leaves room is unknown")))
    if quotas is not None:
        if quotas:
            need: dict[str, float] = {"pods": 0.0}
            counts = {"sandbox": replicas, "head": 1, "trainer": cluster.trainer.nodes,
                      "inference": cluster.inference.nodes, "submitter": 1}
            for role, tpl in templates.items():
                n = counts.get(role, 1)
                need["pods"] += n
                for k, v in _requests(tpl).items():
                    need[k] = need.get(k, 0.0) + n * v
            over = []
            for q in quotas:
                hard = q.status.hard or q.spec.hard or {}
                usedq = q.status.used or {}
                for key, limit in hard.items():
                    res = key.removeprefix("requests.")
                    if res not in need or key.startswith("limits."):
                        continue
                    room = _qty(limit) - _qty(usedq.get(key, 0))
                    if need[res] > room:
                        over.append(f"{q.metadata.name} {key}: needs {_fmt(res, need[res])}, {_fmt(res, room)} left")
            rows.append(Row(FAIL if over else OK, "ResourceQuota headroom",
                            "; ".join(over) if over else f"{len(quotas)} quota(s) leave room for the release",
                            "raise the quota or shrink the recipe" if over else ""))
        else:
            rows.append(Row(OK, "ResourceQuota headroom", f"no ResourceQuota in {namespace}"))

    # PodSecurity: server-side dry run of each rendered pod
    if deleting:
        rows.append(Row(WARN, "PodSecurity admission", f"namespace {namespace} is being deleted: nothing can be created in it"))
    elif ns_exists is not False:
        level = ((ns_obj.metadata.labels or {}).get("pod-security.kubernetes.io/enforce", "cluster default") if ns_obj
                 else "unknown (the namespace cannot be read)")
        refused, rbac_denied = [], False
        for role, tpl in templates.items():
            body = {"apiVersion": "v1", "kind": "Pod",
                    "metadata": {"generateName": f"doctor-{role}-", "labels": (tpl.get("metadata") or {}).get("labels") or {}},
                    "spec": copy.deepcopy(tpl.get("spec") or {})}
            body["spec"].pop("serviceAccountName", None)  # created by the release itself
            for c in body["spec"].get("containers", []) + body["spec"].get("initContainers", []):
                for part in ("limits", "requests"):
                    block = (c.get("resources") or {}).get(part)
                    if block:
                        c["resources"][part] = {k: str(v) for k, v in block.items()}
            if pc and not any(r.check == "PriorityClass" and r.mark == OK for r in rows):
                body["spec"].pop("priorityClassName", None)
            try:
                kube.core.create_namespaced_pod(namespace, body, dry_run="All")
            except ApiException as exc:
                if exc.status in (400, 403, 422):
                    import json

                    try:
                        msg = json.loads(exc.body).get("message", exc.reason)
                    except ValueError:
                        msg = exc.reason
                    if exc.status == 403 and 'cannot create resource "pods"' in str(msg):
                        rbac_denied = True  # RBAC, not admission: no pod can be tried
                        break
                    refused.append(f"{role}: {msg}")
                else:
                    raise
        if rbac_denied:
            rows.append(Row(WARN, "PodSecurity admission",
                            forbidden("create", "pods", namespace, "whether the namespace admits the pods is unknown "
                                      "(a server-side dry run needs the create verb)")))
        else:
            rows.append(Row(FAIL if refused else OK, "PodSecurity admission",
                            f"enforce={level}: " + ("; ".join(refused)[:600] if refused else f"admits all {len(templates)} pod templates (server-side dry run)"),
                            "relax the namespace's pod-security.kubernetes.io/enforce label, or harden "
                            "sandbox.security / infra.security (profile: restricted)" if refused else ""))
    else:
        rows.append(Row(WARN, "PodSecurity admission", "namespace does not exist yet: the cluster's default level applies",
                        "create the namespace first to check its level"))

    if (values.get("sandbox") or {}).get("networkPolicy", {}).get("enabled"):
        rows.append(Row(WARN, "NetworkPolicy", "the sandbox NetworkPolicy is only enforced by a CNI that implements it",
                        "use Calico, Cilium or another enforcing CNI; elsewhere the policy is an inert no-op"))
    return rows


def _fmt(key: str, value: float | None) -> str:
    if value is None:
        return "-"
    if key == "cpu":
        return f"{value:g}" if value >= 1 else f"{value * 1000:.0f}m"
    if key in ("memory", "ephemeral-storage"):
        for unit, size in (("Ti", 2**40), ("Gi", 2**30), ("Mi", 2**20)):
            if value >= size:
                return f"{value / size:g}{unit}"
        return f"{value:g}"
    return f"{value:g}"


def doctor(args: Any) -> int:
    from generator.inputs.compose import load_inputs
    from generator.live.run import plan
    from generator.live.verbs import emit

    p = plan(args.recipe, args.infra, args.overrides, args.release, args.namespace)
    inputs = load_inputs(args.recipe, args.infra, args.overrides)
    kube = Kube(args.kubeconfig, args.context)
    rows: list[Row] = []
    try:
        checks(kube, inputs, p.values, p.release, p.namespace, rows)
    except Exception as exc:
        if not is_forbidden(exc):
            raise
        rows.append(Row(WARN, "other checks", f"skipped: {describe_error(exc, kube.server)}",
                        "ask a cluster admin for the permission named here"))
    failed = [r for r in rows if r.mark == FAIL]

    def table() -> str:
        lines = []
        for r in rows:
            lines.append(f"{r.mark} {r.check:<24} {r.detail}")
            if r.remedy and r.mark != OK:
                lines.append(f"  {'':<24} → {r.remedy}")
        lines.append("")
        lines.append(f"{len(failed)} blocking problem(s)" if failed else "ready to run")
        return "\n".join(lines)

    emit({"release": p.release, "namespace": p.namespace, "ok": not failed, "checks": [asdict(r) for r in rows]},
         args.output, table)
    return EXIT_FAILED if failed else EXIT_OK
