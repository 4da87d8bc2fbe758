"""Long-lived clusters on the playground: cluster up/list/down, job submit/list/stop, dev, doctor."""

from __future__ import annotations

import json
import re
import signal
import time

import bounds
import pytest
from kubernetes import client
from live_helpers import INFRA, RECIPE, cli, infra_variant, spawn

pytestmark = pytest.mark.timeout(240)


def _bringup(tmp_path):
    return infra_variant(tmp_path, "bringup.yaml", lambda d: (
        d["launch"].update(mode="bringup"), d["kuberay"].update(pdb={"enabled": True})))


def _objects(playground, ns: str) -> set[str]:
    api = playground.api_client()
    sel = "app.kubernetes.io/instance=small"
    out = set()
    out |= {f"Deployment/{o.metadata.name}"
            for o in client.AppsV1Api(api).list_namespaced_deployment(ns, label_selector=sel).items}
    out |= {f"Service/{o.metadata.name}"
            for o in client.CoreV1Api(api).list_namespaced_service(ns, label_selector=sel).items}
    out |= {f"ConfigMap/{o.metadata.name}"
            for o in client.CoreV1Api(api).list_namespaced_config_map(ns, label_selector=sel).items}
    out |= {f"NetworkPolicy/{o.metadata.name}"
            for o in client.NetworkingV1Api(api).list_namespaced_network_policy(ns, label_selector=sel).items}
    out |= {f"PodDisruptionBudget/{o.metadata.name}"
            for o in client.PolicyV1Api(api).list_namespaced_pod_disruption_budget(ns, label_selector=sel).items}
    out |= {f"RayCluster/{o['metadata']['name']}" for o in client.CustomObjectsApi(api).list_namespaced_custom_object(
        "ray.io", "v1", ns, "rayclusters", label_selector=sel)["items"]}
    out |= {f"Pod/{o.metadata.name}" for o in client.CoreV1Api(api).list_namespaced_pod(ns, label_selector=sel).items}
    return out


def test_cluster_up_list_job_submit_list_stop_cluster_down(playground, namespace, capsys, tmp_path, wait):
    kc = playground.kubeconfig
    bringup = _bringup(tmp_path)
    rc, out, err = cli(capsys, "cluster", "up", RECIPE, bringup, "-n", namespace, "--kubeconfig", kc,
                       "--timeout", 120, "-q")
    assert rc == 0, out + err
    assert "RayCluster ready" in out
    objs = _objects(playground, namespace)
    for expected in ("Deployment/small-sandbox", "Service/small-sandbox", "NetworkPolicy/small-sandbox",
                     "PodDisruptionBudget/small-sandbox", "PodDisruptionBudget/small-gpu", "RayCluster/small",
                     "ConfigMap/small-recipe"):
        assert expected in objs
    assert sum(o.startswith("Pod/") for o in objs) == 5  # head, trainer, inference, 2 sandbox

    rc, out, err = cli(capsys, "cluster", "list", "-n", namespace, "-o", "json", "--kubeconfig", kc)
    assert rc == 0, err
    [c] = json.loads(out)
    assert c["name"] == "small" and c["mode"] == "bringup" and c["state"] == "ready" and c["gpus"] == 16

    # a job against the running cluster (clusterSelector, no rayClusterSpec)
    rc, out, err = cli(capsys, "job", "submit", RECIPE, INFRA, "-n", namespace, "--cluster", "small",
                       "--name", "small-job-1", "--wait", "--kubeconfig", kc, "--timeout", 60, "-q")
    assert rc == 0, out + err
    job = client.CustomObjectsApi(playground.api_client()).get_namespaced_custom_object(
        "ray.io", "v1", namespace, "rayjobs", "small-job-1")
    assert job["spec"]["clusterSelector"] == {"ray.io/cluster": "small"} and "rayClusterSpec" not in job["spec"]
    assert job["status"]["jobDeploymentStatus"] == "Running"
    rc, out, err = cli(capsys, "job", "list", "-n", namespace, "-o", "json", "--kubeconfig", kc)
    assert [j["name"] for j in json.loads(out)] == ["small-job-1"]
    rc, out, err = cli(capsys, "job", "submit", RECIPE, INFRA, "-n", namespace, "--cluster", "nope", "--kubeconfig", kc)
    assert rc == 1 and "RayCluster nope not found" in err
    rc, out, err = cli(capsys, "job", "stop", "small-job-1", "-n", namespace, "--kubeconfig", kc, "--timeout", 60)
    assert rc == 0, err
    rc, out, _ = cli(capsys, "job", "list", "-n", namespace, "--kubeconfig", kc)
    assert "no jobs" in out
    assert "RayCluster/small" in _objects(playground, namespace)

    rc, out, err = cli(capsys, "cluster", "down", "small", "-n", namespace, "--kubeconfig", kc, "--timeout", 60)
    assert rc == 0, err
    assert "nothing left" in out
    assert _objects(playground, namespace) == set()
    leases = client.CoordinationV1Api(playground.api_client()).list_namespaced_lease(namespace).items
    assert leases == []


