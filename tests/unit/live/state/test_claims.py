"""A claim its provisioner refused (a ProvisioningFailed event, in the provisioner's words) is named by `status`,
`run --wait` and `smoke` as soon as it is seen, for a pod that waits on it (state/claims.py); the events are read
only then, and the namespace's claims only when an event names a waiting one (an event counts only for the live,
still Pending claim it was about). On the recorded playground answers (tests/unit/recorded/status_pending) with
the pending inference worker mounting a claim, and event and claim objects built as the apiserver serves them: the
playground's own provisioner (playground-hostpath) refuses no claim, so a refusal is built here (the real node's
local-path refuses one live: tests/live/test_real_ray_storage.py)."""

from __future__ import annotations

import time

import pytest

from generator.cli import main
from generator.errors import CheckFailed
from generator.live.client.kube import Kube
from generator.live.state import follow as follow_mod
from generator.live.state.claims import SELECTOR, FailedClaim, failed_claims, from_events, waiting_claims
from generator.live.state.controllers import LeaderWatch
from generator.live.state.pods import fleet_of
from generator.live.state.progress import Progress
from generator.live.state.pulls import PullWatch
from generator.live.state.snapshot import take
from generator.maint.recording import match_of
from tests.support.fake_cluster import _key, install

RELEASE, NS = "small", "rec"
CLAIM = "small-checkpoints"
# external-provisioner's event on a claim local-path refuses (its reportingComponent is the provisioner's name).
REFUSED = ('failed to provision volume with StorageClass "standard": NodePath only supports ReadWriteOnce and '
           "ReadWriteOncePod access modes")
THROTTLED = 'failed to provision volume with StorageClass "gp3": rpc error: code = Internal desc = RequestLimitExceeded'
UID = "3f9b2c1e-7a41-4c55-9d2e-0b6f1a2c3d4e"  # the live claim's
OLD_UID = "8d0e5a77-1b2c-4f3a-a9e8-55c0d4b3a211"  # a claim of the same name, deleted since
CLAIMS = f"/api/v1/namespaces/{NS}/persistentvolumeclaims"


def _event(claim: str, message: str, when: str = "2026-12-04T22:43:00Z", reason: str = "ProvisioningFailed",
           uid: str = UID) -> dict:
    return {"metadata": {"name": f"{claim}.1", "namespace": NS, "creationTimestamp": when}, "type": "Warning",
            "reason": reason, "message": message, "lastTimestamp": when, "count": 3,
            "involvedObject": {"kind": "PersistentVolumeClaim", "namespace": NS, "name": claim, "uid": uid,
                               "apiVersion": "v1", "resourceVersion": "4711"},
            "reportingComponent": "rancher.io/local-path_local-path-provisioner-7d4b_0f3c",
            "source": {"component": "rancher.io/local-path_local-path-provisioner-7d4b_0f3c"}}


def _claim(name: str = CLAIM, uid: str = UID, phase: str = "Pending") -> dict:
    return {"metadata": {"name": name, "namespace": NS, "uid": uid},
            "spec": {"accessModes": ["ReadWriteMany"], "storageClassName": "standard",
                     "resources": {"requests": {"storage": "10Gi"}}},
            "status": {"phase": phase}}


def _pod(name: str, claim: str | None, node: str | None = None, phase: str = "Pending") -> dict:
    spec: dict = {"containers": [{"name": "ray-worker", "image": "x"}]}
    if claim:
        spec["volumes"] = [{"name": "dockyard-checkpoints", "persistentVolumeClaim": {"claimName": claim}}]
    if node:
        spec["nodeName"] = node
    return {"metadata": {"name": name, "labels": {"dockyard.dev/fleet": "trainer"}}, "spec": spec,
            "status": {"phase": phase}}


def test_only_a_pod_waiting_for_a_node_makes_its_claims_worth_reading():
    pods = [_pod("a", CLAIM), _pod("b", "other", node="gpu-node-0"), _pod("c", "done", phase="Succeeded"),
            _pod("d", None)]
    assert waiting_claims(pods, fleet_of) == {CLAIM: ("a", "trainer")}


