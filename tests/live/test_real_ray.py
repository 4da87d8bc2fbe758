"""Real Ray on the playground's real node: the chart's RayJob runs for real. The node offers GPUs and holds the Ray
image; `smoke` passes (plain, and queued by Kueue with the pool under gVisor) and names the row a broken overlay or
a silent pool breaks, or the step a cluster that cannot start stops at; `run --follow` exits with the job, and
`status` and `rollback` follow.

The node, the test shape and what is dialed: real_ray_inputs.py.
"""

from __future__ import annotations

import io
import subprocess
import time

import pytest
from live_helpers import cli
from real_ray_inputs import INFRA, RECIPE, SHAPE, fresh_ns, infra_file
from session_env import wait_for

from generator import EXIT_FAILED
from generator.pinned_tools import tool_dir

pytestmark = pytest.mark.real_node  # the machine's one real node: hack/suite.py runs this module in a real node part


def _rows(out: str) -> dict[str, bool]:
    return {line[2:].split("  ")[0].strip(): line.startswith("✓")
            for line in out.splitlines() if line[:2] in ("✓ ", "✗ ")}


def test_the_real_node_offers_gpus_and_holds_the_ray_image(ray_node):
    from generator.playground import lifecycle
    from generator.playground.state import PlaygroundState

    node = lifecycle.api_for(PlaygroundState.from_dict(ray_node["state"])).get("/api/v1/nodes/real-node-0")
    assert node["status"]["allocatable"]["nvidia.com/gpu"] == "2"  # from the device plugin, through the kubelet
    assert ray_node["state"]["real_node"]["images"]["ray"].startswith("dockyard.local/playground-ray:")
    out = io.StringIO()
    assert lifecycle.status(ray_node["state_dir"], out=out) == 0, out.getvalue()
    assert "node/device-plugin" in out.getvalue() and "nvidia.com/gpu allocatable 2 of 2" in out.getvalue()


def test_smoke_passes_with_the_playground_infra_and_removes_its_release(ray_node, capsys):
    ns = fresh_ns()
    t0 = time.monotonic()
    rc, out, err = cli(capsys, "smoke", RECIPE, INFRA, *SHAPE, "-n", ns, "--create-namespace",
                       "--kubeconfig", ray_node["kubeconfig"], "--timeout", "600")
    print(f"\nsmoke on the real node: {time.monotonic() - t0:.1f} s\n{out}{err}")
    assert rc == 0, out + err
    rows = _rows(out)
    for row in ("fleet resource dockyard_fleet_trainer", "fleet resource dockyard_fleet_inference",
                "GPUs of the trainer fleet", "GPUs of the inference fleet",
                "DOCKYARD_FLEET_ROLE in a trainer task", "DOCKYARD_FLEET_ROLE in a inference task",
                "RAY_ENABLE_UV_RUN_RUNTIME_ENV in a trainer task", "RAY_ENABLE_UV_RUN_RUNTIME_ENV in a inference task",
                "placement group on the trainer fleet", "placement group on the inference fleet",
                "recipe at its mount path", "sandbox POST /task/submit"):
        assert rows.get(row) is True, f"{row}: {rows}"
    assert "14/14 rows hold" in out
    # removed afterwards: `status` finds no release (exit 1 with its not-found line; a connection error or
    # any other failure reads otherwise, a crash raises here)
    rc, out, err = cli(capsys, "status", "grpo-swe-smoke", "-n", ns, "--kubeconfig", ray_node["kubeconfig"])
    assert (rc, out, err) == (EXIT_FAILED, "", f"error: release grpo-swe-smoke not found in namespace {ns}\n")