DEV_TIMEOUT = 120
URL_TIMEOUT = 20  # each request through a port-forward (_get)


# the bounds are dev's own (tests/live/bounds.py): up and forwarding, two requests, Ctrl-C and the teardown
@pytest.mark.timeout(bounds.dev_forwards_open(DEV_TIMEOUT) + 2 * URL_TIMEOUT + bounds.dev_down(DEV_TIMEOUT))
def test_dev_forwards_on_loopback_and_down_tears_down(playground, namespace, tmp_path):
    kc = playground.kubeconfig
    bringup = _bringup(tmp_path)
    proc = spawn("dev", RECIPE, bringup, "-n", namespace, "--dashboard-port", 0, "--sandbox-port", 0, "--down",
                 "--kubeconfig", kc, "--timeout", DEV_TIMEOUT, "-q")
    lines = []
    try:
        deadline = time.monotonic() + bounds.dev_forwards_open(DEV_TIMEOUT)
        while time.monotonic() < deadline:
            line = proc.stdout.readline()
            if not line:
                break
            lines.append(line)
            if "port-forwards open" in line:
                break
        text = "".join(lines)
        assert "port-forwards open" in text, text + proc.stderr.read() if proc.poll() is not None else text
        urls = re.findall(r"http://([0-9.]+):(\d+)", text)
        assert len(urls) == 2 and all(host == "127.0.0.1" for host, _ in urls)
        ports = {int(p) for _, p in urls}
        # kubectl listens on exactly those ports, on loopback only
        listening = _listening_ports()
        assert ports <= listening["127.0.0.1"]
        assert not ports & listening["other"]
        # and a request goes through: kubectl -> apiserver -> kwok's kubelet endpoint -> the playground's stub
        answers = sorted(_get(f"http://127.0.0.1:{p}/") for p in ports)
        assert "simulated Ray dashboard" in answers[0] and "simulated sandbox executor" in answers[1], answers
    finally:
        proc.send_signal(signal.SIGINT)
        out, err = bounds.ended(proc, bounds.dev_down(DEV_TIMEOUT), f"dev --down --timeout {DEV_TIMEOUT} after Ctrl-C")
    assert proc.returncode == 0, out + err
    assert "nothing left" in out
    assert _objects(playground, namespace) == set()


def _get(url: str) -> str:
    import urllib.request

    with urllib.request.urlopen(url, timeout=URL_TIMEOUT) as resp:  # a 127.0.0.1 URL printed by `dev`
        return resp.read().decode()


def _listening_ports() -> dict[str, set[int]]:
    out = {"127.0.0.1": set(), "other": set()}
    for path in ("/proc/net/tcp", "/proc/net/tcp6"):
        for row in open(path).read().splitlines()[1:]:
            local, state = row.split()[1], row.split()[3]
            if state != "0A":
                continue
            addr, port = local.split(":")
            key = "127.0.0.1" if addr in ("0100007F",) else "other"
            out[key].add(int(port, 16))
    return out