def test_the_newest_refusal_of_each_waiting_claim_in_the_provisioners_words():
    events = [_event(CLAIM, THROTTLED, "2026-12-04T22:40:00Z"), _event(CLAIM, REFUSED, "2026-12-04T22:43:00Z"),
              _event("not-ours", REFUSED), _event(CLAIM, "bound", reason="ProvisioningSucceeded")]
    [claim] = from_events(events, {CLAIM: ("p-0", "trainer")})
    assert claim.final and claim.message == REFUSED
    assert claim.line() == (f"claim {CLAIM} cannot be provisioned for pod p-0 (trainer): ProvisioningFailed by "
                            f"rancher.io/local-path_local-path-provisioner-7d4b_0f3c: {REFUSED}")
    [throttled] = from_events([_event(CLAIM, THROTTLED)], {CLAIM: ("p-0", "trainer")})
    assert not throttled.final  # the provisioner retries; a wait gives it the bound


def test_a_retryable_refusal_ends_a_wait_after_the_bound_as_a_pull_does():
    now = [0.0]
    watch = PullWatch(grace=60.0, clock=lambda: now[0])
    stuck = [FailedClaim(claim=CLAIM, fleet="trainer", pod="p-0", reason="ProvisioningFailed", message=THROTTLED,
                         source="")]
    assert watch.new(stuck) == stuck and watch.verdict(stuck) is None
    now[0] = 61.0
    assert "still failing after 61s" in watch.verdict(stuck)


@pytest.fixture
def fake(monkeypatch, tmp_path):
    return install(monkeypatch, tmp_path, "status_pending")


def _inference_waits_on_the_claim(fake, events: list[dict]) -> str:
    """The recorded (unscheduled) inference worker mounting CLAIM, and the events list answering SELECTOR."""
    name = ""
    for key, answers in fake.answers.items():
        if key[1] == f"/api/v1/namespaces/{NS}/pods":
            for ex in answers:
                for pod in ex["body"]["items"]:
                    if pod["metadata"]["labels"].get("dockyard.dev/fleet") == "inference":
                        assert not pod["spec"].get("nodeName")  # the recording's pending worker
                        pod["spec"].setdefault("volumes", []).append(
                            {"name": "dockyard-checkpoints", "persistentVolumeClaim": {"claimName": CLAIM}})
                        name = pod["metadata"]["name"]
    path = f"/api/v1/namespaces/{NS}/events"
    fake.answers[_key("GET", path, {"fieldSelector": SELECTOR}, match_of(path, None))] = [
        {"status": 200, "reason": "OK", "body": {"kind": "EventList", "apiVersion": "v1", "metadata": {},
                                                 "items": events}}]
    _claims_are(fake, [_claim()])
    return name


def _claims_are(fake, claims: list[dict]) -> None:
    """The namespace's PersistentVolumeClaims list (nothing recorded answers it: the playground's claims all bind)."""
    fake.answers[_key("GET", CLAIMS, {}, match_of(CLAIMS, None))] = [
        {"status": 200, "reason": "OK", "body": {"kind": "PersistentVolumeClaimList", "apiVersion": "v1",
                                                 "metadata": {}, "items": claims}}]


def test_status_names_the_refused_claim_for_one_more_request(fake, capsys):
    pod = _inference_waits_on_the_claim(fake, [_event(CLAIM, REFUSED)])
    snap = take(Kube(), RELEASE, NS)
    assert snap.calls == 7  # the recording's 5, the claim events (a pod waits on a claim), the claims (one is named)
    assert [c.claim for c in snap.claims] == [CLAIM] and snap.to_dict()["claims"][0]["message"] == REFUSED
    assert main(["status"]) == 0
    line = next(x for x in capsys.readouterr().out.splitlines() if x.startswith("claim "))
    assert f"claim {CLAIM} cannot be provisioned for pod {pod} (inference): ProvisioningFailed" in line
    assert "NodePath only supports ReadWriteOnce and ReadWriteOncePod" in line and "no retry fixes this" in line


