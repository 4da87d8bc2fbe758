"""`status`: release, RayJob, RayCluster and a row per fleet, once or refreshed (--watch)."""

from __future__ import annotations

import sys
import time

from generator.errors import EXIT_OK
from generator.live.client.kube import Kube
from generator.live.helm.resolve import resolve
from generator.live.output.show import columns, emit, for_output
from generator.live.state import driver_log, job_progress, pool, queueing, warm_pool
from generator.live.state.pods import FLEETS
from generator.live.state.snapshot import Snapshot, attempts_line, take

TYPE_CHECKING = False  # typing's import costs ~3 ms at start-up: for type checkers only
if TYPE_CHECKING:
    from typing import Any


# The apiserver's words for a Service with no ready endpoint, which KubeRay quotes when it cannot reach the head's
# dashboard; and the annotation kwok's nodes carry (the playground's simulated nodes: generator/playground/nodes.py)
DASHBOARD_UNREACHED = "no endpoints available for service"
KWOK_NODE = ("kwok.x-k8s.io/node", "fake")


def simulated_head(kube: Kube, snap: Snapshot, seen: dict[str, bool] | None = None) -> str | None:
    """The head's node when kwok simulates it and the RayJob's message is KubeRay failing to reach the head: a
    simulated pod is placed and ready but runs no Ray, so the job never starts there. One node read, made only
    on that message (a healthy job costs nothing more; `seen` keeps the answer for --watch), and the progress
    read it replaces is not made (the same count); a node RBAC hides leaves KubeRay's words."""
    job, head = snap.rayjob, snap.fleets.get("head")
    if not job or DASHBOARD_UNREACHED not in (job.get("message") or "") or head is None or not head.nodes:
        return None
    name = head.nodes[0]
    seen = {} if seen is None else seen
    if name not in seen:
        try:
            node = kube.request("GET", f"/api/v1/nodes/{name}")
        except Exception:
            return None
        seen[name] = ((node.get("metadata") or {}).get("annotations") or {}).get(KWOK_NODE[0]) == KWOK_NODE[1]
    return name if seen[name] else None


def status_table(snap: Snapshot, simulated: str | None = None) -> str:
    lines = [f"release    {snap.release}  namespace {snap.namespace}  revision {snap.revision or '-'}  "
             f"{snap.release_status or 'not installed'}" + (f"  (updated {snap.updated})" if snap.updated else "")]
    if snap.namespace_deleting:
        lines.append(f"namespace  {snap.namespace} is {snap.namespace_deleting}")
    if snap.rayjob and simulated:  # KubeRay's failure words would read as a failed job: say what it is
        j = snap.rayjob
        lines.append(f"rayjob     {j['name']}  {j.get('deploymentStatus') or 'New'}"
                     + (f"  cluster {j['cluster']}" if j.get("cluster") else "")
                     + f"  — simulated: the head is on kwok node {simulated}, whose pods are placed and ready but "
                     "run no Ray, so the job is never submitted here (placement and readiness are real); to run it: "
                     "`dockyard-k8s playground up --real-node`")
    elif snap.rayjob:
        j = snap.rayjob
        extra = f"  — {j['message']}" if j.get("message") else ""
        lines.append(f"rayjob     {j['name']}  {j.get('deploymentStatus') or 'New'}"
                     + (f"  job {j['jobStatus']}" if j.get("jobStatus") else "")
                     + (f"  cluster {j['cluster']}" if j.get("cluster") else "") + extra)
        tries = attempts_line(j)
        if tries:
            lines.append(f"attempts   {tries}")
    if snap.progress:
        for i, text in enumerate(job_progress.lines(snap.progress)):
            lines.append(("progress   " if i == 0 else " " * 11) + text)
    if snap.raycluster:
        c = snap.raycluster
        lines.append(f"raycluster {c['name']}  {c.get('state') or 'pending'}"
                     + (f"  — {c['reason']}" if c.get("reason") else ""))
    if snap.queue:
        lines.append(f"queue      {queueing.line(snap.queue)}")
        if snap.queue.placement:
            lines.append(f"placement  {snap.queue.placement}")
    lines.append(f"mode       {snap.mode or '-'}  ready: {'yes' if snap.ready() else 'no'}")
    for pull in snap.pulls:  # named as soon as seen: no pod of the release starts without its image
        judged = "no retry fixes this" if pull.final else "the kubelet retries"
        lines.append(f"pull       {pull.line()}  ({judged})")
    for claim in snap.claims:  # likewise a claim its provisioner refused: the pods that mount it never start
        judged = "no retry fixes this" if claim.final else "the provisioner retries"
        lines.append(f"claim      {claim.line()}  ({judged})")
    lines.extend(pool.lines(snap.pool, snap.hpa))
    lines.extend(warm_pool.lines(snap.warm_pool))
    rows = [["FLEET", "READY", "GPUS REQ/ALLOC", "NODES", "REASON"]]
    for name in FLEETS:
        f = snap.fleets.get(name)
        if f is None or (name == "submitter" and f.pods == 0 and f.desired == 0):
            continue
        gpus = f"{f.gpus_requested}/{f.gpus_allocated}" if f.gpus_requested or f.gpus_allocated else "-"
        rows.append([name, f"{f.ready}/{f.desired}", gpus, ",".join(f.nodes) or "-",
                     f.reason if (f.reason and not f.is_ready) else ""])
    lines.append("")
    lines.append(columns(rows))
    return "\n".join(lines)


