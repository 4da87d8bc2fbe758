"""Record the API server's answers that the offline live-code tests replay (`make record`).

Starts a playground of its own in a temporary state folder (1 GPU node × 8 GPUs, 1 CPU node; ~45 s in all),
installs tests/live/data/small.yaml with `run`, makes the situations (a GPU pod Pending, run-lock leases, a
namespace-scoped user, PodSecurity restricted, a namespace Terminating, a 422, connection refused, the RayJob CRD
of an older KubeRay, CRDs gone) and writes each request→answer pair the live code made to
tests/unit/recorded/<scenario>.json (see recording.py). Never touches the user's playground.
$DOCKYARD_RECORD_KUBECONFIG: use that cluster (same shape) instead.

`python -m generator.maint.record_cluster rayjob_fields` records only the scenarios that need no installed release
(the served RayJob's fields), on a playground of its own.
"""

from __future__ import annotations

import contextlib
import copy
import io
import os
import socket
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from generator.maint.recording import install
from generator.maint.recording import scenario as _scenario
from generator.pinned_tools import REPO

OUT = REPO / "tests" / "unit" / "recorded"
DATA = REPO / "tests" / "live" / "data"
RECIPE, INFRA = DATA / "small.yaml", DATA / "small.infra.yaml"
NAMESPACE = "rec"  # where the recorded release lives
STRICT = "rec-restricted"  # a namespace enforcing PodSecurity restricted
GONE = "rec-gone"  # a namespace held in Terminating by a finalizer
RELEASE = "small"
SHAPE = {"gpu_nodes": 1, "gpus_per_node": 8, "cpu_nodes": 1}  # one GPU worker fits, the other stays Pending


def scenario(name: str, note: str) -> Any:
    return _scenario(OUT, name, note)


def cli(*argv: Any) -> tuple[int, str]:
    """Run the CLI in this process (its requests are recorded); (exit code, stderr). Output is not shown:
    some scenarios fail on purpose."""
    from generator.cli import main

    err = io.StringIO()
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
        rc = main([str(a) for a in argv])
    return rc, err.getvalue()


# Situations ------------------------------------------------------------------------------------------

def wait_pending(kube: Any) -> None:
    """Until one Ray worker pod is Pending with the scheduler's reason."""
    from generator.live.state.pods import pod_reason

    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        pods = kube.list(f"/api/v1/namespaces/{NAMESPACE}/pods", label_selector=f"app.kubernetes.io/instance={RELEASE}")
        reasons = [pod_reason(p) for p in pods]
        if any("Insufficient nvidia.com/gpu" in r for r in reasons) and any(
                (p.get("status") or {}).get("phase") == "Running" for p in pods):
            return
        time.sleep(1)
    raise SystemExit(f"no pod Pending for GPUs after 120 s: {reasons}")


def namespace_user(kube: Any, kubeconfig: str, folder: Path) -> str:
    """A kubeconfig for ServiceAccount `alice`, bound to the built-in admin ClusterRole in NAMESPACE only."""
    import yaml

    kube.request("POST", f"/api/v1/namespaces/{NAMESPACE}/serviceaccounts", body={"metadata": {"name": "alice"}})
    kube.request("POST", f"/apis/rbac.authorization.k8s.io/v1/namespaces/{NAMESPACE}/rolebindings", body={
        "metadata": {"name": "alice-admin"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "admin"},
        "subjects": [{"kind": "ServiceAccount", "name": "alice", "namespace": NAMESPACE}]})
    token = kube.request("POST", f"/api/v1/namespaces/{NAMESPACE}/serviceaccounts/alice/token",
                         body={"spec": {"expirationSeconds": 3600}})["status"]["token"]
    admin = yaml.safe_load(Path(kubeconfig).read_text())
    cluster = admin["clusters"][0]["cluster"]
    path = folder / "alice.kubeconfig"
    path.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": "alice",
        "clusters": [{"name": "playground", "cluster": cluster}],
        "users": [{"name": "alice", "user": {"token": token}}],
        "contexts": [{"name": "alice",
                      "context": {"cluster": "playground", "user": "alice", "namespace": NAMESPACE}}]}))
    path.chmod(0o600)
    return str(path)


def rendered_pod_templates(namespace: str) -> dict[str, dict[str, Any]]:
    """small.yaml's pod templates by role, rendered by helm for `namespace`."""
    import yaml

    from generator.live.changes.plan import plan
    from generator.render.helm import template
    from generator.render.pod_templates import pod_templates

    p = plan(str(RECIPE), str(INFRA), [], None, namespace)
    docs = yaml.safe_load_all(template(p.values, p.release, namespace))
    return pod_templates([d for d in docs if isinstance(d, dict)])


