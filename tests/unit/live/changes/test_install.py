"""The install step's watch while Helm works (install.Watching), offline on made snapshots: a claim its provisioner
refused (or a failed pull) is said once, when first seen, and named by the failure Helm's wait ends in: Helm's
--wait waits for the chart's claims to be bound, so a refused one holds it to its timeout. The install itself runs
end to end in tests/live (test_live_run.py; a refused claim on the real node: test_real_ray_storage.py); its gate is
tests/unit/live/changes/test_guard_gate.py's."""

from __future__ import annotations

import io
import time
from types import SimpleNamespace

from generator.live.changes import install
from generator.live.state.claims import FailedClaim
from generator.live.state.progress import Progress
from generator.live.state.snapshot import Fleet, Snapshot

REFUSED = ('failed to provision volume with StorageClass "local-path": NodePath only supports ReadWriteOnce and '
           'ReadWriteOncePod access modes')
CLAIM = FailedClaim(claim="grpo-swe-checkpoints", fleet="head", pod="grpo-swe-head-x", reason="ProvisioningFailed",
                    message=REFUSED, source="rancher.io/local-path_node")


def _watch(monkeypatch, snap: Snapshot) -> tuple[list[str], str]:
    """What a Watching says over a dozen reads of `snap`, and its held()."""
    reads: list[int] = []
    monkeypatch.setattr(install, "take", lambda kube, release, namespace: reads.append(1) or snap)
    monkeypatch.setattr(install, "LeaderWatch", lambda kube: SimpleNamespace(poll=list, held=str))
    monkeypatch.setattr(install, "WATCH_INTERVAL", 0.01)
    out = io.StringIO()
    with install.Watching(None, SimpleNamespace(release="grpo-swe", namespace="ns"), Progress(out),
                          "helm upgrade --install") as watching:
        deadline = time.monotonic() + 10
        while len(reads) < 12 and time.monotonic() < deadline:
            time.sleep(0.01)
    return [line for line in out.getvalue().splitlines() if not line.startswith("[")], watching.held()


def _waiting(**kw) -> Snapshot:
    return Snapshot("grpo-swe", "ns", mode="rayjob", fleets={"head": Fleet("head", desired=1, reason="Pending")}, **kw)


def test_a_refused_claim_is_said_once_while_helm_works_and_named_by_its_failure(monkeypatch):
    said, held = _watch(monkeypatch, _waiting(claims=[CLAIM]))
    line = (f"claim grpo-swe-checkpoints cannot be provisioned for pod grpo-swe-head-x (head): ProvisioningFailed by "
            f"rancher.io/local-path_node: {REFUSED}")
    assert said == [f"grpo-swe: {line}"]  # once, however often it is read
    assert held == f"\n  while it ran:\n  head 0/1: Pending\n  {line}"


def test_without_one_the_watch_says_nothing_more(monkeypatch):
    """The negative control: the same waiting pod, its claim not refused."""
    said, held = _watch(monkeypatch, _waiting())
    assert said == [] and held == "\n  while it ran:\n  head 0/1: Pending"
