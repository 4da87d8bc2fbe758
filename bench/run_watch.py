"""`make bench`'s run-watch section: what the run watcher costs and what its stall guard saves (real node).

On the real node with the project's Ray image (2 fake GPUs; the Ray test shape), the job of
tests/live/stall_job.py runs with `launch.watch.stallTimeoutSeconds` at the floor (30 s), `launch.backoffLimit: 1`,
a checkpoint and a logs claim. Its first attempt reports steps 0-2 and hangs; the guard ends it; KubeRay's retry
resumes at step 3. While the first attempt hangs, `status` with its progress line and `status --no-progress` run
side by side (interleaved), with `kubectl get rayjob,raycluster,pods -l <release>` beside them; the watcher's
process on the head is read from /proc (the real node's containers are processes of this host). The figures:

- from the hang (the last report) to the retry's first report, from the kept progress records' own clock;
- status's added cost for the progress line: the ratio of the two `status` runs;
- what the watcher costs the head: its peak RSS and its CPU over its life.

Every address dialed is loopback (the apiserver) or inside the node's network namespace (pods, Services).
"""

from __future__ import annotations

import os
import statistics
import subprocess
import time
import uuid
from pathlib import Path

import yaml
from resume import CLI, INFRA, RECIPE, REPO, SHAPE  # the real-Ray shape; it puts tests/live on the path too

STALL = 30


def _watcher_pid() -> int | None:
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            cmd = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if len(cmd) > 1 and cmd[1].endswith(b"run_watch.py") and b"--stall-timeout" in cmd:
            return int(pid)
    return None


def _watcher_cost(pid: int) -> tuple[float, float]:
    """(peak RSS in MiB, CPU seconds per hour of its life) of the watcher process."""
    hz = os.sysconf("SC_CLK_TCK")
    rss = next(int(line.split()[1]) for line in Path(f"/proc/{pid}/status").read_text().splitlines()
               if line.startswith("VmHWM:")) / 1024
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    cpu = (int(fields[11]) + int(fields[12])) / hz  # utime, stime
    started = int(fields[19]) / hz
    uptime = float(Path("/proc/uptime").read_text().split()[0])
    return rss, cpu / max(uptime - started, 1e-3) * 3600


def _status_side_by_side(kubeconfig: str, ns: str, rounds: int) -> dict[str, list[float]]:
    from generator.pinned_tools import binary

    kubectl = binary("kubectl", "kubernetes")
    cmds = {
        "status": [*CLI, "status", "grpo-swe", "-n", ns, "--kubeconfig", kubeconfig],
        "status --no-progress": [*CLI, "status", "grpo-swe", "-n", ns, "--kubeconfig", kubeconfig, "--no-progress"],
        "kubectl get": [kubectl, "--kubeconfig", kubeconfig, "-n", ns, "get", "rayjob,raycluster,pods", "-l",
                        "app.kubernetes.io/instance=grpo-swe"],
    }
    out: dict[str, list[float]] = {name: [] for name in cmds}
    names = list(cmds)
    # as an installed package runs: its modules' bytecode cached (the warm-up round writes it), not compiled anew
    # by every process as under PYTHONDONTWRITEBYTECODE
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    for r in range(rounds + 1):
        for name in names[r % 3:] + names[:r % 3]:
            t0 = time.perf_counter()
            subprocess.run(cmds[name], check=True, capture_output=True, cwd=REPO, env=env)
            if r:  # the first round warms up
                out[name].append(time.perf_counter() - t0)
    return out


