"""Real Ray on the playground's real node: the chart's RayJob runs for real.

One playground with a real node that advertises 2 fake GPUs (the device plugin) and holds the
project's Ray image, for the module; real-node sessions take turns through the same lock as
test_real_node.py. The test shape: 1 trainer + 1 inference worker, 1 GPU each, small object store,
HTTPMode submission (values-examples/grpo_swe_playground.infra.yaml).

Every address dialed is loopback (the apiserver) or inside the node's network namespace (pods and
Services, reached by the operator and the CLI through the apiserver's service proxy).
"""

from __future__ import annotations

import io
import subprocess
import time
import uuid
from pathlib import Path

import cache_job
import pytest
import resume_job
import stall_job
import yaml
from live_helpers import cli, spawn
from real_node_session import real_node_playground
from resume_job import FAIL_AFTER, STEPS
from session_env import wait_for

from generator import EXIT_FAILED
from generator.pinned_tools import tool_dir

pytestmark = pytest.mark.real_node  # the machine's one real node: hack/suite.py runs this module in a real node part

REPO = Path(__file__).resolve().parents[2]
RECIPE = REPO / "values-examples" / "grpo_swe.yaml"
INFRA = REPO / "values-examples" / "grpo_swe_playground.infra.yaml"
SHAPE = ["cluster.trainer.nodes=1", "cluster.trainer.gpusPerNode=1", "cluster.inference.gpusPerNode=1"]


@pytest.fixture(scope="module")
def ray_node():
    from generator.pinned_tools import REPO as TOOLS_REPO

    # the Ray image and the device plugin, cached by version (a cold image build is ~3 min)
    subprocess.run(["bash", str(TOOLS_REPO / "hack" / "tools.sh"), "ray-image", "device-plugin"], check=True)
    # with Kueue: smoke on a queued cluster; unlabelled jobs pass Kueue's webhooks untouched
    with real_node_playground("real-ray-", timeout=300, env={"DOCKYARD_REAL_NODE_GPUS": "2"},
                              kueue=True) as (state_dir, state, _):
        yield {"state_dir": state_dir, "state": state, "kubeconfig": str(state_dir / "kubeconfig")}


def _ns() -> str:
    return f"ray-{uuid.uuid4().hex[:6]}"


