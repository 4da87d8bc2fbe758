"""`smoke` with `launch.queue` on the session playground's real Kueue v0.17.0: the probe's
RayJob queues and is admitted like the job. The simulated playground runs no Ray, so here the probe gets as
far as Kueue's admission (and the RayCluster's pods); a whole passing smoke needs the real node
(tests/live/test_real_ray.py). Each test has its own namespace, ClusterQueue and LocalQueue.

- a LocalQueue that does not exist: refused before anything is installed, in doctor's row's words;
- quota held by another workload: the probe stays queued, suspended, no pod of its gang; the timeout names
  Kueue's reason; the release and its Workload are removed before smoke returns;
- quota free: Kueue admits it ("admitted by Kueue") and its gang's pods are created.
"""

from __future__ import annotations

import uuid

import pytest
from kubernetes import client
from live_helpers import KUEUE, RECIPE, cli, create_custom_object, delete_custom_objects, infra_variant
from session_env import wait_for

from generator.live.changes.teardown import leftovers
from generator.live.client.kube import Kube

RELEASE = "small-smoke"  # smoke's default release: <recipe name>-smoke
TIMEOUT = 15  # smoke's --timeout: Kueue admits within a second or two when there is quota

pytestmark = pytest.mark.timeout(180)


@pytest.fixture
def queue(k8s, namespace):
    """`queue(gpus) -> LocalQueue name`: a ClusterQueue with `gpus` nvidia.com/gpu for this namespace only and
    its LocalQueue, Active; deleted at teardown (with any blocker RayCluster made by `block`)."""
    api = client.CustomObjectsApi(k8s)
    made: list[tuple[tuple[str, str], str, str | None, str]] = []

    def make(gpus: int) -> str:
        name = f"ks-{uuid.uuid4().hex[:6]}"
        create_custom_object(api, made, KUEUE, "clusterqueues", None, {
            "kind": "ClusterQueue", "metadata": {"name": name}, "spec": {
            "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": namespace}},
            "resourceGroups": [{"coveredResources": ["cpu", "memory", "nvidia.com/gpu"], "flavors": [
                {"name": "default-flavor", "resources": [
                    {"name": "cpu", "nominalQuota": "64"}, {"name": "memory", "nominalQuota": "256Gi"},
                    {"name": "nvidia.com/gpu", "nominalQuota": str(gpus)}]}]}]}})
        create_custom_object(api, made, KUEUE, "localqueues", namespace,
                {"kind": "LocalQueue", "metadata": {"name": name}, "spec": {"clusterQueue": name}})
        wait_for(lambda: _active(api, namespace, name), 30, f"LocalQueue {name} to be Active")
        return name

    def block(local_queue: str, gpus: int) -> str:
        """A queued RayCluster of `gpus` GPUs on the LocalQueue, admitted: it holds that much quota."""
        name = f"blocker-{uuid.uuid4().hex[:4]}"
        pod = {"containers": [{"name": "ray", "image": "rayproject/ray:2.52.0",
                               "resources": {"requests": {"cpu": "1", "memory": "1Gi", "nvidia.com/gpu": str(gpus)},
                                             "limits": {"nvidia.com/gpu": str(gpus)}}}],
               "nodeSelector": {"nvidia.com/gpu.present": "true"},
               "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]}
        head = {"containers": [{"name": "ray-head", "image": "rayproject/ray:2.52.0",
                                "resources": {"requests": {"cpu": "1", "memory": "1Gi"}}}]}
        create_custom_object(api, made, ("ray.io", "v1"), "rayclusters", namespace, {
            "kind": "RayCluster", "metadata": {"name": name, "labels": {"kueue.x-k8s.io/queue-name": local_queue}},
            "spec": {"headGroupSpec": {"rayStartParams": {}, "template": {"spec": head}},
                     "workerGroupSpecs": [{"groupName": "gpu", "replicas": 1, "minReplicas": 1, "maxReplicas": 1,
                                           "rayStartParams": {}, "template": {"spec": pod}}]}})

        def admitted() -> bool:
            rc = api.get_namespaced_custom_object("ray.io", "v1", namespace, "rayclusters", name)
            return rc["spec"].get("suspend") is False
        wait_for(admitted, 30, f"Kueue to admit the blocker RayCluster {name}")
        return name

    make.block = block  # type: ignore[attr-defined]
    yield make
    delete_custom_objects(api, made)


def _active(api, namespace, name) -> bool:
    lq = api.get_namespaced_custom_object(*KUEUE, namespace, "localqueues", name)
    conditions = (lq.get("status") or {}).get("conditions") or []
    return any(c["type"] == "Active" and c["status"] == "True" for c in conditions)


def _smoke(capsys, playground, tmp_path, namespace, local_queue):
    def change(d):
        d["launch"]["queue"] = local_queue

    infra = infra_variant(tmp_path, f"{local_queue}.infra.yaml", change)
    return cli(capsys, "smoke", RECIPE, infra, "-n", namespace, "--timeout", TIMEOUT,
               "--kubeconfig", playground.kubeconfig)


def _workloads(k8s, namespace) -> list[dict]:
    return client.CustomObjectsApi(k8s).list_namespaced_custom_object(*KUEUE, namespace, "workloads")["items"]


def test_smoke_refuses_a_missing_local_queue_before_installing(playground, namespace, capsys, tmp_path):
    rc, out, err = _smoke(capsys, playground, tmp_path, namespace, "nosuch-queue")
    assert rc == 1 and out == "", out + err
    assert ("error: Kueue would never admit this gang (Kueue LocalQueue: no LocalQueue nosuch-queue in namespace "
            f"{namespace} (launch.queue)") in err, err
    assert "`smoke` would wait out its whole --timeout; nothing was changed" in err
    assert "installed" not in err and leftovers(Kube(playground.kubeconfig), RELEASE, namespace) == []


def test_smoke_waits_queued_behind_held_quota_and_names_kueues_reason(playground, k8s, namespace, queue, capsys,
                                                                       tmp_path):
    local_queue = queue(gpus=16)
    queue.block(local_queue, gpus=8)  # 8 of the 16 GPUs held: the probe's 16 never get in meanwhile
    rc, out, err = _smoke(capsys, playground, tmp_path, namespace, local_queue)
    assert rc == 1, out + err
    assert f"smoke: RayJob {RELEASE} queued in LocalQueue {local_queue}" in err, err
    line = next(x for x in err.splitlines() if x.startswith("error: "))
    assert line.startswith(f"error: smoke: Kueue admitting RayJob {RELEASE} (LocalQueue {local_queue}) did not "
                           "happen within --timeout; the cluster says: "
                           f"RayJob {RELEASE}: queued in LocalQueue {local_queue} (ClusterQueue {local_queue})"), line
    assert "insufficient unused quota for nvidia.com/gpu" in line, line
    assert f"{RELEASE}-" not in line.split("pods: ")[1].replace(f"{RELEASE}-sandbox", ""), line  # no Ray pod: none
    assert f"smoke: release {RELEASE} removed\n" in err  # removed means its Workload too (teardown.remove waits)
    assert not [w for w in _workloads(k8s, namespace) if RELEASE in w["metadata"]["name"]]


def test_smoke_is_admitted_when_the_queue_has_room(playground, k8s, namespace, queue, capsys, tmp_path):
    local_queue = queue(gpus=16)
    rc, out, err = _smoke(capsys, playground, tmp_path, namespace, local_queue)
    assert "smoke: admitted by Kueue" in err, err
    # no Ray on the simulated nodes: it ends at a later step, never at Kueue's
    assert rc == 1 and "Kueue admitting" not in err and "did not happen within --timeout" in err, err
    assert f"{RELEASE}-" in err.split("pods: ")[1].replace(f"{RELEASE}-sandbox", ""), err  # the gang's pods came
    assert leftovers(Kube(playground.kubeconfig), RELEASE, namespace) == [] and not _workloads(k8s, namespace)