def record_all(kubeconfig: str, folder: Path, own: bool) -> None:
    from generator.live.client.kube import Kube

    admin = Kube(kubeconfig)
    taken = [n for n in (NAMESPACE, STRICT, GONE) if admin.namespace_exists(n)]
    if taken:
        why = "is still being deleted: wait a few seconds" if admin.namespace_deletion(taken[0]) else "exists"
        raise SystemExit(f"namespace {taken[0]} {why} on {admin.server}: the recorder makes and deletes its own")
    try:
        record_scenarios(admin, kubeconfig, folder, own)
    finally:
        if not own:  # a cluster we were lent: leave nothing behind
            for n in (NAMESPACE, STRICT, GONE):
                with contextlib.suppress(Exception):
                    admin.request("DELETE", f"/api/v1/namespaces/{n}")


def record_scenarios(admin: Any, kubeconfig: str, folder: Path, own: bool) -> None:
    rc, err = cli("run", RECIPE, INFRA, "-n", NAMESPACE, "--create-namespace", "-q", "--timeout", "180",
                  "--kubeconfig", kubeconfig)
    if rc != 0:
        raise SystemExit(f"run failed (exit {rc}): {err}")
    wait_pending(admin)
    record_status(admin, kubeconfig)
    record_lease(admin)
    user = namespace_user(admin, kubeconfig, folder)
    record_forbidden(user)
    record_errors(admin, kubeconfig, folder)
    for who, kc in (("admin", kubeconfig), ("alice", user)):
        with scenario(f"doctor_{who}", f"`doctor` of small.yaml in {NAMESPACE} as {who}"):
            cli("doctor", RECIPE, INFRA, "-n", NAMESPACE, "-o", "json", "--kubeconfig", kc)
    record_restricted(admin)
    record_terminating(admin, kubeconfig)
    if own:
        record_rayjob_fields(admin)
        record_crds_gone(admin, kubeconfig)
    else:
        print("  crd_missing.json, rayjob_fields_*.json: kept (changing the KubeRay CRDs is done only on a "
              "playground of our own)")


def record_status(admin: Any, kubeconfig: str) -> None:
    from generator.live.state.snapshot import take

    with scenario("status_pending", f"`status` of release {RELEASE} in {NAMESPACE}: head, sandbox and one Ray "
                  "worker running, the other Pending (Insufficient nvidia.com/gpu); the only release"):
        cli("status", "--kubeconfig", kubeconfig)
        cli("status", RELEASE, "-n", NAMESPACE, "-o", "json", "--kubeconfig", kubeconfig)
        take(admin, RELEASE, NAMESPACE)


def record_lease(admin: Any) -> None:
    from kubernetes.client.exceptions import ApiException

    from generator.live.helm import holders
    from generator.live.helm.run_lock import HOLDER_PID, HOLDER_PROCESS, RunLock, lease_name

    leases = f"/apis/coordination.k8s.io/v1/namespaces/{NAMESPACE}/leases"
    lease = f"{leases}/{lease_name(RELEASE)}"
    with scenario("lease", "the run lock's Lease: created, refused (AlreadyExists), a stale update (Conflict), "
                  "a delete with a stale precondition (Conflict), deleted, read when absent (NotFound), "
                  "taken over from a holder whose process is gone"):
        lock = RunLock(admin, NAMESPACE, RELEASE, "run")
        lock.acquire()
        with contextlib.suppress(Exception):
            RunLock(admin, NAMESPACE, RELEASE, "upgrade").acquire()
        stale = copy.deepcopy(admin.request("GET", lease))
        stale["metadata"]["resourceVersion"] = str(int(stale["metadata"]["resourceVersion"]) - 1)
        with contextlib.suppress(ApiException):
            admin.request("PUT", lease, body=stale)
        with contextlib.suppress(ApiException):
            admin.request("DELETE", lease, body={"preconditions": {"resourceVersion": "1"}})
        lock.release_lock()
        with contextlib.suppress(ApiException):
            admin.request("GET", lease)
        # a holder on this host whose process is gone: taken over at once
        holder = f"{socket.gethostname()}/{_dead_pid()}"
        when = (datetime.now(UTC) - timedelta(minutes=1)).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
        admin.request("POST", leases, body={
            "apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
            "metadata": {"name": lease_name(RELEASE),
                         "annotations": {HOLDER_PID: holder, HOLDER_PROCESS: f"{holders.machine()}/1"}},
            "spec": {"holderIdentity": f"{holder}/run/0badc0de", "leaseDurationSeconds": 15, "acquireTime": when,
                     "renewTime": when}})
        taker = RunLock(admin, NAMESPACE, RELEASE, "run")
        taker.acquire()
        taker.release_lock()


