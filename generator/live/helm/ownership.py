"""Whose release it is: a Helm release another chart made, or one Helm keeps in ConfigMaps, is never touched."""

from __future__ import annotations

from typing import Any

from generator.errors import CheckFailed
from generator.live.client.kube import Kube
from generator.live.helm.records import configmap_release_namespaces, decode_release

CHART_NAME = "dockyard"

MARKER = ("dockyard.dev/launcher", "dockyard-k8s")  # a Chart.yaml annotation only this chart carries


def foreign_chart(record: dict[str, Any]) -> str | None:
    """None when the release revision was made by this chart, else what made it."""
    meta = (decode_release(record).get("chart") or {}).get("metadata") or {}
    name, version = meta.get("name") or "?", meta.get("version") or "?"
    if name == CHART_NAME and (meta.get("annotations") or {}).get(MARKER[0]) == MARKER[1]:
        return None
    return f"chart {name}-{version}"


def require_ours(records: list[dict[str, Any]], release: str, namespace: str, verb: str) -> None:
    """Refuse (exit 1) to touch a Helm release another chart made."""
    if not records:
        return
    other = foreign_chart(records[-1])
    if other:
        raise CheckFailed(
            f"release {release} in namespace {namespace} was made by {other}, not by dockyard-k8s's chart: "
            f"`{verb}` refuses to touch it; nothing was changed. Pick another name (--release NAME) "
            "or another namespace (-n)")


def require_secret_storage(kube: Kube, release: str, namespace: str, verb: str) -> None:
    """Refuse (exit 1) a release Helm keeps in ConfigMaps (made with HELM_DRIVER=configmap): dockyard-k8s
    keeps releases where Helm does by default, in Secrets, and would otherwise miss it and install a
    second release over its objects."""
    if configmap_release_namespaces(kube, release, namespace):  # None (forbidden): cannot tell, Secrets checked
        raise CheckFailed(
            f"release {release} in namespace {namespace} is stored in ConfigMaps (Helm's configmap driver: made with "
            f"HELM_DRIVER=configmap), not in Secrets where dockyard-k8s keeps releases: `{verb}` refuses to touch it; "
            "nothing was changed. Pick another name (--release NAME), or remove it with "
            f"`HELM_DRIVER=configmap helm uninstall {release} -n {namespace}`")
