"""`make bench`: the launcher's own cost, side by side with plain helm and kubeconform, in one run.

Prints a markdown report and writes it to docs/benchmarks.md. Not a test: nothing here asserts.
Usage: python bench/run.py [--repeat N] [--no-live] [--out FILE]
"""

from __future__ import annotations

import argparse
import os
import re
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
from live_costs import kueue_overhead, live  # noqa: E402  (bench/live_costs.py: run --wait, Kueue, status)
from timing import CLI, ENV, INFRA, PY, RECIPE, fmt, interleaved, loadavg, machine, med_ms, row, timed  # noqa: E402

from generator.pinned_tools import CHART_DIR, binary, versions  # noqa: E402


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