def test_smoke_passes_on_a_queued_cluster_admitted_by_kueue_with_the_pool_under_gvisor(ray_node, capsys, tmp_path):
    """The probe job carries the queue label, is suspended by Kueue's webhook, admitted as a gang, runs every row
    for real, and leaves no Workload behind once uninstalled. The sandbox pool runs under gVisor here
    (sandbox.runtimeClassName gvisor; the first smoke above is runc's): its row passes, and the kept pool's
    executor sees gVisor's kernel."""
    from kubernetes import client, config

    ns = fresh_ns()
    api = config.new_client_from_config(config_file=ray_node["kubeconfig"])
    client.CoreV1Api(api).create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=ns)))
    client.CustomObjectsApi(api).create_namespaced_custom_object(
        "kueue.x-k8s.io", "v1beta2", ns, "localqueues",
        {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "LocalQueue", "metadata": {"name": "smoke"},
         "spec": {"clusterQueue": "playground"}})
    def queued_under_gvisor(doc):
        doc["launch"]["queue"] = "smoke"
        doc["sandbox"]["runtimeClassName"] = "gvisor"

    queued = infra_file(tmp_path, "queued", queued_under_gvisor)
    t0 = time.monotonic()
    rc, out, err = cli(capsys, "smoke", RECIPE, queued, *SHAPE, "-n", ns,
                       "--kubeconfig", ray_node["kubeconfig"], "--timeout", "600", "--keep")
    print(f"\nqueued smoke on the real node, the pool under gVisor: {time.monotonic() - t0:.1f} s\n{out}{err}")
    assert rc == 0, out + err
    assert "14/14 rows hold" in out and "Kueue" in out + err, out + err
    assert _rows(out)["sandbox POST /task/submit"] is True
    (pod,) = client.CoreV1Api(api).list_namespaced_pod(ns, label_selector="app.kubernetes.io/component=sandbox").items
    assert pod.spec.runtime_class_name == "gvisor" and pod.spec.node_name == "real-node-0"
    kubectl = [str(tool_dir("kubernetes") / "kubectl"), f"--kubeconfig={ray_node['kubeconfig']}", "-n", ns]
    inside = subprocess.run([*kubectl, "exec", pod.metadata.name, "--", "cat", "/proc/version"], capture_output=True,
                            text=True, timeout=60)
    assert inside.returncode == 0 and "gvisor" in inside.stdout, inside.stdout + inside.stderr
    rc, out, err = cli(capsys, "uninstall", "grpo-swe-smoke", "-n", ns, "--kubeconfig", ray_node["kubeconfig"])
    assert rc == 0, out + err
    def workloads():
        return client.CustomObjectsApi(api).list_namespaced_custom_object("kueue.x-k8s.io", "v1beta2", ns,
                                                                         "workloads")["items"]

    wait_for(lambda: workloads() == [], 60, "the probe's Workload to go with its RayJob (uninstall)")
    client.CoreV1Api(api).delete_namespace(ns)
    api.close()


def test_smoke_names_the_row_a_broken_overlay_breaks(ray_node, capsys, tmp_path):
    # the trainer group's rayStartParams hold num-gpus 0: the pod still gets its GPU, Ray does not
    def broken(doc):
        doc["kuberay"]["spec"]["workerGroupSpecs"][0]["rayStartParams"]["num-gpus"] = "0"

    ns = fresh_ns()
    rc, out, err = cli(capsys, "smoke", RECIPE, infra_file(tmp_path, "broken", broken), *SHAPE, "-n", ns,
                       "--create-namespace", "--kubeconfig", ray_node["kubeconfig"], "--timeout", "600")
    print(out + err)
    assert rc == 1, out + err
    rows = _rows(out)
    assert rows["GPUs of the trainer fleet"] is False and rows["placement group on the trainer fleet"] is False, rows
    assert rows["GPUs of the inference fleet"] is True and rows["fleet resource dockyard_fleet_trainer"] is True, rows
    assert "✗ smoke" in out and "GPUs of the trainer fleet" in out.splitlines()[-1]