def record_forbidden(user: str) -> None:
    from kubernetes.client.exceptions import ApiException

    from generator.live.client.kube import Kube

    alice = Kube(user)
    with scenario("forbidden", f"ServiceAccount alice, admin in namespace {NAMESPACE} only: `status` without -n "
                  "(listing every namespace's secrets is refused), reads of nodes and other namespaces refused"):
        cli("status", "--kubeconfig", user)
        for path in ("/api/v1/nodes", "/api/v1/namespaces/default/secrets"):
            with contextlib.suppress(ApiException):
                alice.request("GET", path)


def record_errors(admin: Any, kubeconfig: str, folder: Path) -> None:
    from kubernetes import client
    from kubernetes.client.exceptions import ApiException

    from generator.live.client.kube import Kube

    with scenario("errors", "a 422 (invalid namespace name), a missing RayJob (object 404), a missing namespace, "
                  "and a port nobody listens on (connection refused)"):
        with contextlib.suppress(ApiException):
            admin.request("POST", "/api/v1/namespaces", body={"metadata": {"name": "Not_A_Name"}})
        admin.get_ray("rayjobs", NAMESPACE, "absent")
        admin.namespace_exists("absent")
        closed = folder / "closed.kubeconfig"
        closed.write_text(Path(kubeconfig).read_text().replace(admin.server, f"https://127.0.0.1:{_closed_port()}"))
        unreachable = Kube(str(closed))
        with contextlib.suppress(Exception):
            unreachable.request("GET", "/version")
        with contextlib.suppress(Exception):  # doctor's API server row asks through the typed client
            client.VersionApi(unreachable.api).get_code()


def record_restricted(admin: Any) -> None:
    from generator.live.doctor import admission
    from generator.live.doctor.rows import read_namespace

    admin.request("POST", "/api/v1/namespaces", body={"metadata": {
        "name": STRICT, "labels": {"pod-security.kubernetes.io/enforce": "restricted"}}})
    with scenario("doctor_restricted", f"doctor's namespace read and PodSecurity dry runs of small.yaml's pods in "
                  f"{STRICT} (enforce=restricted) as the cluster admin"):
        ns = read_namespace(admin, STRICT)
        admission.pod_security_row(admin, ns, rendered_pod_templates(STRICT), drop_priority_class=True)


def record_terminating(admin: Any, kubeconfig: str) -> None:
    held = f"/api/v1/namespaces/{GONE}/configmaps/held"
    admin.request("POST", "/api/v1/namespaces", body={"metadata": {"name": GONE}})
    admin.request("POST", f"/api/v1/namespaces/{GONE}/configmaps",
                  body={"metadata": {"name": "held", "finalizers": ["dockyard.dev/hold"]}})
    admin.request("DELETE", f"/api/v1/namespaces/{GONE}")
    try:
        deadline = time.monotonic() + 60  # until the namespace controller says what holds it
        while "finalizers" not in (admin.namespace_deletion(GONE) or "") and time.monotonic() < deadline:
            time.sleep(0.5)
        with scenario("terminating", f"namespace {GONE} being deleted, held up by a ConfigMap's finalizer: "
                      "`status` of a release there"):
            admin.namespace_deletion(GONE)
            cli("status", RELEASE, "-n", GONE, "--kubeconfig", kubeconfig)
    finally:
        admin.request("PATCH", held, body={"metadata": {"finalizers": None}},
                      content_type="application/merge-patch+json")


