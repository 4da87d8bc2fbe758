"""The real node (`playground up --real-node`): the sandbox pool runs for real and its boundary is
proven at runtime. One playground with a real node for this module (its own state folder), torn
down by the last test, which checks the host is exactly as it was.

Every address dialed here is loopback (the apiserver) or inside the node's network namespace:
pods, Services, the node, and the stand-in hosts 169.254.169.254 / 10.250.9.9 that exist only as
addresses of that namespace's loopback device.
"""

from __future__ import annotations

import io
import json
import os
import re
import subprocess
import time
from pathlib import Path

import pytest
import yaml
from real_node_pods import REAL, RECIPE, RUNTIMES, TOLERATE, Node, executor_url, runtime_spec, status_fields
from real_node_session import host_snapshot, real_node_playground
from session_env import wait_for

from generator.playground.node import components as C
from generator.playground.node import spec as S

pytestmark = pytest.mark.real_node  # the machine's one real node: hack/suite.py runs this module in a real node part


@pytest.fixture(scope="module")
def node():
    with real_node_playground("real-node-", timeout=240) as (state_dir, state, before):
        n = Node(state_dir, state)
        n.before = before
        yield n


# ---------------------------------------------------------------- the node


def test_real_node_joins_beside_kwok_and_kwok_leaves_it_alone(node):
    nodes = {n["metadata"]["name"]: n for n in node.get("default", "nodes")["items"]}
    real = nodes[S.NODE_NAME]
    conds = {c["type"]: c["status"] for c in real["status"]["conditions"]}
    assert conds["Ready"] == "True"
    assert real["status"]["nodeInfo"]["containerRuntimeVersion"].startswith("containerd://")
    assert real["status"]["addresses"][0] == {"type": "InternalIP", "address": S.NODE_IP}
    assert "kwok.x-k8s.io/node" not in real["metadata"].get("annotations", {})
    assert real["metadata"]["labels"][S.NODE_LABEL] == "true" and "nvidia.com/gpu" not in real["status"]["capacity"]
    assert nodes["gpu-node-0"]["status"]["capacity"]["nvidia.com/gpu"] == "8"  # kwok's nodes stay
    # kubelet heartbeats the node's Lease (kwok would use its own holder identity)
    lease = node.get("kube-node-lease", "lease", S.NODE_NAME)
    assert lease["spec"]["holderIdentity"] == S.NODE_NAME


def test_status_shows_node_components_and_a_second_up_changes_nothing(node):
    from generator.playground.lifecycle import load_state, status, up
    from generator.playground.nodes import Shape

    out = io.StringIO()
    assert status(node.state_dir, out=out) == 0, out.getvalue()
    for name in ("relay", "containerd", "kubelet", "kube-proxy", "kube-router", "coredns", "metrics-server"):
        assert f"node/{name}" in out.getvalue() and "DOWN" not in out.getvalue()
    pids = {k: v["pid"] for k, v in node.state["real_node"]["components"].items()}
    out = io.StringIO()
    assert up(node.state_dir, Shape(gpu_nodes=1, gpus_per_node=8, cpu_nodes=0), out=out, real_node=True) == 0
    assert "already running" in out.getvalue()
    assert {k: v["pid"] for k, v in load_state(node.state_dir)["real_node"]["components"].items()} == pids


def test_clusterip_endpointslices_and_cluster_dns(node):
    ns = node.namespace()
    node.apply(ns, node.pod(ns, "echo", labels={"app": "echo"}),
               {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "echo"},
                "spec": {"selector": {"app": "echo"}, "ports": [{"port": 80, "targetPort": 9090}]}})
    pod = node.ready(ns, "echo")
    client = node.client(ns)
    slices = wait_for(lambda: [e for s in node.get(ns, "endpointslices", "-l",
                                                   "kubernetes.io/service-name=echo")["items"]
                               for e in s.get("endpoints") or []], 30, "an EndpointSlice for echo")
    assert slices[0]["addresses"] == [pod["status"]["podIP"]] and slices[0]["nodeName"] == S.NODE_NAME
    svc = node.get(ns, "service", "echo")
    import ipaddress

    assert ipaddress.ip_address(svc["spec"]["clusterIP"]) in ipaddress.ip_network(S.SERVICE_CIDR)
    rc, out = node.exec(ns, client, "nslookup", f"echo.{ns}.svc.cluster.local")
    assert rc == 0 and svc["spec"]["clusterIP"] in out, out
    answer = node.task(ns, client, f"http://echo.{ns}.svc.cluster.local/task/submit", "echo through-the-service")
    assert answer["exit_code"] == 0 and answer["stdout"] == "through-the-service\n"
    node.kubectl("delete", "namespace", ns, "--wait=false")


