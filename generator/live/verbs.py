"""Reading and release verbs: status, logs, history, rollback, uninstall, cluster down/list."""

from __future__ import annotations

import json
import sys
import threading
import time
from collections.abc import Callable
from datetime import UTC
from typing import Any

from generator.errors import EXIT_OK, CheckFailed
from generator.live.kube import INSTANCE, NAME_LABEL, Kube, is_forbidden, usage_error
from generator.live.release import Helm, RunLock, wait_until
from generator.live.snapshot import FLEETS, Snapshot, decode_release, labels, release_records, take

# Output ------------------------------------------------------------------------------------------

def emit(data: Any, fmt: str, table: Callable[[], str]) -> None:
    if fmt == "json":
        print(json.dumps(data, indent=2, default=str))
    elif fmt == "yaml":
        import yaml

        print(yaml.safe_dump(json.loads(json.dumps(data, default=str)), sort_keys=False).rstrip())
    else:
        print(table())


def columns(rows: list[list[str]]) -> str:
    widths = [max(len(str(r[i])) for r in rows) for i in range(len(rows[0]))]
    return "\n".join("   ".join(str(c).ljust(w) for c, w in zip(r, widths)).rstrip() for r in rows)


def age(ts: Any) -> str:
    from datetime import datetime

    if not ts:
        return "-"
    if isinstance(ts, str):
        ts = datetime.fromisoformat(ts.replace("Z", "+00:00"))
    s = int((datetime.now(UTC) - ts).total_seconds())
    return f"{s}s" if s < 120 else f"{s // 60}m" if s < 7200 else f"{s // 3600}h"


# Release resolution ------------------------------------------------------------------------------

def resolve(kube: Kube, release: str | None, namespace: str | None) -> tuple[str, str, list[Any]]:
    """(release, namespace, records). Without -n a named release is looked up in every namespace;
    without a name, the only dockyard release in scope is used. When listing every namespace is
    forbidden (RBAC for one namespace), the kubeconfig context's namespace is searched instead."""
    ns = namespace or kube.context_namespace
    if release:
        try:
            records = release_records(kube, release, namespace)
        except Exception as exc:
            if namespace or not is_forbidden(exc):
                raise
            own = kube.context_namespace or "default"
            records = release_records(kube, release, own)
            if not records:
                raise CheckFailed(f"release {release} not found in namespace {own} ({OTHERS_FORBIDDEN})"
                                  + _deleting(kube, own)) from None
            return release, own, records
        found = sorted({r["metadata"]["namespace"] for r in records})
        if namespace:
            if not records:
                raise CheckFailed(f"release {release} not found in namespace {namespace}" + _deleting(kube, namespace))
            return release, namespace, records
        if len(found) > 1:
            if ns in found:
                return release, ns, [r for r in records if r["metadata"]["namespace"] == ns]
            raise CheckFailed(f"release {release} exists in namespaces {', '.join(found)}: pass -n NAMESPACE")
        if not found:
            raise CheckFailed(f"release {release} not found in any namespace")
        return release, found[0], records
    narrowed = None  # the namespace searched instead of all of them (listing them is forbidden)
    try:
        secrets = kube.list(f"/api/v1{_scope(namespace)}/secrets", label_selector="owner=helm")
    except Exception as exc:
        if namespace or not is_forbidden(exc):
            raise
        narrowed = kube.context_namespace or "default"
        secrets = kube.list(f"/api/v1{_scope(narrowed)}/secrets", label_selector="owner=helm")
    names = sorted({(labels(s).get("name"), s["metadata"]["namespace"]) for s in secrets})
    ours = []
    if names:
        try:
            workloads = kube.list(f"/apis/apps/v1{_scope(namespace or narrowed)}/deployments", label_selector=NAME_LABEL)
        except Exception as exc:
            if not is_forbidden(exc):
                raise
            workloads = []  # cannot tell ours from others: every release in scope is a candidate
        tagged = {(labels(d).get(INSTANCE), d["metadata"]["namespace"]) for d in workloads}
        ours = [n for n in names if n in tagged] or names
    if len(ours) == 1:
        rel, rns = ours[0]
        return rel, rns, release_records(kube, rel, rns)
    if not ours:
        where = namespace or narrowed
        deleting = _deleting(kube, where) if where else ""
        raise CheckFailed("no dockyard release found" + (f" in namespace {where}" if where else "")
                          + (f" ({OTHERS_FORBIDDEN})" if narrowed else "")
                          + (deleting or ": start one with `dockyard-k8s run RECIPE INFRA`"))
    raise CheckFailed("several releases: name one of " + ", ".join(f"{r} (-n {n})" for r, n in ours))


