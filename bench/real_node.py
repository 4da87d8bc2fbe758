"""`make bench`'s real-node section: executor pods under runc and under gVisor, side by side on one real
node (`playground up --real-node`, in the test sessions' turn), and the sandbox pool's scaling curve.

Every address dialed is loopback (the apiserver) or inside the node's network namespace (pods, Services).
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests" / "live"))  # the real node's turn and host diff (real_node_session)

RUNTIMES = ("runc", "gvisor")
RECIPE = REPO / "tests" / "live" / "data" / "small.yaml"
SEP = "| --- | --- | --- | --- | --- | --- |"
HEAD = "| pool | tasks/s | p50 ms | p99 ms | tasks ok (sum) | lost or refused (a loss stops the bench) |"


class Node:
    """kubectl on the bench's real node."""

    def __init__(self, state: dict[str, Any]):
        from generator.pinned_tools import tool_dir
        from generator.playground.node import spec as S

        self.kubeconfig = state["kubeconfig"]
        self.kubectl_bin = str(tool_dir("kubernetes") / "kubectl")
        self.image = state["real_node"]["images"]["executor"]
        self.select = {S.NODE_LABEL: "true"}
        self.tolerate = [{"key": S.NODE_LABEL, "operator": "Exists", "effect": "NoSchedule"}]

    def kubectl(self, *args: str, stdin: str | None = None, timeout: float = 120) -> str:
        proc = subprocess.run([self.kubectl_bin, f"--kubeconfig={self.kubeconfig}", *args], input=stdin,
                              capture_output=True, text=True, timeout=timeout)
        if proc.returncode != 0:
            raise RuntimeError(f"kubectl {' '.join(args)}: {proc.stderr.strip()}")
        return proc.stdout

    def namespace(self, prefix: str) -> str:
        name = f"{prefix}-{uuid.uuid4().hex[:6]}"
        self.kubectl("create", "namespace", name)
        return name

    def pod(self, name: str, command: list[str], runtime: str) -> dict[str, Any]:
        spec: dict[str, Any] = {
            "terminationGracePeriodSeconds": 0, "nodeSelector": self.select, "tolerations": self.tolerate,
            "automountServiceAccountToken": False,
            "containers": [{"name": "main", "image": self.image, "imagePullPolicy": "Never", "command": command,
                            "resources": {"limits": {"cpu": "100m", "memory": "64Mi"}}}]}
        if runtime != "runc":
            spec["runtimeClassName"] = runtime
        return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": spec}

    def ready(self, ns: str, name: str, timeout: float = 120) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            pod = json.loads(self.kubectl("-n", ns, "get", "pod", name, "-o", "json"))
            if any(c["type"] == "Ready" and c["status"] == "True" for c in pod["status"].get("conditions", [])):
                return
            time.sleep(0.1)
        raise TimeoutError(f"pod {ns}/{name} not Ready in {timeout:.0f} s")


def pod_start(node: Node, ns: str, runtime: str, i: int) -> float:
    """Seconds from `kubectl create` to Ready for one executor pod; the pod is deleted afterwards."""
    name = f"start-{runtime}-{i}"
    t0 = time.monotonic()
    node.kubectl("-n", ns, "create", "-f", "-", stdin=json.dumps(node.pod(name, ["sleep", "3600"], runtime)))
    node.ready(ns, name)
    took = time.monotonic() - t0
    node.kubectl("-n", ns, "delete", "pod", name, "--wait=true")
    return took


def fmt_s(samples: list[float]) -> str:
    return f"{statistics.median(samples):.2f} s ({min(samples):.2f}–{max(samples):.2f})"


def pool(node: Node, tmp: Path, ns: str, runtime: str, replicas: int, release: str | None = None,
         **sandbox: Any) -> str:
    """`dockyard-k8s run` of the tests' small recipe in attach mode (only the sandbox pool; the release `release`,
    else the recipe's name), then the pool's Service URL."""
    infra = {"infra": {"namespace": ns, "image": {"repository": node.image.rsplit(":", 1)[0],
                                                  "tag": node.image.rsplit(":", 1)[1], "pullPolicy": "Never"}},
             "launch": {"mode": "attach", "clusterName": "shared-gpu-cluster"},
             "sandbox": {"replicas": replicas, "resources": {"cpu": "100m", "memory": "128Mi",
                                                             "ephemeralStorage": "256Mi"},
                         "nodeSelector": node.select, "tolerations": node.tolerate,
                         **({"runtimeClassName": runtime} if runtime != "runc" else {}), **sandbox}}
    path = tmp / f"{ns}.infra.yaml"
    path.write_text(json.dumps(infra))
    proc = subprocess.run([sys.executable, "-m", "generator", "run", str(RECIPE), str(path), "--kubeconfig",
                           node.kubeconfig, "--create-namespace", "--wait", "-q", "--timeout", "180",
                           *(["--release", release] if release else [])],
                          capture_output=True, text=True, timeout=240, cwd=REPO)
    if proc.returncode != 0:
        raise RuntimeError(f"run ({runtime}, {replicas} replicas): {proc.stdout}{proc.stderr}")
    return f"http://small-sandbox.{ns}.svc.cluster.local:9090/task/submit"