# ---------------------------------------------------------------- the sandbox pool


@RUNTIMES
def test_sandbox_pool_runs_on_the_real_node_and_helm_test_passes(node, capsys, tmp_path, runtime):
    ns = node.namespace("sb")
    node.release(capsys, tmp_path, ns, replicas=2, **runtime_spec(runtime))
    pool = node.pool(ns)
    assert len(pool) == 2 and {p["spec"]["nodeName"] for p in pool} == {S.NODE_NAME}
    proc = subprocess.run([node.helm_bin, "test", "small", "-n", ns, "--kubeconfig", node.kubeconfig,
                           "--timeout", "90s"], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0 and "Phase:          Succeeded" in proc.stdout, proc.stdout + proc.stderr

    # DOCKYARD_SANDBOX_URLS exactly as the chart renders it for the GPU pods (rayjob mode, same release)
    from live_helpers import cli

    rayjob = yaml.safe_load(node.infra_path.read_text())
    rayjob["launch"] = {"mode": "rayjob"}
    (tmp_path / "rayjob.infra.yaml").write_text(yaml.safe_dump(rayjob))
    rc, out, err = cli(capsys, "render", RECIPE, tmp_path / "rayjob.infra.yaml")
    assert rc == 0, err
    urls = {e["value"] for doc in yaml.safe_load_all(out) if doc and doc["kind"] == "RayJob"
            for e in _all_env(doc) if e["name"] == "DOCKYARD_SANDBOX_URLS"}
    assert len(urls) == 1
    url = urls.pop()
    assert url == f"http://small-sandbox.{ns}.svc.cluster.local:9090"
    client = node.client(ns)
    answer = node.task(ns, client, url.split(",")[0] + "/task/submit", "echo $((6 * 7)); exit 3")
    assert answer["exit_code"] == 3 and answer["stdout"] == "42\n"
    node.kubectl("delete", "namespace", ns, "--wait=false")


def _all_env(doc):
    def walk(x):
        if isinstance(x, dict):
            if "env" in x and isinstance(x["env"], list):
                yield from x["env"]
            for v in x.values():
                yield from walk(v)
        elif isinstance(x, list):
            for v in x:
                yield from walk(v)

    return list(walk(doc))


@RUNTIMES
def test_network_policy_default_ingress_and_metadata(node, capsys, tmp_path, runtime):
    ns, other = node.namespace("np"), node.namespace("np-other")
    node.release(capsys, tmp_path, ns, **runtime_spec(runtime))
    pool = node.pool(ns)[0]
    ip = pool["status"]["podIP"]
    client, stranger = node.client(ns), node.client(other)
    metadata = node.listener(S.METADATA_IP, 80, "metadata-stand-in")
    try:
        # a second port on the pool: something listens there, the policy must still refuse it
        listen = "/executor listen :8080 other >/dev/null 2>&1 & echo up"
        assert node.task(ns, client, executor_url(pool), listen)["exit_code"] == 0
        assert node.task(ns, client, executor_url(pool), "/executor dial 127.0.0.1:8080 2")["exit_code"] == 0
        assert node.dial(ns, client, f"{ip}:9090")  # same namespace, executor port
        # unprotected pods talk
        assert node.dial(other, stranger, f"{node.get(ns, 'pod', client)['status']['podIP']}:8081")
        wait_for(lambda: not node.dial(other, stranger, f"{ip}:9090"), 20, "another namespace to be refused")
        assert not node.dial(ns, client, f"{ip}:8080")  # any other port on the pool
        dns = node.task(ns, client, executor_url(pool), f"nslookup small-sandbox.{ns}.svc.cluster.local")
        assert dns["exit_code"] == 0, dns  # DNS from the pool
        meta = node.task(ns, client, executor_url(pool), f"/executor get http://{S.METADATA_IP}/")
        assert meta["exit_code"] != 0 and "metadata-stand-in" not in meta["stdout"]
        get = f"/executor get http://{S.STAND_IN_IP}/ ; echo rc=$?"
        assert node.task(ns, client, executor_url(pool), get)["stdout"].count("rc=1") == 1  # nothing listens there yet
        # lifting blockCloudMetadata opens it: the same check can fail
        node.release(capsys, tmp_path, ns, networkPolicy={"blockCloudMetadata": False}, **runtime_spec(runtime))
        opened = wait_for(lambda: (lambda r: r if r["exit_code"] == 0 else None)(
            node.task(ns, client, executor_url(node.pool(ns)[0]), f"/executor get http://{S.METADATA_IP}/")),
            30, "the metadata stand-in to answer once blockCloudMetadata is false")
        assert "metadata-stand-in" in opened["stdout"]
    finally:
        metadata.kill()
        metadata.wait()
    node.kubectl("delete", "namespace", ns, other, "--wait=false")


@RUNTIMES
def test_locked_egress_allows_dns_and_exactly_the_allowed_cidr(node, capsys, tmp_path, runtime):
    ns = node.namespace("eg")
    host = node.listener(S.STAND_IN_IP, 80, "stand-in-host")
    metadata = node.listener(S.METADATA_IP, 80, "metadata-stand-in")
    try:
        node.release(capsys, tmp_path, ns, networkPolicy={"allowEgress": False}, **runtime_spec(runtime))
        client = node.client(ns)
        url = lambda: executor_url(node.pool(ns)[0])  # noqa: E731
        wait_for(lambda: node.task(ns, client, url(), f"/executor get http://{S.STAND_IN_IP}/")["exit_code"] != 0,
                 30, "egress to the stand-in host to be blocked")
        assert node.task(ns, client, url(), f"nslookup small-sandbox.{ns}.svc.cluster.local")["exit_code"] == 0
        locked = {"allowEgress": False, "allowedEgressCidrs": [f"{S.STAND_IN_IP}/32"]}
        node.release(capsys, tmp_path, ns, networkPolicy=locked, **runtime_spec(runtime))
        got = wait_for(lambda: (lambda r: r if r["exit_code"] == 0 else None)(
            node.task(ns, client, url(), f"/executor get http://{S.STAND_IN_IP}/")), 30, "the allowed CIDR to open")
        assert "stand-in-host" in got["stdout"]
        # only that CIDR
        assert node.task(ns, client, url(), f"/executor get http://{S.METADATA_IP}/")["exit_code"] != 0
        assert node.task(ns, client, url(), f"nslookup small-sandbox.{ns}.svc.cluster.local")["exit_code"] == 0
    finally:
        for p in (host, metadata):
            p.kill()
            p.wait()
    node.kubectl("delete", "namespace", ns, "--wait=false")


@RUNTIMES
def test_security_context_seen_from_inside_the_executor(node, capsys, tmp_path, runtime):
    ns = node.namespace("sec")
    node.release(capsys, tmp_path, ns, **runtime_spec(runtime))
    client = node.client(ns)
    url = executor_url(node.pool(ns)[0])
    st = status_fields(node.task(ns, client, url, "cat /proc/self/status")["stdout"])
    assert int(st["CapEff"], 16) == 0 and st["NoNewPrivs"] == "1" and st["Seccomp"] == "2", st
    denied = node.task(ns, client, url, "mount -t tmpfs none /tmp")
    assert denied["exit_code"] != 0, denied  # a privileged operation is refused
    assert node.task(ns, client, url, "ls /var/run/secrets/kubernetes.io/serviceaccount")["exit_code"] != 0

    node.release(capsys, tmp_path, ns, security={"profile": "restricted"}, **runtime_spec(runtime))
    def restricted_and_ready(p: dict) -> bool:
        return (p["spec"]["securityContext"].get("runAsUser") == 10001 and bool(p["status"].get("podIP"))
                and all(c.get("ready") for c in p["status"].get("containerStatuses", [])))

    url = executor_url(wait_for(lambda: [p for p in node.pool(ns) if restricted_and_ready(p)] or None,
                                 60, "the restricted pool")[0])
    ids = node.task(ns, client, url, "id -u; touch /rootfs-write; echo root=$?; touch /workspace/ok && echo work=$?")
    lines = ids["stdout"].split()
    assert lines[0] == "10001" and "root=1" in lines and "work=0" in lines, ids
    assert node.task(ns, client, url, "ls /var/run/secrets/kubernetes.io/serviceaccount")["exit_code"] != 0
    node.kubectl("delete", "namespace", ns, "--wait=false")


@RUNTIMES
def test_liveness_probe_restarts_an_executor_that_stops_answering(node, capsys, tmp_path, runtime):
    ns = node.namespace("probe")
    node.release(capsys, tmp_path, ns, **runtime_spec(runtime))
    client = node.client(ns)
    pod = node.pool(ns)[0]
    name = pod["metadata"]["name"]
    assert node.task(ns, client, executor_url(pod), "kill -USR1 1; echo sent")["stdout"] == "sent\n"
    # readiness drops first (5 s period), then liveness (10 s x 6) makes the kubelet restart it
    restarted = wait_for(lambda: (lambda p: p if p["status"]["containerStatuses"][0]["restartCount"] >= 1 else None)(
        node.get(ns, "pod", name)), 150, "the kubelet to restart the executor")
    events = node.kubectl("-n", ns, "get", "events", "--field-selector", f"involvedObject.name={name}").stdout
    assert "Liveness probe failed" in events, events
    node.ready(ns, name, 60)
    assert node.task(ns, client, executor_url(restarted), "echo back")["stdout"] == "back\n"
    node.kubectl("delete", "namespace", ns, "--wait=false")


@RUNTIMES
def test_memory_limit_oom_kills_the_task_and_the_pod_recovers(node, capsys, tmp_path, runtime):
    ns = node.namespace("oom")
    node.release(capsys, tmp_path, ns, resources={"cpu": "100m", "memory": "64Mi", "memoryLimit": "96Mi",
                                                   "ephemeralStorage": "256Mi"}, **runtime_spec(runtime))
    client = node.client(ns)
    pod = node.pool(ns)[0]
    small = node.task(ns, client, executor_url(pod), "/executor alloc 16")
    assert small["exit_code"] == 0, small
    try:
        big = node.task(ns, client, executor_url(pod), "/executor alloc 400")
        # the kernel's OOM killer (SIGKILL) took the task; the executor reports 128 + 9
        assert big["exit_code"] == 137 and "killed" in big.get("error", ""), big
    except AssertionError:
        # or the executor itself was the victim: the kubelet reports the container OOMKilled
        wait_for(lambda: (node.get(ns, "pod", pod["metadata"]["name"])["status"]["containerStatuses"][0]
                          .get("lastState", {}).get("terminated", {}).get("reason") == "OOMKilled"), 30,
                 "the executor container to be reported OOMKilled")

    def recovered():
        fresh = node.pool(ns)
        if not fresh or not fresh[0]["status"].get("podIP"):
            return None
        try:
            return node.task(ns, client, executor_url(fresh[0]), "echo alive", timeout=10)["stdout"] == "alive\n"
        except AssertionError:
            return None

    wait_for(recovered, 60, "the pool to answer again after the OOM kill")
    node.kubectl("delete", "namespace", ns, "--wait=false")


@RUNTIMES
def test_pdb_refuses_the_second_eviction_with_real_pods(node, capsys, tmp_path, runtime):
    ns = node.namespace("pdb")
    node.release(capsys, tmp_path, ns, replicas=2, **runtime_spec(runtime))
    pods = [p["metadata"]["name"] for p in node.pool(ns)]
    assert len(pods) == 2

    def evict(name: str) -> tuple[int, str]:
        from kubernetes import client, config
        from kubernetes.client.exceptions import ApiException

        api = client.CoreV1Api(config.new_client_from_config(config_file=node.kubeconfig))
        body = client.V1Eviction(metadata=client.V1ObjectMeta(name=name, namespace=ns))
        try:
            api.create_namespaced_pod_eviction(name, ns, body)
            return 201, ""
        except ApiException as exc:
            return exc.status, exc.body

    wait_for(lambda: node.get(ns, "pdb", "small-sandbox").get("status", {}).get("disruptionsAllowed") == 1, 30,
             "the PDB to allow one disruption")
    assert evict(pods[0])[0] == 201
    status, body = evict(pods[1])
    assert status == 429 and "disruption budget" in body, body
    node.kubectl("delete", "namespace", ns, "--wait=false")


# ---------------------------------------------------------------- the pool under load: 0 tasks lost
# `executor load` in a client pod sends tasks through the pool's Service (a connection each, counted: ok, failed,
# refused by a draining executor, lost without an answer) while the pool changes under it.

# 6 s: every replaced executor has tasks in flight, and longer than the kubelet's 2 s minimum grace period, so
# only a grace period the chart sets (300 s) lets them finish; the negative control runs the same tasks
TASK = json.dumps({"command": "sleep 6; echo done"})
LIGHT = json.dumps({"command": "sleep 2; echo done"})  # the HPA's idle-time tasks: little CPU


class Load:
    """`executor load` running in the background in a client pod; .result() waits and parses its counts."""

    def __init__(self, node: Node, ns: str, client: str, url: str, seconds: float, workers: int = 4,
                 task: str = TASK):
        self.t0, self.seconds = time.monotonic(), seconds
        self.proc = subprocess.Popen([node.kubectl_bin, f"--kubeconfig={node.kubeconfig}", "-n", ns, "exec", client,
                                      "--", "/executor", "load", url, str(workers), str(seconds), task],
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    def left(self) -> float:
        return self.seconds - (time.monotonic() - self.t0)

    def result(self) -> dict:
        out, err = self.proc.communicate(timeout=self.seconds + 120)
        assert self.proc.returncode == 0, out + err
        return json.loads(out)


def test_the_pool_loses_no_task_through_an_upgrade_and_an_eviction_and_does_without_its_knobs(node, capsys, tmp_path):
    ns = node.namespace("roll")
    node.release(capsys, tmp_path, ns, replicas=2)
    client = node.client(ns)
    url = f"http://small-sandbox.{ns}.svc.cluster.local:9090/task/submit"
    old = {p["metadata"]["name"] for p in node.pool(ns)}

    # 1. `run` changes the pool (an env var: a rolling update) under load, with the chart's defaults
    load = Load(node, ns, client, url, 60)
    time.sleep(7)
    t0 = time.monotonic()
    node.release(capsys, tmp_path, ns, replicas=2, extraEnv=[{"name": "ROUND", "value": "2"}])
    rolled, left = time.monotonic() - t0, load.left()
    got = load.result()
    seen = [f"upgrade under load: rollout {rolled:.1f} s, {got}"]  # printed at the end (cli's capsys reads prints)
    assert not old & {p["metadata"]["name"] for p in node.pool(ns)}, "every executor was replaced"
    assert left > 0, f"the rollout ({rolled:.0f} s) outlasted the load: lengthen it"
    assert got["lost"] == got["refused"] == got["failed"] == 0 and got["ok"] > 16, got

    # 2. an eviction (drain-style, the eviction API) under load: the PDB allows one, the executor drains
    from kubernetes import client as k8s
    from kubernetes import config

    api = config.new_client_from_config(config_file=node.kubeconfig)
    wait_for(lambda: node.get(ns, "pdb", "small-sandbox").get("status", {}).get("disruptionsAllowed") == 1, 30,
             "the PDB to allow one disruption")
    victim = node.pool(ns)[0]["metadata"]["name"]
    load = Load(node, ns, client, url, 30)
    time.sleep(7)
    k8s.CoreV1Api(api).create_namespaced_pod_eviction(
        victim, ns, k8s.V1Eviction(metadata=k8s.V1ObjectMeta(name=victim, namespace=ns)))
    got = load.result()
    seen.append(f"eviction under load: {got}")
    assert victim not in {p["metadata"]["name"] for p in node.pool(ns)}
    assert got["lost"] == got["refused"] == got["failed"] == 0 and got["ok"] > 8, got
    api.close()

    # 3. negative control: the knobs off (no preStop pause, a grace period shorter than a task, maxUnavailable 1,
    # a TCP probe, no minReadySeconds): the same upgrade under the same tasks loses some, so the counts above can tell
    off = {"rollingUpdate": {"maxSurge": 0, "maxUnavailable": 1}, "preStopSleepSeconds": 0,
           "terminationGracePeriodSeconds": 1, "readinessProbe": {"type": "tcp"}, "minReadySeconds": 0}
    node.release(capsys, tmp_path, ns, replicas=2, **off)
    wait_for(lambda: len(node.pool(ns)) == 2 and all(c.get("ready") for p in node.pool(ns)
                                                    for c in p["status"].get("containerStatuses", [])), 60,
             "the knobs-off pool")
    # (each executor is killed while the tasks in flight may all be on the other one: rarely, by chance, a rollout
    # loses nothing, so a second rollout is made before the control counts as failed)
    for round_ in ("3", "4"):
        load = Load(node, ns, client, url, 30)
        time.sleep(7)
        node.release(capsys, tmp_path, ns, replicas=2, extraEnv=[{"name": "ROUND", "value": round_}], **off)
        got = load.result()
        seen.append(f"upgrade under load without the knobs: {got}")
        if got["lost"] + got["refused"]:
            break
    print("\n" + "\n".join(seen))
    assert got["lost"] + got["refused"] > 0, seen
    node.kubectl("delete", "namespace", ns, "--wait=false")


BUSY = json.dumps({"command": "i=0; while [ $i -lt 60000 ]; do i=$((i+1)); done"})  # ~CPU-bound for its limit


def test_the_hpa_scales_the_pool_up_under_load_and_down_when_idle_losing_no_task(node, capsys, tmp_path):
    """The real HPA controller on metrics-server's figures (the real node's resource metrics API): CPU-bound tasks
    push the pool over its target and it grows; light tasks let it shrink back, and none of them is lost."""
    ns = node.namespace("hpa")
    behavior = {"scaleUp": {"stabilizationWindowSeconds": 0},
                "scaleDown": {"stabilizationWindowSeconds": 10,
                              "policies": [{"type": "Percent", "value": 100, "periodSeconds": 10}]}}
    node.release(capsys, tmp_path, ns, autoscaling={"enabled": True, "minReplicas": 2, "maxReplicas": 4,
                                                    "targetCPUUtilizationPercentage": 50, "behavior": behavior})
    client = node.client(ns)
    url = f"http://small-sandbox.{ns}.svc.cluster.local:9090/task/submit"

    def hpa() -> dict:
        return node.get(ns, "hpa", "small-sandbox")

    wait_for(lambda: (hpa().get("status", {}).get("currentMetrics") or [None])[0], 90,
             "the HPA to read the pool's CPU from metrics-server")
    t0 = time.monotonic()
    # time-boxed: killing `kubectl exec` would leave the load running in the pod
    heavy = Load(node, ns, client, url, 60, workers=6, task=BUSY)
    grown = wait_for(lambda: (lambda h: h if h["status"].get("desiredReplicas", 0) > 2 else None)(hpa()), 58,
                     "the HPA to scale the pool up under load")
    added = time.monotonic() - t0
    wait_for(lambda: len([p for p in node.pool(ns) if all(c.get("ready") for c in
                                                          p["status"].get("containerStatuses", []))]) > 2,
             60, "the added executors to be ready")
    print(f"\nHPA: load started -> desiredReplicas {grown['status']['desiredReplicas']} in {added:.1f} s "
          f"({grown['status']['currentMetrics']})")
    heavy_got = heavy.result()
    print(f"CPU-bound load: {heavy_got}")
    assert heavy_got["lost"] == heavy_got["refused"] == 0, heavy_got  # scaling up loses nothing either
    # idle but for light tasks: the pool shrinks back to its minimum, and the light tasks all complete
    light = Load(node, ns, client, url, 80, workers=2, task=LIGHT)
    wait_for(lambda: hpa()["status"].get("desiredReplicas") == 2 and len(node.pool(ns)) == 2, 70,
             "the HPA to scale the pool back down")
    # the removed executors drained (5 s pause, tasks of 2 s) while light tasks were still being sent
    assert light.left() > 8, f"the scale-down came {80 - light.left():.0f} s into an 80 s load: too late to count"
    got = light.result()
    print(f"scale-down under light load: {got}")
    assert got["lost"] == got["refused"] == got["failed"] == 0 and got["ok"] > 10, got
    node.kubectl("delete", "namespace", ns, "--wait=false")


# ---------------------------------------------------------------- gVisor: RuntimeClass gvisor, handler runsc
# The same probes on a gVisor pod and on a runc pod beside it (the negative control); on this module's node.

# Blocks: the kernel's version, its release, its boot lines, the device count, the seccomp mode (the probe pods are
# Unconfined: 0 under both runtimes, where the chart's RuntimeDefault pool shows 2), then three syscalls the host
# kernel serves and containerd's default seccomp profile allows but gVisor does not implement (linux64.go ENOSYS):
# remap_file_pages (216), vmsplice (278) on a bad fd, io_pgetevents (333) on no context.
SYSCALLS = {216: "0 0 0 0 0", 278: "-1 0 0 0", 333: "0 0 0 0 0 0"}
PROBE = ("cat /proc/version; echo; uname -r; echo; dmesg 2>&1 | head -5; echo; ls /dev | wc -l; echo; "
         "grep Seccomp: /proc/self/status; echo; "
         + "; ".join(f"/executor syscall {nr} {args}" for nr, args in SYSCALLS.items()))


def test_runtime_class_gvisor_names_the_runsc_handler(node):
    rc = node.get("default", "runtimeclass", C.RUNTIME_CLASS)
    assert rc["handler"] == C.RUNSC_HANDLER
    assert rc["scheduling"]["nodeSelector"] == {S.NODE_LABEL: "true"}


def test_doctor_sees_the_runsc_handler_on_the_real_node_and_refuses_one_it_lacks(node, capsys, tmp_path):
    """doctor's RuntimeClass row reads what the node reports (status.runtimeHandlers): ✓ for gvisor's runsc; a class
    naming a handler this node lacks (kata), scheduling onto the same node, is ✗: the check can fail."""
    from kubernetes import client, config
    from live_helpers import cli, doctor_rows

    ns = node.namespace("dr")
    api = config.new_client_from_config(config_file=node.kubeconfig)
    client.NodeV1Api(api).create_runtime_class({
        "apiVersion": "node.k8s.io/v1", "kind": "RuntimeClass", "metadata": {"name": f"kata-{ns}"},
        "handler": "kata", "scheduling": {"nodeSelector": {S.NODE_LABEL: "true"}}})
    try:
        rows = {}
        for runtime in (C.RUNTIME_CLASS, f"kata-{ns}"):
            image = {"repository": node.image.rsplit(":", 1)[0], "tag": node.image.rsplit(":", 1)[1]}
            infra = {"infra": {"namespace": ns, "image": image},
                     "launch": {"mode": "attach", "clusterName": "shared-gpu-cluster"},
                     "sandbox": {"replicas": 1, "nodeSelector": REAL, "tolerations": TOLERATE,
                                 "runtimeClassName": runtime}}
            path = tmp_path / f"{runtime}.infra.yaml"
            path.write_text(yaml.safe_dump(infra))
            rc, out, err = cli(capsys, "doctor", RECIPE, path, "-n", ns, "--kubeconfig", node.kubeconfig)
            assert "RuntimeClass" in doctor_rows(out), out + err
            rows[runtime] = (rc, doctor_rows(out)["RuntimeClass"])
        rc, line = rows[C.RUNTIME_CLASS]
        assert line.startswith("✓ ") and f"runsc reported by 1/1 node(s): {S.NODE_NAME}" in line, line
        rc, line = rows[f"kata-{ns}"]
        assert rc == 1 and line.startswith("✗ ") and "kata" in line and "runsc" in line, line
    finally:
        client.NodeV1Api(api).delete_runtime_class(f"kata-{ns}")
        api.close()
    node.kubectl("delete", "namespace", ns, "--wait=false")


def _probe(node: Node, ns: str, name: str, runtime: str | None) -> tuple[dict, str]:
    extra = {"runtimeClassName": runtime} if runtime else {}
    t0 = time.monotonic()
    node.apply(ns, node.pod(ns, name, ["sleep", "3600"], securityContext={"seccompProfile": {"type": "Unconfined"}},
                            **extra))
    pod = node.ready(ns, name, timeout=90)
    print(f"\n{runtime or 'runc'} pod {name}: created -> Ready in {time.monotonic() - t0:.1f} s")
    rc, out = node.exec(ns, name, "sh", "-c", PROBE)
    assert rc == 0, out
    return pod, out


def test_a_gvisor_pod_sees_gvisors_kernel_and_a_runc_pod_the_hosts(node):
    ns = node.namespace("gv")
    pod, inside = _probe(node, ns, "sandboxed", C.RUNTIME_CLASS)
    print(f"\ngVisor pod:\n{inside}")
    assert pod["spec"]["nodeName"] == S.NODE_NAME and pod["spec"]["runtimeClassName"] == "gvisor"
    version, release, dmesg, devices, seccomp, syscalls = inside.split("\n\n")[:6]
    assert "gvisor" in version and release.strip().endswith("-gvisor"), inside
    assert re.match(r"\[ *0\.000000\] Starting gVisor\.\.\.\n", dmesg), inside  # gVisor's own boot lines
    assert int(devices) < 25, inside  # gVisor's short /dev (~16 entries)
    assert seccomp.split() == ["Seccomp:", "0"], inside
    assert syscalls.splitlines() == ["errno 38 ENOSYS"] * len(SYSCALLS), inside  # gVisor's kernel answers

    control, outside = _probe(node, ns, "control", None)
    print(f"runc pod:\n{outside}")
    assert control["spec"]["nodeName"] == S.NODE_NAME
    assert os.uname().release in outside and "gvisor" not in outside.lower(), outside  # the host kernel
    assert "Starting gVisor" not in outside
    blocks = outside.split("\n\n")
    assert blocks[4].split() == ["Seccomp:", "0"], outside
    # the host kernel serves them (a bad argument, not a missing syscall): EINVAL, EBADF, EINVAL
    assert blocks[5].splitlines() == ["errno 22 EINVAL", "errno 9 EBADF", "errno 22 EINVAL"], outside

    # a known gVisor failure mode is a pod kill that hangs (KillPodSandbox DeadlineExceeded): the pod's
    # runsc sandbox process (runsc-sandbox, under this node's runsc root) must be gone promptly, not just the object
    assert _sandboxes(node), "no runsc-sandbox process under this node's runsc root while the gVisor pod runs"
    t0 = time.monotonic()
    node.kubectl("-n", ns, "delete", "pod", "sandboxed", "--wait=true", timeout=90)
    wait_for(lambda: not _sandboxes(node), 30, "the gVisor pod's runsc sandbox to exit")
    print(f"gVisor pod deleted and its sandbox gone in {time.monotonic() - t0:.1f} s")
    node.kubectl("delete", "namespace", ns, "--wait=false")


def _sandboxes(node: Node) -> list[int]:
    """PIDs of runsc sandboxes whose --root is this node's runsc root (components.runsc_config)."""
    root = f"--root={node.spec.containerd_dir / 'runsc'}".encode()
    pids = []
    for p in Path("/proc").glob("[0-9]*"):
        try:
            argv = (p / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if argv[0].endswith(b"runsc-sandbox") and any(a.startswith(root) for a in argv):
            pids.append(int(p.name))
    return pids


# ---------------------------------------------------------------- failure and down


def test_a_second_real_node_is_refused_in_one_line_and_leaves_nothing(node, tmp_path):
    from session_env import exit_code

    from generator.playground.lifecycle import down, up
    from generator.playground.nodes import Shape
    from generator.playground.state import Process

    other = tmp_path / "second"
    out = io.StringIO()
    assert exit_code(up, other, Shape(gpu_nodes=1, gpus_per_node=8, cpu_nodes=0), out=out, real_node=True) == 1
    text = out.getvalue()
    assert f"another playground's real node holds {S.POD_CIDR}" in text and "Traceback" not in text, text
    assert "without --real-node" in text
    state = json.loads((other / "state.json").read_text())
    from generator.playground import processes as procs

    records = [Process.from_dict(r) for r in state["components"].values()]
    assert not [r for r in records if procs.is_running(r)]  # its control plane stopped
    assert down(other, out=io.StringIO()) == 0 and not other.exists()


def test_down_after_a_crash_leaves_the_host_as_it_was(node):
    import signal

    from generator.playground.lifecycle import down
    from generator.playground.node import host

    comps = node.state["real_node"]["components"]
    pids = {v["pid"] for v in comps.values()}
    assert host.our_pids(node.spec)  # the check below can fail: while up, the node has processes
    ns = node.namespace("crash")
    node.client(ns)
    # a crash: kubelet and containerd die; the pods and their shims are orphaned
    for name in ("kubelet", "containerd"):
        os.kill(comps[name]["pid"], signal.SIGKILL)
    orphans = [p for p in host.our_pids(node.spec) if p not in pids]
    assert orphans, "a pod's processes should outlive the kubelet and containerd"
    out = io.StringIO()
    assert down(node.state_dir, out=out) == 0, out.getvalue()
    assert not node.state_dir.exists()
    after = host_snapshot()
    for key in node.before:
        changed = sorted(set(map(str, after[key])) ^ set(map(str, node.before[key])))
        assert after[key] == node.before[key], f"{key} changed: {changed}"
    assert not [p for p in pids if Path(f"/proc/{p}").exists()]
    assert not host.our_cgroup_dirs(node.spec)
    wait_for(lambda: not host.our_pids(node.spec), 10, "the killed processes to be reaped")


def test_a_start_that_fails_half_way_removes_what_it_made(node, monkeypatch, tmp_path):
    from session_env import exit_code

    from generator.playground import processes as procs
    from generator.playground.lifecycle import down, up
    from generator.playground.node import components as C
    from generator.playground.node import host
    from generator.playground.nodes import Shape
    from generator.playground.state import PlaygroundState

    real_argv = C.argv

    def broken(name, *args):  # CoreDNS refuses an unknown flag and exits: a failure half way
        argv = real_argv(name, *args)
        return [*argv, "-no-such-flag"] if name == "coredns" else argv

    monkeypatch.setattr(C, "argv", broken)
    state_dir = tmp_path / "half"
    out = io.StringIO()
    shape = Shape(gpu_nodes=1, gpus_per_node=8, cpu_nodes=0)
    assert exit_code(up, state_dir, shape, out=out, real_node=True, timeout=240) == 1
    text = out.getvalue()
    assert "coredns exited during start-up" in text and "Traceback" not in text, text
    spec = S.NodeSpec(state_dir)
    state = PlaygroundState.load(state_dir)
    assert state and state.real_node
    assert state.real_node.components["containerd"]  # it got that far
    running = [r.name for r in [*state.components.values(), *state.real_node.components.values()]
               if procs.is_running(r)]
    assert not running, running
    assert not host.our_cgroup_dirs(spec) and not host.our_mounts(spec)
    wait_for(lambda: not host.our_pids(spec), 10, "the half-started node's processes to be gone")
    after = host_snapshot()
    for key in node.before:
        assert after[key] == node.before[key], f"{key} changed after a failed up"
    assert down(state_dir, out=io.StringIO()) == 0 and not state_dir.exists()