def record_rayjob_fields(admin: Any) -> None:
    """The served RayJob asked whether it has preRunningDeadlineSeconds (generator/live/changes/served_fields.py),
    in a namespace that exists and in one that does not: with the pinned KubeRay's CRD, then with KubeRay v1.4's
    (the CRD replaced in place: its stored objects stay)."""
    import yaml

    from generator.live.changes.served_fields import FIELD, served_rayjob_knows
    from generator.pinned_tools import KUBERAY_PINS, cache_dir, versions

    if not admin.namespace_exists(NAMESPACE):
        admin.ensure_namespace(NAMESPACE)
    with scenario("rayjob_fields_pinned", f"the pinned KubeRay's RayJob CRD asked for spec.{FIELD} (a dry-run "
                  f"create, fieldValidation=Strict) in {NAMESPACE} and in a namespace that does not exist"):
        for namespace in (NAMESPACE, "absent"):
            served_rayjob_knows(admin, namespace, FIELD)
    old = versions()[KUBERAY_PINS["1.4"]]
    crd = yaml.safe_load((cache_dir() / f"kuberay-crds-{old}" / "ray.io_rayjobs.yaml").read_text())
    path = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/rayjobs.ray.io"
    crd["metadata"]["resourceVersion"] = admin.request("GET", path)["metadata"]["resourceVersion"]
    admin.request("PUT", path, body=crd)
    deadline = time.monotonic() + 60  # until the apiserver decodes RayJobs with the replaced schema
    while served_rayjob_knows(admin, NAMESPACE, FIELD):
        if time.monotonic() > deadline:
            raise SystemExit(f"the API server still decodes RayJobs with the pinned CRD 60 s after KubeRay {old}'s "
                             "replaced it: nothing recorded for rayjob_fields_v1_4")
        time.sleep(0.5)
    with scenario("rayjob_fields_v1_4", f"KubeRay {old}'s RayJob CRD (replacing the pinned one) asked for "
                  f"spec.{FIELD} in {NAMESPACE} and in a namespace that does not exist"):
        for namespace in (NAMESPACE, "absent"):
            served_rayjob_knows(admin, namespace, FIELD)


def record_crds_gone(admin: Any, kubeconfig: str) -> None:
    for plural in ("rayjobs", "rayclusters"):
        admin.request("DELETE", f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{plural}.ray.io")
    deadline = time.monotonic() + 60
    while "rayjobs" in admin.ray_resources() and time.monotonic() < deadline:
        time.sleep(0.5)
    with scenario("crd_missing", "the KubeRay CRDs rayjobs.ray.io and rayclusters.ray.io deleted: what the cluster "
                  "answers for them"):
        admin.ray_resources()
        with contextlib.suppress(Exception):
            admin.list_ray("rayjobs", NAMESPACE)
        with contextlib.suppress(Exception):
            admin.get_ray("rayjobs", NAMESPACE, RELEASE)
        cli("status", RELEASE, "-n", NAMESPACE, "--kubeconfig", kubeconfig)


def _dead_pid() -> int:
    """The pid of a process that has ended."""
    import subprocess

    proc = subprocess.Popen(["true"])
    proc.wait()
    return proc.pid


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]  # closed again when the block ends: nobody listens there


def main(argv: list[str] | None = None) -> int:
    from generator.playground.lifecycle import down, load_state, up
    from generator.playground.nodes import Shape

    t0 = time.monotonic()
    only = sys.argv[1:] if argv is None else argv
    reuse = os.environ.get("DOCKYARD_RECORD_KUBECONFIG")
    if only and (only != ["rayjob_fields"] or reuse):
        raise SystemExit(f"unknown selection {' '.join(only)}: `rayjob_fields` only, on a playground of our own")
    install()
    folder = Path(tempfile.mkdtemp(prefix="dockyard-record-"))
    state_dir = folder / "playground"
    saved = dict(os.environ)
    try:
        os.environ.update({k: str(folder / "helm" / k.split("_")[1].lower())
                           for k in ("HELM_CONFIG_HOME", "HELM_CACHE_HOME", "HELM_DATA_HOME")})
        if reuse:
            kubeconfig = reuse
        else:
            rc = up(state_dir, Shape(gpu_nodes=SHAPE["gpu_nodes"], gpus_per_node=SHAPE["gpus_per_node"],
                                       cpu_nodes=SHAPE["cpu_nodes"]), timeout=180, out=sys.stderr)
            state = load_state(state_dir)
            if rc != 0 or state is None:
                return rc or 1
            kubeconfig = state["kubeconfig"]
        os.environ["KUBECONFIG"] = kubeconfig
        os.environ["DOCKYARD_PLAYGROUND_DIR"] = str(state_dir)
        print(f"recording into {OUT.relative_to(REPO)}", flush=True)
        if only:
            from generator.live.client.kube import Kube

            record_rayjob_fields(Kube(kubeconfig))
        else:
            record_all(kubeconfig, folder, own=not reuse)
    finally:
        os.environ.clear()
        os.environ.update(saved)
        if not reuse:
            down(state_dir, out=io.StringIO())
        import shutil

        shutil.rmtree(folder, ignore_errors=True)
    print(f"recorded in {time.monotonic() - t0:.0f} s", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
