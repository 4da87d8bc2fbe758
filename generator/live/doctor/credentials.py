"""`doctor`'s rows for the Secrets and ConfigMaps the pods read env from (infra.env, infra.envFrom, sandbox.extraEnv,
an overlay's env): each exists in the namespace and holds each key asked for. A pod whose Secret or key is missing
does not start (CreateContainerConfigError), and `run --wait` would only see that after the install.

A Secret is read to learn its keys and nothing else: its values are never kept, compared or printed. A read RBAC
refuses is `!` (whether it exists is unknown), as is a missing object or key the reference marks optional.
"""

from __future__ import annotations

from typing import Any

from generator.live.client.kube import Kube
from generator.live.doctor.rows import FAIL, OK, WARN, Namespace, Row, forbidden

KINDS = {"secret": ("secrets", "Secrets", "secretKeyRef", "secretRef"),
         "configmap": ("configmaps", "ConfigMaps", "configMapKeyRef", "configMapRef")}


class Ref:
    """One Secret or ConfigMap the pods read: the keys asked for (None: all of it, envFrom), who reads it, and
    whether every reference to it is optional."""

    def __init__(self) -> None:
        self.keys: dict[str, bool] = {}  # key -> optional
        self.whole = False  # an envFrom of the whole object
        self.optional = True
        self.roles: list[str] = []


def references(templates: dict[str, dict[str, Any]]) -> dict[str, dict[str, Ref]]:
    """kind ("secret" | "configmap") -> name -> Ref, from the rendered pod templates by role."""
    out: dict[str, dict[str, Ref]] = {kind: {} for kind in KINDS}

    def note(kind: str, name: str, role: str, key: str | None, optional: bool) -> None:
        ref = out[kind].setdefault(name, Ref())
        if role not in ref.roles:
            ref.roles.append(role)
        if key is None:
            ref.whole = True
            ref.optional &= optional
        else:
            ref.keys[key] = ref.keys.get(key, True) and optional
            ref.optional &= optional

    for role, template in templates.items():
        spec = template.get("spec") or {}
        for c in (spec.get("initContainers") or []) + (spec.get("containers") or []):
            for env in c.get("env") or []:
                source = env.get("valueFrom") or {}
                for kind, (_, _, key_ref, _) in KINDS.items():
                    if isinstance(source.get(key_ref), dict):
                        r = source[key_ref]
                        note(kind, r.get("name", ""), role, r.get("key", ""), bool(r.get("optional")))
            for env_from in c.get("envFrom") or []:
                for kind, (_, _, _, whole_ref) in KINDS.items():
                    if isinstance(env_from.get(whole_ref), dict):
                        r = env_from[whole_ref]
                        note(kind, r.get("name", ""), role, None, bool(r.get("optional")))
    return out


def _keys(kube: Kube, plural: str, namespace: str, name: str) -> set[str] | None:
    """The keys of the object (data and binaryData), None when it does not exist; ApiException 403 raised. The
    answer's values are dropped here."""
    from kubernetes.client.exceptions import ApiException

    try:
        doc = kube.request("GET", f"/api/v1/namespaces/{namespace}/{plural}/{name}")
    except ApiException as exc:
        if exc.status == 404:
            return None
        raise
    keys = set(doc.get("data") or {}) | set(doc.get("binaryData") or {})
    doc.clear()
    return keys


def rows(kube: Kube, templates: dict[str, dict[str, Any]], ns: Namespace) -> list[Row]:
    """A row per kind of object referenced (Secrets, ConfigMaps); none when the pods read neither."""
    from kubernetes.client.exceptions import ApiException

    out = []
    for kind, refs in references(templates).items():
        if not refs:
            continue
        plural, title, _, _ = KINDS[kind]
        check = f"env from {title}"
        missing: list[str] = []
        soft: list[str] = []
        found: list[str] = []
        denied = False
        for name, ref in sorted(refs.items()):
            who = f" ({', '.join(ref.roles)})"
            try:
                keys = None if ns.exists is False else _keys(kube, plural, ns.name, name)
            except ApiException as exc:
                if exc.status != 403:
                    raise
                denied = True
                break
            if keys is None:
                (soft if ref.optional else missing).append(f"{name}{who}")
                continue
            absent = [k for k, optional in ref.keys.items() if k not in keys and not optional]
            absent_soft = [k for k, optional in ref.keys.items() if k not in keys and optional]
            if absent:
                missing.append(f"{name} lacks key {', '.join(absent)}{who}")
            if absent_soft:
                soft.append(f"{name} lacks optional key {', '.join(absent_soft)}{who}")
            if not absent:
                found.append(name + (f" ({', '.join(sorted(ref.keys))})" if ref.keys else ""))
        names = ", ".join(sorted(refs))
        if denied:
            out.append(Row(WARN, check, forbidden("get", plural, ns.name, f"whether {names} exist is unknown; a pod "
                                                  "whose reference is missing does not start")))
        elif missing:
            example = ("kubectl -n {ns} create secret generic NAME --from-literal=KEY=..." if kind == "secret"
                       else "kubectl -n {ns} create configmap NAME --from-literal=KEY=...").format(ns=ns.name)
            out.append(Row(FAIL, check, f"missing in {ns.name}: {'; '.join(missing)} (those pods would not start: "
                                        "CreateContainerConfigError)", example))
        elif soft:
            out.append(Row(WARN, check, f"optional, missing in {ns.name}: {'; '.join(soft)}"
                                        + (f"; present: {', '.join(found)}" if found else "")))
        else:
            out.append(Row(OK, check, f"{', '.join(found)} exist in {ns.name}"))
    return out
