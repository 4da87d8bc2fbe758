"""`dockyard-k8s smoke RECIPE INFRA`: the user's infra, launched with a probe as the Ray job.

Everything the infra says is kept (images, node selectors, overlay, sandbox pool); only the recipe's
entrypoint is replaced by smoke_probe.py, shipped in the recipe ConfigMap as probe.py. The probe
runs on the real Ray cluster and reports rows; this verb prints them as a ✓/✗ table and exits 0
when all hold, 1 otherwise. The release is removed afterwards unless --keep. Every step is bounded
by --timeout; a step that does not happen in time is named in one line with what the cluster said.
"""

from __future__ import annotations

import hashlib
import json
import shlex
import sys
import time
from pathlib import Path
from typing import Any

import yaml

from generator.errors import EXIT_OK, CheckFailed
from generator.live.kube import Kube
from generator.live.release import Helm, RunLock, wait_until

MARK = "DOCKYARD-SMOKE"
TERMINAL = ("SUCCEEDED", "FAILED", "STOPPED")
PROBE = Path(__file__).with_name("smoke_probe.py")


def rendered(values: dict[str, Any], release: str, namespace: str) -> tuple[str, str | None]:
    """(the recipe text the chart ships, the DOCKYARD_SANDBOX_URLS it injects or None), from `helm template`."""
    from generator.render.helm import template

    recipe, urls = "", None
    for doc in yaml.safe_load_all(template(values, release, namespace)):
        if not doc:
            continue
        if doc["kind"] == "ConfigMap" and "recipe.yaml" in (doc.get("data") or {}):
            recipe = doc["data"]["recipe.yaml"]
        if doc["kind"] == "RayJob":
            head = doc["spec"]["rayClusterSpec"]["headGroupSpec"]["template"]["spec"]["containers"][0]
            urls = next((e["value"] for e in head.get("env") or [] if e["name"] == "DOCKYARD_SANDBOX_URLS"), None)
    return recipe, urls


def probe_values(values: dict[str, Any], release: str, namespace: str, wait: float) -> dict[str, Any]:
    """The values with the probe as the entrypoint; the recipe text stays what `render` ships."""
    recipe, urls = rendered(values, release, namespace)
    cluster = values["recipe"]["cluster"]
    expect = {
        "trainer": {"nodes": cluster["trainer"]["nodes"], "gpus": cluster["trainer"]["gpusPerNode"]},
        "inference": {"nodes": cluster["inference"]["nodes"], "gpus": cluster["inference"]["gpusPerNode"]},
        "recipe_sha256": hashlib.sha256(recipe.encode()).hexdigest(),
        "sandbox_urls": urls,
        "wait": wait,
    }
    mount = values["launch"]["configMountPath"]
    out = json.loads(json.dumps(values))
    out["recipe"]["probe"] = PROBE.read_text()
    out["recipe"]["entrypoint"] = f"python3 {shlex.quote(mount + '/probe.py')} --expect {shlex.quote(json.dumps(expect))}"
    return out


def parse_rows(log: str) -> tuple[list[dict], bool | None]:
    rows, end = [], None
    for line in log.splitlines():
        if line.startswith(MARK + " "):
            rows.append(json.loads(line[len(MARK) + 1:]))
        elif line.startswith(MARK + "-END "):
            end = bool(json.loads(line[len(MARK) + 5:])["ok"])
    return rows, end


def table(rows: list[dict]) -> str:
    width = max(len(r["row"]) for r in rows)
    return "\n".join(f"{'✓' if r['ok'] else '✗'} {r['row'].ljust(width)}  {r['detail']}" for r in rows)


class Steps:
    """Named waits under one deadline; a wait that times out names its step and what was seen."""

    def __init__(self, deadline: float) -> None:
        self.deadline = deadline

    def wait(self, what: str, check: Any, seen: Any) -> Any:
        got = wait_until(check, max(0.0, self.deadline - time.monotonic()), interval=1.0)
        if not got:
            raise CheckFailed(f"smoke: {what} did not happen within --timeout; the cluster says: {seen()}")
        return got


def _job_state(job: dict | None) -> str:
    if not job:
        return "no RayJob"
    st = job.get("status") or {}
    bits = [f"jobDeploymentStatus={st.get('jobDeploymentStatus', '-')}", f"jobStatus={st.get('jobStatus', '-')}",
            f"cluster={(st.get('rayClusterStatus') or {}).get('state', '-')}"]
    if st.get("reason") or st.get("message"):
        bits.append(f"{st.get('reason', '')}: {st.get('message', '')}".strip(": "))
    return ", ".join(bits)


