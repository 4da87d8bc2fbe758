"""`doctor`'s rows on the versions users run: the server's Kubernetes minor inside the supported range, and
the installed KubeRay CRDs accepting every field the chart renders (a dry-run create, fieldValidation=Strict)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

from generator.live.client.api_errors import describe_error, status_message, unknown_fields
from generator.live.client.kube import RAY_GROUP, Kube
from generator.live.doctor.rows import FAIL, OK, WARN, Row, forbidden


def _chart_kube_floor() -> int | None:
    """The minor of the chart's `kubeVersion: >=1.N` (helm install refuses an older server), when it says so."""
    import re

    from generator.pinned_tools import CHART_DIR

    m = re.search(r'^kubeVersion:\s*["\']?>=\s*v?1\.(\d+)', (CHART_DIR / "Chart.yaml").read_text(), re.M)
    return int(m.group(1)) if m else None


def kubernetes_version_verdict(git_version: str) -> Row:
    """The row for a server reporting `git_version`: ✓ in the supported range, ! outside it, ✗ below the
    chart's kubeVersion (helm install refuses it)."""
    import re

    from generator.pinned_tools import KUBE_MINORS, kube_range

    check = "Kubernetes version"
    m = re.match(r"^v?(\d+)\.(\d+)", git_version)
    if not m:
        return Row(WARN, check, f"the server reports version {git_version!r}: not v1.N; supported {kube_range()}")
    major, minor = int(m.group(1)), int(m.group(2))
    if major == 1 and minor in KUBE_MINORS:
        return Row(OK, check, f"{git_version} (supported {kube_range()})")
    floor = _chart_kube_floor()
    if major == 1 and floor is not None and minor < floor:
        return Row(FAIL, check, f"{git_version}: the chart requires Kubernetes >= 1.{floor} (helm install refuses "
                   f"it); dockyard-k8s supports {kube_range()}", f"use a cluster of Kubernetes {kube_range()}")
    side = "older" if (major, minor) < (1, KUBE_MINORS[0]) else "newer"
    return Row(WARN, check, f"{git_version}: {side} than the supported {kube_range()} (untested there)",
               f"use a cluster of Kubernetes {kube_range()}, or check the chart against the nearest minor: "
               f"`check --kube-version 1.{KUBE_MINORS[0] if side == 'older' else KUBE_MINORS[-1]}`")


def kubernetes_version_row(kube: Kube) -> Row:
    """The server's version (/version) inside the supported range."""
    try:
        version = kube.git_version()
    except Exception as exc:
        return Row(WARN, "Kubernetes version", f"unknown: {describe_error(exc, kube.server) or exc}")
    return kubernetes_version_verdict(version)


def _crd_probe(obj: dict[str, Any]) -> dict[str, Any]:
    """A rendered RayJob/RayCluster for a dry-run create: a generated name (an installed release's object is
    never touched, nor its name's CEL rules hit), the labels and spec as rendered."""
    meta = obj.get("metadata") or {}
    return {**obj, "metadata": {"generateName": "doctor-", "labels": meta.get("labels") or {}}}


PRE_RUNNING_FIELD = "spec.preRunningDeadlineSeconds"


def kuberay_fields_rows(kube: Kube, docs: list[dict[str, Any]], namespace: str,
                        values: dict[str, Any] | None = None,
                        render: Callable[[dict[str, Any]], list[dict[str, Any]]] | None = None) -> list[Row]:
    """The installed KubeRay CRDs accept what the chart renders: each RayJob/RayCluster sent as a dry-run
    create with fieldValidation=Strict (a field the CRD lacks is an error, not pruned); ✗ naming the field.
    No row when nothing of ray.io is rendered (attach) or the CRDs are not served (their own row says ✗).
    A RayJob refused only for the default preRunningDeadlineSeconds (the installed KubeRay is older than the field)
    is rendered again (`render` of `values`) for the newest KubeRay without it, the default left out, with a note;
    the field set in the infra spec is ✗, named."""
    rows, unknown = _fields_rows(kube, docs, namespace)
    launch = (values or {}).get("launch") or {}
    if unknown != [PRE_RUNNING_FIELD] or values is None or render is None:
        return rows
    from generator.inputs.version_rules import PRE_RUNNING_SINCE, WITHOUT_PRE_RUNNING, pre_running_note

    if launch.get("preRunningDeadlineSeconds"):  # set in the infra spec: refused by name
        return [Row(FAIL, rows[0].check, "launch.preRunningDeadlineSeconds: the installed KubeRay's RayJob lacks it "
                    f"(new in KubeRay v{PRE_RUNNING_SINCE})", f"no launch.preRunningDeadlineSeconds (or 0), or "
                    f"KubeRay's CRDs and operator upgraded to v{PRE_RUNNING_SINCE} or later")]
    older = WITHOUT_PRE_RUNNING[-1]
    again, _ = _fields_rows(kube, render({**values, "kuberay": {**values["kuberay"], "version": older}}), namespace)
    note = pre_running_note(launch, older, "the installed KubeRay")
    return [replace(r, detail=f"{r.detail}; {note}") if r.mark == OK and note else r for r in again]


def _fields_rows(kube: Kube, docs: list[dict[str, Any]], namespace: str) -> tuple[list[Row], list[str]]:
    """kuberay_fields_rows' dry runs: (the rows, the unknown fields the CRDs refused)."""
    from kubernetes.client.exceptions import ApiException

    check = "KubeRay CRDs accept"
    ray = [d for d in docs if str(d.get("apiVersion", "")).startswith(f"{RAY_GROUP}/")]
    if not ray:
        return [], []
    served = kube.ray_resources()
    ray = [d for d in ray if f"{d['kind'].lower()}s" in served]
    if not ray:
        return [], []
    refused, unknown = [], []
    for d in ray:
        plural = f"{d['kind'].lower()}s"
        path = f"/apis/{d['apiVersion']}/namespaces/{namespace}/{plural}"
        try:
            kube.request("POST", path, {"dryRun": "All", "fieldValidation": "Strict"}, _crd_probe(d))
        except ApiException as exc:
            msg = status_message(exc)
            if exc.status == 403:
                unknown_why = "whether the installed CRDs accept the rendered fields is unknown"
                return [Row(WARN, check, forbidden("create", f"{plural}.{RAY_GROUP}", namespace, unknown_why))], []
            if exc.status == 404:
                return [Row(WARN, check, f"namespace {namespace} does not exist yet: the rendered {d['kind']} "
                            "cannot be dry-run", "create the namespace first to check the CRDs' fields")], []
            if exc.status not in (400, 422):
                raise
            fields = unknown_fields(str(msg))
            unknown += fields
            refused.append(f"{d['kind']}: " + (f"unknown field(s) {', '.join(fields)}" if fields else str(msg)))
    if refused:
        return [Row(FAIL, check, "; ".join(refused)[:600],
                    ("the installed KubeRay CRDs lack what the chart renders: upgrade KubeRay's CRDs (and operator) "
                     f"to v1.6, or drop {', '.join(unknown)} from kuberay.spec; `check --kuberay-version X` "
                     "shows it offline") if unknown else "see the apiserver's message; `check --server` lists it too")
                ], unknown
    kinds = ", ".join(sorted({d["kind"] for d in ray}))
    accepted = f"the installed CRDs accept the rendered {kinds} (dry-run create, fieldValidation=Strict)"
    return [Row(OK, check, accepted)], []
