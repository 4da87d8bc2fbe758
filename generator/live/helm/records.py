"""Helm's release records: the Secrets (owner=helm) Helm keeps one per revision, read and decoded; the
manifest of the revision an operation acts on; Helm's end state after a failed operation."""

from __future__ import annotations

import base64
import gzip
import json

from generator.live.client.kube import Kube

TYPE_CHECKING = False  # typing's import costs ~3 ms at start-up: for type checkers only
if TYPE_CHECKING:
    from typing import Any

PENDING = ("pending-install", "pending-upgrade", "pending-rollback")  # a revision an interrupted operation left


def labels(obj: dict[str, Any]) -> dict[str, str]:
    return obj["metadata"].get("labels") or {}


_DECODED: dict[tuple[str, str], dict[str, Any]] = {}  # (uid, resourceVersion) -> the record, decoded once a process


def decode_release(secret: dict[str, Any]) -> dict[str, Any]:
    """Helm's release record: base64(gzip(JSON)) inside the Secret's `release` key. A Secret of the same uid and
    resourceVersion holds the same record: it is decoded once (status asks for the manifest more than once)."""
    meta = secret.get("metadata") or {}
    key = (meta.get("uid") or "", meta.get("resourceVersion") or "")
    if all(key) and key in _DECODED:
        return _DECODED[key]
    raw = base64.b64decode(base64.b64decode(secret["data"]["release"]))
    if raw[:2] == b"\x1f\x8b":
        raw = gzip.decompress(raw)
    record = json.loads(raw)
    if all(key):
        _DECODED[key] = record
    return record


def release_records(kube: Kube, release: str, namespace: str | None) -> list[dict[str, Any]]:
    """Every revision's Secret (a dict), oldest first (one call; all namespaces when namespace is None)."""
    path = f"/api/v1/namespaces/{namespace}/secrets" if namespace else "/api/v1/secrets"
    items = kube.list(path, label_selector=f"owner=helm,name={release}")
    return sorted(items, key=lambda s: int(labels(s).get("version", 0)))


def configmap_release_namespaces(kube: Kube, release: str, namespace: str | None) -> list[str] | None:
    """The namespaces where Helm's configmap driver (HELM_DRIVER=configmap) keeps a release of that name
    (one call); None when listing ConfigMaps is forbidden (cannot tell)."""
    from generator.live.client.api_errors import is_forbidden

    path = f"/api/v1/namespaces/{namespace}/configmaps" if namespace else "/api/v1/configmaps"
    try:
        found = kube.list(path, label_selector=f"owner=helm,name={release}")
    except Exception as exc:
        if is_forbidden(exc):
            return None
        raise
    return sorted({c["metadata"]["namespace"] for c in found})


def live_manifest(records: list[dict[str, Any]]) -> str | None:
    """The manifest of the newest revision, deployed or not: a failed or pending install or upgrade
    created its objects too (the RayJob of a `helm install --wait` that timed out trains on), and
    `helm rollback` and `helm uninstall` act on it. None when there is none (or it was uninstalled)."""
    if not records or labels(records[-1]).get("status") == "uninstalled":
        return None
    return decode_release(records[-1]).get("manifest", "")


def upgrade_base(records: list[dict[str, Any]]) -> str | None:
    """The manifest `helm upgrade` diffs against (what it deletes when absent from the new one): the
    deployed revision, else the newest when it failed (Helm upgrades over a failed-only release)."""
    rec = next((r for r in reversed(records) if labels(r).get("status") == "deployed"), None)
    if rec is None and records and labels(records[-1]).get("status") in ("failed", "superseded"):
        rec = records[-1]
    return decode_release(rec).get("manifest", "") if rec else None


def end_state(kube: Kube, release: str, namespace: str, since: int) -> str:
    """Helm's real end state after a failed operation, from the release records (bounded read)."""
    try:
        records = release_records(kube, release, namespace)
    except Exception as exc:
        from generator.live.client.api_errors import describe_error

        return (f"end state unknown ({describe_error(exc) or type(exc).__name__}); "
                f"`dockyard-k8s history {release} -n {namespace}` shows it")
    if not records:
        return "nothing is left installed"
    newer = [f"revision {labels(r)['version']} {labels(r).get('status')}" for r in records
             if int(labels(r)["version"]) > since]
    deployed = [labels(r)["version"] for r in records if labels(r).get("status") == "deployed"]
    head = ", ".join(newer) if newer else "no new revision"
    return head + (f"; revision {deployed[-1]} is the deployed one" if deployed else "; no revision is deployed")