OTHERS_FORBIDDEN = "listing other namespaces is forbidden for you: pass -n"


def _scope(namespace: str | None) -> str:
    return f"/namespaces/{namespace}" if namespace else ""


def _deleting(kube: Kube, namespace: str) -> str:
    """'; namespace X is being deleted ...' when it is, else ''."""
    why = kube.namespace_deletion(namespace)
    return f"; namespace {namespace} is {why}" if why else ""


# status --------------------------------------------------------------------------------------------

def status_table(snap: Snapshot) -> str:
    lines = [f"release    {snap.release}  namespace {snap.namespace}  revision {snap.revision or '-'}  "
             f"{snap.release_status or 'not installed'}" + (f"  (updated {snap.updated})" if snap.updated else "")]
    if snap.namespace_deleting:
        lines.append(f"namespace  {snap.namespace} is {snap.namespace_deleting}")
    if snap.rayjob:
        j = snap.rayjob
        extra = f"  — {j['message']}" if j.get("message") else ""
        lines.append(f"rayjob     {j['name']}  {j.get('deploymentStatus') or 'New'}"
                     + (f"  job {j['jobStatus']}" if j.get("jobStatus") else "")
                     + (f"  cluster {j['cluster']}" if j.get("cluster") else "") + extra)
    if snap.raycluster:
        c = snap.raycluster
        lines.append(f"raycluster {c['name']}  {c.get('state') or 'pending'}" + (f"  — {c['reason']}" if c.get("reason") else ""))
    lines.append(f"mode       {snap.mode or '-'}  ready: {'yes' if snap.ready() else 'no'}")
    rows = [["FLEET", "READY", "GPUS REQ/ALLOC", "NODES", "REASON"]]
    for name in FLEETS:
        f = snap.fleets.get(name)
        if f is None or (name == "submitter" and f.pods == 0 and f.desired == 0):
            continue
        rows.append([name, f"{f.ready}/{f.desired}", f"{f.gpus_requested}/{f.gpus_allocated}" if f.gpus_requested or f.gpus_allocated else "-",
                     ",".join(f.nodes) or "-", f.reason if (f.reason and not f.is_ready) else ""])
    lines.append("")
    lines.append(columns(rows))
    return "\n".join(lines)


def _job_end(kube: Kube, release: str, ns: str, snap: Snapshot, lines: int = 15) -> str:
    """For an ended RayJob: its end state and reason, and the driver log's last lines."""
    from generator.live import driver_log

    if (snap.rayjob or {}).get("jobStatus") not in driver_log.TERMINAL:
        return ""  # nothing more to read: no extra API call
    job = kube.get_ray("rayjobs", ns, snap.rayjob["name"])
    if not job:
        return ""
    out = "\n\n" + driver_log.outcome(job)
    try:
        log = driver_log.read(kube, ns, job)
    except Exception as exc:
        return out + f"\ndriver log: not readable ({getattr(exc, 'status', '') or type(exc).__name__}; the RayCluster may be gone)"
    tail = log.splitlines()[-lines:]
    return out + f"\ndriver log (last {len(tail)} lines):\n" + "\n".join("  " + t for t in tail)


def status(args: Any) -> int:
    kube = Kube(args.kubeconfig, args.context)
    release, ns, records = resolve(kube, args.release, args.namespace)
    if not args.watch:
        snap = take(kube, release, ns, records)
        snap.namespace_deleting = kube.namespace_deletion(ns)
        end = _job_end(kube, release, ns, snap) if args.output == "table" else ""
        emit(snap.to_dict(), args.output, lambda: status_table(snap) + end)
        return EXIT_OK
    deadline = time.monotonic() + args.timeout if args.timeout else None
    tty = sys.stdout.isatty() and args.output == "table"
    last = None
    while True:
        snap = take(kube, release, ns)
        snap.namespace_deleting = kube.namespace_deletion(ns)
        text = status_table(snap) if args.output == "table" else None
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


# logs ------------------------------------------------------------------------------------------------

