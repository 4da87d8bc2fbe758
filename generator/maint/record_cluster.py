"""Record the API server's answers that the offline live-code tests replay (`make record`).

Starts a playground of its own in a temporary state folder (1 GPU node × 8 GPUs, 1 CPU node; or uses the
cluster of $DOCKYARD_RECORD_KUBECONFIG), installs tests/live/data/small.yaml with `run`, makes the situations
(a GPU pod Pending, run-lock leases, a namespace-scoped user, a 422, a port nobody listens on, the KubeRay CRDs
gone) and writes each request→answer pair the live code made to tests/unit/recorded/<scenario>.json, trimmed
(no managedFields, Helm records without chart files). Never touches the user's playground; stops its own.
"""

from __future__ import annotations

import base64
import contextlib
import copy
import gzip
import io
import json
import os
import socket
import sys
import tempfile
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlsplit

from generator.tools import REPO

OUT = REPO / "tests" / "unit" / "recorded"
DATA = REPO / "tests" / "live" / "data"
RECIPE, INFRA = DATA / "small.yaml", DATA / "small.infra.yaml"
NAMESPACE = "rec"  # where the recorded release lives
RELEASE = "small"
SHAPE = {"gpu_nodes": 1, "gpus_per_node": 8, "cpu_nodes": 1}  # one GPU worker fits, the other stays Pending
SSAR = "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews"


# Request keys: shared with the replaying fake (tests/unit/fake_cluster.py) ------------------------

def split_url(url: str) -> tuple[str, dict[str, str]]:
    """(path, query) of a request URL."""
    parts = urlsplit(url)
    return parts.path, dict(parse_qsl(parts.query))


def match_of(path: str, body: Any) -> Any:
    """The part of a write's body that tells same-path requests apart (None: answers go in order)."""
    if not isinstance(body, dict):
        return None
    if path == SSAR:
        return (body.get("spec") or {}).get("resourceAttributes")
    if path.endswith("/pods"):
        return (body.get("metadata") or {}).get("generateName")
    return None


# Trimming ------------------------------------------------------------------------------------------

def _small_release(encoded: str) -> str:
    """A Helm record Secret's `release` value with only what the live code reads (chart metadata, info)."""
    raw = base64.b64decode(base64.b64decode(encoded))
    record = json.loads(gzip.decompress(raw) if raw[:2] == b"\x1f\x8b" else raw)
    keep = {k: record.get(k) for k in ("name", "namespace", "version", "info")}
    keep["chart"] = {"metadata": (record.get("chart") or {}).get("metadata")}
    packed = gzip.compress(json.dumps(keep).encode(), mtime=0)
    return base64.b64encode(base64.b64encode(packed)).decode()


# fields no test reads (containers' env, probes, volumes, ...; none the typed client requires), and tokens
DROP = frozenset({"managedFields", "token", "env", "envFrom", "volumeMounts", "volumes", "livenessProbe",
                  "readinessProbe", "startupProbe", "lifecycle", "command", "args", "terminationMessagePath",
                  "terminationMessagePolicy", "containerID", "tolerations", "podIPs", "hostIPs",
                  "dnsPolicy", "enableServiceLinks", "schedulerName", "preemptionPolicy", "allocatedResources",
                  "volumeMountStatus", "resolvedImage", "user"})


def trim(doc: Any) -> Any:
    """Drop what no test reads (DROP, last-applied annotations, Helm's chart files)."""
    if isinstance(doc, list):
        return [trim(d) for d in doc]
    if not isinstance(doc, dict):
        return doc
    out = {}
    for key, value in doc.items():
        if key in DROP:
            continue
        if key == "annotations" and isinstance(value, dict):
            value = {k: v for k, v in value.items() if "last-applied" not in k}
        out[key] = trim(value)
    meta = out.get("metadata") or {}
    if out.get("kind") == "Secret" or (meta.get("labels") or {}).get("owner") == "helm":
        data = out.get("data") or {}
        if "release" in data:
            data["release"] = _small_release(data["release"])
    return out


# Recording -----------------------------------------------------------------------------------------

