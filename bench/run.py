"""`make bench`: the launcher's own cost, side by side with plain helm and kubeconform, in one run.

Prints a markdown report and writes it to docs/benchmarks.md. Not a test: nothing here asserts.
Usage: python bench/run.py [--repeat N] [--no-live] [--out FILE]
"""

from __future__ import annotations

import argparse
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

import agent_sandbox  # noqa: E402  (bench/agent_sandbox.py: agent-sandbox against the pool, real node)
import real_node  # noqa: E402  (bench/real_node.py: the real node's section)
import resume  # noqa: E402  (bench/resume.py: a retry's resume from the checkpoint volume)
import run_watch  # noqa: E402  (bench/run_watch.py: the stall guard's hang-to-retry, status's progress line)
import topology  # noqa: E402  (bench/topology.py: Kueue's admission of a topology-placed gang)

from generator.tools import CHART_DIR, binary, versions  # noqa: E402

PY = sys.executable
# The installed console script, as a user runs it (`python -m generator` adds runpy's ~5 ms).
SCRIPT = Path(PY).parent / "dockyard-k8s"
CLI = [str(SCRIPT)] if SCRIPT.exists() else [PY, "-m", "generator"]
RECIPE = REPO / "values-examples" / "grpo_swe.yaml"
INFRA = REPO / "values-examples" / "grpo_swe.infra.yaml"
# Bytecode cached as an installed package has it (pip compiles at install), but outside the tree:
# with PYTHONDONTWRITEBYTECODE every run would compile the generator's modules again (~20 ms).
ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
ENV["PYTHONPYCACHEPREFIX"] = os.path.join(tempfile.gettempdir(), f"dockyard-bench-pycache-{os.getuid()}")


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
    from generator.render import kubeconform

    core, crds = kubeconform.core_schemas(), kubeconform.crd_schemas()
    helm = (f"{binary('helm')} template {release} {CHART_DIR} -n {namespace} -f {values} "
            f"--kube-version {versions()['KUBERNETES_VERSION']}")
    kc = (f"{binary('kubeconform')} -strict -summary -kubernetes-version {kubeconform.kube_minor().lstrip('v')} "
          f"-schema-location '{core}/{{{{ .ResourceKind }}}}{{{{ .KindSuffix }}}}.json' "
          f"-schema-location '{crds}/{{{{ .ResourceKind }}}}-{{{{ .Group }}}}-{{{{ .ResourceAPIVersion }}}}.json' -")
    return f"{helm} | {kc}", f"{helm} --skip-tests"


def plain_with_api_validation(values: Path, release: str, namespace: str) -> str:
    """helm template, then kubeconform -strict and kube-validate side by side on its output: all that
    `check` runs (kube-validate with the environment `check` gives it)."""
    from generator.render import apivalidate

    pipeline, _ = plain_pipeline(values, release, namespace)
    helm, kc = pipeline.split(" | ", 1)
    kv = f"GOGC=off GOMEMLIMIT=128MiB {binary('kube-validate')} -crds {apivalidate.crd_json()}"
    return f"m=$({helm}); printf '%s' \"$m\" | {kv} >/dev/null & printf '%s' \"$m\" | {kc}; wait"


def import_profile() -> list[tuple[str, float]]:
    proc = subprocess.run([PY, "-X", "importtime", *(CLI[1:] if CLI[0] == PY else CLI), "values", str(RECIPE),
                           str(INFRA)],
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
        ("generator.inputs.models",
         "pydantic + the input/values models (`run`; `values`, `render`, `check` only to explain a refusal)"),
        ("kubernetes", "the official client's package import (every live verb)"),
        ("kubernetes.client.api.core_v1_api",
         "one typed API module and its pydantic models (no longer on the status/run path)"),
        ("pyhelm3", "pyhelm3 (`run`, `rollback`, `uninstall`)"),
    ):
        samples = []
        for _ in range(3):
            proc = subprocess.run([PY, "-X", "importtime", "-c", f"import {module}"], env=ENV, capture_output=True,
                                  text=True)
            last = [ln for ln in proc.stderr.splitlines() if ln.rstrip().endswith(f"| {module}")]
            if last:
                samples.append(int(last[-1].split("|")[1]) / 1e6)
        if samples:
            rows.append((module, why, statistics.median(samples)))
    return rows


class Sample:
    """Wall seconds, CPU seconds (user + system, every process) and the peak RSS of the largest
    process (KiB), from wait4()."""

    def __init__(self) -> None:
        self.wall: list[float] = []
        self.cpu: list[float] = []
        self.rss: list[int] = []


