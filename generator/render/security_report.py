"""`check --security`: each hardening control against each rendered pod template — set, not set or n/a."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import yaml

from generator.render.pod_templates import pod_specs

SET, NOT_SET, NA = "set", "not set", "n/a"
ROLES = ("sandbox", "head", "trainer", "inference", "submitter", "test")
SANDBOX_ONLY = {"sandbox", "test"}

Pod = dict[str, Any]


def _all(pod: Pod, test: Callable[[dict[str, Any]], bool]) -> str:
    return SET if all(test(c) for c in pod.get("containers", [])) else NOT_SET


def _sc(c: dict[str, Any], pod: Pod, key: str) -> Any:
    return (c.get("securityContext") or {}).get(key, (pod.get("securityContext") or {}).get(key))


METADATA = {"169.254.169.254/32", "fd00:ec2::254/128"}  # cloud metadata endpoints


def _egress_blocks_metadata(np: dict[str, Any]) -> bool:
    for rule in np["spec"].get("egress", []):
        if rule == {}:
            return False
        for peer in rule.get("to", []):
            block = peer.get("ipBlock") or {}
            if block.get("cidr") in ("0.0.0.0/0", "::/0") and not set(block.get("except", [])) & METADATA:
                return False
    return True


# One cell of a row: (role, pod spec) -> set / not set / n/a ------------------------------------------

Cell = Callable[[str, Pod], str]


def _sc_is(key: str, value: bool) -> Cell:
    """Every container's securityContext `key` (else the pod's) is `value`."""
    return lambda r, p: _all(p, lambda c: _sc(c, p, key) is value)


def _pod_is(key: str, value: bool) -> Cell:
    return lambda r, p: SET if p.get(key) is value else NOT_SET


def _pod_has(key: str) -> Cell:
    return lambda r, p: SET if p.get(key) else NOT_SET


def _runtime_class(role: str, p: Pod) -> str:
    """The RuntimeClass by name (gvisor, kata, ...): which kernel boundary the pod gets, not just whether one."""
    return str(p["runtimeClassName"]) if p.get("runtimeClassName") else NOT_SET


def _containers(test: Callable[[dict[str, Any]], bool]) -> Cell:
    return lambda r, p: _all(p, test)


def _drops_all(c: dict[str, Any]) -> bool:
    return "ALL" in ((c.get("securityContext") or {}).get("capabilities") or {}).get("drop", [])


def _seccomp_default(role: str, p: Pod) -> str:
    return _all(p, lambda c: (_sc(c, p, "seccompProfile") or {}).get("type") == "RuntimeDefault")


def _workdir(role: str, p: Pod) -> str:
    """A read-only root needs a writable emptyDir work dir; n/a when the root is writable."""
    if _sc_is("readOnlyRootFilesystem", True)(role, p) != SET:
        return NA
    return SET if any(v.get("name") == "workdir" and "emptyDir" in v for v in p.get("volumes", [])) else NOT_SET


def _ephemeral_request(c: dict[str, Any]) -> bool:
    return "ephemeral-storage" in ((c.get("resources") or {}).get("requests") or {})


def _limits(c: dict[str, Any]) -> bool:
    lim = (c.get("resources") or {}).get("limits") or {}
    return "cpu" in lim and "memory" in lim


def controls(docs: list[dict[str, Any]]) -> list[tuple[str, dict[str, str]]]:
    pods = pod_specs(docs)
    nps = [d for d in docs if d.get("kind") == "NetworkPolicy"]
    pdbs = [d for d in docs if d.get("kind") == "PodDisruptionBudget"]
    gpu_pdb = {"head", "trainer", "inference"} if any(d.get("kind") == "RayCluster" for d in docs) else set()

    def row(check: Cell, only: set[str] | None = None) -> dict[str, str]:
        return {role: (check(role, pod) if only is None or role in only else NA) for role, pod in pods.items()}

    def pdb_covers(role: str, pod: Pod) -> str:
        want = "sandbox" if role == "sandbox" else "gpu"
        names = {p["metadata"]["name"].rsplit("-", 1)[-1] for p in pdbs}
        return SET if want in names else NOT_SET

    def network_policy(role: str, pod: Pod) -> str:
        return SET if nps else NOT_SET

    def metadata_blocked(role: str, pod: Pod) -> str:
        return SET if nps and _egress_blocks_metadata(nps[0]) else NOT_SET

    rows = [
        ("allowPrivilegeEscalation: false", row(_sc_is("allowPrivilegeEscalation", False))),
        ("capabilities drop ALL", row(_containers(_drops_all))),
        ("seccomp RuntimeDefault", row(_seccomp_default)),
        ("runAsNonRoot", row(_sc_is("runAsNonRoot", True))),
        ("readOnlyRootFilesystem", row(_sc_is("readOnlyRootFilesystem", True))),
        ("writable work dir (emptyDir)", row(_workdir)),
        ("no service-account token", row(_pod_is("automountServiceAccountToken", False), SANDBOX_ONLY)),
        ("no service links", row(_pod_is("enableServiceLinks", False), SANDBOX_ONLY)),
        ("NetworkPolicy (ingress: port, namespace)", row(network_policy, {"sandbox"})),
        ("cloud metadata egress blocked", row(metadata_blocked, {"sandbox"})),
        ("PodDisruptionBudget", row(pdb_covers, {"sandbox"} | gpu_pdb)),
        ("ephemeral-storage request", row(_containers(_ephemeral_request))),
        ("cpu/memory limits", row(_containers(_limits))),
        ("priorityClassName", row(_pod_has("priorityClassName"))),
        ("image pinned by digest", row(_containers(lambda c: "@sha256:" in c.get("image", "")))),
        ("topologySpreadConstraints", row(_pod_has("topologySpreadConstraints"), {"sandbox"})),
        ("runtimeClassName", row(_runtime_class, {"sandbox"})),
    ]
    return rows


def table(manifests: str) -> str:
    docs = [d for d in yaml.safe_load_all(manifests) if isinstance(d, dict)]
    rows = controls(docs)
    roles = [r for r in ROLES if r in pod_specs(docs)]
    width = max(len(name) for name, _ in rows)
    lines = [f"{'control':<{width}}  " + "  ".join(f"{r:<9}" for r in roles)]
    for name, cells in rows:
        lines.append(f"{name:<{width}}  " + "  ".join(f"{cells.get(r, NA):<9}" for r in roles))
    return "\n".join(line.rstrip() for line in lines) + "\n"
