"""The sandbox pool on the real node: it runs for real and its boundary is proven at runtime, each proof under runc
and under gVisor (RuntimeClass gvisor): helm test and the URL the GPU pods get, NetworkPolicy ingress and the
cloud-metadata block, locked egress, the securityContext seen from inside, the liveness probe, the memory limit,
the PodDisruptionBudget.

The real node is the session's (conftest's `node`): one start for the modules of the real node part
(test_real_node*.py, in hack/suite.py's order), downed by the last, test_real_node_teardown.py, which checks the
host is exactly as it was.

Every address dialed here is loopback (the apiserver) or inside the node's network namespace: pods, Services, the
node, and the stand-in hosts 169.254.169.254 / 10.250.9.9 that exist only as addresses of that namespace's loopback
device.
"""

from __future__ import annotations

import subprocess

import pytest
import yaml
from real_node_pods import RECIPE, RUNTIMES, executor_url, runtime_spec, status_fields
from session_env import wait_for

from generator.playground.node import spec as S

pytestmark = pytest.mark.real_node  # the machine's one real node: hack/suite.py runs this module in a real node part


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