def run_once(cmd: list[str] | str, shell: bool, env: dict[str, str], sample: Sample | None) -> None:
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, shell=shell, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    err = proc.stderr.read().decode() if proc.stderr else ""
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise SystemExit(f"{cmd!r} failed ({proc.returncode}): {err}")
    if sample is not None:  # children's usage includes their own waited-for children (helm, kubeconform, ...)
        sample.wall.append(wall)
        sample.cpu.append(usage.ru_utime + usage.ru_stime)
        sample.rss.append(usage.ru_maxrss)


def interleaved(cmds: dict[str, tuple[list[str] | str, bool, dict[str, str]]], rounds: int) -> dict[str, Sample]:
    """Every command once per round, in a rotating order, after one warm-up round: drift in the
    machine's load (other builds and tests share it) hits every command alike."""
    out = {name: Sample() for name in cmds}
    names = list(cmds)
    for r in range(rounds + 1):
        order = names[r % len(names):] + names[: r % len(names)]
        for name in order:
            cmd, shell, env = cmds[name]
            run_once(cmd, shell, env, out[name] if r else None)
    return out


def loadavg() -> str:
    return ", ".join(Path("/proc/loadavg").read_text().split()[:3])


def med_ms(samples: list[float]) -> float:
    return statistics.median(samples) * 1000


def row(s: Sample) -> str:
    return f"{fmt(s.wall)} | {med_ms(s.cpu):.0f} ms | {statistics.median(s.rss) / 1024:.0f} MiB"


def baseline_tree(rev: str, tmp: Path) -> Path:
    """The generator and chart as they were at `rev` (git archive: no worktree, nothing in .git changes)."""
    dest = tmp / "baseline"
    dest.mkdir()
    archive = subprocess.run(["git", "-C", str(REPO), "archive", rev], check=True, capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(dest)], input=archive, check=True)
    return dest