def _pods_state(kube: Kube, namespace: str, release: str) -> str:
    from generator.live.kube import INSTANCE
    from generator.live.snapshot import pod_reason

    pods = kube.list(f"/api/v1/namespaces/{namespace}/pods", label_selector=f"{INSTANCE}={release}")
    return "; ".join(f"{p['metadata']['name']}: {pod_reason(p) or p['status'].get('phase')}" for p in pods) or "no pods"


def smoke(args: Any) -> int:
    from generator.live.run import plan
    from generator.live.verbs import leftovers

    t0 = time.monotonic()
    deadline = t0 + args.timeout
    p = plan(args.recipe, args.infra, args.overrides, args.release, args.namespace, mode="rayjob")
    if not args.release:  # never the user's own release: <name>-smoke
        p.release = (p.release[:41].rstrip("-") + "-smoke")
    values = probe_values(p.values, p.release, p.namespace, wait=min(60.0, args.timeout / 4))
    kube = Kube(args.kubeconfig, args.context)
    kube.deadline = deadline
    kube.require_ray()
    if not kube.namespace_exists(p.namespace):
        if not args.create_namespace:
            raise CheckFailed(f"namespace {p.namespace} does not exist: pass --create-namespace, or create it")
        kube.ensure_namespace(p.namespace)
    say = (lambda m: None) if args.quiet else (lambda m: print(m, file=sys.stderr, flush=True))
    helm = Helm(kube, deadline=deadline)
    steps = Steps(deadline)
    get = lambda: kube.get_ray("rayjobs", p.namespace, p.release)  # noqa: E731
    seen = lambda: f"RayJob {p.release}: {_job_state(get())}; pods: {_pods_state(kube, p.namespace, p.release)}"  # noqa: E731
    try:
        with RunLock(kube, p.namespace, p.release, "smoke", until=deadline):
            helm.upgrade(p.release, p.namespace, values, timeout=max(5.0, deadline - time.monotonic()),
                         description="dockyard-k8s smoke")
        say(f"smoke: release {p.release} installed in {p.namespace} with the probe as entrypoint ({time.monotonic() - t0:.0f}s)")
        steps.wait("the RayCluster becoming ready",
                   lambda: ((get() or {}).get("status") or {}).get("rayClusterStatus", {}).get("state") == "ready", seen)
        say(f"smoke: RayCluster ready ({time.monotonic() - t0:.0f}s)")
        job = steps.wait("the probe finishing",
                         lambda: (j := get()) and (j.get("status") or {}).get("jobStatus") in TERMINAL and j, seen)
        from generator.live import driver_log

        log = driver_log.read(kube, p.namespace, job)
        rows, end = parse_rows(log)
        status = job["status"]["jobStatus"]
        say(f"smoke: probe {status} ({time.monotonic() - t0:.0f}s)")
        if not rows:
            tail = "\n  ".join(log.splitlines()[-15:]) or "(empty driver log)"
            raise CheckFailed(f"smoke: the probe reported nothing (job {status}; {_job_state(job)}); driver log:\n  {tail}")
        print(table(rows))
        ok = all(r["ok"] for r in rows) and end is True and status == "SUCCEEDED"
        failed = [r["row"] for r in rows if not r["ok"]]
        print(f"{'✓' if ok else '✗'} smoke {p.release}: {len(rows) - len(failed)}/{len(rows)} rows hold"
              + (f" ({'; '.join(failed)})" if failed else "") + f" in {time.monotonic() - t0:.0f}s")
        return EXIT_OK if ok else 1
    finally:
        if not args.keep:
            left = max(30.0, deadline + 60 - time.monotonic())
            try:
                kube.deadline = time.monotonic() + left
                Helm(kube, deadline=time.monotonic() + left).uninstall(p.release, p.namespace, timeout=left)
                wait_until(lambda: not leftovers(kube, p.release, p.namespace), left)
                say(f"smoke: release {p.release} removed")
            except Exception as exc:
                print(f"smoke: removing release {p.release} failed: {exc}; run `dockyard-k8s uninstall {p.release} "
                      f"-n {p.namespace}`", file=sys.stderr)
        else:
            say(f"smoke: release {p.release} kept (--keep); `dockyard-k8s uninstall {p.release} -n {p.namespace}` removes it")