class Tape:
    """The exchanges of one scenario."""

    def __init__(self) -> None:
        self.exchanges: list[dict[str, Any]] = []

    def add(self, method: str, url: str, body: Any, status: int | None, reason: str | None, data: bytes | None,
            error: BaseException | None = None) -> None:
        path, query = split_url(url)
        if query.get("watch"):
            return  # watch streams only wake waits early; no test replays them
        sent = json.loads(body) if isinstance(body, str | bytes) and body else None
        ex: dict[str, Any] = {"method": method, "path": path}
        if query:
            ex["query"] = query
        match = match_of(path, sent)
        if match is not None:
            ex["match"] = match
        if error is not None:
            reason_exc = getattr(error, "reason", None)
            ex["error"] = {"type": type(error).__name__, "reason_type": type(reason_exc).__name__,
                           "reason": str(reason_exc)}
        else:
            ex["status"], ex["reason"] = status, reason
            try:
                ex["body"] = trim(json.loads(data)) if data else None
            except ValueError:
                ex["text"] = (data or b"").decode("utf-8", "replace")
        if ex not in self.exchanges:  # the fake repeats an answer: once is enough
            self.exchanges.append(ex)


TAPE: Tape | None = None


class RecordingPool:
    """Stands in for a RESTClientObject's urllib3 PoolManager: passes every request on, keeps the answer."""

    def __init__(self, real: Any) -> None:
        self.real = real

    def request(self, method: str, url: str, **kw: Any) -> Any:
        try:
            resp = self.real.request(method, url, **kw)
        except Exception as exc:
            if TAPE is not None:
                TAPE.add(method, url, kw.get("body"), None, None, None, exc)
            raise
        if TAPE is not None and not split_url(url)[1].get("watch"):
            data = resp.data  # read it now; later reads get the same bytes (cached by urllib3)
            TAPE.add(method, url, kw.get("body"), resp.status, resp.reason, data)
        return resp

    def __getattr__(self, name: str) -> Any:
        return getattr(self.real, name)


def install() -> None:
    """Every ApiClient made from now on records through RecordingPool."""
    from kubernetes.client import rest

    original = rest.RESTClientObject.__init__

    def init(self: Any, configuration: Any) -> None:
        original(self, configuration)
        self.pool_manager = RecordingPool(self.pool_manager)

    rest.RESTClientObject.__init__ = init  # type: ignore[method-assign]


@contextlib.contextmanager
def scenario(name: str, note: str) -> Iterator[Tape]:
    global TAPE
    TAPE = Tape()
    try:
        yield TAPE
    finally:
        tape, TAPE = TAPE, None
    head = {"scenario": name, "note": note, "recorded_by": "make record (generator/maint/record_cluster.py)"}
    lines = [json.dumps(ex, ensure_ascii=False) for ex in tape.exchanges]  # one exchange a line
    text = json.dumps(head, ensure_ascii=False)[:-1] + ', "exchanges": [\n' + ",\n".join(lines) + "\n]}\n"
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / f"{name}.json").write_text(text)
    print(f"  {name}.json: {len(tape.exchanges)} exchanges", flush=True)


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
    from generator.live.snapshot import pod_reason

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

    from generator.live.plan import plan
    from generator.render.helm import template
    from generator.render.pod_templates import pod_templates

    p = plan(str(RECIPE), str(INFRA), [], None, namespace)
    docs = yaml.safe_load_all(template(p.values, p.release, namespace))
    return pod_templates([d for d in docs if isinstance(d, dict)])