def _one(state_dir: Path, kubeconfig: str, infra: Path, status_rounds: int) -> dict:
    import stall_job

    ns = f"bench-stall-{uuid.uuid4().hex[:6]}"
    run = subprocess.Popen([*CLI, "run", str(RECIPE), str(infra), *SHAPE, stall_job.entrypoint_override(1), "-n",
                            ns, "--create-namespace", "--follow", "--kubeconfig", kubeconfig, "--timeout", "900",
                            "-q"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=REPO)
    timings, cost = None, None
    deadline = time.monotonic() + 600
    while time.monotonic() < deadline and timings is None:
        status = subprocess.run([*CLI, "status", "grpo-swe", "-n", ns, "--kubeconfig", kubeconfig],
                                capture_output=True, text=True, cwd=REPO).stdout
        if "step 2 of 6" in status:  # the first attempt hangs now: STALL s to measure in
            pid = _watcher_pid()
            timings = _status_side_by_side(kubeconfig, ns, status_rounds)
            cost = _watcher_cost(pid) if pid else None
        time.sleep(1)
    out, err = run.communicate(timeout=900)
    if run.returncode != 0:
        raise SystemExit(f"the stalled run did not resume and succeed:\n{out}{err}")
    (_, first), (_, second) = stall_job.kept_records(state_dir, ns)
    last = [r for r in first if "step" in r][-1]
    resumed = [r for r in second if "step" in r][0]
    subprocess.run([*CLI, "uninstall", "grpo-swe", "-n", ns, "--kubeconfig", kubeconfig, "--timeout", "300"],
                   check=True, capture_output=True, cwd=REPO)
    return {"hang_to_retry": resumed["t"] - last["t"], "timings": timings, "cost": cost}


def section(rounds: int, report: list[str], tmp: Path, status_rounds: int = 7) -> None:
    import stall_job
    from real_node_session import real_node_playground

    from generator.pinned_tools import REPO as TOOLS_REPO

    subprocess.run(["bash", str(TOOLS_REPO / "hack" / "tools.sh"), "ray-image", "device-plugin"], check=True)
    doc = yaml.safe_load(INFRA.read_text())
    stall_job.guarded(doc, STALL)
    infra = tmp / "stall.infra.yaml"
    infra.write_text(yaml.safe_dump(doc, sort_keys=False))
    runs = []
    with real_node_playground("real-ray-", timeout=300, env={"DOCKYARD_REAL_NODE_GPUS": "2"}) as (state_dir, _s, _b):
        kubeconfig = str(state_dir / "kubeconfig")
        for _ in range(rounds):
            runs.append(_one(state_dir, kubeconfig, infra, status_rounds))

    def fig(xs: list[float], unit: str = "s", scale: float = 1.0, digits: int = 1) -> str:
        xs = [x * scale for x in xs]
        return f"{statistics.median(xs):.{digits}f} {unit} ({min(xs):.{digits}f}–{max(xs):.{digits}f})"

    timing = runs[0]["timings"] or {}
    costs = [r["cost"] for r in runs if r["cost"]]
    med = {k: statistics.median(v) for k, v in timing.items()}
    report += ["## The run watcher: a hang ended and resumed, status's progress line, the guard's cost (real node)", "",
               (f"{rounds} runs, each in a namespace of its own, of the job in `tests/live/stall_job.py` with "
                f"`launch.watch.stallTimeoutSeconds: {STALL}` (the floor), `launch.backoffLimit: 1`, a checkpoint and "
                "a logs claim (1Gi, ReadWriteMany, `local-path-rwx`); the Ray test shape (head + 1 trainer + 1 "
                "inference worker, 1 fake GPU each, HTTPMode). The first attempt reports steps 0–2 and hangs; the "
                "guard ends it; the retry resumes at step 3."), "",
               "| figure | median (min–max) |", "| --- | --- |",
               (f"| the hang (the last report) → the retry's first report (the kept records' clock; the guard's "
                f"{STALL} s included) | {fig([r['hang_to_retry'] for r in runs])} |")]
    if timing:
        report += [
            (f"| `status` with its progress line (interleaved, {status_rounds} each, first run) | "
            f"{fig(timing['status'], 'ms', 1000, 0)} |"),
            f"| `status --no-progress` | {fig(timing['status --no-progress'], 'ms', 1000, 0)} |",
            f"| `kubectl get rayjob,raycluster,pods -l <release>` | {fig(timing['kubectl get'], 'ms', 1000, 0)} |",
            (f"| the progress line's added cost (status ÷ status --no-progress) | "
            f"{med['status'] / med['status --no-progress']:.2f}× |"),
            f"| `status` ÷ `kubectl get` (the target is ≤ 1.5×) | {med['status'] / med['kubectl get']:.2f}× |"]
    if costs:
        report += [f"| the watcher on the head: peak RSS | {fig([c[0] for c in costs], 'MiB')} |",
                   f"| the watcher on the head: CPU per hour of its life | {fig([c[1] for c in costs], 's')} |"]
    report += ["", ("The hang-to-retry time is the guard's timeout plus KubeRay's retry: the failed job noticed "
                    "through the dashboard, the old RayCluster deleted, a new one Ready, the job submitted again "
                    "and its first step. The watcher runs in the head's container, inside its requests."), ""]
