"""`make bench`'s resume section: what a RayJob's retry costs when it resumes from the checkpoint volume.

On the real node with the project's Ray image (2 fake GPUs; the Ray test shape), the job of
tests/live/resume_job.py runs with `launch.backoffLimit: 1` and a checkpoint claim of the real node's
local-path-provisioner: its first attempt fails after step FAIL_AFTER, KubeRay deletes that RayCluster and runs
the job again on a new one, which finds the step and goes on. The figure is the time from the failed attempt's
last step (it exits right after) to the retry's first step, read from the step files' own timestamps.

Every address dialed is loopback (the apiserver) or inside the node's network namespace (pods, Services).
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import time
import uuid
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests" / "live"))  # the real node's turn (real_node_session) and the job (resume_job)

RECIPE = REPO / "values-examples" / "grpo_swe.yaml"
INFRA = REPO / "values-examples" / "grpo_swe_playground.infra.yaml"
SHAPE = ["cluster.trainer.nodes=1", "cluster.trainer.gpusPerNode=1", "cluster.inference.gpusPerNode=1"]
CLI = [sys.executable, "-m", "generator"]


def _run(kubeconfig: str, infra: Path, ns: str) -> float:
    """One resumed run in namespace `ns`: its wall time (`run --follow`), after which the release is removed."""
    import resume_job

    t0 = time.monotonic()
    subprocess.run([*CLI, "run", str(RECIPE), str(infra), *SHAPE, resume_job.entrypoint_override(), "-n", ns,
                    "--create-namespace", "--follow", "--kubeconfig", kubeconfig, "--timeout", "900", "-q"],
                   check=True, capture_output=True, cwd=REPO)
    took = time.monotonic() - t0
    subprocess.run([*CLI, "uninstall", "grpo-swe", "-n", ns, "--kubeconfig", kubeconfig, "--timeout", "300"],
                   check=True, capture_output=True, cwd=REPO)
    return took


def section(rounds: int, report: list[str], tmp: Path) -> None:
    import resume_job
    from real_node_session import real_node_playground

    from generator.pinned_tools import REPO as TOOLS_REPO

    subprocess.run(["bash", str(TOOLS_REPO / "hack" / "tools.sh"), "ray-image", "device-plugin"], check=True)
    doc = yaml.safe_load(INFRA.read_text())
    resume_job.retried(doc, checkpoints=True)
    infra = tmp / "resume.infra.yaml"
    infra.write_text(yaml.safe_dump(doc, sort_keys=False))
    resumes, walls = [], []
    with real_node_playground("real-ray-", timeout=300, env={"DOCKYARD_REAL_NODE_GPUS": "2"}) as (state_dir, _s, _b):
        kubeconfig = str(state_dir / "kubeconfig")
        for _ in range(rounds):
            ns = f"bench-resume-{uuid.uuid4().hex[:6]}"
            walls.append(_run(kubeconfig, infra, ns))
            resumes.append(resume_job.resume_seconds(resume_job.step_files(state_dir, ns)))

    def fig(xs: list[float]) -> str:
        return f"{statistics.median(xs):.1f} s ({min(xs):.1f}–{max(xs):.1f})"

    report += ["## Resume after a failed attempt (real node, real KubeRay and Ray)", "",
               (f"{rounds} runs, each in a namespace of its own, of the job in `tests/live/resume_job.py` with "
                "`launch.backoffLimit: 1` and `infra.storage.checkpoints` (1Gi, ReadWriteMany, the real node's "
                "`local-path-rwx` class of local-path-provisioner), mounted on the head and both worker groups; the "
                "Ray test shape (head + 1 trainer + 1 inference worker, 1 fake GPU each, HTTPMode). The first attempt "
                f"writes steps 0–{resume_job.FAIL_AFTER} and exits 1; KubeRay deletes its RayCluster and runs the job "
                f"again on a new one, which finds step {resume_job.FAIL_AFTER} and writes "
                f"{resume_job.FAIL_AFTER + 1}–{resume_job.STEPS - 1}."), "",
               "| figure | median (min–max) |", "| --- | --- |",
               f"| the failed attempt's exit → the retry's first step (step files' timestamps) | {fig(resumes)} |",
               f"| the whole `run --follow` (install, both attempts, the end) | {fig(walls)} |", "",
               ("The resume's cost is KubeRay's: the failure noticed through the dashboard, the old RayCluster "
                "deleted (its pods' grace period), a new one created and its head and workers Ready, the job "
                "submitted again. Nothing is copied: the retry mounts the same claim."), ""]
