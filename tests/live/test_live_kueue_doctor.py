"""doctor's Kueue rows against the real Kueue v0.17.0 controller on the session playground:
a ClusterQueue too small for the gang is ✗ with the numbers, a missing LocalQueue is ✗, a fitting one passes,
and a Kueue read RBAC refuses is a ! row naming the verb and resource. Each test has its own namespace,
ClusterQueue (admitting that namespace only, by its kubernetes.io/metadata.name label) and LocalQueue,
deleted at teardown. doctor installs nothing: each test is one doctor run (~5 s: its KubeRay lease watch).

The gang: the small recipe (tests/live/data/small.yaml) in rayjob mode, K8sJobMode: head (1 cpu, 2Gi),
trainer and inference (1 pod each: 4 cpu, 16Gi, 8 GPUs), the submitter (500m, 512Mi): 16 GPUs.
"""

from __future__ import annotations

import json
import uuid

import pytest
from kubernetes import client
from live_helpers import INFRA, KUEUE, RECIPE, cli, delete_custom_objects, doctor_rows, infra_variant

pytestmark = pytest.mark.timeout(120)


@pytest.fixture
def local_queue(k8s, namespace):
    """`local_queue(gpus) -> name`: a ClusterQueue with `gpus` nvidia.com/gpu (cpu and memory to spare) and a
    LocalQueue of it in the namespace, Active before it is returned; both deleted at teardown."""
    from session_env import wait_for

    api = client.CustomObjectsApi(k8s)
    made: list = []  # (group, plural, namespace, name)

    def make(gpus: int) -> str:
        name = f"kd-{uuid.uuid4().hex[:6]}"
        api.create_cluster_custom_object(*KUEUE, "clusterqueues", {
            "apiVersion": "/".join(KUEUE), "kind": "ClusterQueue", "metadata": {"name": name},
            "spec": {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": namespace}},
                     "resourceGroups": [{"coveredResources": ["cpu", "memory", "nvidia.com/gpu"], "flavors": [
                         {"name": "default-flavor", "resources": [
                             {"name": "cpu", "nominalQuota": "64"}, {"name": "memory", "nominalQuota": "256Gi"},
                             {"name": "nvidia.com/gpu", "nominalQuota": str(gpus)}]}]}]}})
        made.append((KUEUE, "clusterqueues", None, name))
        api.create_namespaced_custom_object(*KUEUE, namespace, "localqueues", {
            "apiVersion": "/".join(KUEUE), "kind": "LocalQueue", "metadata": {"name": name},
            "spec": {"clusterQueue": name}})
        made.append((KUEUE, "localqueues", namespace, name))

        def active() -> bool:
            lq = api.get_namespaced_custom_object(*KUEUE, namespace, "localqueues", name)
            return any(c["type"] == "Active" and c["status"] == "True"
                       for c in (lq.get("status") or {}).get("conditions") or [])

        wait_for(active, 30, f"LocalQueue {name} to be Active")
        return name

    yield make
    delete_custom_objects(api, made)


def _doctor(capsys, playground, tmp_path, namespace, queue, *more):
    def change(d):
        d["launch"]["queue"] = queue

    infra = infra_variant(tmp_path, f"{queue}.infra.yaml", change)
    return cli(capsys, "doctor", RECIPE, infra, "-n", namespace, "--kubeconfig", playground.kubeconfig, *more)


KUEUE_ROWS = ["Kueue CRDs", "Kueue LocalQueue", "Kueue ClusterQueue", "Kueue namespaceSelector",
              "Kueue quota: resources", "Kueue quota: gang"]


def test_doctor_refuses_a_gang_the_cluster_queue_can_never_hold(playground, namespace, local_queue, capsys, tmp_path):
    queue = local_queue(gpus=8)
    rc, out, err = _doctor(capsys, playground, tmp_path, namespace, queue)
    rows = doctor_rows(out)
    assert rc == 1, out + err
    assert [k for k in rows if k.startswith("Kueue")] == KUEUE_ROWS, out
    assert all(rows[k].startswith("✓ ") for k in KUEUE_ROWS[:-1]), out
    gang = rows["Kueue quota: gang"]
    assert gang.startswith("✗ "), out
    assert (f"4 pods (head 1, trainer 1, inference 1, submitter 1) never fit ClusterQueue {queue}'s nominal quota "
            "(no cohort to borrow from): nvidia.com/gpu: the gang needs 16, the quota is 8, 8 short") in gang, gang
    assert f"raise ClusterQueue {queue}'s nominalQuota" in gang
    # the nodes could hold it: only the queue's quota refuses
    assert rows["GPU capacity: gang"].startswith("✓ "), out


