"""Kueue's names the launcher reads and writes: its labels, the one API version it reads, and how a refused or
unserved Kueue read becomes a note (never an exception). Imported by the kueue package, state.queueing and
doctor.kueue_rows.

The launcher reads `kueue.x-k8s.io/v1beta2`, which Kueue serves from v0.15 (the playground runs v0.17.0);
older Kueue serves only v1beta1 (`cohort`, not `cohortName`), which the launcher does not read.
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing's import costs ~3 ms at start-up: for type checkers only
if TYPE_CHECKING:
    from typing import Any

GROUP = "kueue.x-k8s.io"
VERSION = "v1beta2"
API = f"/apis/{GROUP}/{VERSION}"
QUEUE_LABEL = f"{GROUP}/queue-name"
PRIORITY_LABEL = f"{GROUP}/priority-class"
JOB_UID_LABEL = f"{GROUP}/job-uid"
WORKLOADS = f"workloads.{GROUP}"  # never the short name: Kubernetes has a Workload kind of its own


def unreadable(exc: Any, what: str, then: str = "Kueue's reason is not shown") -> str | None:
    """The note for a Kueue read of `what` the cluster refused (401/403; `then`: what that hides) or does not
    serve (a 404 of the API, not of an object); None for any other failure."""
    from generator.live.client.api_errors import describe_error, is_object_404

    status = getattr(exc, "status", None)
    if status == 404 and not is_object_404(exc):
        return (f"the cluster does not serve {WORKLOADS}/{VERSION}: Kueue (v0.15 or newer) is not installed, so "
                f"nothing admits by the {QUEUE_LABEL} label")
    if status in (401, 403):
        return f"{what} not readable ({describe_error(exc)})" + (f": {then}" if then else "")
    return None
