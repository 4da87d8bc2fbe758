"""`logs --attempt N`: the driver log an attempt kept on the logs volume, read after its RayCluster is gone.

The run watcher (charts/dockyard/files/run_watch.py) writes each job's driver log to `dockyard-runs/<run>/` on
`infra.storage.logs`. Reading it back takes a pod that mounts the claim: a short-lived reader made from the head's
own pod template as the release's manifest renders it (image, pull secrets, security context, placement, the
logs volume and its mount), which runs the watcher's `kept` mode and ends. Its output comes back through
pods/log, and the pod is deleted. What the user needs: create, get and delete on pods and get on pods/log in
the namespace (doctor's RBAC rows name them). A job `job submit` sent to a bringup cluster is kept under its own
RayJob's name (`logs --job NAME --attempt 1`).
"""

from __future__ import annotations

import json
import re
import time
import uuid
from datetime import datetime
from typing import Any

import yaml

from generator.errors import CheckFailed
from generator.live.client.kube import INSTANCE, Kube
from generator.live.state.driver_log import watcher_file
from generator.render.pod_templates import pod_templates

LOGS_VOLUME = "dockyard-logs"  # the pod volume of infra.storage.logs (charts/dockyard/templates/ray/_storage.tpl)
KEPT_MARK = "DOCKYARD_KEPT "
NO_POD_LOGS = "DOCKYARD_NO_POD_LOGS "  # the watcher's last line when no pod of the role kept its Ray logs
NOT_KEPT = "attempt {n}'s logs were not kept"


def head_template(manifest: str) -> dict[str, Any] | None:
    """The head's pod template of the release's RayJob (or RayCluster) in its rendered manifest."""
    return pod_templates([d for d in yaml.safe_load_all(manifest) if isinstance(d, dict)]).get("head")


def reader_pod(release: str, template: dict[str, Any], argv: list[str]) -> dict[str, Any] | None:
    """The reader: the head template's image, security and placement with the logs volume only; None when the
    template mounts no logs volume (the release keeps no logs)."""
    spec = template.get("spec") or {}
    volume = next((v for v in spec.get("volumes") or [] if v.get("name") == LOGS_VOLUME), None)
    head = (spec.get("containers") or [{}])[0]
    mount = next((m for m in head.get("volumeMounts") or [] if m.get("name") == LOGS_VOLUME), None)
    if volume is None or mount is None:
        return None
    command = ["python3", "-c", watcher_file().read_text(), *argv]
    container = {"name": "read", "image": head.get("image"), "command": command,
                 "env": [{"name": "DOCKYARD_LOG_DIR", "value": mount["mountPath"]}],
                 "volumeMounts": [{**mount, "readOnly": True}],
                 "resources": {"requests": {"cpu": "50m", "memory": "64Mi"}, "limits": {"cpu": "500m",
                                                                                      "memory": "256Mi"}}}
    for key in ("imagePullPolicy", "securityContext"):
        if head.get(key) is not None:
            container[key] = head[key]
    pod_spec: dict[str, Any] = {"restartPolicy": "Never", "automountServiceAccountToken": False,
                                "containers": [container], "volumes": [volume]}
    for key in ("securityContext", "nodeSelector", "tolerations", "affinity", "imagePullSecrets"):
        if spec.get(key):
            pod_spec[key] = spec[key]
    name = f"{release[:40]}-logs-{uuid.uuid4().hex[:6]}"
    return {"apiVersion": "v1", "kind": "Pod", "spec": pod_spec,
            "metadata": {"name": name, "labels": {INSTANCE: release, "dockyard.dev/fleet": "logs-reader"}}}


def since_stamp(job: dict[str, Any] | None) -> str:
    """The kept jobs that belong to this RayJob start at its creation (its name may have run before): the UTC
    stamp the watcher's folder names start with."""
    created = ((job or {}).get("metadata") or {}).get("creationTimestamp")
    if not created:
        return ""
    return datetime.fromisoformat(created).strftime("%Y%m%dT%H%M%SZ")


