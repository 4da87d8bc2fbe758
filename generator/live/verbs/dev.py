"""`dev`: the development loop on a long-lived (bringup) cluster.

Brings the cluster up when it is absent, shows status until it is ready, then keeps two port-forwards
open on 127.0.0.1 (the Ray dashboard, 8265 on the head pod; the sandbox Service, 9090) with the pinned
kubectl, restarting one that dies, until interrupted. `--down` uninstalls the release on exit.
"""

from __future__ import annotations

import re
import subprocess
import sys
import time
from typing import Any

from generator.errors import EXIT_OK, CheckFailed
from generator.live.changes import teardown
from generator.live.changes.install import install
from generator.live.changes.plan import plan
from generator.live.client.kube import Kube
from generator.live.helm.records import labels, release_records
from generator.live.state.follow import follow, until_ready
from generator.live.state.progress import Progress
from generator.pinned_tools import binary

FORWARDING = re.compile(r"Forwarding from 127\.0\.0\.1:(\d+) ->")


class Forward:
    """One `kubectl port-forward --address 127.0.0.1` child, restarted when it exits."""

    def __init__(self, kube: Kube, namespace: str, target: str, local: int, remote: int, what: str):
        self.kube, self.namespace, self.target, self.remote, self.what = kube, namespace, target, remote, what
        self.local = local
        self.proc: subprocess.Popen | None = None
        self.restarts = -1

    def argv(self, flags: list[str]) -> list[str]:
        return [binary("kubectl", "kubernetes"), *flags, "-n", self.namespace, "port-forward", "--address",
                "127.0.0.1", self.target, f"{self.local or ''}:{self.remote}"]

    def start(self, timeout: float = 20) -> int:
        self.restarts += 1
        flags, env = self.kube.tool_args()
        self.proc = subprocess.Popen(self.argv(flags), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                     env=env)
        deadline = time.monotonic() + timeout
        assert self.proc.stdout is not None
        while time.monotonic() < deadline:
            line = self.proc.stdout.readline()
            if not line:
                break
            m = FORWARDING.search(line)
            if m:
                self.local = int(m.group(1))
                return self.local
        err = self.proc.stderr.read() if self.proc.poll() is not None and self.proc.stderr else ""
        self.stop()
        raise CheckFailed(f"port-forward to {self.what} ({self.target}:{self.remote}) failed: "
                          f"{err.strip() or 'no answer'}")

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def stop(self) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def _head_pod(kube: Kube, namespace: str, cluster: str) -> str:
    sel = f"ray.io/cluster={cluster},ray.io/node-type=head"
    pods = kube.core.list_namespaced_pod(namespace, label_selector=sel).items
    if not pods:
        raise CheckFailed(f"no head pod for RayCluster {cluster} in {namespace}")
    return pods[0].metadata.name


def dev(args: Any) -> int:
    p = plan(args.recipe, args.infra, args.overrides, args.release, args.namespace, mode="bringup")
    kube = Kube(args.kubeconfig, args.context)
    records = release_records(kube, p.release, p.namespace) if kube.namespace_exists(p.namespace) else []
    deployed = any(labels(r).get("status") == "deployed" for r in records)
    forwards: list[Forward] = []

    try:  # SIGTERM and SIGHUP end here as Ctrl-C does (the CLI's handler)
        if deployed:
            print(f"release {p.release} is already installed in {p.namespace}: using it", flush=True)
            follow(kube, p.release, p.namespace, time.monotonic() + args.timeout,
                   Progress(quiet=args.quiet, title=f"{p.release} ({p.namespace})"))
        else:
            done = install(p, kubeconfig=args.kubeconfig, context=args.context, timeout=args.timeout, quiet=args.quiet,
                           replace=args.replace, create_namespace=args.create_namespace, wait=True)
            until_ready(done.kube, p.release, p.namespace, p.mode, done.deadline, done.progress, done.t0)
        head = _head_pod(kube, p.namespace, p.release)
        forwards = [Forward(kube, p.namespace, f"pod/{head}", args.dashboard_port, 8265, "the Ray dashboard"),
                    Forward(kube, p.namespace, f"svc/{p.release}-sandbox", args.sandbox_port, 9090, "the sandbox pool")]
        for f in forwards:
            f.start()
        print(f"Ray dashboard:  http://127.0.0.1:{forwards[0].local}", flush=True)
        print(f"sandbox pool:   http://127.0.0.1:{forwards[1].local}  (POST /task/submit)", flush=True)
        print("port-forwards open; Ctrl-C to stop" + (" and tear the cluster down" if args.down else ""), flush=True)
        while True:
            time.sleep(1.0)
            for f in forwards:
                if not f.alive():
                    print(f"port-forward to {f.what} exited; restarting on 127.0.0.1:{f.local}",
                          file=sys.stderr, flush=True)
                    f.start()
    except KeyboardInterrupt:
        print("\nstopping port-forwards", flush=True)
    finally:
        for f in forwards:
            f.stop()
    if args.down:
        teardown.uninstall(args.kubeconfig, args.context, p.release, p.namespace, args.timeout or 300)
        return EXIT_OK
    print(f"cluster {p.release} keeps running in {p.namespace} "
          f"(`dockyard-k8s cluster down {p.release} -n {p.namespace}`)")
    return EXIT_OK
