"""The Ray job's driver log and end state: `run --follow` streams it, `status` shows its last lines.

The log comes from the Ray dashboard's job API (`/api/jobs/<id>/logs`) through the apiserver's
service proxy to the head's Service, so it needs nothing but the kubeconfig (the same path the
KubeRay operator takes with --use-kubernetes-proxy).
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable

from generator.live.client.kube import Kube

TYPE_CHECKING = False  # typing's import costs ~3 ms at start-up: for type checkers only
if TYPE_CHECKING:
    from pathlib import Path
    from typing import Any

TERMINAL = ("SUCCEEDED", "FAILED", "STOPPED")
# jobDeploymentStatus of a RayJob whose failed attempt is retried (launch.backoffLimit): the job has not ended
RETRYING = ("Retrying",)
# KubeRay replaced the head of a running attempt and submitted the job again on the new head: a new driver log
_AGAIN = "--- the job was submitted again on RayCluster {cluster} (its head was replaced); its log from the start:\n"


def head_service(job: dict) -> str | None:
    st = job.get("status") or {}
    svc = ((st.get("rayClusterStatus") or {}).get("head") or {}).get("serviceName")
    return svc or (f"{st['rayClusterName']}-head-svc" if st.get("rayClusterName") else None)


def dashboard(namespace: str, service: str, api: str) -> str:
    """The path of the head's Ray dashboard (port 8265) API `api`, through the apiserver's service proxy."""
    return f"/api/v1/namespaces/{namespace}/services/{service}:8265/proxy/{api}"


def read(kube: Kube, namespace: str, job: dict) -> str:
    """The driver's whole log so far ("" before the job was submitted)."""
    st = job.get("status") or {}
    svc, sid = head_service(job), st.get("jobId")
    if not svc or not sid or not st.get("jobStatus"):
        return ""
    ans = kube.request("GET", dashboard(namespace, svc, f"api/jobs/{sid}/logs"))
    return ans.get("logs", "") if isinstance(ans, dict) else ""


def watcher_file() -> Path:
    """The run watcher: the chart ships it, it becomes the job's driver (docs/run-watch.md). Found through the
    table of tools' chart folder, imported here and not at the module's top: `status` never needs it."""
    from generator.pinned_tools import CHART_DIR

    return CHART_DIR / "files" / "run_watch.py"


def watcher() -> Any:
    """The run watcher (watcher_file), loaded as a module once: its report parser is the contract, so the CLI reads a
    driver log's reports exactly as the watcher does."""
    import importlib.util

    if "dockyard_run_watch" not in sys.modules:
        spec = importlib.util.spec_from_file_location("dockyard_run_watch", watcher_file())
        assert spec and spec.loader
        module = importlib.util.module_from_spec(spec)
        sys.modules["dockyard_run_watch"] = module
        spec.loader.exec_module(module)
    return sys.modules["dockyard_run_watch"]


def _reports(text: str) -> list[dict[str, Any]]:
    """The progress reports in new lines of the driver log (the job's own DOCKYARD_PROGRESS lines)."""
    parse = watcher().parse_report
    return [r for r in map(parse, text.splitlines()) if r is not None]


def outcome(job: dict, said: str | None = None) -> str:
    """One line: the job's end state and why, as KubeRay and Ray report it (the why left out when it is `said`
    already, e.g. on status's rayjob line)."""
    st = job.get("status") or {}
    info = st.get("rayJobInfo") or {}
    why = info.get("message") or st.get("message") or st.get("reason") or ""
    if said and why.strip() == said.strip():
        why = ""
    return f"RayJob {job['metadata']['name']}: job {st.get('jobStatus') or '-'} (deployment " \
           f"{st.get('jobDeploymentStatus') or '-'})" + (f": {why}" if why else "")


def follow(kube: Kube, release: str, namespace: str, deadline: float | None,
           write: Callable[[str], None]) -> tuple[bool | None, dict[str, Any] | None]:
    """Stream the driver's log to `write` until the job ends (the verbs pass output.show.write_stdout: Ray's
    colours on a terminal only): (True succeeded / False failed / None timed out, job).

    A failed attempt with retries left (launch.backoffLimit: KubeRay marks it `Retrying`, then runs the job again
    on a new RayCluster) is not the end: the next attempt's log follows under a line naming it."""
    printed, job, attempt, cluster, opening, failed = 0, None, None, None, "", 0
    while True:
        job = kube.get_ray("rayjobs", namespace, release)
        st = (job or {}).get("status") or {}
        if st.get("jobId") and attempt not in (None, st["jobId"]):  # a new submission, a new log
            if (st.get("failed") or 0) == failed and st.get("rayClusterName") in (None, cluster):
                write(_AGAIN.format(cluster=cluster or "-"))  # no attempt ended: the head was replaced
            else:  # a retry (launch.backoffLimit) on a new RayCluster
                write(f"--- attempt {(st.get('failed') or 0) + 1} (RayCluster {st.get('rayClusterName') or '-'}) "
                      f"after {st.get('failed') or 0} failed\n")
            printed, opening = 0, ""
        attempt = st.get("jobId") or attempt
        cluster = st.get("rayClusterName") or cluster
        failed = st.get("failed") or 0
        try:
            text = read(kube, namespace, job) if job else ""
        except Exception:
            text = ""
        if text and opening and (len(text) < printed or not text.startswith(opening)):
            # The same job id, another log: the head was replaced and KubeRay submitted the job again on the
            # new head, whose log starts from its first line.
            write(_AGAIN.format(cluster=cluster or "-"))
            printed = 0
        if len(text) > printed:
            write(text[printed:])
            for report in _reports(text[printed:]):
                write(f"[dockyard-k8s] progress: step {report['step']}"
                      + (f" of {report['total']}" if report.get("total") else "") + "\n")
            printed = len(text)
            opening = text[:256]
        retrying = st.get("jobDeploymentStatus") in RETRYING
        done = (st.get("jobStatus") in TERMINAL and not retrying) or st.get("jobDeploymentStatus") == "Failed"
        if done:
            return st.get("jobStatus") == "SUCCEEDED", job
        if deadline is not None and time.monotonic() >= deadline:
            return None, job
        time.sleep(2.0)