def test_a_claim_without_a_refusal_says_nothing_more(fake, capsys):
    _inference_waits_on_the_claim(fake, [])
    snap = take(Kube(), RELEASE, NS)
    assert snap.claims == [] and snap.calls == 6  # no event names the claim: the claims are not listed
    assert not [r for r in fake.requests if r[1] == CLAIMS]
    assert main(["status"]) == 0
    assert not [x for x in capsys.readouterr().out.splitlines() if x.startswith("claim ")]


def test_a_running_release_reads_no_claim_events(fake):
    """The request budget of a healthy job: no pod waits on a claim, so no events list (test_snapshot's 5 calls)."""
    snap = take(Kube(), RELEASE, NS)
    assert snap.claims == [] and snap.calls == 5
    assert not [r for r in fake.requests if r[2].get("fieldSelector") == SELECTOR]


def test_run_wait_ends_on_the_refused_claim_and_says_it_when_seen(fake, monkeypatch):
    monkeypatch.setattr(follow_mod, "LeaderWatch", lambda kube: LeaderWatch(kube, leaders=()))
    pod = _inference_waits_on_the_claim(fake, [_event(CLAIM, REFUSED)])
    progress = Progress(quiet=True)
    said: list[str] = []
    monkeypatch.setattr(progress, "say", said.append)
    with pytest.raises(CheckFailed) as exc:
        follow_mod.follow(Kube(), RELEASE, NS, time.monotonic() + 600, progress)
    assert f"claim {CLAIM} cannot be provisioned for pod {pod} (inference)" in str(exc.value)
    assert "no retry fixes this" in str(exc.value) and "not ready after the timeout" not in str(exc.value)
    assert said == [(f"{RELEASE}: claim {CLAIM} cannot be provisioned for pod {pod} (inference): ProvisioningFailed "
                    f"by rancher.io/local-path_local-path-provisioner-7d4b_0f3c: {REFUSED}")]


def test_smoke_ends_on_the_refused_claim():
    from generator.live.verbs import smoke

    class Cluster:
        def __init__(self):
            self.selectors = []

        def list(self, path, label_selector=None, field_selector=None):
            self.selectors.append(field_selector)
            if path.endswith("/persistentvolumeclaims"):
                return [_claim()]
            return [_event(CLAIM, REFUSED)] if path.endswith("/events") else [_pod("p-0", CLAIM)]

        def get_ray(self, *args):
            raise AssertionError("the claim is judged first")

    said: list[str] = []
    cluster = Cluster()
    with pytest.raises(CheckFailed) as exc:
        smoke._wait_for_probe(cluster, "r", "ns", smoke.Steps(time.monotonic() + 600), said.append, time.monotonic())
    assert f"claim {CLAIM} cannot be provisioned for pod p-0 (trainer)" in str(exc.value)
    assert len(said) == 1 and said[0].startswith(f"smoke: claim {CLAIM}")
    assert cluster.selectors == [None, SELECTOR, None]  # the pods, the claim events, the claims (one is named)


def test_events_that_may_not_be_listed_leave_the_pods_own_reasons(fake):
    from kubernetes.client.exceptions import ApiException

    class Denied(Kube):
        def list(self, path, label_selector=None, field_selector=None):
            if field_selector == SELECTOR:
                raise ApiException(status=403, reason="Forbidden")
            return super().list(path, label_selector, field_selector)

    _inference_waits_on_the_claim(fake, [_event(CLAIM, REFUSED)])
    snap = take(Denied(), RELEASE, NS)
    assert snap.claims == [] and snap.fleets["inference"].reason.startswith("Unschedulable")


