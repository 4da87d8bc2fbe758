"""Image pulls that fail: the image, the pod, the node, and whether waiting longer can still help.

The kubelet reports a failed pull in a container's waiting state: `ErrImagePull` (this attempt failed), then
`ImagePullBackOff` (waiting before the next try, 10 s doubling to 5 min), `InvalidImageName` (the reference
does not parse: never tried) or `ErrImageNeverPull` (pullPolicy Never, and the node lacks the image). One
failed pull may succeed on the next try (a registry's hiccup, a rate limit, a network blip), so a wait ends at
once only on what no retry fixes:

- InvalidImageName and ErrImageNeverPull;
- a pull error whose message is the registry's (or DNS's) answer that the image is not there or not ours:
  not found, manifest unknown, unauthorized, denied, forbidden, authentication required;

and on any other pull error (a DNS failure on the node included: it may be a blip) once it has lasted
PULL_GRACE seconds from the wait's first sight of it: the kubelet's longest back-off (5 min), so a retry that is
downloading (the pod keeps showing the last error while it does) gets its time. A slow pull reports no error
(the container waits in ContainerCreating) and is waited for.
"""

from __future__ import annotations

import time

from generator.live.state.record import Record

TYPE_CHECKING = False  # typing's import costs ~3 ms at start-up: for type checkers only
if TYPE_CHECKING:
    from typing import Any

    from generator.live.state.claims import FailedClaim

PULL_REASONS = ("ErrImagePull", "ImagePullBackOff", "InvalidImageName", "ErrImageNeverPull")
FINAL_REASONS = ("InvalidImageName", "ErrImageNeverPull")
FINAL_WORDS = ("not found", "manifest unknown", "unauthorized", "denied", "forbidden", "authentication required")
PULL_GRACE = 300.0  # seconds a retryable pull error may last before a wait gives up on it (the kubelet's max back-off)


class FailedPull(Record, frozen=True):
    """One container whose image the kubelet could not pull."""

    pod: str
    fleet: str
    node: str
    container: str
    image: str
    reason: str
    message: str

    @property
    def final(self) -> bool:
        """No retry fixes it: a wait may end at once."""
        text = self.message.lower()
        return self.reason in FINAL_REASONS or any(word in text for word in FINAL_WORDS)

    @property
    def key(self) -> tuple[str, str, str]:
        return self.pod, self.container, self.image

    def line(self) -> str:
        where = f"pod {self.pod} ({self.fleet}) on node {self.node}" if self.node else f"pod {self.pod} ({self.fleet})"
        why = f"{self.reason}: {self.message}".rstrip(": ")
        return f"image {self.image} cannot be pulled for {where}: {why}"


def failed_pulls(pods: list[dict[str, Any]], fleet_of: Any) -> list[FailedPull]:
    """Every container (init containers too) of `pods` whose pull failed; fleet_of(pod) names its fleet."""
    out = []
    for pod in pods:
        st = pod.get("status") or {}
        images = {c["name"]: c.get("image", "") for part in ("initContainers", "containers")
                  for c in (pod.get("spec") or {}).get(part) or []}
        for cs in (st.get("initContainerStatuses") or []) + (st.get("containerStatuses") or []):
            waiting = (cs.get("state") or {}).get("waiting") or {}
            if waiting.get("reason") in PULL_REASONS:
                out.append(FailedPull(
                    pod=pod["metadata"]["name"], fleet=fleet_of(pod) or "-",
                    node=(pod.get("spec") or {}).get("nodeName") or "", container=cs.get("name", ""),
                    image=images.get(cs.get("name", "")) or cs.get("image", ""), reason=waiting["reason"],
                    message=(waiting.get("message") or "").strip()))
    return out


class PullWatch:
    """A wait's view of failed pulls (and of claims a provisioner refused, claims.py: judged alike) over time:
    each said once when first seen; the end of the wait when one is final, or a retryable one has lasted
    PULL_GRACE seconds."""

    def __init__(self, grace: float | None = None, clock: Any = time.monotonic) -> None:
        self.grace = PULL_GRACE if grace is None else grace
        self.clock = clock
        self.first_seen: dict[tuple[str, str, str], float] = {}

    def new(self, pulls: list[FailedPull | FailedClaim]) -> list[FailedPull | FailedClaim]:
        """The pulls not seen failing before (to be said); the ones no longer failing are forgotten."""
        now = self.clock()
        fresh = [p for p in pulls if p.key not in self.first_seen]
        current = {p.key for p in pulls}
        self.first_seen = {k: t for k, t in self.first_seen.items() if k in current}
        for p in fresh:
            self.first_seen[p.key] = now
        return fresh

    def verdict(self, pulls: list[FailedPull | FailedClaim]) -> str | None:
        """Why the wait ends now, or None to keep waiting."""
        now = self.clock()
        for p in pulls:
            if p.final:
                return f"{p.line()} (no retry fixes this)"
        for p in pulls:
            since = now - self.first_seen.get(p.key, now)
            if since >= self.grace:
                return f"{p.line()} (still failing after {since:.0f}s of retries)"
        return None