def test_doctor_refuses_a_missing_local_queue(playground, namespace, local_queue, capsys, tmp_path):
    other = local_queue(gpus=16)
    rc, out, err = _doctor(capsys, playground, tmp_path, namespace, "nosuch-queue")
    rows = doctor_rows(out)
    assert rc == 1, out + err
    row = rows["Kueue LocalQueue"]
    assert row.startswith(f"✗ Kueue LocalQueue         no LocalQueue nosuch-queue in namespace {namespace} "
                          "(launch.queue): Kueue keeps the job suspended"), row
    assert f"the namespace has: {other}" in row and f"set launch.queue to one of: {other}" in row
    assert "Kueue ClusterQueue" not in rows and "Kueue quota: gang" not in rows  # no queue: nothing to read on


def test_doctor_passes_when_the_gang_fits_the_queue(playground, namespace, local_queue, capsys, tmp_path):
    queue = local_queue(gpus=16)
    rc, out, err = _doctor(capsys, playground, tmp_path, namespace, queue)
    rows = doctor_rows(out)
    assert rc == 0 and out.rstrip().endswith("ready to run"), out + err
    assert all(rows[k].startswith("✓ ") for k in KUEUE_ROWS), out
    assert f"{queue} in {namespace} is active → ClusterQueue {queue}" in rows["Kueue LocalQueue"]
    assert f"kubernetes.io/metadata.name={namespace} matches {namespace}" in rows["Kueue namespaceSelector"]
    assert "cpu 9.5 of 64, memory 34.5Gi of 256Gi, nvidia.com/gpu 16 of 16" in rows["Kueue quota: gang"], out


def test_doctor_without_a_queue_has_no_kueue_row(playground, namespace, capsys):
    rc, out, err = cli(capsys, "doctor", RECIPE, INFRA, "-n", namespace, "--kubeconfig", playground.kubeconfig)
    assert "Kueue" not in out, out


def test_a_kueue_read_rbac_refuses_is_a_warning_row(playground, k8s, namespace, local_queue, capsys, tmp_path):
    """A user with the built-in `admin` role in the namespace only (Kueue's own roles not installed): the
    LocalQueue read is refused; doctor says so in its row, lists the pair, and goes on."""
    import base64

    import yaml

    queue = local_queue(gpus=16)
    core, rbac = client.CoreV1Api(k8s), client.RbacAuthorizationV1Api(k8s)
    core.create_namespaced_service_account(namespace, {"metadata": {"name": "alice"}})
    rbac.create_namespaced_role_binding(namespace, {
        "metadata": {"name": "alice-admin"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "admin"},
        "subjects": [{"kind": "ServiceAccount", "name": "alice", "namespace": namespace}]})
    token = core.create_namespaced_service_account_token(
        "alice", namespace, {"spec": {"expirationSeconds": 600}}).status.token
    admin = yaml.safe_load(open(playground.kubeconfig).read())
    cluster = admin["clusters"][0]["cluster"]
    ca = cluster.get("certificate-authority-data") or base64.b64encode(
        open(cluster["certificate-authority"], "rb").read()).decode()
    kubeconfig = tmp_path / "alice.kubeconfig"
    kubeconfig.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": "alice",
        "clusters": [{"name": "p", "cluster": {"server": playground.server, "certificate-authority-data": ca}}],
        "users": [{"name": "alice", "user": {"token": token}}],
        "contexts": [{"name": "alice", "context": {"cluster": "p", "user": "alice", "namespace": namespace}}]}))

    def change(d):
        d["launch"]["queue"] = queue

    infra = infra_variant(tmp_path, "alice.infra.yaml", change)
    rc, out, err = cli(capsys, "doctor", RECIPE, infra, "-n", namespace, "--kubeconfig", kubeconfig, "-o", "json")
    assert err == "" and rc in (0, 1), err  # the whole table: no abort
    checks = {c["check"]: c for c in json.loads(out)["checks"]}
    row = checks["Kueue LocalQueue"]
    assert row["mark"] == "!" and row["detail"].startswith(
        f"forbidden: cannot get localqueues.kueue.x-k8s.io in namespace {namespace}: whether {queue} exists is "
        "unknown"), row
    assert row["missing"] == ["get localqueues.kueue.x-k8s.io"]
    assert checks["Kueue CRDs"]["mark"] == "✓"  # discovery is open to every authenticated user