def logs(args: Any) -> int:
    kube = Kube(args.kubeconfig, args.context)
    release, ns, _ = resolve(kube, args.release, args.namespace)
    sel = f"{INSTANCE}={release},dockyard.dev/fleet={args.role}"
    pods = [p for p in kube.core.list_namespaced_pod(ns, label_selector=sel).items if p.spec.node_name]
    if not pods:
        raise CheckFailed(f"no scheduled {args.role} pod for release {release} in {ns}")
    pods.sort(key=lambda p: p.metadata.name)
    prefix = len(pods) > 1
    kw: dict[str, Any] = {}
    if args.tail is not None:
        kw["tail_lines"] = args.tail
    if not args.follow:
        for p in pods:
            text = kube.core.read_namespaced_pod_log(p.metadata.name, ns, container=p.spec.containers[0].name, **kw)
            for line in text.splitlines():
                print(f"[{p.metadata.name}] {line}" if prefix else line)
        return EXIT_OK
    lock = threading.Lock()

    def stream(p: Any) -> None:
        resp = kube.core.read_namespaced_pod_log(p.metadata.name, ns, container=p.spec.containers[0].name,
                                                 follow=True, _preload_content=False, **kw)
        for raw in resp:
            for line in raw.decode(errors="replace").splitlines():
                with lock:
                    print(f"[{p.metadata.name}] {line}" if prefix else line, flush=True)

    threads = [threading.Thread(target=stream, args=(p,), daemon=True) for p in pods]
    for t in threads:
        t.start()
    deadline = time.monotonic() + args.timeout if args.timeout else None
    while any(t.is_alive() for t in threads):
        if deadline and time.monotonic() >= deadline:
            break
        time.sleep(0.2)
    return EXIT_OK


# history / rollback / uninstall ------------------------------------------------------------------------

def history(args: Any) -> int:
    kube = Kube(args.kubeconfig, args.context)
    release, ns, _ = resolve(kube, args.release, args.namespace)
    rows_data = Helm(kube).history(release, ns)
    table = [["REVISION", "UPDATED", "STATUS", "CHART", "DESCRIPTION"]]
    for r in rows_data:
        table.append([str(r.get("revision")), str(r.get("updated", ""))[:19], r.get("status", ""), r.get("chart", ""),
                      r.get("description", "")])
    emit(rows_data, args.output, lambda: columns(table))
    return EXIT_OK


def _revision_arg(revision: int | None) -> int | None:
    if revision is not None and revision <= 0:
        raise usage_error(f"revision {revision}: revisions start at 1 (Helm reads 0 as 'the previous one': "
                          "omit REVISION for that)")
    return revision


def rollback(args: Any) -> int:
    from generator.live.guard import delete_ray, deployed_manifest, end_state, impact, require_ours

    target = _revision_arg(args.revision)
    deadline = time.monotonic() + (args.timeout or 600)
    kube = Kube(args.kubeconfig, args.context)
    kube.deadline = deadline
    release, ns, records = resolve(kube, args.release, args.namespace)
    helm = Helm(kube, deadline=deadline)
    with RunLock(kube, ns, release, "rollback", until=deadline):
        records = release_records(kube, release, ns)
        require_ours(records, release, ns, "rollback")
        by_version = {int(labels(r)["version"]): r for r in records}
        current = int(labels(records[-1])["version"])
        if target is None:
            earlier = [v for v, r in by_version.items() if v < current
                       and labels(r).get("status") in ("deployed", "superseded")]
            if not earlier:
                raise CheckFailed(f"release {release} has no earlier revision to roll back to")
            target = earlier[-1]
        if target not in by_version:
            raise CheckFailed(f"release {release} has no revision {target} (it has {', '.join(map(str, by_version))})")
        hit = impact(kube, ns, deployed_manifest(records), decode_release(by_version[target]).get("manifest", ""))
        hit.refuse_unless(args.replace, f"rollback {release} {target}")
        for note in hit.notes:
            print(note, flush=True)
        if args.replace:
            for plural, name in dict.fromkeys(hit.replace):
                delete_ray(kube, ns, plural, name, lambda line: print(line, flush=True),
                           max(5.0, deadline - time.monotonic()))
        try:
            helm.rollback(release, ns, target, timeout=max(5.0, deadline - time.monotonic()))
        except CheckFailed as exc:
            raise CheckFailed(f"{exc}\n  helm's end state: {end_state(kube, release, ns, current)}") from None
    after = release_records(kube, release, ns)
    print(f"release {release} rolled back to revision {target}: now revision {labels(after[-1])['version']} "
          f"({labels(after[-1]).get('status')})")
    return EXIT_OK


LEFTOVER_KINDS = ("deployments", "services", "networkpolicies", "poddisruptionbudgets", "configmaps",
                  "serviceaccounts", "rayclusters", "rayjobs", "pods")