def read(kube: Kube, release: str, namespace: str, manifest: str | None, attempt: int, tail: int,
         timeout: float = 120.0, job_name: str | None = None, role: str | None = None) -> str:
    """Attempt `attempt`'s kept driver log (its jobs, in order) of the release's RayJob, or of RayJob `job_name`
    (a job submitted to the release's bringup cluster), and with `role` the Ray logs its pods of that role kept
    (the attempt's RayCluster's pods; a bringup cluster's hold every job it ran); CheckFailed when not kept."""
    not_kept = NOT_KEPT.format(n=attempt)
    template = head_template(manifest or "")
    if template is None:
        raise CheckFailed(f"{not_kept}: release {release} has no RayJob or RayCluster (attach mode keeps none)")
    run = job_name or release  # the run watcher's --run: the RayJob's name
    job = kube.get_ray("rayjobs", namespace, run)
    pod = reader_pod(release, template, ["kept", run, since_stamp(job), str(attempt), str(tail),
                                         *([role] if role else [])])
    if pod is None:
        raise CheckFailed(f"{not_kept}: release {release} has no logs volume on its head (infra.storage.logs, "
                          f"with head in its mountOn, the default); set it, and the run watcher (launch.watch, on "
                          f"by default) keeps every attempt's driver log")
    name = pod["metadata"]["name"]
    kube.request("POST", f"/api/v1/namespaces/{namespace}/pods", body=pod)
    try:
        text = _wait_and_read(kube, namespace, name, time.monotonic() + timeout)
    finally:
        try:
            kube.request("DELETE", f"/api/v1/namespaces/{namespace}/pods/{name}", query={"gracePeriodSeconds": 0})
        except Exception:
            pass
    # the reader prints the index first and, past the attempt's logs, again last (the end of a log the kubelet
    # cut at its containerLogMaxSize still holds it)
    first, _, rest = text.partition("\n")
    body, _, last = rest.rstrip("\n").rpartition("\n")
    if last.startswith(KEPT_MARK):  # the index printed last, after a line break of its own
        index, rest = last, (body.rstrip("\n") + "\n" if body.strip() else "")
        if not first.startswith(KEPT_MARK):
            rest = f"(the start of this output was cut by the kubelet: use --tail)\n{first}\n{rest}"
    elif first.startswith(KEPT_MARK):  # the index alone (nothing kept for that attempt), or an older reader's
        index = first
    else:
        raise CheckFailed(f"the logs reader pod {name} printed no index: {first[:200]}")
    attempts = json.loads(index[len(KEPT_MARK):])["attempts"]
    if not 1 <= attempt <= len(attempts):
        held = f"attempts 1 to {len(attempts)}" if attempts else "no attempt of this RayJob"
        raise CheckFailed(f"{not_kept}: the logs volume holds {held} (a job that ran without the run watcher "
                          f"kept nothing)")
    cluster = attempts[attempt - 1][0]
    if role and rest.rstrip("\n").rpartition("\n")[2].startswith(NO_POD_LOGS):
        raise CheckFailed(f"attempt {attempt}'s {role} Ray logs were not kept: no {role} pod of RayCluster {cluster} "
                          f"kept any (the logs volume must be in infra.storage.logs.mountOn for {role}, and "
                          f"launch.watch.keepRayLogMiB above 0, when the attempt ran)")
    return f"--- attempt {attempt} of {len(attempts)} kept (RayCluster {cluster})\n" + rest


def _wait_and_read(kube: Kube, namespace: str, name: str, deadline: float) -> str:
    path = f"/api/v1/namespaces/{namespace}/pods/{name}"
    while True:
        pod = kube.request("GET", path)
        phase = (pod.get("status") or {}).get("phase")
        if phase in ("Succeeded", "Failed"):
            text = kube.get_text(f"{path}/log", {"container": "read"})
            if phase == "Failed":
                raise CheckFailed(f"the logs reader pod {name} failed: {text.strip()[-500:]}")
            return text
        if time.monotonic() >= deadline:
            why = _waiting(pod)
            raise CheckFailed(f"the logs reader pod {name} did not finish in time ({phase}{why})")
        time.sleep(0.5)


def _waiting(pod: dict[str, Any]) -> str:
    for cs in (pod.get("status") or {}).get("containerStatuses") or []:
        waiting = (cs.get("state") or {}).get("waiting")
        if waiting:
            return f": {waiting.get('reason')} {waiting.get('message') or ''}".rstrip()
    for cond in (pod.get("status") or {}).get("conditions") or []:
        if cond.get("status") == "False" and cond.get("message"):
            return ": " + re.sub(r"\s+", " ", cond["message"])[:200]
    return ""