def _infra(tmp_path: Path, name: str, change=None) -> Path:
    doc = yaml.safe_load(INFRA.read_text())
    if change:
        change(doc)
    path = tmp_path / f"{name}.infra.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


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
    ns = _ns()
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

    ns = _ns()
    api = config.new_client_from_config(config_file=ray_node["kubeconfig"])
    client.CoreV1Api(api).create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=ns)))
    client.CustomObjectsApi(api).create_namespaced_custom_object(
        "kueue.x-k8s.io", "v1beta2", ns, "localqueues",
        {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "LocalQueue", "metadata": {"name": "smoke"},
         "spec": {"clusterQueue": "playground"}})
    def queued_under_gvisor(doc):
        doc["launch"]["queue"] = "smoke"
        doc["sandbox"]["runtimeClassName"] = "gvisor"

    queued = _infra(tmp_path, "queued", queued_under_gvisor)
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

    ns = _ns()
    rc, out, err = cli(capsys, "smoke", RECIPE, _infra(tmp_path, "broken", broken), *SHAPE, "-n", ns,
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

    ns = _ns()
    rc, out, err = cli(capsys, "smoke", RECIPE, _infra(tmp_path, "nopool", no_pool), *SHAPE, "-n", ns,
                       "--create-namespace", "--kubeconfig", ray_node["kubeconfig"], "--timeout", "600")
    print(out + err)
    assert rc == 1, out + err
    rows = _rows(out)
    assert rows["sandbox POST /task/submit"] is False and rows["GPUs of the trainer fleet"] is True, rows


def test_run_follow_exit_codes_status_and_rollback(ray_node, capsys, tmp_path):
    kc = ray_node["kubeconfig"]
    ns = _ns()
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

    ns = _ns()
    t0 = time.monotonic()
    rc, out, err = cli(capsys, "smoke", RECIPE, _infra(tmp_path, "noray", no_ray), *SHAPE, "-n", ns,
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


# ---------------------------------------------------------------- resume from checkpoints (infra.storage)

RESUME = resume_job.entrypoint_override()  # the job (resume_job.py): fails after step FAIL_AFTER when it starts at 0


def test_a_retry_resumes_from_the_checkpoint_volume_which_outlives_uninstall(ray_node, capsys, tmp_path):
    from kubernetes import client, config

    kc, ns = ray_node["kubeconfig"], _ns()
    infra = _infra(tmp_path, "resume", lambda doc: (resume_job.retried(doc, checkpoints=True),
                                                     resume_job.keeps_logs(doc)))
    t0 = time.monotonic()
    rc, out, err = cli(capsys, "run", RECIPE, infra, *SHAPE, RESUME, "-n", ns, "--create-namespace",
                       "--follow", "--kubeconfig", kc, "--timeout", "900", "-q")
    print(f"\nresumed run on the real node: {time.monotonic() - t0:.1f} s\n{out}{err}")
    assert rc == 0, out + err
    # the first attempt from step 0 failed after step 2; KubeRay's retry ran on a new RayCluster and went on at 3
    assert "dockyard-resume: failing on purpose after step 2" in out and "--- attempt 2 (RayCluster " in out, out
    assert "dockyard-resume: start at step 3 in /dockyard/checkpoints" in out and "dockyard-resume: done" in out, out
    assert out.count("dockyard-resume: start at step 0") == 1, out
    rc, status, err = cli(capsys, "status", "grpo-swe", "-n", ns, "--kubeconfig", kc)
    assert "attempts   attempt 2 of 2 (1 failed, retried on a new RayCluster)" in status, status + err
    steps = resume_job.step_files(ray_node["state_dir"], ns)
    assert sorted(steps) == list(range(STEPS)), steps
    first = {steps[s][1] for s in range(FAIL_AFTER + 1)}
    second = {steps[s][1] for s in range(FAIL_AFTER + 1, STEPS)}
    assert len(first) == len(second) == 1 and first != second, steps  # two head pods: two RayClusters
    print(f"resume cost (the failed attempt's last step to the retry's first step): "
          f"{resume_job.resume_seconds(steps):.1f} s")

    # each attempt's driver log outlives its RayCluster: attempt 1's went with the retry, attempt 2's is deleted
    # here as KubeRay deletes it when ttlSecondsAfterFinished runs out
    api = config.new_client_from_config(config_file=kc)
    custom = client.CustomObjectsApi(api)
    for rc in custom.list_namespaced_custom_object("ray.io", "v1", ns, "rayclusters")["items"]:
        custom.delete_namespaced_custom_object("ray.io", "v1", ns, "rayclusters", rc["metadata"]["name"])
    wait_for(lambda: not custom.list_namespaced_custom_object("ray.io", "v1", ns, "rayclusters")["items"], 120,
             "the RayClusters deleted")
    rc, kept, err = cli(capsys, "logs", "grpo-swe", "-n", ns, "--attempt", "1", "--kubeconfig", kc)
    assert rc == 0, kept + err
    assert "--- attempt 1 of 2 kept" in kept and "dockyard-resume: failing on purpose after step 2" in kept, kept
    assert "Traceback (most recent call last)" in kept and "RuntimeError: dockyard-resume: the first attempt" in kept
    assert "dockyard-resume: done" not in kept, kept
    # and so do its Ray pods' Ray logs: the line its trainer task printed, in that trainer pod's worker output
    rc, kept, err = cli(capsys, "logs", "grpo-swe", "-n", ns, "--attempt", "1", "--role", "trainer",
                        "--kubeconfig", kc)
    assert rc == 0, kept + err
    pods = {part.split("\n", 1)[0]: part.split("\n", 1)[1] for part in kept.split("\n--- pod ")[1:]}
    said = [head for head, body in pods.items() if resume_job.TRAINER_LINE in body]
    assert said and all("-trainer-" in h and "(trainer)" in h and "/worker-" in h for h in said), pods.keys()
    rc, kept, err = cli(capsys, "logs", "grpo-swe", "-n", ns, "--attempt", "2", "--kubeconfig", kc)
    assert rc == 0 and "dockyard-resume: start at step 3" in kept and "dockyard-resume: done" in kept, kept + err
    assert "failing on purpose" not in kept, kept
    rc, kept, err = cli(capsys, "logs", "grpo-swe", "-n", ns, "--attempt", "3", "--kubeconfig", kc)
    assert rc == 1 and "attempt 3's logs were not kept: the logs volume holds attempts 1 to 2" in err, kept + err

    # uninstall keeps the claim (helm.sh/resource-policy: keep) and its files; a second run mounts them again
    rc, out, err = cli(capsys, "uninstall", "grpo-swe", "-n", ns, "--kubeconfig", kc, "--timeout", "300")
    assert rc == 0, out + err
    core = client.CoreV1Api(api)
    (pvc,) = core.list_namespaced_persistent_volume_claim(ns, label_selector="dockyard.dev/volume=checkpoints").items
    assert pvc.metadata.name == "grpo-swe-checkpoints" and pvc.status.phase == "Bound"
    assert pvc.spec.storage_class_name == "local-path-rwx"
    assert sorted(resume_job.step_files(ray_node["state_dir"], ns)) == list(range(STEPS))
    rc, out, err = cli(capsys, "run", RECIPE, infra, *SHAPE, RESUME, "-n", ns, "--follow",
                       "--kubeconfig", kc, "--timeout", "600", "-q")
    assert rc == 0, out + err
    assert f"dockyard-resume: start at step {STEPS} in /dockyard/checkpoints" in out, out
    # the new RayJob's attempts only: the volume still holds the first run's two
    rc, kept, err = cli(capsys, "logs", "grpo-swe", "-n", ns, "--attempt", "1", "--kubeconfig", kc)
    assert rc == 0 and "--- attempt 1 of 1 kept" in kept and f"start at step {STEPS}" in kept, kept + err
    (again,) = core.list_namespaced_persistent_volume_claim(ns, label_selector="dockyard.dev/volume=checkpoints").items
    assert again.metadata.uid == pvc.metadata.uid  # the same claim, not a new one
    rc, out, err = cli(capsys, "uninstall", "grpo-swe", "-n", ns, "--kubeconfig", kc, "--timeout", "300")
    assert rc == 0, out + err
    core.delete_namespace(ns)
    api.close()


def test_without_checkpoints_the_retry_starts_again_at_step_0(ray_node, capsys, tmp_path):
    kc, ns = ray_node["kubeconfig"], _ns()
    infra = _infra(tmp_path, "nockpt", lambda doc: resume_job.retried(doc, checkpoints=False))
    rc, out, err = cli(capsys, "run", RECIPE, infra, *SHAPE, RESUME, "-n", ns, "--create-namespace",
                       "--follow", "--kubeconfig", kc, "--timeout", "900", "-q")
    print(out + err)
    assert rc == 1, out + err
    # both attempts started from nothing: the retry's new RayCluster had no checkpoint to find
    assert out.count(f"dockyard-resume: start at step 0 in {resume_job.NO_CHECKPOINTS}") == 2, out
    assert "--- attempt 2 (RayCluster " in out and "job FAILED" in err, out + err
    rc, status, err = cli(capsys, "status", "grpo-swe", "-n", ns, "--kubeconfig", kc)
    assert "attempts   attempt 2 of 2 (2 failed)" in status, status + err
    # negative control of the kept logs: without infra.storage.logs nothing was kept, and logs says so
    rc, kept, err = cli(capsys, "logs", "grpo-swe", "-n", ns, "--attempt", "1", "--kubeconfig", kc)
    assert rc == 1 and not kept, kept + err
    assert "attempt 1's logs were not kept: release grpo-swe has no logs volume on its head" in err, err
    rc, out, err = cli(capsys, "uninstall", "grpo-swe", "-n", ns, "--kubeconfig", kc, "--timeout", "300")
    assert rc == 0, out + err


# ---------------------------------------------------------------- the model fetched once (infra.storage.modelCache)


def test_the_model_cache_is_filled_once_by_the_head_and_read_offline_by_both_fleets(ray_node, capsys, tmp_path):
    kc, ns = ray_node["kubeconfig"], _ns()
    infra = _infra(tmp_path, "cache", lambda doc: cache_job.cached(doc, fill=True))
    rc, out, err = cli(capsys, "run", RECIPE, infra, *SHAPE, cache_job.entrypoint_override(), "-n", ns,
                       "--create-namespace", "--follow", "--kubeconfig", kc, "--timeout", "600", "-q")
    assert rc == 0, out + err
    for fleet in ("trainer", "inference"):  # the workers find the head's fill, offline, and never fetch it
        line = f"dockyard-cache: {fleet} HF_HOME=/dockyard/model-cache offline=1 model=dockyard-weights"
        assert line in out, out
    assert "dockyard-cache: fills 1" in out, out  # one fill for the gang: the head's init container, not a worker
    rc, out, err = cli(capsys, "uninstall", "grpo-swe", "-n", ns, "--kubeconfig", kc, "--timeout", "300")
    assert rc == 0, out + err


def test_an_empty_cache_read_offline_fails_fast_and_status_says_why(ray_node, capsys, tmp_path):
    kc, ns = ray_node["kubeconfig"], _ns()
    infra = _infra(tmp_path, "nocache", lambda doc: cache_job.cached(doc, fill=False))
    rc, out, err = cli(capsys, "run", RECIPE, infra, *SHAPE, cache_job.entrypoint_override(), "-n", ns,
                       "--create-namespace", "--follow", "--kubeconfig", kc, "--timeout", "600", "-q")
    assert rc == 1, out + err
    why = "dockyard-cache: model.bin is not in the model cache HF_HOME=/dockyard/model-cache and HF_HUB_OFFLINE=1"
    assert why in out and "job FAILED" in err, out + err
    rc, status, err = cli(capsys, "status", "grpo-swe", "-n", ns, "--kubeconfig", kc)
    assert why in status, status + err  # the driver's last lines under the job's end
    rc, out, err = cli(capsys, "uninstall", "grpo-swe", "-n", ns, "--kubeconfig", kc, "--timeout", "300")
    assert rc == 0, out + err


# ---------------------------------------------------------------- the run while it runs (launch.watch)

STALL = 30  # the stall guard's timeout: the models' floor
# the guard checks once a second: it ends the job within STALL + 1 s of the last report, plus scheduling slack on
# two cores shared with the rest of `make test`
BOUND = 5


def _status(capsys, kc: str, ns: str, installed: bool = True) -> str:
    """`status`'s table; with installed False, "" while the release is not there yet (the run installs it)."""
    rc, out, err = cli(capsys, "status", "grpo-swe", "-n", ns, "--kubeconfig", kc)
    if not installed and rc == 1 and "not found" in err:
        return ""
    assert rc == 0, out + err
    return out


def _progress(status: str) -> str:
    return next((line for line in status.splitlines() if line.startswith("progress ")), "")


def test_a_stalled_attempt_is_ended_and_the_retry_resumes_reporting_steadily(ray_node, capsys, tmp_path):
    kc, ns = ray_node["kubeconfig"], _ns()
    infra = _infra(tmp_path, "stall", lambda doc: stall_job.guarded(doc, STALL))
    # the retry reports a step every 20 s for 40 s: steadily, within the timeout, for longer than it
    run = spawn("run", RECIPE, infra, *SHAPE, stall_job.entrypoint_override(20), "-n", ns, "--create-namespace",
                "--follow", "--kubeconfig", kc, "--timeout", "900", "-q")
    try:
        # while the first attempt hangs, status reads its progress from the head
        def at_step_2() -> str | None:
            text = _status(capsys, kc, ns, installed=False)
            return text if "step 2 of 6" in _progress(text) else None

        status = wait_for(at_step_2, 600, "status: progress at step 2", interval=2)
        assert "checkpoint step 2" in _progress(status) and "reward=0.2" in _progress(status), status
        out, err = run.communicate(timeout=900)
    finally:
        run.kill()
    print(out + err)
    assert run.returncode == 0, out + err
    assert f"dockyard: stalled: no progress for {STALL} s after step 2" in out, out
    assert "dockyard-stall: start at step 3" in out and "dockyard-stall: done" in out, out
    assert "[dockyard-k8s] progress: step 5 of 6" in out, out
    (first, r1), (second, r2) = stall_job.kept_records(ray_node["state_dir"], ns)
    reports1 = [r for r in r1 if "step" in r]
    stalled = next(r for r in r1 if r.get("event") == "stalled")
    ended = next(r for r in r1 if r.get("event") == "ended")
    silent = stalled["t"] - reports1[-1]["t"]
    assert reports1[-1]["step"] == 2 and STALL <= silent <= STALL + BOUND, (silent, r1)
    assert ended["t"] - stalled["t"] <= 10 + 1, r1  # SIGTERM, SIGKILL after the 10 s grace
    reports2 = [r for r in r2 if "step" in r]
    assert [r["step"] for r in reports2] == [3, 4, 5], r2
    assert not any(r.get("event") == "stalled" for r in r2), r2  # 40 s of reports 20 s apart: never ended
    print(f"from the hang to the retry's first step: {reports2[0]['t'] - reports1[-1]['t']:.1f} s "
          f"(the guard's {STALL} s included)")
    status = _status(capsys, kc, ns)
    assert "attempts   attempt 2 of 2 (1 failed, retried on a new RayCluster)" in status, status
    assert "step 5 of 6 (83%)" in _progress(status), status
    assert f"the previous attempt's job ended: stalled: no progress for {STALL} s after step 2" in status, status
    rc, kept, err = cli(capsys, "logs", "grpo-swe", "-n", ns, "--attempt", "1", "--kubeconfig", kc)
    assert rc == 0 and f"dockyard: stalled: no progress for {STALL} s after step 2" in kept, kept + err
    # negative control of the kept Ray logs: the same logs volume, keepRayLogMiB 0, and nothing of a pod kept
    rc, kept, err = cli(capsys, "logs", "grpo-swe", "-n", ns, "--attempt", "1", "--role", "trainer",
                        "--kubeconfig", kc)
    assert rc == 1 and "attempt 1's trainer Ray logs were not kept: no trainer pod of RayCluster" in err, kept + err
    rc, out, err = cli(capsys, "uninstall", "grpo-swe", "-n", ns, "--kubeconfig", kc, "--timeout", "300")
    assert rc == 0, out + err


def test_without_the_guard_a_hang_runs_on_and_a_replaced_head_is_said(ray_node, capsys, tmp_path):
    from kubernetes import client, config

    kc, ns = ray_node["kubeconfig"], _ns()
    infra = _infra(tmp_path, "hang", lambda doc: stall_job.guarded(doc, None))
    run = spawn("run", RECIPE, infra, *SHAPE, stall_job.entrypoint_override(1), "-n", ns, "--create-namespace",
                "--follow", "--kubeconfig", kc, "--timeout", "900", "-q")
    api = config.new_client_from_config(config_file=kc)
    try:
        wait_for(lambda: "step 2 of 6" in _progress(_status(capsys, kc, ns, installed=False)), 600,
                 "status: progress at step 2", interval=2)
        # negative control: no guard, so the same hang is still running well after the guard's bound
        time.sleep(STALL + BOUND + 8)
        status = _status(capsys, kc, ns)
        assert "Running  job RUNNING" in status, status
        ago = _progress(status).split("last report ")[1].split(" s ago")[0]
        assert int(ago) >= STALL + BOUND, status
        # the head replaced mid-run: KubeRay makes a new head in the same RayCluster and submits the job again
        core = client.CoreV1Api(api)
        (head,) = core.list_namespaced_pod(ns, label_selector="ray.io/node-type=head").items
        core.delete_namespaced_pod(head.metadata.name, ns)
        out, err = run.communicate(timeout=900)
    finally:
        run.kill()
        api.close()
    print(out + err)
    assert run.returncode == 0, out + err
    assert "--- the job was submitted again on RayCluster" in out, out
    tail = out.split("--- the job was submitted again on RayCluster")[-1]
    assert "dockyard-stall: start at step 3" in tail and "dockyard-stall: done" in tail, out
    status = _status(capsys, kc, ns)
    assert "restarted: the job was submitted again on the same RayCluster (its head was replaced)" in status, status
    assert "attempt 1 of 2 (0 failed)" in status, status
    rc, out, err = cli(capsys, "uninstall", "grpo-swe", "-n", ns, "--kubeconfig", kc, "--timeout", "300")
    assert rc == 0, out + err
