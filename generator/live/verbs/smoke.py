"""`dockyard-k8s smoke RECIPE INFRA`: the user's infra, launched with a probe as the Ray job.

Everything the infra says is kept (images, node selectors, overlay, sandbox pool); only the recipe's
entrypoint is replaced by smoke_probe.py, shipped in the recipe ConfigMap as probe.py. The probe
runs on the real Ray cluster and reports rows; this verb prints them as a ✓/✗ table and exits 0
when all hold, 1 otherwise. The release is removed afterwards unless --keep. Every step is bounded
by --timeout; a step that does not happen in time is named in one line with what the cluster said.
With `launch.queue` the probe's RayJob carries the job's Kueue labels (the values are the user's) and
waits for admission as the job would: refused before anything is installed when a Kueue row of
`doctor` is ✗ (kueue_rows.refuse_never_admitted), and a wait that times out while queued gives
Kueue's reason (queueing.line).
"""

from __future__ import annotations

import hashlib
import json
import shlex
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

from generator.errors import EXIT_FAILED, EXIT_OK, CheckFailed
from generator.in_image import smoke_probe
from generator.in_image.smoke_probe import MARK
from generator.inputs.rules import MAX_RAYJOB_NAME
from generator.live.changes.plan import plan
from generator.live.changes.teardown import remove
from generator.live.client.kube import INSTANCE, Kube
from generator.live.client.wait import wait_until
from generator.live.helm.run_lock import RunLock
from generator.live.helm.runner import Helm
from generator.live.state import driver_log
from generator.live.state.claims import FailedClaim, failed_claims
from generator.live.state.driver_log import TERMINAL
from generator.live.state.pods import fleet_of, pod_reason
from generator.live.state.pulls import FailedPull, PullWatch, failed_pulls

PROBE = Path(smoke_probe.__file__)  # shipped in the recipe ConfigMap as probe.py
SUFFIX = "-smoke"  # the default release: <recipe name>-smoke, never the user's own release


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
    probe = shlex.quote(mount + "/probe.py")
    out["recipe"]["entrypoint"] = f"python3 {probe} --expect {shlex.quote(json.dumps(expect))}"
    # The probe runs under the run watcher as a job would (its mount and Python are checked with it), without a
    # stall guard: the probe reports no training steps. The guard's bound on the first report goes with it (the
    # chart refuses one without a guard).
    watch = out["launch"].setdefault("watch", {})
    watch["stallTimeoutSeconds"] = None
    watch.pop("firstReportSeconds", None)
    return out


def unchecked_sandbox(values: dict[str, Any]) -> str | None:
    """What the probe leaves unchecked of the sandboxes, said before it runs: under sandbox.backend agent-sandbox
    the probe claims no sandbox, so the table has no sandbox row (docs/sandbox-pool.md says what proves claims)."""
    if (values.get("sandbox") or {}).get("backend") != "agent-sandbox":
        return None
    return ("smoke: note: sandbox.backend agent-sandbox: the probe claims no sandbox, so no row checks the "
            "sandboxes; `status` shows the warm pool, and generator/in_image/sandbox_client.py is what claims one")


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
    pods = kube.list(f"/api/v1/namespaces/{namespace}/pods", label_selector=f"{INSTANCE}={release}")
    return "; ".join(f"{p['metadata']['name']}: {pod_reason(p) or p['status'].get('phase')}" for p in pods) or "no pods"


def smoke(args: Any) -> int:
    t0 = time.monotonic()
    deadline = t0 + args.timeout
    p = plan(args.recipe, args.infra, args.overrides, args.release, args.namespace, mode="rayjob")
    if not args.release:
        p.release = p.release[: MAX_RAYJOB_NAME - len(SUFFIX)].rstrip("-") + SUFFIX
    values = probe_values(p.values, p.release, p.namespace, wait=min(60.0, args.timeout / 4))
    kube = Kube(args.kubeconfig, args.context)
    kube.deadline = deadline
    if not args.quiet:
        print(f"smoke: {p.release} in namespace {p.namespace}, {kube.target()}", file=sys.stderr, flush=True)
    if note := unchecked_sandbox(values):
        print(note, file=sys.stderr, flush=True)
    kube.require_ray()
    from generator.live.changes.served_fields import fit_to_served

    if note := fit_to_served(kube, "rayjob", p.namespace, values):
        print(note, file=sys.stderr, flush=True)
    from generator.live.doctor.capacity import refuse_never_fits
    from generator.live.doctor.fabric import gang_rows

    refuse_never_fits(kube, p.cluster, "`smoke`", gang_rows(p.cluster, (values.get("kuberay") or {}).get("network")))
    queue = (values.get("launch") or {}).get("queue")
    if queue:  # Kueue admits the probe as it would the job: refused now if it never would
        from generator.live.doctor.kueue_rows import refuse_never_admitted

        refuse_never_admitted(kube, values, p.release, p.namespace, "`smoke`")
    if not kube.namespace_exists(p.namespace):
        if not args.create_namespace:
            raise CheckFailed(f"namespace {p.namespace} does not exist: pass --create-namespace, or create it")
        kube.ensure_namespace(p.namespace)

    def say(message: str) -> None:
        if not args.quiet:
            print(message, file=sys.stderr, flush=True)

    helm = Helm(kube, deadline=deadline)
    try:
        with RunLock(kube, p.namespace, p.release, "smoke", deadline=deadline):
            from generator.live.helm.ownership import require_secret_storage

            require_secret_storage(kube, p.release, p.namespace, "smoke")
            helm.upgrade(p.release, p.namespace, values, timeout=max(5.0, deadline - time.monotonic()),
                         description="dockyard-k8s smoke")
        say(f"smoke: release {p.release} installed in {p.namespace} with the probe as entrypoint "
            f"({time.monotonic() - t0:.0f}s)")
        job = _wait_for_probe(kube, p.release, p.namespace, Steps(deadline), say, t0, queue)
        return _report(kube, p.release, p.namespace, job, say, t0)
    finally:
        if not args.keep:
            _remove(kube, p.release, p.namespace, deadline, say)
        else:
            say(f"smoke: release {p.release} kept (--keep); `dockyard-k8s uninstall {p.release} -n {p.namespace}` "
                "removes it")


