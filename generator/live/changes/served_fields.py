"""The values a live verb installs, fitted to the KubeRay CRDs the cluster serves: a RayJob field newer than the
installed KubeRay is left out when its value is only the chart's default (with a note of what bounds the start
instead), and refused by name when the user set it (exit 1: the cluster cannot hold it).

The one such field is launch.preRunningDeadlineSeconds (generator.inputs.version_rules). The served RayJob is asked
with a dry-run create of a RayJob holding only that field, with fieldValidation=Strict. The API server decodes the
body before anything else (admission, the namespace's existence, the schema's other rules), so a field its CRD
lacks is answered 400 naming it, and every other answer (created in the dry run, the namespace not there yet, the
rest of the object refused) means the field is known. One small request, made only when the values would render
the field: reading the CRD itself would cost a megabyte and a cluster-wide right a tenant often lacks, while
creating RayJobs in the namespace is what `run` does anyway. Where the server cannot say (the create forbidden, a
failure) the values stay as they are, with a note.
"""

from __future__ import annotations

from typing import Any

from generator.errors import CheckFailed
from generator.live.client.api_errors import api_status, status_message, unknown_fields
from generator.live.client.kube import RAY_GROUP, RAY_VERSION, Kube

FIELD = "preRunningDeadlineSeconds"


def served_rayjob_knows(kube: Kube, namespace: str, field: str) -> bool | None:
    """Whether the served RayJob CRD has spec.<field>: True, False, or None when the server did not say (the
    dry-run create forbidden or failed otherwise than on decoding)."""
    probe = {"apiVersion": f"{RAY_GROUP}/{RAY_VERSION}", "kind": "RayJob",
             "metadata": {"generateName": "dockyard-fields-"}, "spec": {field: 1}}
    try:
        kube.request("POST", f"/apis/{RAY_GROUP}/{RAY_VERSION}/namespaces/{namespace}/rayjobs",
                     {"dryRun": "All", "fieldValidation": "Strict"}, probe)
    except Exception as exc:
        status = api_status(exc)
        if status is None:
            raise
        if status == 400 and f"spec.{field}" in unknown_fields(status_message(exc)):
            return False
        # decoded, then refused for something else: the namespace not there yet, or the rest of the object; 403
        # (RBAC, or a webhook's denial) and 5xx say nothing of the field
        return True if status in (400, 404, 422) else None
    return True


def fit_to_served(kube: Kube, mode: str, namespace: str, values: dict[str, Any]) -> str | None:
    """Fit `values` (changed in place) to the served RayJob: the note to print when the default start deadline was
    left out (or the server did not say), else None; CheckFailed when the infra spec set a deadline the served
    RayJob lacks."""
    from generator.inputs.version_rules import PRE_RUNNING_SINCE, WITHOUT_PRE_RUNNING, pre_running_note, renders

    launch = values.get("launch") or {}
    if mode != "rayjob" or not renders(launch, values["kuberay"]["version"]):
        return None
    knows = served_rayjob_knows(kube, namespace, FIELD)
    if knows is None:
        return (f"note: the API server did not say whether its RayJob has {FIELD} (the dry-run create was refused "
                f"or failed): the values keep KubeRay {values['kuberay']['version']}'s default; `doctor` checks the "
                "installed CRDs' fields")
    if knows:
        return None
    if launch.get(FIELD):
        raise CheckFailed(f"launch.{FIELD}: the installed KubeRay's RayJob lacks it (new in KubeRay "
                          f"v{PRE_RUNNING_SINCE}); expected no launch.{FIELD} (or 0) in the infra spec, or KubeRay's "
                          f"CRDs and operator upgraded to v{PRE_RUNNING_SINCE} or later")
    older = WITHOUT_PRE_RUNNING[-1]
    values["kuberay"] = {**values["kuberay"], "version": older}
    return pre_running_note(launch, older, "the installed KubeRay")