def test_an_event_counts_only_for_the_live_pending_claim_it_was_about():
    waiting = {CLAIM: ("p-0", "trainer")}
    # the negative control: the event is about this claim (its uid), still Pending
    [claim] = from_events([_event(CLAIM, REFUSED)], waiting, [_claim()])
    assert claim.message == REFUSED
    # a transient failure, then a volume on a later retry: the claim is Bound, its pod waits for a GPU node
    assert from_events([_event(CLAIM, THROTTLED)], waiting, [_claim(phase="Bound")]) == []
    # the claim was deleted and made again under its name: the event was about the old one
    assert from_events([_event(CLAIM, REFUSED, uid=OLD_UID)], waiting, [_claim()]) == []
    # the claim is gone altogether: nothing the event says is about a claim the pod can get
    assert from_events([_event(CLAIM, REFUSED)], waiting, []) == []
    # of the old claim's event and the live one's, only the live one's counts, however old
    [live] = from_events([_event(CLAIM, REFUSED, "2026-12-04T22:50:00Z", uid=OLD_UID),
                          _event(CLAIM, THROTTLED, "2026-12-04T22:40:00Z")], waiting, [_claim()])
    assert live.message == THROTTLED
    # the claims could not be read: by name, as the events alone tell
    [by_name] = from_events([_event(CLAIM, REFUSED, uid=OLD_UID)], waiting, None)
    assert by_name.message == REFUSED


def test_status_says_nothing_of_a_claim_bound_since_its_refusal(fake, capsys):
    _inference_waits_on_the_claim(fake, [_event(CLAIM, REFUSED)])
    _claims_are(fake, [_claim(phase="Bound")])
    snap = take(Kube(), RELEASE, NS)
    assert snap.claims == [] and snap.calls == 7
    assert main(["status"]) == 0
    assert not [x for x in capsys.readouterr().out.splitlines() if x.startswith("claim ")]


def test_status_says_nothing_of_an_older_claims_refusal(fake):
    _inference_waits_on_the_claim(fake, [_event(CLAIM, REFUSED, uid=OLD_UID)])
    assert take(Kube(), RELEASE, NS).claims == []


def test_claims_that_may_not_be_listed_leave_the_events_matched_by_name():
    from kubernetes.client.exceptions import ApiException

    class Cluster:
        def __init__(self, status: int):
            self.status = status

        def list(self, path, label_selector=None, field_selector=None):
            if path.endswith("/persistentvolumeclaims"):
                raise ApiException(status=self.status, reason="Forbidden")
            return [_event(CLAIM, REFUSED)]

    for status in (403, 404):
        [claim] = failed_claims(Cluster(status), NS, [_pod("p-0", CLAIM)], fleet_of)
        assert claim.claim == CLAIM and claim.message == REFUSED
    with pytest.raises(ApiException):
        failed_claims(Cluster(500), NS, [_pod("p-0", CLAIM)], fleet_of)


def test_a_retry_with_new_words_keeps_the_claims_grace_running():
    """A cloud driver puts a request id in each retry's message: the grace runs from the first one seen."""
    now = [0.0]
    watch = PullWatch(grace=60.0, clock=lambda: now[0])
    waiting, claims = {CLAIM: ("p-0", "trainer")}, [_claim()]
    first = from_events([_event(CLAIM, f"{THROTTLED} (request id 1a2b)", "2026-12-04T22:40:00Z")], waiting, claims)
    assert watch.new(first) == first and watch.verdict(first) is None
    now[0] = 30.0
    second = from_events([_event(CLAIM, f"{THROTTLED} (request id 1a2b)", "2026-12-04T22:40:00Z"),
                          _event(CLAIM, f"{THROTTLED} (request id 9f8e)", "2026-12-04T22:40:30Z")], waiting, claims)
    assert second[0].message.endswith("9f8e)")
    assert watch.new(second) == [] and watch.verdict(second) is None  # not said again, not begun again
    now[0] = 61.0
    assert "still failing after 61s" in watch.verdict(second)
