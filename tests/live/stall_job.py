"""The job the stall guard ends (tests/live/test_real_ray_watch.py's proofs, `make bench`'s stall-to-retry time).

Started from step 0 it reports steps 0 to HANG_AFTER (a checkpoint file each, in $DOCKYARD_CHECKPOINT_DIR) and
then hangs: it sleeps on, alive and silent, as a process stuck in an NCCL collective does. An attempt that finds a
checkpoint goes on from the next step to the end, one step every `interval` seconds, and succeeds. Each report is
the run watcher's line (docs/run-watch.md), with the checkpoint step it just wrote."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import resume_job

STEPS, HANG_AFTER = 6, 2
CODE = """
import json, os, socket, time
d = os.environ["DOCKYARD_CHECKPOINT_DIR"]
done = sorted(int(n.split("_")[1]) for n in os.listdir(d) if n.startswith("step_"))
start = done[-1] + 1 if done else 0
print("dockyard-stall: start at step", start, "on", socket.gethostname(), flush=True)
for step in range(start, {steps}):
    if step > start:
        time.sleep({interval})
    open(os.path.join(d, "step_%d" % step), "w").write("%f" % time.time())
    print("DOCKYARD_PROGRESS", json.dumps({{"step": step, "total": {steps}, "checkpoint": step,
                                            "metrics": {{"reward": round(0.1 * step, 2)}}}}), flush=True)
    if start == 0 and step == {hang}:
        print("dockyard-stall: hanging after step", step, flush=True)
        while True:
            time.sleep(3600)
print("dockyard-stall: done", flush=True)
"""


def entrypoint_override(interval: float) -> str:
    code = base64.b64encode(CODE.format(steps=STEPS, hang=HANG_AFTER, interval=interval).encode()).decode()
    return f"""entrypoint=python3 -c "import base64; exec(base64.b64decode('{code}'))\""""


def guarded(doc: dict[str, Any], stall_timeout: int | None) -> None:
    """The resume proof's infra (one retry, a checkpoint claim: resume_job.retried), a logs claim of the same class,
    and the stall guard when `stall_timeout` is set (the first report's grace: 300 s, a cold head on two shared
    cores). The Ray pods keep no Ray logs here (keepRayLogMiB 0): the negative control of the resume proof's
    `logs --attempt 1 --role trainer`, on the same logs volume."""
    resume_job.retried(doc, checkpoints=True)
    doc["infra"]["storage"]["logs"] = dict(doc["infra"]["storage"]["checkpoints"])
    doc["launch"]["watch"] = {"keepRayLogMiB": 0}
    if stall_timeout is not None:
        doc["launch"]["watch"].update({"stallTimeoutSeconds": stall_timeout, "firstReportSeconds": 300})


def kept_records(state_dir: Path, ns: str, release: str = "grpo-swe") -> list[tuple[str, list[dict]]]:
    """(job folder, its progress records) of every job the run watcher kept, oldest first, read on the host in
    the provisioner's directory of the logs claim."""
    runs = resume_job.claim_dir(state_dir, ns, f"{release}-logs") / "dockyard-runs" / release
    return [(job.name, [json.loads(line) for line in (job / "progress.jsonl").read_text().splitlines()])
            for job in sorted(runs.iterdir())]
