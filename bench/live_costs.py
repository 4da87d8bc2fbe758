"""The live path's cost on a playground of the bench's own: `run --wait` against plain helm + kubectl wait, the
overhead of a Kueue-queued job's admission, and status's requests and wall time."""

from __future__ import annotations

import shutil
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

from timing import CLI, ENV, INFRA, RECIPE, fmt, fmt_s, ratio, timed

from generator.pinned_tools import CHART_DIR, binary


class BenchPlayground:
    """A playground of its own (own state folder), stopped at the end."""

    def __init__(self, gpu_nodes: int, cpu_nodes: int, kueue: bool = False):
        self.dir = Path(tempfile.mkdtemp(prefix="dockyard-bench-pg-"))
        subprocess.run([*CLI, "playground", "up", "--state-dir", str(self.dir), "--gpu-nodes", str(gpu_nodes),
                        "--cpu-nodes", str(cpu_nodes), "--timeout", "300", *(["--kueue"] if kueue else [])],
                       env=ENV, check=True, capture_output=True)
        self.kubeconfig = str(self.dir / "kubeconfig")

    def down(self) -> None:
        subprocess.run([*CLI, "playground", "down", "--state-dir", str(self.dir)], env=ENV, capture_output=True)
        shutil.rmtree(self.dir, ignore_errors=True)


def live_infra(tmp: Path, name: str, namespace: str, replicas: int) -> Path:
    import yaml

    data = yaml.safe_load(INFRA.read_text())
    data["infra"]["namespace"] = namespace
    data["sandbox"]["replicas"] = replicas
    data["sandbox"]["resources"] = {"cpu": "100m", "memory": "128Mi", "ephemeralStorage": "1Gi"}
    data["kuberay"]["head"] = {"cpu": "1", "memory": "2Gi"}
    data["kuberay"]["worker"] = {"cpu": "4", "memory": "16Gi"}
    path = tmp / f"{name}.infra.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def plain_live(pg: BenchPlayground, values: Path, release: str, namespace: str, timeout: int) -> None:
    kc = ["--kubeconfig", pg.kubeconfig]
    kubectl = binary("kubectl", "kubernetes")
    subprocess.run([binary("helm"), "upgrade", "--install", release, str(CHART_DIR), "-n", namespace,
                    "--create-namespace", "-f", str(values), "--wait", "--timeout", f"{timeout}s", *kc],
                   check=True, capture_output=True, env=ENV)
    deadline = time.monotonic() + timeout
    name = ""
    while not name and time.monotonic() < deadline:  # the RayJob names its cluster a moment after it exists
        name = subprocess.run([kubectl, *kc, "-n", namespace, "get", "rayjob", release, "-o",
                               "jsonpath={.status.rayClusterName}"], capture_output=True, text=True).stdout.strip()
        if not name:
            time.sleep(0.2)
    subprocess.run([kubectl, *kc, "-n", namespace, "wait", f"raycluster/{name}", "--for=jsonpath={.status.state}=ready",
                    f"--timeout={timeout}s"], check=True, capture_output=True)


def delete_namespace(pg: BenchPlayground, namespace: str) -> None:
    """Untimed clean-up between trials, so each trial gets every GPU node."""
    subprocess.run([binary("kubectl", "kubernetes"), "--kubeconfig", pg.kubeconfig, "delete", "namespace", namespace,
                    "--wait=true", "--timeout=300s"], check=True, capture_output=True)


def live(repeat: int, report: list[str], tmp: Path, figures: dict[str, float]) -> None:
    report += ["## Live path on a playground", "",
               ("`run --wait` to all-ready against `helm upgrade --install --wait` followed by `kubectl wait` for the "
                "RayJob's RayCluster to be `ready`; a fresh namespace per trial."), "",
               "| job | `dockyard-k8s run --wait` | helm + kubectl wait | ratio |", "| --- | --- | --- | --- |"]
    status_rows = []
    for label, gpu_nodes, nodes, replicas in (("small: 2 GPU nodes, 4 sandbox replicas", 2, 1, 4),
                                              ("large: 32 GPU nodes × 8 GPUs, 256 sandbox replicas", 32, 16, 256)):
        pg = BenchPlayground(gpu_nodes=gpu_nodes, cpu_nodes=2)
        try:
            ours, plain = [], []
            overrides = [f"cluster.trainer.nodes={nodes}", f"cluster.inference.nodes={nodes}"]
            for i in range(repeat):
                for method in ("ours", "plain"):  # alternate, so drift in the machine's load hits both
                    ns = f"bench-{method}-{i}"
                    infra = live_infra(tmp, ns, ns, replicas)
                    t0 = time.perf_counter()
                    if method == "ours":
                        subprocess.run([*CLI, "run", str(RECIPE), str(infra), *overrides, "--wait", "--quiet",
                                        "--create-namespace", "--kubeconfig", pg.kubeconfig, "--timeout", "600"],
                                       env=ENV, check=True, capture_output=True)
                        ours.append(time.perf_counter() - t0)
                    else:
                        values = tmp / f"{ns}.values.yaml"
                        subprocess.run([*CLI, "values", str(RECIPE), str(infra), *overrides, "-o", str(values)],
                                       env=ENV, check=True)
                        t0 = time.perf_counter()
                        plain_live(pg, values, "grpo-swe", ns, 600)
                        plain.append(time.perf_counter() - t0)
                    if method == "ours" and i == 0:  # status of a running job, before it is cleaned up
                        status = status_cost(pg, ns, repeat)
                    delete_namespace(pg, ns)
            report.append(f"| {label} | {fmt_s(ours)} | {fmt_s(plain)} | {ratio(ours, plain)} |")
            figures[f"run {label.split(':')[0]}"] = statistics.median(ours) / statistics.median(plain)
            status_rows.append((label, *status))
        finally:
            pg.down()
    report += ["", "Target: ≤ 1.1×.", "", "## `status`", "",
               "| job | wall time | API requests per call |", "| --- | --- | --- |"]
    report += [f"| {label} | {fmt(wall)} | {calls} |" for label, wall, calls in status_rows]
    report.append("")


