"""Which release a verb means: a named one looked up across namespaces, or the only one in scope."""

from __future__ import annotations

from generator.errors import CheckFailed
from generator.live.client.api_errors import is_forbidden
from generator.live.client.kube import INSTANCE, NAME_LABEL, Kube
from generator.live.helm.records import configmap_release_namespaces, labels, release_records

TYPE_CHECKING = False  # typing's import costs ~3 ms at start-up: for type checkers only
if TYPE_CHECKING:
    from typing import Any

OTHERS_FORBIDDEN = "listing other namespaces is forbidden for you: pass -n"


class ReleaseNotFound(CheckFailed):
    """No Helm record of the named release where it was looked for (`namespace`; None: in any namespace), and
    no other Helm driver holds one: the release is gone, or never was."""

    def __init__(self, message: str, namespace: str | None) -> None:
        super().__init__(message)
        self.namespace = namespace


def resolve(kube: Kube, release: str | None, namespace: str | None) -> tuple[str, str, list[Any]]:
    """(release, namespace, records). Without -n a named release is looked up in every namespace;
    without a name, the only dockyard release in scope is used. When listing every namespace is
    forbidden (RBAC for one namespace), the kubeconfig context's namespace is searched instead."""
    if release:
        return _named(kube, release, namespace)
    return _only(kube, namespace)


def _named(kube: Kube, release: str, namespace: str | None) -> tuple[str, str, list[Any]]:
    try:
        records = release_records(kube, release, namespace)
    except Exception as exc:
        if namespace or not is_forbidden(exc):
            raise
        own = kube.context_namespace or "default"
        records = release_records(kube, release, own)
        if not records:
            raise ReleaseNotFound(f"release {release} not found in namespace {own} ({OTHERS_FORBIDDEN})"
                                  + _deleting(kube, own), own) from None
        return release, own, records
    if namespace:
        if not records:
            other = _other_driver(kube, release, namespace)
            message = f"release {release} not found in namespace {namespace}" + _deleting(kube, namespace) + other
            raise CheckFailed(message) if other else ReleaseNotFound(message, namespace)
        return release, namespace, records
    found = sorted({r["metadata"]["namespace"] for r in records})
    if len(found) > 1:
        ns = kube.context_namespace
        if ns is not None and ns in found:
            return release, ns, [r for r in records if r["metadata"]["namespace"] == ns]
        raise CheckFailed(f"release {release} exists in namespaces {', '.join(found)}: pass -n NAMESPACE")
    if not found:
        other = _other_driver(kube, release, None)
        message = f"release {release} not found in any namespace" + other
        raise CheckFailed(message) if other else ReleaseNotFound(message, None)
    return release, found[0], records


def _only(kube: Kube, namespace: str | None) -> tuple[str, str, list[Any]]:
    narrowed = None  # the namespace searched instead of all of them (listing them is forbidden)
    try:
        secrets = kube.list(f"/api/v1{_scope(namespace)}/secrets", label_selector="owner=helm")
    except Exception as exc:
        if namespace or not is_forbidden(exc):
            raise
        narrowed = kube.context_namespace or "default"
        secrets = kube.list(f"/api/v1{_scope(narrowed)}/secrets", label_selector="owner=helm")
    names = sorted({(name, s["metadata"]["namespace"]) for s in secrets if (name := labels(s).get("name"))})
    ours = []
    if names:
        try:
            path = f"/apis/apps/v1{_scope(namespace or narrowed)}/deployments"
            workloads = kube.list(path, label_selector=NAME_LABEL)
        except Exception as exc:
            if not is_forbidden(exc):
                raise
            workloads = []  # cannot tell ours from others: every release in scope is a candidate
        tagged = {(labels(d).get(INSTANCE), d["metadata"]["namespace"]) for d in workloads}
        ours = [n for n in names if n in tagged] or names
    if len(ours) == 1:
        rel, rns = ours[0]
        return rel, rns, release_records(kube, rel, rns)
    if not ours:
        where = namespace or narrowed
        deleting = _deleting(kube, where) if where else ""
        raise CheckFailed("no dockyard release found" + (f" in namespace {where}" if where else "")
                          + (f" ({OTHERS_FORBIDDEN})" if narrowed else "")
                          + (deleting or ": start one with `dockyard-k8s run RECIPE INFRA`"))
    raise CheckFailed("several releases: name one of " + ", ".join(f"{r} (-n {n})" for r, n in ours))


def _scope(namespace: str | None) -> str:
    return f"/namespaces/{namespace}" if namespace else ""


def _deleting(kube: Kube, namespace: str) -> str:
    """'; namespace X is being deleted ...' when it is, else ''."""
    why = kube.namespace_deletion(namespace)
    return f"; namespace {namespace} is {why}" if why else ""


def _other_driver(kube: Kube, release: str, namespace: str | None) -> str:
    """Where Helm's configmap driver holds a release of that name (HELM_DRIVER=configmap), else ''."""
    where = configmap_release_namespaces(kube, release, namespace)
    if not where:
        return ""
    return (f" (Helm's configmap driver holds a release {release} in {', '.join(where)}: made with "
            "HELM_DRIVER=configmap; dockyard-k8s keeps and reads releases in Secrets, Helm's default)")
