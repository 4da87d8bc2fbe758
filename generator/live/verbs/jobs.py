"""`job submit|list|stop`: RayJobs that run on an existing RayCluster through `clusterSelector`.

KubeRay refuses `rayClusterSpec` together with `clusterSelector`, and `backoffLimit > 0` with it, so
these RayJobs carry neither; deleting one leaves the cluster running.
"""

from __future__ import annotations

import shlex
import sys
import time
from typing import Any

from generator.errors import EXIT_FAILED, EXIT_OK, CheckFailed
from generator.inputs.rules import MAX_RAYJOB_NAME
from generator.live.changes.plan import plan
from generator.live.client.kube import RAY_GROUP, RAY_VERSION, Kube, crd_missing
from generator.live.client.wait import wait_until
from generator.live.output.show import age, columns, emit, write_stdout
from generator.live.state import driver_log

MANAGED = "app.kubernetes.io/managed-by=dockyard-k8s,dockyard.dev/kind=job"


def _job_name(recipe: str) -> str:
    stamp = time.strftime("%m%d%H%M%S")
    return f"{recipe[: MAX_RAYJOB_NAME - len(stamp) - 1].rstrip('-')}-{stamp}"


def watched(entry: str, launch: dict[str, Any], run: str) -> str:
    """The entrypoint under the run watcher as the chart's dockyard.ray.watched renders it (launch.watch; a test
    holds the two together); unchanged with launch.watch.enabled false."""
    watch = launch.get("watch") or {}
    if not watch.get("enabled", True):
        return entry
    args = f"--run {run} --keep-bytes {int(watch.get('keepLogMiB', 64)) * 1048576}"
    if watch.get("stallTimeoutSeconds") is not None:
        args += (f" --stall-timeout {int(watch['stallTimeoutSeconds'])}"
                 f" --first-report {int(watch['firstReportSeconds'])}")
    watcher = shlex.quote(f"{launch.get('configMountPath', '/etc/dockyard')}/run_watch.py")
    return f"python3 {watcher} {args} -- {shlex.quote(entry)}"


def rayjob_body(name: str, cluster: str, values: dict[str, Any], watcher: bool = False) -> dict[str, Any]:
    """The RayJob; with `watcher`, its entrypoint under the run watcher the cluster's head holds."""
    launch = values.get("launch") or {}
    recipe = values["recipe"]
    config = shlex.quote(f"{launch.get('configMountPath', '/etc/dockyard')}/recipe.yaml")  # as the chart quotes it
    entry = f"{recipe['entrypoint']} --config {config}"
    if (values.get("sandbox") or {}).get("injectUrls"):
        entry += " env.code.sandbox_urls=null"
    if watcher:
        entry = watched(entry, launch, name)
    spec: dict[str, Any] = {
        "entrypoint": entry,
        "clusterSelector": {"ray.io/cluster": cluster},
        "submissionMode": launch.get("submissionMode", "K8sJobMode"),
        "shutdownAfterJobFinishes": False,
    }
    if launch.get("activeDeadlineSeconds") is not None:
        spec["activeDeadlineSeconds"] = launch["activeDeadlineSeconds"]
    return {
        "apiVersion": f"{RAY_GROUP}/{RAY_VERSION}",
        "kind": "RayJob",
        "metadata": {"name": name, "labels": {
            "app.kubernetes.io/managed-by": "dockyard-k8s", "app.kubernetes.io/name": "dockyard",
            "dockyard.dev/kind": "job", "dockyard.dev/cluster": cluster, "dockyard.dev/recipe": recipe["name"]}},
        "spec": spec,
    }


def target_cluster(values: dict[str, Any], mode: str, given: str | None = None) -> str:
    """The RayCluster a job is submitted to: --cluster, else launch.clusterName in attach mode, else the recipe's
    name (the cluster of `cluster up`)."""
    return given or ((values.get("launch") or {}).get("clusterName") if mode == "attach" else None) \
        or values["recipe"]["name"]


