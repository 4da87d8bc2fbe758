"""`logs --role ROLE`: the logs of one fleet's scheduled pods, printed or streamed (-f); `logs --attempt N`: an
attempt's driver log kept on the logs volume, and with `--role` its Ray pods' kept Ray logs
(state/kept_logs.py)."""

from __future__ import annotations

import sys
import threading
import time
from typing import Any

from generator.errors import EXIT_OK, CheckFailed
from generator.live.client.kube import INSTANCE, Kube, usage_error
from generator.live.helm.records import live_manifest
from generator.live.helm.resolve import resolve
from generator.live.output.show import for_output
from generator.live.state import kept_logs


def logs(args: Any) -> int:
    if args.attempt is None and args.role is None:
        raise usage_error("logs needs --role ROLE (the pods' logs) or --attempt N (an attempt's kept driver log)")
    if args.attempt is not None and args.follow:
        raise usage_error("--attempt reads what an attempt kept: it takes no --follow")
    if args.attempt is not None and args.role in ("sandbox", "submitter"):
        raise usage_error(f"--attempt --role {args.role}: only the Ray pods (head, trainer, inference) keep their "
                          f"logs; `logs --role {args.role}` prints the live pods'")
    if args.job and args.attempt is None:
        raise usage_error("--job names whose kept logs --attempt reads: give --attempt N too")
    if args.attempt is not None and args.attempt < 1:
        raise usage_error(f"--attempt {args.attempt}: attempts count from 1")
    kube = Kube(args.kubeconfig, args.context)
    tty = sys.stdout.isatty()  # Ray's coloured lines keep their colours on a terminal only
    release, ns, records = resolve(kube, args.release, args.namespace)
    if args.attempt is not None:
        text = kept_logs.read(kube, release, ns, live_manifest(records), args.attempt, args.tail or 0,
                              timeout=args.timeout or 120.0, job_name=args.job, role=args.role)
        text = for_output(text, tty)
        sys.stdout.write(text if text.endswith("\n") or not text else text + "\n")
        return EXIT_OK
    sel = f"{INSTANCE}={release},dockyard.dev/fleet={args.role}"
    pods = [p for p in kube.core.list_namespaced_pod(ns, label_selector=sel).items if p.spec.node_name]
    if not pods:
        raise CheckFailed(f"no scheduled {args.role} pod for release {release} in {ns}")
    pods.sort(key=lambda p: p.metadata.name)
    prefix = len(pods) > 1
    kw: dict[str, Any] = {}
    if args.tail is not None:
        kw["tail_lines"] = args.tail
    if not args.follow:
        for p in pods:
            text = kube.core.read_namespaced_pod_log(p.metadata.name, ns, container=p.spec.containers[0].name, **kw)
            for line in for_output(text, tty).splitlines():
                print(f"[{p.metadata.name}] {line}" if prefix else line)
        return EXIT_OK
    lock = threading.Lock()

    def stream(p: Any) -> None:
        resp = kube.core.read_namespaced_pod_log(p.metadata.name, ns, container=p.spec.containers[0].name,
                                                 follow=True, _preload_content=False, **kw)
        for raw in resp:
            for line in for_output(raw.decode(errors="replace"), tty).splitlines():
                with lock:
                    print(f"[{p.metadata.name}] {line}" if prefix else line, flush=True)

    threads = [threading.Thread(target=stream, args=(p,), daemon=True) for p in pods]
    for t in threads:
        t.start()
    deadline = time.monotonic() + args.timeout if args.timeout else None
    while any(t.is_alive() for t in threads):
        if deadline and time.monotonic() >= deadline:
            break
        time.sleep(0.2)
    return EXIT_OK
