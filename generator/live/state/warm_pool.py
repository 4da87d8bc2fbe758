"""agent-sandbox's warm pool, for `status` (sandbox.backend agent-sandbox): the SandboxWarmPool's size and ready
sandboxes, and the SandboxClaims that name it, bound or not, warm (taken from the pool) or cold (made for the
claim because the pool had none ready). Read only when the release renders a SandboxWarmPool: two more lists."""

from __future__ import annotations

from generator.live.client.kube import INSTANCE, Kube

TYPE_CHECKING = False  # typing's import costs ~3 ms at start-up: for type checkers only
if TYPE_CHECKING:
    from typing import Any

WARM_POOL_KIND = "kind: SandboxWarmPool"
EXT = "/apis/extensions.agents.x-k8s.io/v1beta1"
CLAIMS = EXT + "/namespaces/{ns}/sandboxclaims"
SANDBOXES = "/apis/agents.x-k8s.io/v1beta1/namespaces/{ns}/sandboxes"
LAUNCH_TYPE = "agents.x-k8s.io/launch-type"  # on a Sandbox a claim took: warm or cold


def pool_of(claim: dict[str, Any]) -> str | None:
    """The warm pool a SandboxClaim names."""
    return ((claim.get("spec") or {}).get("warmPoolRef") or {}).get("name")


def renders_warm_pool(records: list[dict[str, Any]]) -> bool:
    """Whether the newest Helm record's manifest has a SandboxWarmPool: no read otherwise."""
    from generator.live.helm.records import live_manifest

    try:
        return WARM_POOL_KIND in (live_manifest(records) or "")
    except Exception:  # a record this cannot read: no warm pool line, status goes on
        return False


def _bound(claim: dict[str, Any]) -> bool:
    return any(c.get("type") == "Ready" and c.get("status") == "True"
               for c in (claim.get("status") or {}).get("conditions") or [])


def read(kube: Kube, namespace: str, release: str) -> dict[str, Any] | None:
    """The release's warm pool: name, size, ready; its claims: total, bound, warm, cold. None when it has none;
    {"forbidden": True} when RBAC forbids the reads."""
    from generator.live.client.api_errors import is_forbidden

    try:
        pools = kube.list(f"{EXT}/namespaces/{namespace}/sandboxwarmpools", label_selector=f"{INSTANCE}={release}")
        if not pools:
            return None
        wp = pools[0]
        name = wp["metadata"]["name"]
        claims = [c for c in kube.list(CLAIMS.format(ns=namespace)) if pool_of(c) == name]
        sandboxes = {s["metadata"]["name"]: s for s in kube.list(SANDBOXES.format(ns=namespace))} if claims else {}
    except Exception as exc:
        if is_forbidden(exc):
            return {"forbidden": True}
        raise
    launch = {"warm": 0, "cold": 0}
    for c in filter(_bound, claims):  # the launch types split the bound claims: a claim still binding has none yet
        sandbox = sandboxes.get(((c.get("status") or {}).get("sandbox") or {}).get("name") or "")
        kind = ((sandbox or {}).get("metadata", {}).get("labels") or {}).get(LAUNCH_TYPE)
        if kind in launch:
            launch[kind] += 1
    st = wp.get("status") or {}
    return {"name": name, "replicas": int((wp.get("spec") or {}).get("replicas") or 0),
            "ready": int(st.get("readyReplicas") or 0), "claims": len(claims),
            "bound": sum(_bound(c) for c in claims), **launch}


def lines(warm: dict[str, Any] | None) -> list[str]:
    """status's `warm pool` line."""
    if not warm:
        return []
    if warm.get("forbidden"):
        return ["warm pool  not readable: RBAC forbids listing sandboxwarmpools, sandboxclaims or sandboxes here"]
    line = (f"warm pool  {warm['name']}  ready {warm['ready']}/{warm['replicas']}  claimed {warm['claims']} "
            f"(bound {warm['bound']}: warm {warm['warm']}, cold {warm['cold']})")
    return [line]
