"""status's warm pool line (generator/live/state/warm_pool.py): what it says of the pool and the claims naming it;
the reads themselves run against agent-sandbox's real controller in tests/live/test_live_agent_sandbox.py."""

from __future__ import annotations

from generator.live.state import warm_pool


def test_the_line_says_ready_and_claimed_warm_and_cold():
    line = warm_pool.lines({"name": "grpo-swe-sandbox", "replicas": 2, "ready": 1, "claims": 3, "bound": 2,
                            "warm": 1, "cold": 1})
    assert line == ["warm pool  grpo-swe-sandbox  ready 1/2  claimed 3 (bound 2: warm 1, cold 1)"]


def test_no_pool_no_line_and_rbac_said():
    assert warm_pool.lines(None) == []
    assert warm_pool.lines({"forbidden": True})[0].startswith("warm pool  not readable: RBAC forbids")


def test_only_a_release_that_renders_a_warm_pool_costs_the_reads(monkeypatch):
    from generator.live.helm import records

    monkeypatch.setattr(records, "live_manifest", lambda recs: recs[0])
    assert warm_pool.renders_warm_pool(["kind: Deployment\n---\nkind: SandboxWarmPool\n"])
    assert not warm_pool.renders_warm_pool(["kind: Deployment\n"])


def test_a_claim_is_bound_when_its_ready_condition_is_true():
    assert warm_pool._bound({"status": {"conditions": [{"type": "Ready", "status": "True"}]}})
    assert not warm_pool._bound({"status": {"conditions": [{"type": "Ready", "status": "False"}]}})
    assert not warm_pool._bound({})


class PoolApi:
    """The three lists `read` makes, over objects in memory."""

    def __init__(self, claims: list[dict], sandboxes: list[dict]):
        self.claims, self.sandboxes = claims, sandboxes

    def list(self, path: str, label_selector: str | None = None) -> list[dict]:
        if path.endswith("sandboxwarmpools"):
            return [{"metadata": {"name": "small-sandbox"}, "spec": {"replicas": 1},
                     "status": {"readyReplicas": 1}}]
        return self.claims if path.endswith("sandboxclaims") else self.sandboxes


def _claim(sandbox: str, ready: str) -> dict:
    return {"spec": {"warmPoolRef": {"name": "small-sandbox"}},
            "status": {"sandbox": {"name": sandbox}, "conditions": [{"type": "Ready", "status": ready}]}}


def test_warm_and_cold_split_the_bound_claims_only():
    """A claim still binding already names its sandbox: it counts as claimed, not yet as warm or cold, so the
    two always add up to the bound claims."""
    sandboxes = [{"metadata": {"name": n, "labels": {warm_pool.LAUNCH_TYPE: kind}}}
                 for n, kind in (("s1", "warm"), ("s2", "cold"), ("s3", "cold"))]
    got = warm_pool.read(PoolApi([_claim("s1", "True"), _claim("s2", "True"), _claim("s3", "False")], sandboxes),
                         "ns", "small")
    assert got == {"name": "small-sandbox", "replicas": 1, "ready": 1, "claims": 3, "bound": 2, "warm": 1, "cold": 1}