def submit(args: Any) -> int:
    p = plan(args.recipe, args.infra, args.overrides, None, args.namespace)
    launch = p.values.get("launch") or {}
    cluster = target_cluster(p.values, p.mode, args.cluster)
    kube = Kube(args.kubeconfig, args.context)
    print(f"job submit in namespace {p.namespace}, {kube.target()}", file=sys.stderr, flush=True)
    kube.require_ray(("rayjobs", "rayclusters"))
    if kube.get_ray("rayclusters", p.namespace, cluster) is None:
        raise CheckFailed(f"RayCluster {cluster} not found in namespace {p.namespace}: bring one up with "
                          f"`dockyard-k8s cluster up RECIPE INFRA`, or pass --cluster NAME")
    name = args.name or _job_name(p.values["recipe"]["name"])
    if len(name) > MAX_RAYJOB_NAME:
        raise CheckFailed(f"RayJob name {name!r} has {len(name)} characters; KubeRay allows at most {MAX_RAYJOB_NAME}")
    from kubernetes.client.exceptions import ApiException

    watcher = _head_holds_watcher(kube, p.namespace, cluster) if (
        p.mode == "bringup" and (launch.get("watch") or {}).get("enabled", True)) else False
    try:
        kube.custom.create_namespaced_custom_object(RAY_GROUP, RAY_VERSION, p.namespace, "rayjobs",
                                                    rayjob_body(name, cluster, p.values, watcher))
    except ApiException as exc:
        if exc.status == 409:
            raise CheckFailed(f"RayJob {name} already exists in {p.namespace}: pick another --name, "
                              f"or `job stop {name}`") from None
        raise
    print(f"RayJob {name} submitted to RayCluster {cluster} in {p.namespace}")
    if args.follow:  # as `run --follow`: the driver's log until the job ends, and the job's result as exit code
        deadline = time.monotonic() + args.timeout if args.timeout else None
        ok, job = driver_log.follow(kube, name, p.namespace, deadline, write_stdout)
        print(driver_log.outcome(job) if job else f"RayJob {name} not found", flush=True)
        if ok is None:
            raise CheckFailed(f"RayJob {name} had not ended when --timeout ran out; it goes on running")
        return EXIT_OK if ok else EXIT_FAILED
    if not args.wait:
        return EXIT_OK
    deadline = time.monotonic() + (args.timeout or 300)
    last = None
    while True:
        job = kube.get_ray("rayjobs", p.namespace, name) or {}
        st = job.get("status") or {}
        state = st.get("jobDeploymentStatus")
        if state != last and not args.quiet:
            print(f"  {name}: {state or 'New'}", flush=True)
        last = state
        if state in ("Running", "Complete"):
            print(f"RayJob {name} {state} on {cluster}")
            return EXIT_OK
        if state in ("Failed", "ValidationFailed"):
            raise CheckFailed(f"RayJob {name} {state}: {st.get('message') or st.get('reason') or 'no message'}")
        if time.monotonic() >= deadline:
            raise CheckFailed(f"RayJob {name} not running after the timeout (state {state or 'New'})")
        time.sleep(1.0)


def _head_holds_watcher(kube: Kube, namespace: str, cluster: str) -> bool:
    """Whether the cluster's head mounts a recipe ConfigMap holding the run watcher (a bringup release of this
    chart with launch.watch on): the job runs under it only then (one read of the RayCluster)."""
    found = kube.get_ray("rayclusters", namespace, cluster) or {}
    head = ((found.get("spec") or {}).get("headGroupSpec") or {}).get("template") or {}
    config = next((v.get("configMap", {}).get("name") for v in (head.get("spec") or {}).get("volumes") or []
                   if v.get("name") == "recipe"), None)
    if not config:
        return False
    try:
        data = kube.request("GET", f"/api/v1/namespaces/{namespace}/configmaps/{config}").get("data") or {}
    except Exception:
        return False
    if "run_watch.py" not in data:
        print(f"job submit: RayCluster {cluster}'s recipe ConfigMap has no run watcher (launch.watch.enabled false, "
              "or an older chart): the job runs without progress, kept logs or stall guard", file=sys.stderr)
        return False
    return True


def _list(kube: Kube, namespace: str | None, cluster: str | None = None) -> list[dict[str, Any]]:
    sel = MANAGED + (f",dockyard.dev/cluster={cluster}" if cluster else "")
    if namespace:
        return kube.list_ray("rayjobs", namespace, sel)
    from kubernetes.client.exceptions import ApiException

    try:
        return kube.custom.list_cluster_custom_object(RAY_GROUP, RAY_VERSION, "rayjobs", label_selector=sel)["items"]
    except ApiException as exc:
        if exc.status == 404:
            raise CheckFailed(crd_missing("rayjobs")) from None
        raise


def list_jobs(args: Any) -> int:
    kube = Kube(args.kubeconfig, args.context)
    items = _list(kube, args.namespace, args.cluster)
    data = []
    for j in items:
        st = j.get("status") or {}
        data.append({"namespace": j["metadata"]["namespace"], "name": j["metadata"]["name"],
                     "cluster": (j["spec"].get("clusterSelector") or {}).get("ray.io/cluster"),
                     "deploymentStatus": st.get("jobDeploymentStatus") or "New",
                     "jobStatus": st.get("jobStatus") or "-",
                     "age": age(j["metadata"].get("creationTimestamp"))})
    rows = [["NAMESPACE", "NAME", "CLUSTER", "DEPLOYMENT", "JOB", "AGE"]]
    rows += [[d["namespace"], d["name"], d["cluster"], d["deploymentStatus"], d["jobStatus"], d["age"]] for d in data]
    emit(data, args.output, lambda: columns(rows) if data else "no jobs")
    return EXIT_OK


def stop(args: Any) -> int:
    from kubernetes.client.exceptions import ApiException

    kube = Kube(args.kubeconfig, args.context)
    matches = [j for j in _list(kube, args.namespace) if j["metadata"]["name"] == args.name]
    if not matches:
        raise CheckFailed(f"no dockyard job {args.name}" + (f" in {args.namespace}" if args.namespace else "")
                          + " (`dockyard-k8s job list`)")
    if len(matches) > 1:
        raise CheckFailed(f"job {args.name} exists in several namespaces: pass -n")
    ns = matches[0]["metadata"]["namespace"]
    print(f"job stop {args.name} in namespace {ns}, {kube.target()}", file=sys.stderr, flush=True)
    try:
        kube.custom.delete_namespaced_custom_object(RAY_GROUP, RAY_VERSION, ns, "rayjobs", args.name,
                                                    propagation_policy="Foreground")
    except ApiException as exc:
        if exc.status != 404:
            raise
    if not wait_until(lambda: kube.get_ray("rayjobs", ns, args.name) is None, args.timeout or 120):
        raise CheckFailed(f"RayJob {args.name} still exists after the timeout")
    print(f"RayJob {args.name} stopped and deleted from {ns}; its RayCluster keeps running")
    return EXIT_OK
