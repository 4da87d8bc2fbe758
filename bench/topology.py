"""`make bench`'s topology section: what Kueue's Topology Aware Scheduling adds to the admission of a gang.

On one `playground up --kueue --topology` (kwok nodes, the real Kueue v0.17.1 controller), the README's example
gang (trainer 2 × 8 GPUs, inference 1 × 8) is queued with `launch.topology` (each fleet within one rack,
required; LocalQueue over ClusterQueue `topology`) and without it (LocalQueue over ClusterQueue `playground`),
alternating, a fresh namespace per trial with its LocalQueue made untimed. The figure is the admission latency:
from the job's Workload being made to its Admitted condition, as a watch of the namespace's Workloads delivers
the two events (loopback). The same at 8 and at 64 GPU nodes shows how placement grows with the cluster.
"""

from __future__ import annotations

import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parent.parent
RECIPE = REPO / "values-examples" / "grpo_swe.yaml"
INFRA = REPO / "values-examples" / "grpo_swe_topology.infra.yaml"
CLI = [sys.executable, "-m", "generator"]
KUEUE = "/apis/kueue.x-k8s.io/v1beta2"
SHAPES = ((8, "2x2"), (64, "4x4"))  # GPU nodes, blocks x racks: 2 and 4 hosts a rack


def _up(gpu_nodes: int, topology: str) -> Path:
    state = Path(tempfile.mkdtemp(prefix="dockyard-bench-topology-"))
    subprocess.run([*CLI, "playground", "up", "--state-dir", str(state), "--gpu-nodes", str(gpu_nodes),
                    "--cpu-nodes", "2", "--kueue", "--topology", topology, "--timeout", "600"],
                   check=True, capture_output=True)
    return state


def _down(state: Path) -> None:
    subprocess.run([*CLI, "playground", "down", "--state-dir", str(state)], capture_output=True)
    shutil.rmtree(state, ignore_errors=True)


def _infra(tmp: Path, namespace: str, placed: bool) -> Path:
    data = yaml.safe_load(INFRA.read_text())
    data["infra"]["namespace"] = namespace
    data["sandbox"]["replicas"] = 1
    data["sandbox"]["resources"] = {"cpu": "100m", "memory": "128Mi", "ephemeralStorage": "1Gi"}
    data["launch"]["queue"] = "bench"
    if not placed:
        del data["launch"]["topology"]
    path = tmp / f"{namespace}.infra.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def _admission(kubeconfig: str, namespace: str, run: list[str]) -> float:
    """Run `run`, and return the seconds from the job's Workload being made to its Admitted condition, both as
    a watch of the namespace's Workloads delivers them (the events' arrival, not the objects' second-grained
    timestamps)."""
    from kubernetes import client, config, watch

    api = client.CustomObjectsApi(config.new_client_from_config(config_file=kubeconfig))
    seen: dict[str, float] = {}
    ready = threading.Event()

    def follow() -> None:
        stream = watch.Watch()
        ready.set()
        for event in stream.stream(api.list_namespaced_custom_object, "kueue.x-k8s.io", "v1beta2", namespace,
                                   "workloads", timeout_seconds=300):
            now = time.perf_counter()
            seen.setdefault("created", now)
            conditions = (event["object"].get("status") or {}).get("conditions") or []
            if any(c["type"] == "Admitted" and c["status"] == "True" for c in conditions):
                seen["admitted"] = now
                stream.stop()

    watcher = threading.Thread(target=follow, daemon=True)
    watcher.start()
    ready.wait(10)
    time.sleep(0.5)  # the watch is open before the job exists
    subprocess.run(run, check=True, capture_output=True)
    watcher.join(300)
    if "admitted" not in seen:
        raise SystemExit(f"no Workload admitted in {namespace}")
    return seen["admitted"] - seen["created"]


def section(rounds: int, report: list[str], tmp: Path) -> None:
    from generator.playground.health import api_for
    from generator.playground.state import PlaygroundState

    report += ["## Topology-aware placement: Kueue's admission", "", __doc__.split("\n\n", 1)[1].strip(), "",
               "| cluster | placed (launch.topology) | unplaced | ratio |", "| --- | --- | --- | --- |"]
    for gpu_nodes, topology in SHAPES:
        state = _up(gpu_nodes, topology)
        try:
            loaded = PlaygroundState.load(state)
            assert loaded is not None, state
            api = api_for(loaded)
            times: dict[str, list[float]] = {"placed": [], "plain": []}
            for i in range(rounds):
                for arm in ("placed", "plain"):
                    ns = f"bench-{arm}-{i}"
                    api.create("/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace",
                                                      "metadata": {"name": ns}})
                    api.create(f"{KUEUE}/namespaces/{ns}/localqueues", {
                        "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "LocalQueue",
                        "metadata": {"name": "bench", "namespace": ns},
                        "spec": {"clusterQueue": "topology" if arm == "placed" else "playground"}})
                    run = [*CLI, "run", str(RECIPE), str(_infra(tmp, ns, arm == "placed")), "--quiet",
                           "--kubeconfig", str(state / "kubeconfig"), "--timeout", "300"]
                    times[arm].append(_admission(str(state / "kubeconfig"), ns, run))
                    subprocess.run([*CLI, "uninstall", "grpo-swe", "-n", ns, "--kubeconfig",
                                    str(state / "kubeconfig"), "--timeout", "300"], check=True, capture_output=True)
            med = {k: statistics.median(v) for k, v in times.items()}
            report.append(f"| {gpu_nodes} GPU nodes ({topology} blocks × racks) | {_ms(times['placed'])} | "
                          f"{_ms(times['plain'])} | {med['placed'] / med['plain']:.2f}× |")
        finally:
            _down(state)
    report.append("")


def _ms(samples: list[float]) -> str:
    return f"{statistics.median(samples) * 1000:.0f} ms ({min(samples) * 1000:.0f}–{max(samples) * 1000:.0f})"