def offline(repeat: int, report: list[str], tmp: Path, figures: dict[str, float], baseline: str | None) -> None:
    vfile = tmp / "values.yaml"
    subprocess.run([*CLI, "values", str(RECIPE), str(INFRA), "-o", str(vfile)], env=ENV, check=True)
    check_cmd, template_cmd = plain_pipeline(vfile, "grpo-swe", "dockyard")
    args = [str(RECIPE), str(INFRA)]
    cmds: dict[str, tuple[list[str] | str, bool, dict[str, str]]] = {
        "python -c pass": ([PY, "-c", "pass"], False, ENV),
        "--help": ([*CLI, "--help"], False, ENV),
        "values": ([*CLI, "values", *args], False, ENV),
        "render": ([*CLI, "render", *args], False, ENV),
        "check": ([*CLI, "check", *args], False, ENV),
        "plain helm template": (template_cmd, True, ENV),
        "plain helm template | kubeconform": (check_cmd, True, ENV),
        "plain helm template | kubeconform + kube-validate": (plain_with_api_validation(vfile, "grpo-swe", "dockyard"),
                                                              True, ENV),
    }
    if baseline:
        old = baseline_tree(baseline, tmp)
        old_env = dict(ENV, PYTHONPATH=str(old))  # its generator (and so its chart) first on sys.path
        old_cli = [PY, "-P", "-c", "import sys; from generator.cli import main; sys.exit(main())"]
        new_cli = [PY, "-P", "-c", "import sys; from generator.cli import main; sys.exit(main())"]
        for verb in ("--help", "values", "render", "check"):
            rest = ["--help"] if verb == "--help" else [verb, *args]
            cmds[f"before: {verb}"] = ([*old_cli, *rest], False, old_env)
            cmds[f"now, same launch: {verb}"] = ([*new_cli, *rest], False, ENV)
    load_before = loadavg()
    got = interleaved(cmds, repeat)
    load_after = loadavg()
    for verb in ("values", "render", "check", "--help"):
        figures[verb] = med_ms(got[verb].wall) / 1000
    figures["check ratio"] = med_ms(got["check"].wall) / med_ms(got["plain helm template | kubeconform"].wall)
    figures["render ratio"] = med_ms(got["render"].wall) / med_ms(got["plain helm template"].wall)

    report += ["## Offline path (same values, measured side by side)", "",
               (f"{repeat} interleaved rounds (every command once per round, rotating order, after a warm-up round); "
                f"load average (1, 5, 15 min) {load_before} before, {load_after} after, on {os.cpu_count()} cores "
                "shared with other builds and tests. CPU is user + system time of every process of the command; "
                "peak RSS is that of its largest process (wait4's ru_maxrss)."), "",
               "| command | wall: median (min–max) | CPU | peak RSS |", "| --- | --- | --- | --- |"]
    for name, label in (("python -c pass", "`python -c pass`"), ("--help", "`dockyard-k8s --help`"),
                        ("values", "`dockyard-k8s values` (grpo_swe)"), ("render", "`dockyard-k8s render`"),
                        ("plain helm template", "plain `helm template`"), ("check", "`dockyard-k8s check`"),
                        ("plain helm template | kubeconform", "plain `helm template \\| kubeconform -strict`"),
                        ("plain helm template | kubeconform + kube-validate",
                         "plain `helm template`, then `kubeconform -strict` and `kube-validate` side by side")):
        report.append(f"| {label} | {row(got[name])} |")
    # every command runs once per round: the per-round pairs line up
    with_api = got["plain helm template | kubeconform + kube-validate"].wall
    pairs = list(zip(got["render"].wall, got["plain helm template"].wall, strict=True))
    cpairs = list(zip(got["check"].wall, got["plain helm template | kubeconform"].wall, strict=True))
    apairs = list(zip(got["check"].wall, with_api, strict=True))
    figures["check ratio with api"] = med_ms(got["check"].wall) / med_ms(with_api)
    report += ["",
               "| ratio | of medians | median of the per-round ratios | target |", "| --- | --- | --- | --- |",
               (f"| `check` / plain `helm template \\| kubeconform -strict` | {figures['check ratio']:.2f}× | "
                f"{statistics.median(c / p for c, p in cpairs):.2f}× | ≤ 1.3× |"),
               ("| `check` / plain `helm template`, then `kubeconform -strict` and `kube-validate` "
                f"(all `check` runs) | {figures['check ratio with api']:.2f}× | "
                f"{statistics.median(c / p for c, p in apairs):.2f}× | — |"),
               (f"| `render` / plain `helm template` | {figures['render ratio']:.2f}× | "
                f"{statistics.median(r / p for r, p in pairs):.2f}× | ≤ 1.5× |"), "",
               ("`check` also runs `kube-validate` (the apiserver's validation) beside kubeconform, which the plain "
                "pipeline of the target does not: the second row compares with a plain pipeline that runs it too. The "
                "plain pipelines are given the values `dockyard-k8s values` wrote, the same Kubernetes version and the "
                "same CRD schemas. The largest process of `render` and `check` is helm, which the launcher runs with "
                "Go's collector off below 128 MiB."), ""]
    if baseline:
        report += [f"### Before and now, side by side (before: `{baseline}`, the tree as it was, run from a copy)", "",
                   ("Both launched as `python -P -c 'from generator.cli import main; main()'` (the same launch for "
                    "both; the console script above saves runpy and nothing else)."), "",
                   "| command | before: wall | CPU | peak RSS | now: wall | CPU | peak RSS | now / before (wall) |",
                   "| --- | --- | --- | --- | --- | --- | --- | --- |"]
        for verb in ("--help", "values", "render", "check"):
            b, n = got[f"before: {verb}"], got[f"now, same launch: {verb}"]
            report.append(f"| `{verb}` | {row(b)} | {row(n)} | {med_ms(n.wall) / med_ms(b.wall):.2f}× |")
            figures[f"before {verb}"] = med_ms(b.wall) / 1000
            figures[f"now {verb}"] = med_ms(n.wall) / 1000
        report.append("")
    report += ["Heaviest imports of `values` (cumulative, `python -X importtime`): " +
               ", ".join(f"`{name}` {secs * 1000:.1f} ms" for name, secs in import_profile()), ""]

    report += ["## Growth", "",
               ("The chart has exactly two worker groups by design (`trainer`, `inference`), so the group axis is "
                "measured as GPU worker pods per group; sandbox replicas on the other axis."), "",
               "| shape | render | check |", "| --- | --- | --- |"]
    for label, overrides, infra_over in (
        *[(f"{n} worker pods per group", [f"cluster.trainer.nodes={n}", f"cluster.inference.nodes={n}"], None)
          for n in (2, 8, 32, 64)],
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
    from generator.live.cluster import kube as kube_mod

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


def targets(figures: dict[str, float]) -> list[str]:
    """Which targets this run met, and by how much."""
    rows = [("`values` ≤ 80 ms", figures.get("values"), 0.08, lambda v: f"{v * 1000:.0f} ms"),
            ("`check` ≤ 1.3× the plain pipeline", figures.get("check ratio"), 1.3, lambda v: f"{v:.2f}×"),
            ("`render` ≤ 1.5× plain `helm template`", figures.get("render ratio"), 1.5, lambda v: f"{v:.2f}×")]
    if "before --help" in figures:
        rows.append(("`--help` unchanged or faster (now / before, side by side)",
                     figures["now --help"] / figures["before --help"], 1.0, lambda v: f"{v:.2f}×"))
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
    ap.add_argument("--offline-rounds", type=int, default=21, help="interleaved rounds of the offline commands")
    ap.add_argument("--baseline", metavar="REV", help="also run the generator as it was at REV, side by side")
    ap.add_argument("--live-repeat", type=int, default=3)
    ap.add_argument("--no-live", action="store_true")
    ap.add_argument("--kueue-only", action="store_true", help="only the Kueue admission section")
    ap.add_argument("--real-node-only", action="store_true",
                    help="only the real node's section (runc vs gVisor, the pool's scaling curve)")
    ap.add_argument("--real-node-rounds", type=int, default=5)
    ap.add_argument("--no-real-node", action="store_true", help="skip the real node's sections (they need root)")
    ap.add_argument("--resume-only", action="store_true",
                    help="only the resume section (a retry resuming from the checkpoint volume, real node)")
    ap.add_argument("--resume-rounds", type=int, default=3)
    ap.add_argument("--run-watch-only", action="store_true",
                    help="only the run watcher's section (a hang ended and resumed, status's progress line, real node)")
    ap.add_argument("--run-watch-rounds", type=int, default=2)
    ap.add_argument("--topology-only", action="store_true",
                    help="only the topology section (Kueue's admission of a placed gang against an unplaced one)")
    ap.add_argument("--topology-rounds", type=int, default=5)
    ap.add_argument("--agent-sandbox-only", action="store_true",
                    help="only the agent-sandbox section (claims against the pool, runc and gVisor, real node)")
    ap.add_argument("--agent-sandbox-rounds", type=int, default=7)
    ap.add_argument("--out", default=str(REPO / "docs" / "benchmarks.md"))
    args = ap.parse_args()
    one = ("--kueue-only" if args.kueue_only else "--real-node-only" if args.real_node_only
           else "--resume-only" if args.resume_only else "--agent-sandbox-only" if args.agent_sandbox_only
           else "--run-watch-only" if args.run_watch_only else "--topology-only" if args.topology_only else None)
    if one and args.out == ap.get_default("out"):
        ap.error(f"{one} writes one section: give --out FILE (it would replace docs/benchmarks.md)")
    report = ["# Benchmarks", "", f"Generated by `make bench` on {time.strftime('%Y-%m-%d')}: {machine()}.",
              (f"Median and min–max of {args.offline_rounds} interleaved rounds offline, {args.repeat} runs after a "
               f"warm-up for growth (live: {args.live_repeat} trials); every ratio compares two commands measured side "
               "by side in the same run."), ""]
    figures: dict[str, float] = {}
    with tempfile.TemporaryDirectory(prefix="dockyard-bench-") as tmp:
        if not one:
            offline(args.offline_rounds, report, Path(tmp), figures, args.baseline)
        if not args.no_live and not one:
            live(args.live_repeat, report, Path(tmp), figures)
        if not args.no_live and one in (None, "--kueue-only"):
            kueue_overhead(args.live_repeat, report, Path(tmp), figures)
        if not args.no_live and one in (None, "--topology-only"):
            topology.section(args.topology_rounds, report, Path(tmp))
        if not args.no_live and one in (None, "--real-node-only") and not args.no_real_node:
            real_node.section(args.real_node_rounds, report, Path(tmp))
        if not args.no_live and one in (None, "--resume-only") and not args.no_real_node:
            resume.section(args.resume_rounds, report, Path(tmp))
        if not args.no_live and one in (None, "--run-watch-only") and not args.no_real_node:
            run_watch.section(args.run_watch_rounds, report, Path(tmp))
        if not args.no_live and one in (None, "--agent-sandbox-only") and not args.no_real_node:
            agent_sandbox.section(args.agent_sandbox_rounds, report, Path(tmp))
    report += targets(figures)
    report += ["## Where the time goes", "",
               ("Import cost of the heavy dependencies (cumulative, `python -X importtime`, "
                "fresh interpreter each):"), "", "| import | what needs it | time |", "| --- | --- | --- |"]
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
