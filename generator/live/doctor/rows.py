"""What every `doctor` row is made of: its mark (✓ ✗ !), the Row itself, the target namespace as doctor could
read it, and the words for a read that RBAC refused."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from generator.live.client.kube import Kube

OK, FAIL, WARN = "✓", "✗", "!"


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


def read_namespace(kube: Kube, namespace: str) -> Namespace:
    from kubernetes.client.exceptions import ApiException

    try:
        return Namespace(namespace, True, kube.core.read_namespace(namespace))
    except ApiException as exc:
        status = exc.status
        if status not in (403, 404):
            raise
        return Namespace(namespace, None if status == 403 else False)