def kueue_overhead(repeat: int, report: list[str], tmp: Path, figures: dict[str, float]) -> None:
    """`run --wait` to every fleet ready with the job queued through Kueue (suspended, admitted, unsuspended)
    against the same job without a queue, alternating on one `playground up --kueue`."""
    import yaml

    report += ["## Kueue admission", "",
               ("`run --wait` to all-ready of a job queued on a LocalQueue (Kueue's webhook suspends it, the "
                "Workload is admitted, the job unsuspended) against the same job without a queue, alternating on "
                "one `playground up --kueue` (the real Kueue v0.17.0 controller); a fresh namespace per trial, "
                "its LocalQueue made untimed."), "",
               "| job | with Kueue | without | ratio |", "| --- | --- | --- | --- |"]
    overrides = ["cluster.trainer.nodes=1", "cluster.inference.nodes=1"]  # 16 GPUs: the playground's quota
    pg = BenchPlayground(gpu_nodes=2, cpu_nodes=2, kueue=True)
    kubectl = binary("kubectl", "kubernetes")
    try:
        times: dict[str, list[float]] = {"kueue": [], "plain": []}
        for i in range(repeat):
            for method in ("kueue", "plain"):
                ns = f"bench-q{method}-{i}"
                infra = live_infra(tmp, ns, ns, 4)
                objs: list[dict] = [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}]
                if method == "kueue":  # both arms get their namespace untimed; this one its LocalQueue too
                    data = yaml.safe_load(infra.read_text())
                    data["launch"]["queue"] = "bench"
                    infra.write_text(yaml.safe_dump(data))
                    objs.append({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "LocalQueue",
                                 "metadata": {"name": "bench", "namespace": ns},
                                 "spec": {"clusterQueue": "playground"}})
                subprocess.run([kubectl, "--kubeconfig", pg.kubeconfig, "apply", "-f", "-"], check=True,
                               input=yaml.safe_dump_all(objs), text=True, capture_output=True)
                t0 = time.perf_counter()
                subprocess.run([*CLI, "run", str(RECIPE), str(infra), *overrides, "--wait", "--quiet",
                                "--create-namespace", "--kubeconfig", pg.kubeconfig, "--timeout", "600"],
                               env=ENV, check=True, capture_output=True)
                times[method].append(time.perf_counter() - t0)
                delete_namespace(pg, ns)
        label = "2 GPU nodes × 8 GPUs (16 in the quota), 4 sandbox replicas"
        report.append(f"| {label} | {fmt_s(times['kueue'])} | {fmt_s(times['plain'])} | "
                      f"{ratio(times['kueue'], times['plain'])} |")
        figures["kueue ratio"] = statistics.median(times["kueue"]) / statistics.median(times["plain"])
    finally:
        pg.down()
    report.append("")


def status_cost(pg: BenchPlayground, namespace: str, repeat: int) -> tuple[list[float], int]:
    wall = timed([*CLI, "status", "grpo-swe", "-n", namespace, "--kubeconfig", pg.kubeconfig], repeat)
    # Count the requests of one call in-process: every API call goes through Kube.api.call_api.
    from generator.cli import main
    from generator.live.client import kube as kube_mod

    made: list = []
    original = kube_mod.Kube.__init__

    def recording(self, *a, **kw):
        original(self, *a, **kw)
        made.append(self)

    kube_mod.Kube.__init__ = recording
    try:
        import contextlib
        import io

        with contextlib.redirect_stdout(io.StringIO()):
            main(["status", "grpo-swe", "-n", namespace, "--kubeconfig", pg.kubeconfig])
    finally:
        kube_mod.Kube.__init__ = original
    return wall, sum(k.calls for k in made)
