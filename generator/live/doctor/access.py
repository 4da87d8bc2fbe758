"""`doctor`'s rows on access: helm, the API server, the namespace, the release, RBAC, the PriorityClass and
pull secrets. Each function reads what its row needs and returns the row (or rows);
`generator.live.verbs.doctor.checks` puts them in order.
"""

from __future__ import annotations

from generator.errors import CheckFailed
from generator.live.client.api_errors import describe_error
from generator.live.client.kube import RAY_GROUP, Kube
from generator.live.doctor.rows import FAIL, OK, WARN, Namespace, Row, forbidden

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
    ("", "pods", ("delete",)),  # logs --attempt's reader pod, made and deleted (it mounts the logs volume)
    ("", "services/proxy", ("get",)),  # the head's dashboard: run --follow's driver log, status's progress
]


# Only when the release renders a HorizontalPodAutoscaler (sandbox.autoscaling.enabled); list: status, uninstall.
HPA_RBAC = ("autoscaling", "horizontalpodautoscalers", ("get", "list", "create", "patch", "delete"))
# sandbox.backend agent-sandbox: its objects, the claims' Role and RoleBinding (granting a Role takes holding its
# verbs, or `escalate`), and the claims `uninstall` deletes
AGENT_SANDBOX_RBAC = [
    ("extensions.agents.x-k8s.io", "sandboxtemplates", ("get", "create", "patch", "delete")),
    ("extensions.agents.x-k8s.io", "sandboxwarmpools", ("get", "list", "create", "patch", "delete")),
    ("extensions.agents.x-k8s.io", "sandboxclaims", ("create", "get", "list", "watch", "delete")),
    ("agents.x-k8s.io", "sandboxes", ("list",)),
    ("rbac.authorization.k8s.io", "roles", ("get", "create", "patch", "delete")),
    ("rbac.authorization.k8s.io", "rolebindings", ("get", "create", "patch", "delete")),
]


# Cluster-scope reads: not needed to work in a namespace; without them a row says what is unknown.
CLUSTER_READS = [
    ("", "nodes", "list", "GPU and CPU capacity unknown"),
    ("", "pods", "list", "GPUs and CPU in use by other namespaces unknown"),
    ("apps", "deployments", "list", "whether a KubeRay operator runs in the cluster is unknown"),
    ("scheduling.k8s.io", "priorityclasses", "get", "whether infra.priorityClassName exists is unknown"),
    ("", "secrets", "list", "status, history and uninstall without -n look only in the kubeconfig context's namespace"),
]


def _pair(group: str, resource: str, verb: str) -> str:
    return f"{verb} {resource}" + (f".{group}" if group else "")


def _grouped(pairs: list[tuple[str, str, str]]) -> str:
    """'rayjobs.ray.io (get, list); leases.coordination.k8s.io (create)' from (group, resource, verb)."""
    by: dict[str, list[str]] = {}
    for group, resource, verb in pairs:
        by.setdefault(resource + (f".{group}" if group else ""), []).append(verb)
    return "; ".join(f"{r} ({', '.join(v)})" for r, v in by.items())


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

    from generator.live.helm.ownership import foreign_chart
    from generator.live.helm.records import labels, release_records

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


def _allowed(kube: Kube, group: str, resource: str, verb: str, namespace: str | None) -> bool:
    """A SelfSubjectAccessReview: may the kubeconfig's user do `verb` on `resource` (resource/sub)?"""
    from kubernetes import client

    res, sub = (resource.split("/") + [None])[:2]
    review = client.V1SelfSubjectAccessReview(spec=client.V1SelfSubjectAccessReviewSpec(
        resource_attributes=client.V1ResourceAttributes(group=group, resource=res, subresource=sub,
                                                        verb=verb, namespace=namespace)))
    status = client.AuthorizationV1Api(kube.api).create_self_subject_access_review(review).status
    return bool(status and status.allowed)


def rbac_rows(kube: Kube, namespace: str, hpa: bool = False, agent_sandbox: bool = False) -> list[Row]:
    """Every verb the live path uses in the namespace (the HPA's with `hpa`, agent-sandbox's with `agent_sandbox`),
    then the optional cluster-scope reads."""
    from kubernetes.client.exceptions import ApiException

    extra = [*([HPA_RBAC] if hpa else []), *(AGENT_SANDBOX_RBAC if agent_sandbox else [])]
    needed = [(g, r, v) for g, r, verbs in [*RBAC, *extra] for v in verbs]
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
