"""Live verbs of the CLI: run, cluster, status, logs, job, dev, doctor, history, rollback, uninstall.

Only argparse is imported here; each handler imports its module (kubernetes, pyhelm3) when run.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable

from generator import EXIT_BAD_INPUT

TYPE_CHECKING = False  # typing's import costs ~3 ms at start-up: for type checkers only
if TYPE_CHECKING:
    from typing import Any


def _common(timeout: float | None) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(add_help=False)
    g = p.add_argument_group("cluster")
    g.add_argument("--kubeconfig", metavar="FILE",
                   help="kubeconfig (default: $KUBECONFIG, ~/.kube/config, else the local playground's)")
    g.add_argument("--context", metavar="NAME", help="kubeconfig context")
    g.add_argument("-n", "--namespace", metavar="NS", help="namespace (default: the infra's, or where the release is)")
    g.add_argument("--timeout", type=float, default=timeout, metavar="SECONDS",
                   help=f"bound every wait (default: {timeout if timeout else 'none'})")
    g.add_argument("-q", "--quiet", action="store_true", help="plain progress lines, no live view")
    g.add_argument("--helm", metavar="PATH",
                   help="helm binary, Helm 3 (>= v3.8) or Helm 4 (default: $DOCKYARD_HELM, else the pinned Helm 3)")
    return p


def _output(p: argparse.ArgumentParser) -> None:
    p.add_argument("-o", "--output", choices=("table", "json", "yaml"), default="table", help="output format")


def _as_interrupt(signum: int, frame: Any) -> None:
    """SIGTERM and SIGHUP (CI, `kill`, a closed terminal, a stopped pod) act like Ctrl-C (while helm
    runs, live/helm/runner.py's run_interruptible handles all three)."""
    raise KeyboardInterrupt


def _handler(module: str, name: str, **extra: Any) -> Callable[[argparse.Namespace], int]:
    def call(args: argparse.Namespace) -> int:
        import importlib
        import signal

        from generator.live.client.api_errors import cluster_errors
        from generator.live.client.kubeconfig import overridden

        for var in overridden():
            print(f"note: {var} is set; dockyard-k8s runs helm with the context, namespace and release storage "
                  "it reads itself (the variable is not passed on)", file=sys.stderr)
        before = {sig: signal.signal(sig, _as_interrupt) for sig in (signal.SIGTERM, signal.SIGHUP)}
        try:
            fn = getattr(importlib.import_module(f"generator.live.verbs.{module}"), name)
            chosen = getattr(args, "helm", None), getattr(args, "chart", None), getattr(args, "chart_version", None)
            if not any(chosen):  # the defaults (the pinned helm, this chart): no helm module to import for them
                return cluster_errors(fn)(args, **extra)
            from generator.render.helm import using

            with using(*chosen):
                return cluster_errors(fn)(args, **extra)
        finally:
            for sig, old in before.items():
                signal.signal(sig, old)

    return call


def _help(p: argparse.ArgumentParser) -> Callable[[argparse.Namespace], int]:
    def show(args: argparse.Namespace) -> int:
        p.print_help()
        return EXIT_BAD_INPUT

    return show


def _inputs(p: argparse.ArgumentParser) -> None:
    p.add_argument("recipe", help="the recipe YAML")
    p.add_argument("infra", help="the infra spec YAML")
    p.add_argument("overrides", nargs="*", metavar="KEY=VALUE",
                   help="recipe overrides: a.b.c=VALUE, a.b[N]=VALUE for item N of a list; VALUE is YAML "
                        "(the grammar: docs/cli.md, Overrides and inputs)")


def _run_flags(p: argparse.ArgumentParser) -> None:
    p.add_argument("--release", metavar="NAME", help="release name (default: the recipe's name)")
    p.add_argument("--replace", action="store_true",
                   help="when the RayJob spec changed, delete and recreate the RayJob (KubeRay #1776)")
    p.add_argument("--create-namespace", action="store_true", help="create the namespace when it is missing")
    p.add_argument("--chart", metavar="REF",
                   help="the chart to install: a folder, a .tgz or oci://HOST/PATH/dockyard "
                        "(default: this repo's charts/dockyard)")
    p.add_argument("--chart-version", metavar="X",
                   help="with an oci:// --chart: the chart version (default: the latest)")


def add_parser(sub: argparse._SubParsersAction, only: str | None = None) -> None:
    """Register the live verbs; `only`: that verb alone (the CLI builds just the parser a run needs)."""

    def want(verb: str) -> bool:
        return only is None or only == verb

    run_common, read_common, wait_common = _common(600.0), _common(None), _common(300.0)

    if want("run"):
        p = sub.add_parser("run", parents=[run_common],
                           help="install or upgrade the release (helm, atomic) and follow it")
        _inputs(p)
        _run_flags(p)
        p.add_argument("--wait", action="store_true",
                       help="follow RayJob -> RayCluster -> pods until every fleet is ready (or fails)")
        p.add_argument("--follow", action="store_true",
                       help="rayjob mode: stream the driver's log until the RayJob ends; exit 0 succeeded, 1 failed")
        p.set_defaults(func=_handler("run", "run"))

    if want("smoke"):
        p = sub.add_parser("smoke", parents=[_common(900.0)],
                           help="launch the infra with a probe as the Ray job: fleets, env, placement groups, recipe, "
                                "sandbox as a ✓/✗ table (exit 0 all hold, 1 not); the release is removed afterwards")
        _inputs(p)
        p.add_argument("--release", metavar="NAME", help="release name (default: <recipe name>-smoke)")
        p.add_argument("--create-namespace", action="store_true", help="create the namespace when it is missing")
        p.add_argument("--keep", action="store_true", help="keep the release afterwards (default: uninstall it)")
        p.add_argument("--chart", metavar="REF", help="the chart to install (as for run)")
        p.add_argument("--chart-version", metavar="X", help="with an oci:// --chart: the chart version")
        p.set_defaults(func=_handler("smoke", "smoke"))

    if want("cluster"):
        p = sub.add_parser("cluster", help="long-lived RayClusters (bringup mode): up, down, list")
        csub = p.add_subparsers(dest="cluster_command", metavar="{up,down,list}")
        c = csub.add_parser("up", parents=[run_common], help="bring up a RayCluster + sandbox pool (bringup mode)")
        _inputs(c)
        _run_flags(c)
        c.add_argument("--no-wait", dest="wait", action="store_false",
                       help="return once Helm has installed the release")
        c.set_defaults(func=_handler("run", "run", mode="bringup"), wait=True)
        c = csub.add_parser("down", parents=[wait_common],
                            help="uninstall a release: every object it made, nothing orphaned")
        c.add_argument("release", nargs="?", help="release name (default: the only one)")
        c.set_defaults(func=_handler("uninstall", "uninstall"))
        c = csub.add_parser("list", parents=[read_common], help="RayClusters (all namespaces unless -n)")
        _output(c)
        c.set_defaults(func=_handler("cluster", "cluster_list"))
        p.set_defaults(func=_help(p))

    if want("status"):
        p = sub.add_parser("status", parents=[read_common], help="release, RayJob, RayCluster and a row per fleet")
        p.add_argument("release", nargs="?", help="release name (default: the only one)")
        p.add_argument("-w", "--watch", action="store_true", help="keep refreshing (until Ctrl-C or --timeout)")
        p.add_argument("--no-progress", dest="progress", action="store_false",
                       help="leave out the job's progress line (one request fewer: the head's dashboard is not asked)")
        _output(p)
        p.set_defaults(func=_handler("status", "status"))

    if want("logs"):
        p = sub.add_parser("logs", parents=[read_common],
                           help="logs of one fleet's pods, or an attempt's kept driver log")
        p.add_argument("release", nargs="?", help="release name (default: the only one)")
        p.add_argument("--role", choices=("head", "trainer", "inference", "sandbox", "submitter"),
                       help="the fleet whose pods' logs to print (required without --attempt); with --attempt: "
                            "also the Ray logs each head, trainer or inference pod of the attempt kept")
        p.add_argument("--attempt", type=int, metavar="N",
                       help="the driver log attempt N kept on the logs volume (infra.storage.logs), also after its "
                            "RayCluster is gone; 1 is the first attempt of the release's RayJob")
        p.add_argument("--job", metavar="NAME",
                       help="with --attempt: a RayJob `job submit` sent to the release's bringup cluster")
        p.add_argument("-f", "--follow", action="store_true", help="stream (until Ctrl-C or --timeout)")
        p.add_argument("--tail", type=int, metavar="N", help="last N lines of each pod")
        p.set_defaults(func=_handler("logs", "logs"))

    if want("history"):
        p = sub.add_parser("history", parents=[read_common], help="the release's revisions")
        p.add_argument("release", nargs="?", help="release name (default: the only one)")
        _output(p)
        p.set_defaults(func=_handler("history", "history"))

    if want("rollback"):
        p = sub.add_parser("rollback", parents=[wait_common],
                           help="roll the release back (default: the previous revision)")
        p.add_argument("release", nargs="?", help="release name (default: the only one)")
        p.add_argument("revision", nargs="?", type=int, help="revision to roll back to")
        p.add_argument("--replace", action="store_true",
                       help="when the RayJob spec differs in that revision, delete the RayJob so the rollback "
                            "recreates it (KubeRay #1776)")
        p.set_defaults(func=_handler("rollback", "rollback"))

    if want("uninstall"):
        p = sub.add_parser("uninstall", parents=[wait_common],
                           help="uninstall the release and wait until nothing is left")
        p.add_argument("release", nargs="?", help="release name (default: the only one)")
        p.set_defaults(func=_handler("uninstall", "uninstall"))

    if want("job"):
        p = sub.add_parser("job", help="RayJobs on an existing RayCluster (clusterSelector): submit, list, stop")
        jsub = p.add_subparsers(dest="job_command", metavar="{submit,list,stop}")
        j = jsub.add_parser("submit", parents=[wait_common],
                            help="submit the recipe as a RayJob to an existing RayCluster")
        _inputs(j)
        j.add_argument("--cluster", metavar="NAME",
                       help="target RayCluster (default: launch.clusterName in attach mode, else the recipe's name)")
        j.add_argument("--name", metavar="JOB", help="RayJob name (default: <cluster>-<recipe>-<time>)")
        j.add_argument("--wait", action="store_true", help="wait until the job is Running")
        j.add_argument("--follow", action="store_true",
                       help="stream the driver's log until the job ends; exit 0 succeeded, 1 failed (as run --follow)")
        j.set_defaults(func=_handler("jobs", "submit"))
        j = jsub.add_parser("list", parents=[read_common], help="RayJobs submitted to existing clusters")
        j.add_argument("--cluster", metavar="NAME", help="only jobs on this cluster")
        _output(j)
        j.set_defaults(func=_handler("jobs", "list_jobs"))
        j = jsub.add_parser("stop", parents=[wait_common], help="stop (delete) a RayJob; the cluster stays")
        j.add_argument("name", help="RayJob name")
        j.set_defaults(func=_handler("jobs", "stop"))
        p.set_defaults(func=_help(p))

    if want("dev"):
        p = sub.add_parser("dev", parents=[run_common], help="bring a bringup cluster up if absent, then port-forward "
                                                             "the dashboard (8265) and sandbox (9090) on 127.0.0.1")
        _inputs(p)
        _run_flags(p)
        p.add_argument("--down", action="store_true", help="tear the cluster down on exit")
        p.add_argument("--dashboard-port", type=int, default=8265, metavar="PORT", help="local port (0: any free one)")
        p.add_argument("--sandbox-port", type=int, default=9090, metavar="PORT", help="local port (0: any free one)")
        p.set_defaults(func=_handler("dev", "dev"), wait=True)

    if want("doctor"):
        p = sub.add_parser("doctor", parents=[read_common], help="preflight checks for RECIPE + INFRA on this cluster")
        _inputs(p)
        p.add_argument("--release", metavar="NAME", help="release name (default: the recipe's name)")
        _output(p)
        p.set_defaults(func=_handler("doctor", "doctor"))