def _wait_for_probe(kube: Kube, release: str, namespace: str, steps: Steps, say: Callable[[str], None],
                    t0: float, queue: str | None = None) -> dict[str, Any]:
    """Wait for Kueue to admit the RayJob (`queue` set), for the RayCluster to be ready, then for the probe
    (the Ray job) to end: the ended RayJob."""
    from generator.live.state import queueing

    pulls = PullWatch()

    def get() -> dict[str, Any] | None:
        """The RayJob; first, a failed image pull of the release's pods is said when seen, and ends the wait
        as pulls.PullWatch judges (a pod that cannot get its image never starts: waiting out --timeout helps no
        one); so does a claim a waiting pod mounts that its provisioner refused (claims.py)."""
        pods = kube.list(f"/api/v1/namespaces/{namespace}/pods", label_selector=f"{INSTANCE}={release}")
        found: list[FailedPull | FailedClaim] = [*failed_pulls(pods, fleet_of),
                                                 *failed_claims(kube, namespace, pods, fleet_of)]
        for pull in pulls.new(found):
            say(f"smoke: {pull.line()}")
        verdict = pulls.verdict(found)
        if verdict:
            raise CheckFailed(f"smoke: {verdict}")
        return kube.get_ray("rayjobs", namespace, release)

    def seen() -> str:
        job = get()
        state = (queueing.line(queueing.read(kube, namespace, job, "RayJob")) if job and queueing.held(job)
                 else _job_state(job))
        return f"RayJob {release}: {state}; pods: {_pods_state(kube, namespace, release)}"

    def admitted() -> bool:  # Kueue's webhook suspends the RayJob at create; admission clears suspend
        job = get()
        return job is not None and not queueing.suspended(job)

    def cluster_ready() -> bool:
        return ((get() or {}).get("status") or {}).get("rayClusterStatus", {}).get("state") == "ready"

    def ended() -> dict[str, Any] | None:
        job = get()
        return job if job and (job.get("status") or {}).get("jobStatus") in TERMINAL else None

    if queue:
        say(f"smoke: RayJob {release} queued in LocalQueue {queue}; waiting for Kueue to admit the whole gang")
        steps.wait(f"Kueue admitting RayJob {release} (LocalQueue {queue})", admitted, seen)
        say(f"smoke: admitted by Kueue ({time.monotonic() - t0:.0f}s)")
    steps.wait("the RayCluster becoming ready", cluster_ready, seen)
    say(f"smoke: RayCluster ready ({time.monotonic() - t0:.0f}s)")
    job: dict[str, Any] = steps.wait("the probe finishing", ended, seen)
    return job


def _report(kube: Kube, release: str, namespace: str, job: dict[str, Any], say: Callable[[str], None],
            t0: float) -> int:
    """The probe's rows from the driver log as a table; 0 when every row holds and the job succeeded."""
    log = driver_log.read(kube, namespace, job)
    rows, end = parse_rows(log)
    status = job["status"]["jobStatus"]
    say(f"smoke: probe {status} ({time.monotonic() - t0:.0f}s)")
    if not rows:
        tail = "\n  ".join(log.splitlines()[-15:]) or "(empty driver log)"
        raise CheckFailed(f"smoke: the probe reported nothing (job {status}; {_job_state(job)}); "
                          f"driver log:\n  {tail}")
    print(table(rows))
    ok = all(r["ok"] for r in rows) and end is True and status == "SUCCEEDED"
    failed = [r["row"] for r in rows if not r["ok"]]
    print(f"{'✓' if ok else '✗'} smoke {release}: {len(rows) - len(failed)}/{len(rows)} rows hold"
          + (f" ({'; '.join(failed)})" if failed else "") + f" in {time.monotonic() - t0:.0f}s")
    return EXIT_OK if ok else EXIT_FAILED


def _remove(kube: Kube, release: str, namespace: str, deadline: float, say: Callable[[str], None]) -> None:
    """Uninstall the smoke release and wait until nothing is left, Kueue's Workload of a queued probe
    included (teardown.remove, as `uninstall` does); a failure is said, never raised."""
    from generator.live.helm.records import live_manifest, release_records

    left = max(30.0, deadline + 60 - time.monotonic())
    try:
        kube.deadline = end = time.monotonic() + left
        unchecked = remove(kube, release, namespace, live_manifest(release_records(kube, release, namespace)), end)
        say(f"smoke: release {release} removed" + (f"; {unchecked}" if unchecked else ""))
        # the claims the probe's infra.storage made are the probe's own (<release>, not the run's): Helm keeps
        # them (resource-policy keep), so they go here, or each smoke would leave its volumes behind
        claims = kube.core.list_namespaced_persistent_volume_claim(namespace, label_selector=f"{INSTANCE}={release}")
        for pvc in claims.items:
            kube.core.delete_namespaced_persistent_volume_claim(pvc.metadata.name, namespace)
            say(f"smoke: deleted its claim {pvc.metadata.name}")
    except Exception as exc:
        print(f"smoke: removing release {release} failed: {exc}; run `dockyard-k8s uninstall {release} "
              f"-n {namespace}`", file=sys.stderr)
