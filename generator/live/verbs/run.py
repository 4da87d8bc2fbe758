"""`run` and `cluster up`: compose values, install them with Helm, follow RayJob -> RayCluster -> pods."""

from __future__ import annotations

import sys
from typing import Any

from generator.errors import EXIT_OK, CheckFailed
from generator.live.changes.install import Installed, install
from generator.live.changes.plan import Plan, plan
from generator.live.output.show import write_stdout
from generator.live.state import driver_log
from generator.live.state.follow import until_ready


def run(args: Any, mode: str | None = None) -> int:
    p = plan(args.recipe, args.infra, args.overrides, args.release, args.namespace, mode)
    done = install(p, kubeconfig=args.kubeconfig, context=args.context, timeout=args.timeout, quiet=args.quiet,
                   replace=args.replace, create_namespace=args.create_namespace,
                   wait=bool(args.wait or getattr(args, "follow", False)))
    if getattr(args, "follow", False) and p.mode == "rayjob":
        return _follow_job(p, done)
    if not args.wait:
        return EXIT_OK
    until_ready(done.kube, p.release, p.namespace, p.mode, done.deadline, done.progress, done.t0)
    return EXIT_OK


def _follow_job(p: Plan, done: Installed) -> int:
    """`run --follow`: the driver's log until the RayJob ends; 0 succeeded, 1 failed (or not ended in time)."""
    done.progress.say(f"{p.release}: following the driver's log until the job ends")
    try:
        ok, job = driver_log.follow(done.kube, p.release, p.namespace, done.deadline, write_stdout)
    except KeyboardInterrupt:
        print(f"\ninterrupted: release {p.release} stays installed; `dockyard-k8s status {p.release} -n {p.namespace}` "
              "shows it", file=sys.stderr)
        raise
    if ok is None:
        raise CheckFailed(f"{p.release}: the job did not end within --timeout; "
                          + (driver_log.outcome(job) if job else "no RayJob"))
    assert job is not None  # an ended job was read
    line = driver_log.outcome(job)
    if not ok:
        raise CheckFailed(line)
    done.progress.say(line)
    return EXIT_OK
