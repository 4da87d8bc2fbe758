"""The job's progress as the run watcher records it (charts/dockyard/files/run_watch.py, docs/run-watch.md).

The watcher appends one JSON record a line to `dockyard/progress-<submission id>.jsonl` in the head's Ray log
folder: a `started` record, the job's reports (step, total, metrics, the newest checkpoint), and `previous`,
`stalled` and `ended` records. `status` reads its last lines in one request: the Ray dashboard's log API
(`/api/v0/logs/file`, by the head's node IP) through the apiserver's service proxy to the head's Service, the
path the driver log takes too (driver_log.py). This module turns those lines into the `progress` lines.
"""

from __future__ import annotations

import json
import time

from generator.live.client.kube import Kube
from generator.live.state.driver_log import dashboard
from generator.live.state.record import Record, factory

TYPE_CHECKING = False  # typing's import costs ~3 ms at start-up: for type checkers only
if TYPE_CHECKING:
    from typing import Any

LINES = 40  # records read: the rate is taken over the last reports among them
LATEST = "latest"  # the newest job on the head: what status reads on a bringup cluster, whose job ids it lacks
RATE_OVER = 10  # reports the seconds per step are taken over


class JobProgress(Record):
    """What the records say; `unknown` holds why there is nothing to say."""

    unknown: str | None = None
    started: float | None = None
    reports: list[dict[str, Any]] = factory(list)
    previous: dict[str, Any] | None = None
    stalled: str | None = None
    ended: dict[str, Any] | None = None
    stall_timeout: int = 0
    cluster: str | None = None  # the RayCluster the job runs on, as the watcher saw it
    job: str | None = None  # with LATEST: which job the records are of (its RayJob, its submission id)
    latest: bool = False  # read as LATEST: the line names the job

    def to_dict(self) -> dict[str, Any]:
        last = self.reports[-1] if self.reports else None
        return {"unknown": self.unknown, "step": last and last["step"], "total": last and last.get("total"),
                "lastReport": last and last["t"], "secondsPerStep": seconds_per_step(self.reports),
                "metrics": last and last.get("metrics"), "checkpoint": newest_checkpoint(self.reports),
                "previous": self.previous, "stalled": self.stalled, "stallTimeout": self.stall_timeout or None}


def parse(text: str) -> JobProgress:
    """The records of the newest job in `text`. Each record names its submission: a job still running when a newer
    one replaced progress-latest.jsonl stops writing there, and any record of its that came first is left out."""
    out = JobProgress()
    records = []
    for line in text.splitlines():
        try:
            rec = json.loads(line)
        except ValueError:
            continue
        if isinstance(rec, dict) and isinstance(rec.get("t"), (int, float)):
            records.append(rec)
    newest = next((r.get("submission") for r in reversed(records) if r.get("event") == "started"), None)
    for rec in records:
        if newest and rec.get("submission", newest) != newest:
            continue
        event = rec.get("event")
        if event == "started":
            out.started, out.stall_timeout = rec["t"], int(rec.get("stallTimeout") or 0)
            out.cluster = rec.get("cluster")
            out.job = f"{rec.get('run')} ({rec.get('submission')})" if rec.get("run") else rec.get("submission")
        elif event == "previous":
            out.previous = rec
        elif event == "stalled":
            out.stalled = str(rec.get("reason") or "stalled")
        elif event == "ended":
            out.ended = rec
        elif isinstance(rec.get("step"), int):
            out.reports.append(rec)
    context = (out.reports[-1].get("context") if out.reports else None) or {}
    if isinstance(context, dict):  # each report repeats what the first records said: they may be cut off
        out.cluster = out.cluster or context.get("cluster")
        if out.job is None and context.get("run"):
            out.job = f"{context['run']} ({out.reports[-1].get('submission')})"
        out.stall_timeout = out.stall_timeout or int(context.get("stallTimeout") or 0)
        if out.previous is None and isinstance(context.get("previous"), dict):
            out.previous = context["previous"]
    return out


def seconds_per_step(reports: list[dict[str, Any]]) -> float | None:
    """Over the last reports of a run of rising steps: seconds between the first and last, per step."""
    recent = reports[-RATE_OVER:]
    while len(recent) > 1 and recent[-1]["step"] <= recent[0]["step"]:
        recent = recent[1:]  # steps went back (a resumed job): only the reports since
    if len(recent) < 2:
        return None
    steps = recent[-1]["step"] - recent[0]["step"]
    return (recent[-1]["t"] - recent[0]["t"]) / steps if steps > 0 else None


