"""`check --server`: every rendered object sent to the apiserver with dryRun=All (server-side apply). The
offline check (generator/render/check.py) finds and returns; `add_dry_run` adds this step's lines and row."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import yaml

if TYPE_CHECKING:
    from generator.live.client.kube import Kube
    from generator.render.check import Checked


# one warning of a Warning header (RFC 9111 warn-code, warn-agent, quoted warn-text; the apiserver sends 299 and
# "-"), several joined by ", ": the text of each, escaped quotes and commas inside it included
_WARNING = re.compile(r'\d{3} \S+ "((?:[^"\\]|\\.)*)"')


@dataclass
class DryRun:
    kind: str
    name: str
    accepted: bool
    message: str = ""
    warnings: list[str] = field(default_factory=list)


def _plural(kind: str) -> str:
    k = kind.lower()
    if k.endswith("y"):
        return k[:-1] + "ies"
    return k + ("es" if k.endswith("s") else "s")


def object_path(obj: dict[str, Any], namespace: str) -> str:
    group_version = obj["apiVersion"]
    base = f"/api/{group_version}" if "/" not in group_version else f"/apis/{group_version}"
    return f"{base}/namespaces/{namespace}/{_plural(obj['kind'])}/{obj['metadata']['name']}"


def dry_run(kube: Kube, manifests: str, namespace: str) -> list[DryRun]:
    """Server-side apply each object with dryRun=All: admission (PodSecurity, quota, webhooks) and
    validation run, nothing is stored. Warnings (e.g. PodSecurity on a Deployment) are kept."""
    out = []
    for obj in yaml.safe_load_all(manifests):
        if not isinstance(obj, dict):
            continue
        kind, name = obj["kind"], obj["metadata"]["name"]
        method, url, headers, body, _ = kube.api.param_serialize(
            "PATCH", object_path(obj, namespace),
            query_params=[("dryRun", "All"), ("fieldManager", "dockyard-k8s"), ("force", "true")],
            header_params={"Content-Type": "application/apply-patch+yaml", "Accept": "application/json"},
            body=json.dumps(obj), auth_settings=["BearerToken"],
        )
        resp = kube.api.call_api(method, url, header_params=headers, body=body, _request_timeout=30)
        data = resp.read()
        if resp.status >= 300:
            try:
                message = json.loads(data).get("message", resp.reason)
            except (TypeError, ValueError):
                message = f"{resp.status} {resp.reason}"
            out.append(DryRun(kind, name, False, message))
            continue
        warnings = [text.replace('\\"', '"') for text in _WARNING.findall(resp.getheader("Warning") or "")]
        out.append(DryRun(kind, name, True, warnings=warnings))
    return out


def add_dry_run(found: Checked, kube: Kube) -> None:
    """The dry run of what `check` rendered: a line per refusal and warning, the `server dry-run` row."""
    dry = dry_run(kube, found.manifests, found.namespace)
    refused = [d for d in dry if not d.accepted]
    lines = []
    for d in dry:
        if not d.accepted:
            lines.append(f"  ✗ server refused {d.kind} {d.name}: {d.message}")
        lines += [f"  ! server warns on {d.kind} {d.name}: {w}" for w in d.warnings]
    detail = (f"{len(dry) - len(refused)} accepted, {len(refused)} refused "
              f"(dryRun=All, namespace {found.namespace}, {kube.server})")
    found.add(lines, ("✗" if refused else "✓", "server dry-run", detail), bool(refused))