def _job_end(kube: Kube, ns: str, snap: Snapshot, lines: int = 15) -> str:
    """For an ended RayJob: its end state and reason, and the driver log's last lines."""
    if snap.rayjob is None or snap.rayjob.get("jobStatus") not in driver_log.TERMINAL:
        return ""  # nothing more to read: no extra API call
    job = kube.get_ray("rayjobs", ns, snap.rayjob["name"])
    if not job:
        return ""
    out = "\n\n" + driver_log.outcome(job, said=snap.rayjob.get("message"))  # the rayjob line's message once
    try:
        log = driver_log.read(kube, ns, job)
    except Exception as exc:
        why = getattr(exc, "status", "") or type(exc).__name__
        return out + f"\ndriver log: not readable ({why}; the RayCluster may be gone)"
    tail = for_output(log, sys.stdout.isatty()).splitlines()[-lines:]
    return out + f"\ndriver log (last {len(tail)} lines):\n" + "\n".join("  " + t for t in tail)


def read_progress(kube: Kube, snap: Snapshot) -> None:
    """The job's progress into the snapshot: one request while the job has a head to read it from. On a bringup
    cluster: the newest job the run watcher ran there (`job submit`'s)."""
    if snap.rayjob is None and snap.mode == "bringup" and snap.raycluster and snap.head_ip:
        # the head's Service as KubeRay reports it (it may shorten a long name), else its usual name
        service = snap.raycluster.get("headService") or f"{snap.raycluster['name']}-head-svc"
        snap.progress = job_progress.read(kube, snap.namespace, service, snap.head_ip, job_progress.LATEST)
        return
    if snap.rayjob is None or snap.job_id is None:
        return
    ended = snap.rayjob.get("jobStatus") in driver_log.TERMINAL
    if ended and not snap.head_ip:
        return  # the attempt's cluster is gone: its records are on the logs volume (logs --attempt)
    snap.progress = job_progress.read(kube, snap.namespace, snap.head_service, snap.head_ip, snap.job_id)


def status(args: Any) -> int:
    kube = Kube(args.kubeconfig, args.context)
    release, ns, records = resolve(kube, args.release, args.namespace)
    if not args.watch:
        snap = take(kube, release, ns, records)
        snap.namespace_deleting = kube.namespace_deletion(ns)
        simulated = simulated_head(kube, snap) if args.output == "table" else None
        if args.progress and not simulated:  # a simulated head has no progress to read: the rayjob line says so
            read_progress(kube, snap)
        end = _job_end(kube, ns, snap) if args.output == "table" and not simulated else ""
        emit(snap.to_dict(), args.output, lambda: status_table(snap, simulated) + end)
        return EXIT_OK
    deadline = time.monotonic() + args.timeout if args.timeout else None
    tty = sys.stdout.isatty() and args.output == "table"
    last = None
    seen: dict[str, bool] = {}  # node name -> simulated: each node is read once
    while True:
        snap = take(kube, release, ns)
        snap.namespace_deleting = kube.namespace_deletion(ns)
        simulated = simulated_head(kube, snap, seen) if args.output == "table" else None
        if args.progress and not simulated:
            read_progress(kube, snap)
        text = status_table(snap, simulated) if args.output == "table" else ""
        if tty:
            sys.stdout.write("\x1b[H\x1b[2J" + text + "\n")
            sys.stdout.flush()
        elif args.output != "table":
            emit(snap.to_dict(), args.output, lambda: "")
        elif text != last:
            print(text + "\n", flush=True)
        last = text
        if deadline and time.monotonic() >= deadline:
            return EXIT_OK
        time.sleep(2.0)