def newest_checkpoint(reports: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The newest checkpoint: seen in the checkpoint folder by the watcher, or named by a report."""
    for rec in reversed(reports):
        if isinstance(rec.get("newestCheckpoint"), dict):
            return rec["newestCheckpoint"]
        if isinstance(rec.get("checkpoint"), int):
            return {"step": rec["checkpoint"], "t": rec["t"]}
    return None


def _ago(seconds: float) -> str:
    seconds = max(0, int(seconds))
    if seconds < 120:
        return f"{seconds} s"
    if seconds < 7200:
        return f"{seconds // 60} min"
    return f"{seconds / 3600:.1f} h"


def lines(p: JobProgress, now: float | None = None) -> list[str]:
    """The `progress` line (and, for a retried job, what ended the attempt before)."""
    now = time.time() if now is None else now
    out = []
    job = f"job {p.job}: " if p.job and p.latest else ""
    if p.unknown:
        out.append(f"unknown ({p.unknown})")
    elif not p.reports:
        since = f", job started {_ago(now - p.started)} ago" if p.started else ""
        out.append(f"{job}no report yet{since}" + (" (stall guard: first report within its grace)"
                                                   if p.stall_timeout else ""))
    else:
        last = p.reports[-1]
        step, total = last["step"], last.get("total")
        text = f"{job}step {step}" + (f" of {total} ({100 * step // total}%)" if total else "")
        text += f", last report {_ago(now - last['t'])} ago"
        rate = seconds_per_step(p.reports)
        if rate is not None:
            text += f", {rate:.1f} s/step" if rate < 100 else f", {_ago(rate)}/step"
            if total and total > step:
                text += f", ETA {_ago(rate * (total - step))}"
        if last.get("metrics"):
            text += "; " + " ".join(f"{k}={v}" for k, v in last["metrics"].items())
        ckpt = newest_checkpoint(p.reports)
        if ckpt:
            text += f"; checkpoint step {ckpt['step']} ({_ago(now - ckpt['t'])} ago)"
        out.append(text)
    if p.stalled:
        out.append(f"stalled: the run watcher ended this job: {p.stalled.removeprefix('stalled: ')}")
    if p.previous:
        end = p.previous.get("end") or "unknown"
        if p.cluster and p.previous.get("cluster") == p.cluster:
            out.append(f"restarted: the job was submitted again on the same RayCluster (its head was replaced); "
                       f"the job before ended: {end}")
        else:
            out.append(f"before:   the previous attempt's job ended: {end}")
    return out


def read(kube: Kube, namespace: str, head_service: str | None, head_ip: str | None, job_id: str | None) -> JobProgress:
    """The records of job `job_id` through the head's dashboard: one request."""
    if not job_id:
        return JobProgress(unknown="no job submitted yet")
    if not head_service or not head_ip:
        return JobProgress(unknown="no running head pod")
    path = dashboard(namespace, head_service, "api/v0/logs/file")
    query = {"node_ip": head_ip, "filename": f"dockyard/progress-{job_id}.jsonl", "lines": str(LINES)}
    none_yet = ("no records of the run watcher for this job yet: the job is starting, or runs without the watcher "
                "(launch.watch.enabled false)")
    if job_id == LATEST:
        none_yet = ("no job has run under the run watcher on this cluster yet (`dockyard-k8s job submit` wraps "
                    "it; launch.watch.enabled)")
    try:
        status, text = kube.get_answer(path, query)  # an answer that is not 2xx is a reason here, not an error
    except Exception as exc:  # the connection cut, the apiserver not reached
        return JobProgress(unknown=f"the head's dashboard did not answer ({type(exc).__name__})")
    if status == 403:
        return JobProgress(unknown="forbidden: reading it needs get on services/proxy in the namespace")
    if not 200 <= status <= 299:
        if "not found" in text:
            return JobProgress(unknown=none_yet)
        try:  # the apiserver's own Status (no endpoints for the head's Service yet, …): its message
            said = json.loads(text).get("message") or text
        except (ValueError, AttributeError):
            said = text
        return JobProgress(unknown=f"the head's dashboard answered {status}: {str(said).strip()[:120]}")
    if text.lstrip().startswith('{"result": false'):
        try:
            why = json.loads(text).get("msg") or text
        except ValueError:
            why = text
        return JobProgress(unknown=f"Ray's log API: {str(why)[:160]}")
    out = parse(text)
    out.latest = job_id == LATEST
    return out