def record_all(kubeconfig: str, folder: Path, own: bool) -> None:
    from kubernetes import client
    from kubernetes.client.exceptions import ApiException

    from generator.live import preflight
    from generator.live.kube import Kube
    from generator.live.release import HOLDER_PID, RunLock, _micro_time, lease_name
    from generator.live.snapshot import take

    admin = Kube(kubeconfig)
    rc, err = cli("run", RECIPE, INFRA, "-n", NAMESPACE, "--create-namespace", "-q", "--timeout", "180",
                  "--kubeconfig", kubeconfig)
    if rc != 0:
        raise SystemExit(f"run failed (exit {rc}): {err}")
    wait_pending(admin)

    with scenario("status_pending", f"`status` of release {RELEASE} in {NAMESPACE}: head, sandbox and one Ray "
                  "worker running, the other Pending (Insufficient nvidia.com/gpu); the only release"):
        cli("status", "--kubeconfig", kubeconfig)
        cli("status", RELEASE, "-n", NAMESPACE, "-o", "json", "--kubeconfig", kubeconfig)
        take(admin, RELEASE, NAMESPACE)

    lease_path = f"/apis/coordination.k8s.io/v1/namespaces/{NAMESPACE}/leases"
    name = lease_name(RELEASE)
    with scenario("lease", "the run lock's Lease: created, refused (AlreadyExists), a stale update (Conflict), "
                  "a delete with a stale precondition (Conflict), deleted, read when absent (NotFound), "
                  "taken over from a holder whose process is gone"):
        lock = RunLock(admin, NAMESPACE, RELEASE, "run")
        lock.acquire()
        with contextlib.suppress(Exception):
            RunLock(admin, NAMESPACE, RELEASE, "upgrade").acquire()
        current = admin.request("GET", f"{lease_path}/{name}")
        stale = copy.deepcopy(current)
        stale["metadata"]["resourceVersion"] = str(int(current["metadata"]["resourceVersion"]) - 1)
        with contextlib.suppress(ApiException):
            admin.request("PUT", f"{lease_path}/{name}", body=stale)
        with contextlib.suppress(ApiException):
            admin.request("DELETE", f"{lease_path}/{name}", body={"preconditions": {"resourceVersion": "1"}})
        lock.release_lock()
        with contextlib.suppress(ApiException):
            admin.request("GET", f"{lease_path}/{name}")
        # a holder that stopped renewing a minute ago and whose process is gone: taken over
        dead = RunLock(admin, NAMESPACE, RELEASE, "run")
        body = dead._body()
        body["metadata"]["annotations"][HOLDER_PID] = f"{socket.gethostname()}/{_dead_pid()}"
        body["spec"]["renewTime"] = body["spec"]["acquireTime"] = _micro_time(datetime.now(UTC) - timedelta(minutes=1))
        admin.request("POST", lease_path, body=body)
        taker = RunLock(admin, NAMESPACE, RELEASE, "run")
        taker.acquire()
        taker.release_lock()

    user = namespace_user(admin, kubeconfig, folder)
    alice = Kube(user)
    with scenario("forbidden", f"ServiceAccount alice, admin in namespace {NAMESPACE} only: `status` without -n "
                  "(listing every namespace's secrets is refused), reads of nodes and other namespaces refused"):
        cli("status", "--kubeconfig", user)
        for path in ("/api/v1/nodes", "/api/v1/namespaces/default/secrets"):
            with contextlib.suppress(ApiException):
                alice.request("GET", path)

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

    for who, kc in (("admin", kubeconfig), ("alice", user)):
        with scenario(f"doctor_{who}", f"`doctor` of small.yaml in {NAMESPACE} as {who}"):
            cli("doctor", RECIPE, INFRA, "-n", NAMESPACE, "-o", "json", "--kubeconfig", kc)

    strict = f"{NAMESPACE}-restricted"
    admin.request("POST", "/api/v1/namespaces", body={"metadata": {
        "name": strict, "labels": {"pod-security.kubernetes.io/enforce": "restricted"}}})
    with scenario("doctor_restricted", f"doctor's namespace read and PodSecurity dry runs of small.yaml's pods in "
                  f"{strict} (enforce=restricted) as the cluster admin"):
        ns = preflight.read_namespace(admin, strict)
        preflight.pod_security_row(admin, ns, rendered_pod_templates(strict), drop_priority_class=True)

    if not own:
        print("  crd_missing.json: kept (deleting the KubeRay CRDs is done only on a playground of our own)")
        return
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


def main() -> int:
    from generator.playground.cluster import down, load_state, up
    from generator.playground.nodes import Shape

    t0 = time.monotonic()
    install()
    reuse = os.environ.get("DOCKYARD_RECORD_KUBECONFIG")
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
            if rc != 0:
                return rc
            kubeconfig = load_state(state_dir)["kubeconfig"]  # type: ignore[index]
        os.environ["KUBECONFIG"] = kubeconfig
        os.environ["DOCKYARD_PLAYGROUND_DIR"] = str(state_dir)
        print(f"recording into {OUT.relative_to(REPO)}", flush=True)
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