def leftovers(kube: Kube, release: str, ns: str) -> list[str]:
    """Every object of the release still present (by instance label), pods included."""
    from kubernetes import client

    sel = f"{INSTANCE}={release}"
    out: list[str] = []
    net = client.NetworkingV1Api(kube.api)
    pol = client.PolicyV1Api(kube.api)
    listings = {
        "deployments": lambda: kube.apps.list_namespaced_deployment(ns, label_selector=sel).items,
        "services": lambda: kube.core.list_namespaced_service(ns, label_selector=sel).items,
        "networkpolicies": lambda: net.list_namespaced_network_policy(ns, label_selector=sel).items,
        "poddisruptionbudgets": lambda: pol.list_namespaced_pod_disruption_budget(ns, label_selector=sel).items,
        "configmaps": lambda: kube.core.list_namespaced_config_map(ns, label_selector=sel).items,
        "serviceaccounts": lambda: kube.core.list_namespaced_service_account(ns, label_selector=sel).items,
        "pods": lambda: kube.core.list_namespaced_pod(ns, label_selector=sel).items,
    }
    for kind, fn in listings.items():
        out += [f"{kind}/{o.metadata.name}" for o in fn()]
    for plural in ("rayclusters", "rayjobs"):
        out += [f"{plural}/{o['metadata']['name']}" for o in kube.list_ray(plural, ns, sel)]
    return out


def uninstall(args: Any) -> int:
    from generator.live.guard import require_ours

    timeout = args.timeout or 300
    t0 = time.monotonic()
    deadline = t0 + timeout
    kube = Kube(args.kubeconfig, args.context)
    kube.deadline = deadline
    release, ns, _ = resolve(kube, args.release, args.namespace)
    with RunLock(kube, ns, release, "uninstall", until=deadline):
        require_ours(release_records(kube, release, ns), release, ns, "uninstall")
        Helm(kube, deadline=deadline).uninstall(release, ns, timeout=timeout)
        left = wait_until(lambda: not leftovers(kube, release, ns), max(1.0, deadline - time.monotonic()))
    if not left:
        raise CheckFailed(f"release {release} uninstalled, but objects remain: {', '.join(leftovers(kube, release, ns))}")
    print(f"release {release} uninstalled from {ns}: nothing left ({time.monotonic() - t0:.1f}s)")
    return EXIT_OK


def cluster_list(args: Any) -> int:
    kube = Kube(args.kubeconfig, args.context)
    if args.namespace:
        items = kube.list_ray("rayclusters", args.namespace)
    else:
        from kubernetes.client.exceptions import ApiException

        try:
            items = kube.custom.list_cluster_custom_object("ray.io", "v1", "rayclusters")["items"]
        except ApiException as exc:
            if exc.status == 404:
                from generator.live.kube import crd_missing
                raise CheckFailed(crd_missing("rayclusters")) from None
            raise
    data = []
    for c in items:
        lab = c["metadata"].get("labels") or {}
        spec, st = c.get("spec") or {}, c.get("status") or {}
        workers = sum(int(g.get("replicas", 0) or 0) for g in spec.get("workerGroupSpecs") or [])
        gpus = 0
        for g in spec.get("workerGroupSpecs") or []:
            for ctr in ((g.get("template") or {}).get("spec") or {}).get("containers") or []:
                gpus += int(g.get("replicas", 0) or 0) * int(((ctr.get("resources") or {}).get("limits") or {}).get("nvidia.com/gpu", 0))
        owner = next((o["kind"] for o in c["metadata"].get("ownerReferences") or []), None)
        data.append({
            "namespace": c["metadata"]["namespace"], "name": c["metadata"]["name"],
            "release": lab.get(INSTANCE, ""), "mode": "rayjob" if owner == "RayJob" else "bringup",
            "state": st.get("state") or "pending", "workers": f"{st.get('readyWorkerReplicas', 0)}/{workers}",
            "gpus": gpus, "dockyard": lab.get("app.kubernetes.io/name") == "dockyard",
            "age": age(c["metadata"].get("creationTimestamp")),
        })
    rows = [["NAMESPACE", "NAME", "RELEASE", "MODE", "STATE", "WORKERS", "GPUS", "AGE"]]
    rows += [[d["namespace"], d["name"], d["release"] or "-", d["mode"], d["state"], d["workers"], str(d["gpus"]), d["age"]]
             for d in data]
    emit(data, args.output, lambda: columns(rows) if data else "no RayClusters")
    return EXIT_OK
