"""`make bench`: the launcher's own cost, side by side with plain helm and kubeconform, in one run.

Prints a markdown report and writes it to docs/benchmarks.md. Not a test: nothing here asserts.
Usage: python bench/run.py [--repeat N] [--no-live] [--out FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from generator.tools import CHART_DIR, binary, versions  # noqa: E402

PY = sys.executable
CLI = [PY, "-m", "generator"]
RECIPE = REPO / "values-examples" / "grpo_swe.yaml"
INFRA = REPO / "values-examples" / "grpo_swe.infra.yaml"
ENV = dict(os.environ, PYTHONDONTWRITEBYTECODE="1")


def timed(cmd: list[str] | str, repeat: int, shell: bool = False, check: bool = True) -> list[float]:
    """Wall seconds of `repeat` runs (after one warm-up)."""
    subprocess.run(cmd, shell=shell, env=ENV, capture_output=True, check=check)
    out = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        subprocess.run(cmd, shell=shell, env=ENV, capture_output=True, check=check)
        out.append(time.perf_counter() - t0)
    return out


def fmt(samples: list[float]) -> str:
    return f"{statistics.median(samples) * 1000:.0f} ms ({min(samples) * 1000:.0f}–{max(samples) * 1000:.0f})"


def fmt_s(samples: list[float]) -> str:
    return f"{statistics.median(samples):.1f} s ({min(samples):.1f}–{max(samples):.1f})"


def ratio(a: list[float], b: list[float]) -> str:
    return f"{statistics.median(a) / statistics.median(b):.2f}×"


def machine() -> str:
    cpu = next((ln.split(":", 1)[1].strip() for ln in Path("/proc/cpuinfo").read_text().splitlines()
                if ln.startswith("model name")), platform.processor())
    mem = next(int(ln.split()[1]) for ln in Path("/proc/meminfo").read_text().splitlines() if ln.startswith("MemTotal"))
    v = versions()
    return (f"{os.cpu_count()} cores ({cpu}), {mem / 1024 / 1024:.0f} GiB, Python {platform.python_version()}, "
            f"helm {v['HELM_VERSION']}, kubeconform {v['KUBECONFORM_VERSION']}, Kubernetes {v['KUBERNETES_VERSION']}, "
            f"KubeRay {v['KUBERAY_VERSION']}")


def plain_pipeline(values: Path, release: str, namespace: str) -> tuple[str, str]:
    """The same work without the launcher: helm template | kubeconform -strict, and helm template alone."""
    from generator import kubeconform

    core, crds = kubeconform.core_schemas(), kubeconform.crd_schemas()
    helm = (f"{binary('helm')} template {release} {CHART_DIR} -n {namespace} -f {values} "
            f"--kube-version {versions()['KUBERNETES_VERSION']}")
    kc = (f"{binary('kubeconform')} -strict -summary -kubernetes-version {kubeconform.kube_minor().lstrip('v')} "
          f"-schema-location '{core}/{{{{ .ResourceKind }}}}{{{{ .KindSuffix }}}}.json' "
          f"-schema-location '{crds}/{{{{ .ResourceKind }}}}-{{{{ .Group }}}}-{{{{ .ResourceAPIVersion }}}}.json' -")
    return f"{helm} | {kc}", f"{helm} --skip-tests"


def import_profile() -> list[tuple[str, float]]:
    proc = subprocess.run([PY, "-X", "importtime", "-m", "generator", "values", str(RECIPE), str(INFRA)],
                          env=ENV, capture_output=True, text=True, check=True)
    rows = []
    for line in proc.stderr.splitlines():
        m = re.match(r"import time:\s+(\d+) \|\s+(\d+) \|( *)(\S+)", line)
        if m and len(m.group(3)) <= 2:  # top-level and first-level imports
            rows.append((m.group(4), int(m.group(2)) / 1e6))
    return sorted(rows, key=lambda r: -r[1])[:6]


def import_costs() -> list[tuple[str, str, float]]:
    """Cumulative import time of the heavy dependencies, each in a fresh interpreter (median of 3)."""
    rows = []
    for module, why in (
        ("generator.models", "pydantic + the input/values models (`values`, `render`, `check`, `run`)"),
        ("kubernetes", "the official client's package import (every live verb)"),
        ("kubernetes.client.api.core_v1_api", "one typed API module and its pydantic models (no longer on the status/run path)"),
        ("pyhelm3", "pyhelm3 (`run`, `rollback`, `uninstall`)"),
    ):
        samples = []
        for _ in range(3):
            proc = subprocess.run([PY, "-X", "importtime", "-c", f"import {module}"], env=ENV, capture_output=True, text=True)
            last = [ln for ln in proc.stderr.splitlines() if ln.rstrip().endswith(f"| {module}")]
            if last:
                samples.append(int(last[-1].split("|")[1]) / 1e6)
        if samples:
            rows.append((module, why, statistics.median(samples)))
    return rows


def offline(repeat: int, report: list[str], tmp: Path, figures: dict[str, float]) -> None:
    report += ["## Start-up", "", "| command | median (min–max) |", "| --- | --- |"]
    base = timed([PY, "-c", "pass"], repeat)
    helpt = timed([*CLI, "--help"], repeat)
    values = timed([*CLI, "values", str(RECIPE), str(INFRA)], repeat)
    figures["values"] = statistics.median(values)
    report += [f"| `python -c pass` | {fmt(base)} |", f"| `dockyard-k8s --help` | {fmt(helpt)} |",
               f"| `dockyard-k8s values` (grpo_swe) | {fmt(values)} |", ""]
    report += ["Heaviest imports of `values` (cumulative, `python -X importtime`): " +
               ", ".join(f"`{name}` {secs * 1000:.0f} ms" for name, secs in import_profile()), ""]

    vfile = tmp / "values.yaml"
    subprocess.run([*CLI, "values", str(RECIPE), str(INFRA), "-o", str(vfile)], env=ENV, check=True)
    check_cmd, template_cmd = plain_pipeline(vfile, "grpo-swe", "dockyard")
    plain_check = timed(check_cmd, repeat, shell=True)
    ours_check = timed([*CLI, "check", str(RECIPE), str(INFRA)], repeat)
    plain_tpl = timed(template_cmd, repeat, shell=True)
    ours_render = timed([*CLI, "render", str(RECIPE), str(INFRA)], repeat)
    figures["check"] = statistics.median(ours_check) / statistics.median(plain_check)
    report += ["## Offline path (same values, measured side by side)", "",
               "| launcher | median | plain tools | median | ratio |", "| --- | --- | --- | --- | --- |",
               f"| `dockyard-k8s check` | {fmt(ours_check)} | `helm template \\| kubeconform -strict` | {fmt(plain_check)} | {ratio(ours_check, plain_check)} |",
               f"| `dockyard-k8s render` | {fmt(ours_render)} | `helm template` | {fmt(plain_tpl)} | {ratio(ours_render, plain_tpl)} |",
               "", "Targets: `check` ≤ 1.3× the plain pipeline; `values` ≤ 0.3 s.", ""]

    report += ["## Growth", "",
               "The chart has exactly two worker groups by design (`trainer`, `inference`), so the group axis is "
               "measured as GPU worker pods per group; sandbox replicas on the other axis.", "",
               "| shape | render | check |", "| --- | --- | --- |"]
    for label, overrides, infra_over in (
        *[(f"{n} worker pods per group", [f"cluster.trainer.nodes={n}", f"cluster.inference.nodes={n}"], None) for n in (2, 8, 32, 64)],
        *[(f"{r} sandbox replicas", [], r) for r in (1, 100, 1000)],
    ):
        infra = INFRA
        if infra_over is not None:
            import yaml

            data = yaml.safe_load(INFRA.read_text())
            data["sandbox"]["replicas"] = infra_over
            infra = tmp / f"replicas-{infra_over}.infra.yaml"
            infra.write_text(yaml.safe_dump(data))
        r = timed([*CLI, "render", str(RECIPE), str(infra), *overrides], repeat)
        c = timed([*CLI, "check", str(RECIPE), str(infra), *overrides], repeat)
        report.append(f"| {label} | {fmt(r)} | {fmt(c)} |")
    report.append("")


class BenchPlayground:
    """A playground of its own (own state folder), stopped at the end."""

    def __init__(self, gpu_nodes: int, cpu_nodes: int):
        self.dir = Path(tempfile.mkdtemp(prefix="dockyard-bench-pg-"))
        subprocess.run([*CLI, "playground", "up", "--state-dir", str(self.dir), "--gpu-nodes", str(gpu_nodes),
                        "--cpu-nodes", str(cpu_nodes), "--timeout", "300"], env=ENV, check=True, capture_output=True)
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
    subprocess.run([binary("helm"), "upgrade", "--install", release, str(CHART_DIR), "-n", namespace, "--create-namespace",
                    "-f", str(values), "--wait", "--timeout", f"{timeout}s", *kc], check=True, capture_output=True, env=ENV)
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
               "`run --wait` to all-ready against `helm upgrade --install --wait` followed by `kubectl wait` for the "
               "RayJob's RayCluster to be `ready`; a fresh namespace per trial.", "",
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
                        subprocess.run([*CLI, "values", str(RECIPE), str(infra), *overrides, "-o", str(values)], env=ENV, check=True)
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


def status_cost(pg: BenchPlayground, namespace: str, repeat: int) -> tuple[list[float], int]:
    wall = timed([*CLI, "status", "grpo-swe", "-n", namespace, "--kubeconfig", pg.kubeconfig], repeat)
    # Count the requests of one call in-process: every API call goes through Kube.api.call_api.
    from generator.cli import main
    from generator.live import kube as kube_mod

    made: list = []
    original = kube_mod.Kube.__init__

    def recording(self, *a, **kw):  # type: ignore[no-untyped-def]
        original(self, *a, **kw)
        made.append(self)

    kube_mod.Kube.__init__ = recording  # type: ignore[method-assign]
    try:
        import contextlib
        import io

        with contextlib.redirect_stdout(io.StringIO()):
            main(["status", "grpo-swe", "-n", namespace, "--kubeconfig", pg.kubeconfig])
    finally:
        kube_mod.Kube.__init__ = original  # type: ignore[method-assign]
    return wall, sum(k.calls for k in made)


def targets(figures: dict[str, float]) -> list[str]:
    """Which targets this run met, and by how much."""
    rows = [("`values` ≤ 0.3 s", figures.get("values"), 0.3, lambda v: f"{v * 1000:.0f} ms"),
            ("`check` ≤ 1.3× the plain pipeline", figures.get("check"), 1.3, lambda v: f"{v:.2f}×")]
    rows += [(f"`run --wait` ({key.split(' ', 1)[1]}) ≤ 1.1× helm + kubectl wait", value, 1.1, lambda v: f"{v:.2f}×")
             for key, value in figures.items() if key.startswith("run ")]
    out = ["## Targets", "", "| target | this run | |", "| --- | --- | --- |"]
    for name, value, limit, show in rows:
        if value is None:
            continue
        verdict = "met" if value <= limit else f"missed by {(value / limit - 1) * 100:.1f}%"
        out.append(f"| {name} | {show(value)} | {verdict} |")
    return out + [""]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--live-repeat", type=int, default=3)
    ap.add_argument("--no-live", action="store_true")
    ap.add_argument("--out", default=str(REPO / "docs" / "benchmarks.md"))
    args = ap.parse_args()
    report = ["# Benchmarks", "", f"Generated by `make bench` on {time.strftime('%Y-%m-%d')}: {machine()}.",
              f"Median and min–max of {args.repeat} runs after a warm-up (live: {args.live_repeat} trials); "
              "every ratio compares two commands measured side by side in the same run.", ""]
    figures: dict[str, float] = {}
    with tempfile.TemporaryDirectory(prefix="dockyard-bench-") as tmp:
        offline(args.repeat, report, Path(tmp), figures)
        if not args.no_live:
            live(args.live_repeat, report, Path(tmp), figures)
    report += targets(figures)
    report += ["## Where the time goes", "", "Import cost of the heavy dependencies (cumulative, `python -X importtime`, "
               "fresh interpreter each):", "", "| import | what needs it | time |", "| --- | --- | --- |"]
    report += [f"| `{m}` | {why} | {secs * 1000:.0f} ms |" for m, why, secs in import_costs()]
    notes = REPO / "bench" / "where-the-time-goes.md"
    if notes.is_file():
        report += ["", notes.read_text().strip(), ""]
    text = "\n".join(report) + "\n"
    print(text)
    Path(args.out).write_text(text)
    print(f"wrote {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