def test_doctor_passes_on_the_playground_and_names_blocking_problems(playground, namespace, capsys, tmp_path):
    kc = playground.kubeconfig
    rc, out, err = cli(capsys, "doctor", RECIPE, INFRA, "-n", namespace, "-o", "json", "--kubeconfig", kc)
    assert rc == 0, out + err
    checks = {c["check"]: c for c in json.loads(out)["checks"]}
    for name in ("API server", "RBAC", "KubeRay CRDs", "PriorityClass", "GPU capacity: trainer", "GPU capacity: gang",
                 "sandbox pool fits", "ResourceQuota headroom", "PodSecurity admission"):
        assert checks[name]["mark"] == "✓", checks[name]
    assert checks["NetworkPolicy"]["mark"] == "!"
    assert checks["KubeRay operator"]["mark"] in ("✓", "!")

    # blocking problems: GPU groups bigger than any node, a sandbox that cannot fit, a missing
    # PriorityClass and pull secret, a quota, and a namespace enforcing `restricted`
    core = client.CoreV1Api(playground.api_client())
    core.patch_namespace(namespace, {"metadata": {"labels": {"pod-security.kubernetes.io/enforce": "restricted"}}})
    core.create_namespaced_resource_quota(namespace, client.V1ResourceQuota(
        metadata=client.V1ObjectMeta(name="tight"),
        spec=client.V1ResourceQuotaSpec(hard={"requests.nvidia.com/gpu": "4"})))
    bad = infra_variant(tmp_path, "bad.yaml", lambda d: (
        d["infra"].update(priorityClassName="no-such-pc", imagePullSecrets=["no-such-secret"]),
        d["sandbox"].update(replicas=3), d["sandbox"]["resources"].update(cpu="100")))
    rc, out, err = cli(capsys, "doctor", RECIPE, bad, "cluster.trainer.gpusPerNode=16", "-n", namespace,
                       "--kubeconfig", kc)
    assert rc == 1, out + err
    rows = {line[2:26].strip(): line[0] for line in out.splitlines() if line[:1] in "✓✗!" and len(line) > 2}
    for name in ("PriorityClass", "image pull secrets", "GPU capacity: trainer", "GPU capacity: gang",
                 "sandbox pool fits", "ResourceQuota headroom", "PodSecurity admission"):
        assert rows.get(name) == "✗", (name, out)
    assert "→" in out and "blocking problem" in out and "Traceback" not in err
    assert "restricted" in out and "requests.nvidia.com/gpu" in out


def test_doctor_with_an_hpa_checks_its_minimum_warns_on_its_maximum_and_asks_for_its_verbs(
        playground, namespace, capsys, tmp_path):
    """sandbox.autoscaling: the HPA's minReplicas must fit the CPU nodes (✗ otherwise), a maxReplicas
    that cannot is a warning (the HPA stops at the room), and RBAC counts the HPA's five verbs."""
    kc = playground.kubeconfig

    def pool(min_replicas: int, max_replicas: int):
        return lambda d: (d["sandbox"].update(autoscaling={
            "enabled": True, "minReplicas": min_replicas, "maxReplicas": max_replicas,
            "targetCPUUtilizationPercentage": 70}), d["sandbox"]["resources"].update(cpu="16"))

    cpu = int(playground.shape["node_cpu"]) * len(playground.cpu_node_names)  # 64 cores: 4 pods of 16
    rows = {}
    for name, (low, high) in {"fits": (2, 3), "max": (2, 40), "min": (40, 41)}.items():
        infra = infra_variant(tmp_path, f"{name}.yaml", pool(low, high))
        rc, out, err = cli(capsys, "doctor", RECIPE, infra, "-n", namespace, "-o", "json", "--kubeconfig", kc)
        rows[name] = (rc, {c["check"]: c for c in json.loads(out)["checks"]})
    assert cpu // 16 >= 3
    rc, fits = rows["fits"]
    assert fits["sandbox pool fits"]["mark"] == "✓" and fits["sandbox pool at max"]["mark"] == "✓", fits
    assert fits["RBAC"]["mark"] == "✓" and re.search(r"\b(\d+)/\1 verbs allowed", fits["RBAC"]["detail"])
    rc, top = rows["max"]
    assert top["sandbox pool fits"]["mark"] == "✓"
    assert top["sandbox pool at max"]["mark"] == "!" and "maxReplicas 40" in top["sandbox pool at max"]["detail"]
    rc, low = rows["min"]
    assert rc == 1 and low["sandbox pool fits"]["mark"] == "✗"
    assert "sandbox.autoscaling.minReplicas" in low["sandbox pool fits"]["remedy"]
    # without an HPA the RBAC row asks for the HPA's verbs fewer
    rc, out, err = cli(capsys, "doctor", RECIPE, INFRA, "-n", namespace, "-o", "json", "--kubeconfig", kc)
    plain = {c["check"]: c for c in json.loads(out)["checks"]}["RBAC"]["detail"]
    count = lambda detail: int(re.search(r"/(\d+) verbs", detail).group(1))  # noqa: E731
    from generator.live.doctor.access import HPA_RBAC

    assert count(fits["RBAC"]["detail"]) == count(plain) + len(HPA_RBAC[2]) == count(plain) + 5