def client(node: Node, ns: str) -> str:
    node.kubectl("-n", ns, "create", "-f", "-", stdin=json.dumps(node.pod("client", ["sleep", "3600"], "runc")))
    node.ready(ns, "client")
    return "client"


def load(node: Node, ns: str, url: str, workers: int, seconds: float) -> dict[str, Any]:
    """The executor's bounded load generator (`executor load`), run in a client pod: counts and latencies."""
    out = node.kubectl("-n", ns, "exec", "client", "--", "/executor", "load", url, str(workers), str(seconds),
                       timeout=seconds + 120)
    got = json.loads(out)
    if got["lost"] or got["refused"] or got["failed"]:
        raise RuntimeError(f"load on {url} lost tasks: {got}")
    return got


BUSY = json.dumps({"command": "i=0; while [ $i -lt 60000 ]; do i=$((i+1)); done"})  # CPU-bound tasks


def hpa_reaction(node: Node, tmp: Path, ns: str, url: str) -> tuple[float, float, int]:
    """With an HPA (min 2, max 4, CPU 50%) on metrics-server's figures: seconds from the start of a CPU-bound load
    to the HPA's first scale-up, to the added executors being Ready, and the replicas it asked for."""
    pool(node, tmp, ns, "runc", 2, autoscaling={"enabled": True, "minReplicas": 2, "maxReplicas": 4,
                                                 "targetCPUUtilizationPercentage": 50})

    def hpa() -> dict[str, Any]:
        return json.loads(node.kubectl("-n", ns, "get", "hpa", "small-sandbox", "-o", "json"))

    deadline = time.monotonic() + 120
    while not hpa().get("status", {}).get("currentMetrics") and time.monotonic() < deadline:
        time.sleep(1)
    t0 = time.monotonic()
    busy = subprocess.Popen([node.kubectl_bin, f"--kubeconfig={node.kubeconfig}", "-n", ns, "exec", "client", "--",
                             "/executor", "load", url, "6", "60", BUSY], stdout=subprocess.PIPE, text=True)
    scaled = ready = 0.0
    wanted = 2
    while time.monotonic() - t0 < 58 and not ready:
        if not scaled and (wanted := hpa()["status"].get("desiredReplicas", 0)) > 2:
            scaled = time.monotonic() - t0
        if scaled:
            dep = json.loads(node.kubectl("-n", ns, "get", "deployment", "small-sandbox", "-o", "json"))
            if (dep.get("status", {}).get("readyReplicas") or 0) > 2:
                ready = time.monotonic() - t0
        time.sleep(0.5)
    busy.communicate(timeout=180)
    return scaled, ready, wanted


def direct_url(node: Node, ns: str) -> str:
    pods = json.loads(node.kubectl("-n", ns, "get", "pods", "-l", "app.kubernetes.io/component=sandbox", "-o",
                                   "json"))["items"]
    return f"http://{pods[0]['status']['podIP']}:9090/task/submit"


