"""Claims no provisioner makes: a PersistentVolumeClaim a release's pod waits on whose provisioner said why it
will not make its volume (a `ProvisioningFailed` event on the claim, in the provisioner's own words: "NodePath
only supports ReadWriteOnce and ReadWriteOncePod access modes"). A pod that mounts such a claim never starts:
`status` names it, and `run --wait` and `smoke` say it when first seen and end as pulls.PullWatch judges.

The events are read only when needed: when a pod of the release is waiting for a node (not scheduled, not
ending) and mounts a claim, with one list by field selector (the claim events of that reason alone). A release
whose pods are all placed (a running job) costs no request here.

An event outlives what it tells of (the apiserver keeps events about an hour): a claim may have been provisioned
on a later retry (Bound, its pod still waiting for a node) or deleted and made again under the same name. So when
an event names a waiting claim, the namespace's claims are listed too (one more request) and an event counts only
while its claim is the one it was about (the same metadata.uid) and still Pending. When the claims may not be
listed (401/403, or 404), an event is matched by the claim's name alone.

A provisioner retries a failed claim (the external provisioner backs off), and some failures pass (a cloud API's
throttling, a quota raised meanwhile): a failure is final (a wait ends at once) when its words say the claim
itself is what no retry fixes (an access mode or a parameter the driver does not take), else a wait gives it
PULL_GRACE seconds, as a failed pull.
"""

from __future__ import annotations

from generator.live.state.record import Record

TYPE_CHECKING = False  # typing's import costs ~3 ms at start-up: for type checkers only
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

    from generator.live.client.kube import Kube

REASON = "ProvisioningFailed"
SELECTOR = f"involvedObject.kind=PersistentVolumeClaim,reason={REASON}"
# The provisioner's words for a claim it will never serve as asked.
FINAL_WORDS = ("only supports", "access mode", "not supported", "unsupported", "invalid", "must be")


class FailedClaim(Record, frozen=True):
    """A claim a waiting pod mounts, and its provisioner's newest refusal."""

    claim: str
    fleet: str
    pod: str
    reason: str
    message: str
    source: str  # the provisioner that said it (the event's reporting component), or ""

    @property
    def final(self) -> bool:
        """No retry fixes it: a wait may end at once."""
        text = self.message.lower()
        return any(word in text for word in FINAL_WORDS)

    @property
    def key(self) -> tuple[str, str, str]:
        # The pod and the claim alone: a cloud driver's message carries a new request id on each retry, and a key
        # that changed with it would restart PullWatch's grace on every retry. PullWatch keys pulls and claims
        # alike, by three strings: the third, REASON, is no image a pull's key could hold.
        return self.pod, self.claim, REASON

    def line(self) -> str:
        by = f" by {self.source}" if self.source else ""
        return (f"claim {self.claim} cannot be provisioned for pod {self.pod} ({self.fleet}): "
                f"{self.reason}{by}: {self.message}")


def waiting_claims(pods: list[dict[str, Any]],
                   fleet_of: Callable[[dict[str, Any]], str | None]) -> dict[str, tuple[str, str]]:
    """The claims pods wait on: claim name -> (pod, fleet) of each pod not on a node yet, not ending, that
    mounts it."""
    out: dict[str, tuple[str, str]] = {}
    for pod in pods:
        spec, st = pod.get("spec") or {}, pod.get("status") or {}
        if spec.get("nodeName") or pod["metadata"].get("deletionTimestamp") or st.get("phase") not in (None, "Pending"):
            continue
        for vol in spec.get("volumes") or []:
            name = (vol.get("persistentVolumeClaim") or {}).get("claimName")
            if name and name not in out:
                out[name] = (pod["metadata"]["name"], fleet_of(pod) or "-")
    return out


def failed_claims(kube: Kube, namespace: str, pods: list[dict[str, Any]],
                  fleet_of: Callable[[dict[str, Any]], str | None]) -> list[FailedClaim]:
    """The waiting pods' claims with a ProvisioningFailed event, the newest event of each; one request, made only
    when a waiting pod mounts a claim (none when the events may not be listed: the pods' own reasons stand), and
    one more, the namespace's claims, only when an event names one of them."""
    waiting = waiting_claims(pods, fleet_of)
    if not waiting:
        return []
    try:
        events = kube.list(f"/api/v1/namespaces/{namespace}/events", field_selector=SELECTOR)
    except Exception as exc:  # the client's ApiException, not imported here: `status` runs without the client
        if getattr(exc, "status", None) in (401, 403):
            return []
        raise
    if not any((ev.get("involvedObject") or {}).get("name") in waiting for ev in events):
        return []
    try:
        claims: list[dict[str, Any]] | None = kube.list(f"/api/v1/namespaces/{namespace}/persistentvolumeclaims")
    except Exception as exc:
        if getattr(exc, "status", None) not in (401, 403, 404):
            raise
        claims = None  # the claims may not be read: an event is matched by name, as the best left to go on
    return from_events(events, waiting, claims)


def event_time(ev: dict[str, Any]) -> str:
    """An event's time as a sortable string: lastTimestamp (second precision), else eventTime (micro precision), else
    its creation; RFC 3339 stamps, all UTC, compared on equal terms."""
    from datetime import datetime

    stamp = ev.get("lastTimestamp") or ev.get("eventTime") or (ev.get("metadata") or {}).get("creationTimestamp")
    return str(datetime.fromisoformat(stamp)) if stamp else ""


def pending_uids(claims: list[dict[str, Any]]) -> dict[str, str]:
    """Claim name -> metadata.uid of each claim still waiting for its volume (Pending; a claim just made may not
    have a phase yet). A Bound claim was provisioned, whatever an older event says; a Lost one is past it."""
    out = {}
    for pvc in claims:
        meta = pvc.get("metadata") or {}
        if (pvc.get("status") or {}).get("phase") in (None, "Pending") and meta.get("name") and meta.get("uid"):
            out[meta["name"]] = meta["uid"]
    return out


def from_events(events: list[dict[str, Any]], waiting: dict[str, tuple[str, str]],
                claims: list[dict[str, Any]] | None = None) -> list[FailedClaim]:
    """The newest ProvisioningFailed event of each waiting claim, as FailedClaims in claim order. With `claims`
    (the namespace's PersistentVolumeClaims), an event counts only when it is about the live claim (its
    involvedObject.uid is the claim's uid) and that claim is still Pending; with None (they could not be read),
    by the claim's name alone."""
    live = None if claims is None else pending_uids(claims)
    newest: dict[str, dict[str, Any]] = {}
    for ev in events:
        obj = ev.get("involvedObject") or {}
        name = obj.get("name")
        if obj.get("kind") != "PersistentVolumeClaim" or ev.get("reason") != REASON or name not in waiting:
            continue
        if live is not None and (name not in live or obj.get("uid") != live[name]):
            continue  # a claim since Bound, deleted, or made again under the name (another uid)
        if name not in newest or event_time(ev) >= event_time(newest[name]):
            newest[name] = ev
    out = []
    for name in sorted(newest):
        ev, (pod, fleet) = newest[name], waiting[name]
        source = ev.get("reportingComponent") or (ev.get("source") or {}).get("component") or ""
        out.append(FailedClaim(claim=name, fleet=fleet, pod=pod, reason=REASON,
                               message=(ev.get("message") or "").strip(), source=source))
    return out
