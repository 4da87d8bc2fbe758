"""The job a retry resumes (tests/live/test_real_ray_storage.py's proof and `make bench`'s resume cost): one file per
step in $DOCKYARD_CHECKPOINT_DIR, written aside then renamed (as NeMo-RL writes tmp_step_N), each holding when and
where (the head pod: the driver runs there in HTTPMode) it was written, and a progress report per step (the run
watcher's DOCKYARD_PROGRESS line, docs/run-watch.md). Started from step 0 it runs a task on a trainer pod that
prints TRAINER_LINE (into that pod's Ray logs), then fails after step FAIL_AFTER with a traceback: the first
attempt fails, and so does any attempt that lost the checkpoints; an attempt that finds step N goes on from N+1
to the end."""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

STEPS, FAIL_AFTER = 6, 2
TRAINER_LINE = "dockyard-resume: the first attempt's trainer task was here"  # printed on a trainer pod, by Ray
NO_CHECKPOINTS = "/tmp/dockyard-no-checkpoints"  # where it writes without DOCKYARD_CHECKPOINT_DIR: the pod's own disk
CODE = f"""
import json, os, socket, sys, time
d = os.environ.get("DOCKYARD_CHECKPOINT_DIR") or "{NO_CHECKPOINTS}"
os.makedirs(d, exist_ok=True)
done = sorted(int(n.split("_")[1]) for n in os.listdir(d) if n.startswith("step_"))
start = done[-1] + 1 if done else 0
print("dockyard-resume: start at step", start, "in", d, "on", socket.gethostname(), flush=True)
for step in range(start, {STEPS}):
    with open(os.path.join(d, "tmp_step_%d" % step), "w") as fh:
        fh.write("%f %s" % (time.time(), socket.gethostname()))
    os.rename(os.path.join(d, "tmp_step_%d" % step), os.path.join(d, "step_%d" % step))
    print("dockyard-step", step, flush=True)
    print("DOCKYARD_PROGRESS", json.dumps({{"step": step, "total": {STEPS}, "checkpoint": step}}), flush=True)
    if start == 0 and step == {FAIL_AFTER}:
        import ray
        ray.init()
        @ray.remote(num_cpus=0, resources={{"dockyard_fleet_trainer": 0.001}})
        def say():
            print("{TRAINER_LINE}", flush=True)
        ray.get(say.remote(), timeout=300)
        print("dockyard-resume: failing on purpose after step", step, flush=True)
        raise RuntimeError("dockyard-resume: the first attempt fails here")
print("dockyard-resume: done", flush=True)
"""


def entrypoint_override() -> str:
    """The recipe override that makes it the job's entrypoint (base64: no quote or space for the shell to read)."""
    code = base64.b64encode(CODE.encode()).decode()
    return f"""entrypoint=python3 -c "import base64; exec(base64.b64decode('{code}'))\""""


def retried(doc: dict[str, Any], checkpoints: bool) -> None:
    """The playground infra with one retry (launch.backoffLimit: 1) and, with `checkpoints`, a checkpoint claim on
    the head and both worker groups (the default mountOn): ReadWriteMany, the real node's local-path-rwx class."""
    doc["launch"]["backoffLimit"] = 1
    # The dashboard (through which the operator submits the job) gives each of its modules 30 s to start; on 2
    # cores shared with other sessions' builds one missed it once and the head never got Ready. Each attempt
    # starts a new head here, so each gets more time.
    head = doc["kuberay"]["spec"]["headGroupSpec"]
    head.setdefault("template", {}).setdefault("spec", {})["containers"] = [
        {"env": [{"name": "RAY_DASHBOARD_SUBPROCESS_MODULE_WAIT_READY_TIMEOUT", "value": "180"}]}]
    if checkpoints:
        doc["infra"]["storage"] = {"checkpoints": {"size": "1Gi", "storageClassName": "local-path-rwx",
                                                   "accessModes": ["ReadWriteMany"]}}


def keeps_logs(doc: dict[str, Any]) -> None:
    """The logs volume too (infra.storage.logs, the same class), where the run watcher keeps each attempt's
    driver log."""
    doc["infra"]["storage"]["logs"] = dict(doc["infra"]["storage"]["checkpoints"])


def claim_dir(state_dir: Path, ns: str, claim: str) -> Path:
    """The host directory of claim `claim` in namespace `ns`, as the real node's local-path-rwx provisioner made it."""
    (vol,) = [p for p in (state_dir / "node" / "local-path-rwx").iterdir() if p.name.endswith(f"_{ns}_{claim}")]
    return vol


def step_files(state_dir: Path, ns: str, release: str = "grpo-swe") -> dict[int, tuple[float, str]]:
    """step -> (when, head pod) of the checkpoint files on the host, in the provisioner's directory of the claim."""
    vol = claim_dir(state_dir, ns, f"{release}-checkpoints")
    out = {}
    for f in vol.glob("step_*"):
        when, host = f.read_text().split()
        out[int(f.name.split("_")[1])] = (float(when), host)
    return out


def resume_seconds(steps: dict[int, tuple[float, str]]) -> float:
    """From the failed attempt's last step (it exits right after) to the retry's first step."""
    return steps[FAIL_AFTER + 1][0] - steps[FAIL_AFTER][0]