def test_smoke_fails_the_sandbox_row_when_the_pool_does_not_answer(ray_node, capsys, tmp_path):
    def no_pool(doc):
        doc["sandbox"]["replicas"] = 0  # the Service exists, nothing listens behind it

    ns = fresh_ns()
    rc, out, err = cli(capsys, "smoke", RECIPE, infra_file(tmp_path, "nopool", no_pool), *SHAPE, "-n", ns,
                       "--create-namespace", "--kubeconfig", ray_node["kubeconfig"], "--timeout", "600")
    print(out + err)
    assert rc == 1, out + err
    rows = _rows(out)
    assert rows["sandbox POST /task/submit"] is False and rows["GPUs of the trainer fleet"] is True, rows


def test_run_follow_exit_codes_status_and_rollback(ray_node, capsys, tmp_path):
    kc = ray_node["kubeconfig"]
    ns = fresh_ns()
    good = 'entrypoint=python3 -c "print(\'dockyard-job-ran\')"'
    bad = 'entrypoint=python3 -c "import sys; print(\'dockyard-failing-on-purpose\'); sys.exit(1)"'
    rc, out, err = cli(capsys, "run", RECIPE, INFRA, *SHAPE, good, "-n", ns, "--create-namespace", "--follow",
                       "--kubeconfig", kc, "--timeout", "600", "-q")
    assert rc == 0, out + err
    assert "dockyard-job-ran" in out and "job SUCCEEDED" in out, out + err

    rc, out, err = cli(capsys, "run", RECIPE, INFRA, *SHAPE, bad, "-n", ns, "--replace", "--follow",
                       "--kubeconfig", kc, "--timeout", "600", "-q")
    assert rc == 1, out + err
    assert "dockyard-failing-on-purpose" in out and "job FAILED" in err, out + err

    rc, out, err = cli(capsys, "status", "grpo-swe", "-n", ns, "--kubeconfig", kc)
    assert rc == 0, out + err
    assert "job FAILED" in out and "dockyard-failing-on-purpose" in out, out

    rc, out, err = cli(capsys, "rollback", "grpo-swe", "1", "-n", ns, "--replace", "--kubeconfig", kc,
                       "--timeout", "300")
    assert rc == 0, out + err
    from generator.live.client.kube import Kube
    from generator.live.state import driver_log

    kube = Kube(kc)
    ok, job = driver_log.follow(kube, "grpo-swe", ns, time.monotonic() + 400, write=lambda s: None)
    assert ok is True, driver_log.outcome(job) if job else "no RayJob"
    rc, out, err = cli(capsys, "uninstall", "grpo-swe", "-n", ns, "--kubeconfig", kc, "--timeout", "300")
    assert rc == 0, out + err


def test_smoke_that_cannot_start_names_the_step_and_leaves_nothing(ray_node, capsys, tmp_path):
    # an image without Ray (the playground executor): `ray start` is not found, the head never gets ready
    def no_ray(doc):
        doc["infra"]["image"] = {"repository": "dockyard.local/playground-executor", "tag": "1", "pullPolicy": "Never"}

    ns = fresh_ns()
    t0 = time.monotonic()
    rc, out, err = cli(capsys, "smoke", RECIPE, infra_file(tmp_path, "noray", no_ray), *SHAPE, "-n", ns,
                       "--create-namespace", "--kubeconfig", ray_node["kubeconfig"], "--timeout", "60", "-q")
    took = time.monotonic() - t0
    assert rc == 1, out + err
    line = [x for x in err.splitlines() if x.startswith("error:")]
    assert len(line) == 1 and "the RayCluster becoming ready did not happen within --timeout" in line[0], err
    assert "RayJob grpo-swe-smoke" in line[0] and "pods:" in line[0], err
    assert "Traceback" not in err and took < 60 + 150, took  # the timeout, then the uninstall
    from generator.live.changes.teardown import leftovers
    from generator.live.client.kube import Kube

    assert leftovers(Kube(ray_node["kubeconfig"]), "grpo-swe-smoke", ns) == []