def section(rounds: int, report: list[str], tmp: Path, seconds: float = 8, workers: int = 8) -> None:
    from real_node_session import real_node_playground

    with real_node_playground("real-node-", timeout=240) as (_state_dir, state, _before):
        node = Node(state)
        ns = node.namespace("bench-start")
        starts: dict[str, list[float]] = {r: [] for r in RUNTIMES}
        for i in range(rounds):  # interleaved, the first runtime alternating
            for runtime in (RUNTIMES if i % 2 == 0 else RUNTIMES[::-1]):
                starts[runtime].append(pod_start(node, ns, runtime, i))
        node.kubectl("delete", "namespace", ns, "--wait=false")

        # task round trips through the Service, one pool per runtime, interleaved rounds
        pools = {r: node.namespace(f"bench-{r}") for r in RUNTIMES}
        urls = {r: pool(node, tmp, pools[r], r, 1) for r in RUNTIMES}
        for ns in pools.values():
            client(node, ns)
        trips: dict[str, list[dict[str, Any]]] = {r: [] for r in RUNTIMES}
        for i in range(2):
            for r in (RUNTIMES if i % 2 == 0 else RUNTIMES[::-1]):
                trips[r].append(load(node, pools[r], urls[r], workers, seconds))

        # the scaling curve (runc): one pod directly, then the Service at 1, 2 and 4 replicas
        ns = pools["runc"]
        curve = [("1 pod, direct (pod IP)", load(node, ns, direct_url(node, ns), workers, seconds))]
        for replicas in (1, 2, 4):
            pool(node, tmp, ns, "runc", replicas)
            curve.append((f"Service, {replicas} replica(s)", load(node, ns, urls["runc"], workers, seconds)))
        scaled, ready, wanted = hpa_reaction(node, tmp, ns, urls["runc"])
        for ns in pools.values():
            node.kubectl("delete", "namespace", ns, "--wait=false")

    def row(label: str, runs: list[dict[str, Any]]) -> str:
        rate = statistics.median(r["tasks_per_s"] for r in runs)
        return (f"| {label} | {rate:.1f} | {statistics.median(r['p50_ms'] for r in runs):.1f} | "
                f"{statistics.median(r['p99_ms'] for r in runs):.1f} | {sum(r['ok'] for r in runs)} | "
                f"{sum(r['lost'] + r['refused'] for r in runs)} |")

    ratio = statistics.median(starts["gvisor"]) / statistics.median(starts["runc"])
    report += ["## Real node: runc and gVisor side by side", "",
               (f"One `playground up --real-node` (kubelet, containerd, runc and gVisor's runsc on the systrap "
                f"platform, 2 cores shared by the node, its pods and the load). Pod start: {rounds} interleaved "
                "rounds, each a fresh executor pod (create → Ready, polled with a `kubectl get` every 0.1 s, so a "
                "figure includes up to one poll's cost; then deleted)."), "",
               "| runtime | executor pod create → Ready |", "| --- | --- |"]
    report += [f"| {r} | {fmt_s(starts[r])} |" for r in RUNTIMES]
    report += ["", f"gVisor / runc (medians): {ratio:.2f}×.", "",
               (f"Task round trip through the pool's Service (`executor load`: {workers} workers in a runc client "
                f"pod capped at 100m CPU itself, in the pool's namespace, {seconds:.0f} s per run, a connection per "
                "task, each task "
                "`{\"argv\": [\"true\"]}` forked by the executor; each executor 100m CPU, request = limit, and under "
                "gVisor its user-space kernel runs inside that limit too); one replica per runtime, 2 interleaved "
                "runs, medians:"), "",
               HEAD, SEP]
    report += [row(r, trips[r]) for r in RUNTIMES]
    rates = {r: statistics.median(x["tasks_per_s"] for x in trips[r]) for r in RUNTIMES}
    report += ["", f"gVisor / runc throughput: {rates['gvisor'] / rates['runc']:.2f}×.", "",
               ("The pool's scaling curve (runc, the same client and load, one run each; `run` resizes the pool "
                "between runs):"), "",
               HEAD.replace("pool", "target", 1), SEP]
    report += [row(label, [got]) for label, got in curve]
    base = curve[1][1]["tasks_per_s"]
    report += ["", ("Service / direct at one replica: "
                    f"{base / curve[0][1]['tasks_per_s']:.2f}× the throughput; 2 and 4 replicas / 1: "
                    f"{curve[2][1]['tasks_per_s'] / base:.2f}×, {curve[3][1]['tasks_per_s'] / base:.2f}× "
                    "(ideal 2×, 4×; the machine has 2 cores and the one client pod 100m CPU, so the 4-replica "
                    "figure may be the client's limit)."), "",
               ("The HPA adding capacity (runc pool, `sandbox.autoscaling` min 2, max 4, CPU target 50%, the real HPA "
                "controller on metrics-server's 10 s figures; 6 workers of CPU-bound tasks): "
                + (f"{scaled:.1f} s from the load's start to the HPA asking for {wanted} replicas, "
                   f"{ready:.1f} s to the added executors being Ready." if ready else
                   "no scale-up within 58 s.")), ""]
