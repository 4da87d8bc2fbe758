"""Storage that outlives pods on the real node (infra.storage): a retry resumes from the checkpoint volume, which
outlives uninstall (without it the retry starts again at step 0), each attempt's logs are kept on the logs volume,
the model cache is filled once by the head and read offline by both fleets (an empty one fails fast, and `status`
says why), and a claim the real provisioner refuses is named by `status` and `run`, with the provisioner's words.

The node, the test shape and what is dialed: real_ray_inputs.py.
"""

from __future__ import annotations

import time

import cache_job
import pytest
import resume_job
from live_helpers import cli, spawn
from real_ray_inputs import RECIPE, SHAPE, fresh_ns, infra_file
from resume_job import FAIL_AFTER, STEPS
from session_env import wait_for

pytestmark = pytest.mark.real_node  # the machine's one real node: hack/suite.py runs this module in a real node part


# ---------------------------------------------------------------- resume from checkpoints (infra.storage)

RESUME = resume_job.entrypoint_override()  # the job (resume_job.py): fails after step FAIL_AFTER when it starts at 0


def test_a_retry_resumes_from_the_checkpoint_volume_which_outlives_uninstall(ray_node, capsys, tmp_path):
    from kubernetes import client, config

    kc, ns = ray_node["kubeconfig"], fresh_ns()
    infra = infra_file(tmp_path, "resume", lambda doc: (resume_job.retried(doc, checkpoints=True),
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
    kc, ns = ray_node["kubeconfig"], fresh_ns()
    infra = infra_file(tmp_path, "nockpt", lambda doc: resume_job.retried(doc, checkpoints=False))
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


def _run_on_cache(kc: str, ns: str, capsys, tmp_path, fill: bool) -> tuple[int, str, str]:
    """`run --follow` of the cache job, with the model cache filled by the head's init container or left empty."""
    infra = infra_file(tmp_path, "cache" if fill else "nocache", lambda doc: cache_job.cached(doc, fill=fill))
    return cli(capsys, "run", RECIPE, infra, *SHAPE, cache_job.entrypoint_override(), "-n", ns, "--create-namespace",
               "--follow", "--kubeconfig", kc, "--timeout", "600", "-q")


def test_the_model_cache_is_filled_once_by_the_head_and_read_offline_by_both_fleets(ray_node, capsys, tmp_path):
    kc, ns = ray_node["kubeconfig"], fresh_ns()
    rc, out, err = _run_on_cache(kc, ns, capsys, tmp_path, fill=True)
    assert rc == 0, out + err
    for fleet in ("trainer", "inference"):  # the workers find the head's fill, offline, and never fetch it
        line = f"dockyard-cache: {fleet} HF_HOME=/dockyard/model-cache offline=1 model=dockyard-weights"
        assert line in out, out
    assert "dockyard-cache: fills 1" in out, out  # one fill for the gang: the head's init container, not a worker
    rc, out, err = cli(capsys, "uninstall", "grpo-swe", "-n", ns, "--kubeconfig", kc, "--timeout", "300")
    assert rc == 0, out + err


def test_an_empty_cache_read_offline_fails_fast_and_status_says_why(ray_node, capsys, tmp_path):
    kc, ns = ray_node["kubeconfig"], fresh_ns()
    rc, out, err = _run_on_cache(kc, ns, capsys, tmp_path, fill=False)
    assert rc == 1, out + err
    why = "dockyard-cache: model.bin is not in the model cache HF_HOME=/dockyard/model-cache and HF_HUB_OFFLINE=1"
    assert why in out and "job FAILED" in err, out + err
    rc, status, err = cli(capsys, "status", "grpo-swe", "-n", ns, "--kubeconfig", kc)
    assert why in status, status + err  # the driver's last lines under the job's end
    rc, out, err = cli(capsys, "uninstall", "grpo-swe", "-n", ns, "--kubeconfig", kc, "--timeout", "300")
    assert rc == 0, out + err


# ---------------------------------------------------------------- a claim the real provisioner refuses

HOLD = 'entrypoint=python3 -c "import time; time.sleep(600)"'  # a job that starts and holds; nothing to train
REFUSED = "NodePath only supports ReadWriteOnce and ReadWriteOncePod (1.22+) access modes"  # local-path v0.0.30
TIMEOUT = 60  # run's --timeout on the refused claim: Helm's wait gets it less a reserve for the --atomic removal


def _checkpoints_on(storage_class: str):
    """The checkpoint claim ReadWriteMany on `storage_class` (mounted by the head and both worker groups)."""
    def change(doc):
        doc["infra"]["storage"] = {"checkpoints": {"size": "1Gi", "storageClassName": storage_class,
                                                   "accessModes": ["ReadWriteMany"]}}
    return change


def test_a_claim_the_provisioner_refuses_is_named_by_run_and_status(ray_node, capsys, tmp_path):
    """The node's local-path provisioner serves class `local-path` from node paths, where it refuses ReadWriteMany
    (ProvisioningFailed, in its own words). What a user meets: `run` installs (doctor would refuse the class
    beforehand; run does not ask it) and Helm's --wait holds on the unbound claim; meanwhile `status` names the claim,
    ProvisioningFailed and the provisioner's words, and so does `run`, when it first sees them and in its error when
    Helm's wait ends, exit 1 within --timeout (--atomic has removed the release then; the claim is kept). The
    negative control: the same claim on `local-path-rwx` (its shared-filesystem mode) is bound, `run` exits 0, the
    head runs, and no such event or line is there."""
    from kubernetes import client, config

    kc, ns = ray_node["kubeconfig"], fresh_ns()
    api = config.new_client_from_config(config_file=kc)
    core = client.CoreV1Api(api)

    def refusals(namespace: str) -> list[str]:
        return [e.message for e in core.list_namespaced_event(
            namespace, field_selector="involvedObject.kind=PersistentVolumeClaim,reason=ProvisioningFailed").items]

    def claim_line(namespace: str) -> str | None:
        rc, out, _ = cli(capsys, "status", "grpo-swe", "-n", namespace, "--kubeconfig", kc)
        return next((x for x in out.splitlines() if x.startswith("claim ")), None) if rc in (0, 1) else None

    t0 = time.monotonic()
    run = spawn("run", RECIPE, infra_file(tmp_path, "refused", _checkpoints_on("local-path")), *SHAPE, HOLD, "-n", ns,
                "--create-namespace", "--wait", "--kubeconfig", kc, "--timeout", str(TIMEOUT))
    try:
        claim = wait_for(lambda: claim_line(ns), TIMEOUT, "status to name the refused claim", interval=2)
        named = time.monotonic() - t0
        out, err = run.communicate(timeout=TIMEOUT + 60)
    finally:
        run.kill()
    took = time.monotonic() - t0
    print(f"\nrun --wait on a claim local-path refuses: status named it {named:.1f} s in; run exit {run.returncode} "
          f"in {took:.1f} s\n{out}{err}")
    assert "claim grpo-swe-checkpoints cannot be provisioned for pod grpo-swe-" in claim, claim
    assert "ProvisioningFailed" in claim and REFUSED in claim and claim.endswith("(no retry fixes this)"), claim
    assert run.returncode == 1 and took < TIMEOUT, (took, out + err)
    said = [x for x in (out + err).splitlines() if "claim grpo-swe-checkpoints cannot be provisioned" in x]
    assert said and all("ProvisioningFailed" in x and REFUSED in x for x in said), out + err
    error = err[err.index("error: "):]
    assert "claim grpo-swe-checkpoints cannot be provisioned" in error and REFUSED in error, err
    assert any(REFUSED in m for m in refusals(ns))  # the provisioner's event, which the control below has none of
    (pvc,) = core.list_namespaced_persistent_volume_claim(ns).items  # kept by the release's uninstall
    assert pvc.status.phase == "Pending" and pvc.spec.storage_class_name == "local-path"
    core.delete_namespace(ns)

    # the negative control: the same claim on the class that serves ReadWriteMany; its head running is enough
    ns, t1 = fresh_ns(), time.monotonic()
    rc, out, err = cli(capsys, "run", RECIPE, infra_file(tmp_path, "served", _checkpoints_on("local-path-rwx")), *SHAPE,
                       HOLD, "-n", ns, "--create-namespace", "--kubeconfig", kc, "--timeout", "300")
    assert rc == 0 and "cannot be provisioned" not in out + err, out + err

    def head_running():
        pods = core.list_namespaced_pod(ns, label_selector="ray.io/node-type=head").items
        return pods and pods[0].status.phase == "Running" and pods[0]

    head = wait_for(head_running, 180, "the head running with the checkpoint claim mounted")
    (pvc,) = core.list_namespaced_persistent_volume_claim(ns).items
    assert pvc.status.phase == "Bound" and pvc.spec.storage_class_name == "local-path-rwx"
    assert pvc.metadata.name in {v.persistent_volume_claim.claim_name for v in head.spec.volumes
                                 if v.persistent_volume_claim}
    assert claim_line(ns) is None and refusals(ns) == []
    print(f"the control (local-path-rwx): installed, claim bound and head running in {time.monotonic() - t1:.1f} s")
    rc, out, err = cli(capsys, "uninstall", "grpo-swe", "-n", ns, "--kubeconfig", kc, "--timeout", "300")
    assert rc == 0, out + err
    core.delete_namespace(ns)
    api.close()
