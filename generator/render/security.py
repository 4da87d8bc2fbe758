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


def _egress_blocks_metadata(np: dict[str, Any]) -> bool:
    for rule in np["spec"].get("egress", []):
        if rule == {}:
            return False
        for peer in rule.get("to", []):
            block = peer.get("ipBlock") or {}
            if block.get("cidr") in ("0.0.0.0/0", "::/0") and not set(block.get("except", [])) & {"169.254.169.254/32", "fd00:ec2::254/128"}:
                return False
    return True


def controls(docs: list[dict[str, Any]]) -> list[tuple[str, dict[str, str]]]:
    pods = pod_specs(docs)
    nps = [d for d in docs if d.get("kind") == "NetworkPolicy"]
    pdbs = [d for d in docs if d.get("kind") == "PodDisruptionBudget"]
    bringup = any(d.get("kind") == "RayCluster" for d in docs)

    def row(check: Callable[[str, Pod], str], only: set[str] | None = None) -> dict[str, str]:
        return {role: (check(role, pod) if only is None or role in only else NA) for role, pod in pods.items()}

    def pdb_covers(role: str, pod: Pod) -> str:
        want = "sandbox" if role == "sandbox" else "gpu"
        names = {p["metadata"]["name"].rsplit("-", 1)[-1] for p in pdbs}
        return SET if want in names else NOT_SET

    def limits(c: dict[str, Any]) -> bool:
        lim = (c.get("resources") or {}).get("limits") or {}
        return "cpu" in lim and "memory" in lim

    rows = [
        ("allowPrivilegeEscalation: false", row(lambda r, p: _all(p, lambda c: _sc(c, p, "allowPrivilegeEscalation") is False))),
        ("capabilities drop ALL", row(lambda r, p: _all(p, lambda c: "ALL" in ((c.get("securityContext") or {}).get("capabilities") or {}).get("drop", [])))),
        ("seccomp RuntimeDefault", row(lambda r, p: _all(p, lambda c: (_sc(c, p, "seccompProfile") or {}).get("type") == "RuntimeDefault"))),
        ("runAsNonRoot", row(lambda r, p: _all(p, lambda c: _sc(c, p, "runAsNonRoot") is True))),
        ("readOnlyRootFilesystem", row(lambda r, p: _all(p, lambda c: _sc(c, p, "readOnlyRootFilesystem") is True))),
        ("writable work dir (emptyDir)", row(lambda r, p: (SET if any(v.get("name") == "workdir" and "emptyDir" in v for v in p.get("volumes", [])) else NOT_SET)
                                            if _all(p, lambda c: _sc(c, p, "readOnlyRootFilesystem") is True) == SET else NA)),
        ("no service-account token", row(lambda r, p: SET if p.get("automountServiceAccountToken") is False else NOT_SET, SANDBOX_ONLY)),
        ("no service links", row(lambda r, p: SET if p.get("enableServiceLinks") is False else NOT_SET, SANDBOX_ONLY)),
        ("NetworkPolicy (ingress: port, namespace)", row(lambda r, p: SET if nps else NOT_SET, {"sandbox"})),
        ("cloud metadata egress blocked", row(lambda r, p: SET if nps and _egress_blocks_metadata(nps[0]) else NOT_SET, {"sandbox"})),
        ("PodDisruptionBudget", row(pdb_covers, {"sandbox"} | ({"head", "trainer", "inference"} if bringup else set()))),
        ("ephemeral-storage request", row(lambda r, p: _all(p, lambda c: "ephemeral-storage" in ((c.get("resources") or {}).get("requests") or {})))),
        ("cpu/memory limits", row(lambda r, p: _all(p, limits))),
        ("priorityClassName", row(lambda r, p: SET if p.get("priorityClassName") else NOT_SET)),
        ("image pinned by digest", row(lambda r, p: _all(p, lambda c: "@sha256:" in c.get("image", "")))),
        ("topologySpreadConstraints", row(lambda r, p: SET if p.get("topologySpreadConstraints") else NOT_SET, {"sandbox"})),
        ("runtimeClassName", row(lambda r, p: SET if p.get("runtimeClassName") else NOT_SET, {"sandbox"})),
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
