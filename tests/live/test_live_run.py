"""The live path on the playground: run, status, logs, history, rollback, uninstall, and the failure
behaviour of each (failed install/upgrade, concurrent run, Ctrl-C, unfit job, missing API pieces)."""

from __future__ import annotations

import json
import signal
import time

import bounds
import pytest
from kubernetes import client
from live_helpers import INFRA, RECIPE, cli, infra_variant, kube, spawn
from session_env import wait_for

pytestmark = pytest.mark.timeout(240)


@pytest.fixture
def release(playground, namespace, capsys):
    """The release name of the small recipe; uninstalled at the end so no GPU stays taken."""
    yield "small"
    from generator.live.helm.records import release_records

    k = kube(playground)
    if release_records(k, "small", namespace):
        cli(capsys, "uninstall", "small", "-n", namespace, "--kubeconfig", playground.kubeconfig, "--timeout", 60)


def _status(capsys, playground, namespace, name="small") -> dict:
    rc, out, err = cli(capsys, "status", name, "-n", namespace, "-o", "json", "--kubeconfig", playground.kubeconfig)
    assert rc == 0, err
    return json.loads(out)


def _fleets(status: dict) -> dict:
    return {f["fleet"]: f for f in status["fleets"]}


def _sandbox_cpu(playground, namespace) -> str:
    dep = client.AppsV1Api(playground.api_client()).read_namespaced_deployment("small-sandbox", namespace)
    return dep.spec.template.spec.containers[0].resources.requests["cpu"]


def test_run_wait_status_logs_history_uninstall(playground, namespace, release, capsys, helm):
    kc = playground.kubeconfig
    t0 = time.monotonic()
    rc, out, err = cli(capsys, "run", RECIPE, INFRA, "-n", namespace, "--wait", "--kubeconfig", kc, "--timeout", 120)
    assert rc == 0, out + err
    assert "RayJob running on a ready RayCluster" in out
    print(f"run --wait: {time.monotonic() - t0:.1f}s")

    st = _status(capsys, playground, namespace)
    assert st["ready"] and st["revision"] == 1 and st["release_status"] == "deployed"
    assert st["rayjob"]["deploymentStatus"] == "Running" and st["raycluster"]["state"] == "ready"
    fleets = _fleets(st)
    for role in ("trainer", "inference"):
        assert fleets[role]["ready"] == fleets[role]["desired"] == 1
        assert fleets[role]["gpus_requested"] == fleets[role]["gpus_allocated"] == 8
        assert set(fleets[role]["nodes"]) <= set(playground.gpu_node_names)
    assert fleets["sandbox"]["ready"] == 2 and fleets["head"]["ready"] == 1

    rc, out, _ = cli(capsys, "status", "small", "-n", namespace, "--kubeconfig", kc)
    assert rc == 0 and "trainer" in out and "8/8" in out and "Running" in out

    rc, out, err = cli(capsys, "logs", "small", "-n", namespace, "--role", "sandbox", "--tail", "1", "--kubeconfig", kc)
    assert rc == 0, err
    assert out.count("[small-sandbox-") == 2 and "dockyard-k8s playground" in out

    rc, out, err = cli(capsys, "logs", "--role", "trainer", "-f", "-n", namespace, "--timeout", 3, "--kubeconfig", kc)
    assert rc == 0 and "no container process exists" in out, err

    # the pool line moves until the executors are available (minReadySeconds), then nothing changes
    wait_for(lambda: _status(capsys, playground, namespace)["pool"]["available"] == 2, 30, "the pool available")
    rc, out, err = cli(capsys, "status", "-n", namespace, "--watch", "--timeout", 3, "--kubeconfig", kc)
    assert rc == 0 and out.count("release    small") == 1, out  # not a terminal: printed once, unchanged

    rc, out, err = cli(capsys, "history", "small", "-n", namespace, "-o", "json", "--kubeconfig", kc)
    assert rc == 0, err
    assert [r["status"] for r in json.loads(out)] == ["deployed"]

    rc, out, err = cli(capsys, "uninstall", "small", "-n", namespace, "--kubeconfig", kc, "--timeout", 60)
    assert rc == 0, err
    assert "nothing left" in out
    from generator.live.changes.teardown import leftovers

    assert leftovers(kube(playground), "small", namespace) == []


def test_status_says_in_one_line_that_a_job_on_simulated_nodes_never_starts(playground, namespace, release, capsys,
                                                                             wait):
    """`make demo`'s last step: on kwok's nodes the head runs no Ray, and KubeRay says it cannot reach it."""
    from generator.live.verbs.status import DASHBOARD_UNREACHED

    kc = playground.kubeconfig
    assert cli(capsys, "run", RECIPE, INFRA, "-n", namespace, "--wait", "--kubeconfig", kc, "--timeout", 120)[0] == 0
    ray = client.CustomObjectsApi(playground.api_client())

    def message() -> str:
        job = ray.get_namespaced_custom_object("ray.io", "v1", namespace, "rayjobs", "small")
        return (job.get("status") or {}).get("message") or ""

    wait(lambda: DASHBOARD_UNREACHED in message(), 60, "KubeRay's message that it cannot reach the head")
    rc, out, err = cli(capsys, "status", "small", "-n", namespace, "--kubeconfig", kc)
    assert rc == 0, out + err
    [line] = [x for x in out.splitlines() if x.startswith("rayjob ")]
    assert "— simulated: the head is on kwok node " in line and "`dockyard-k8s playground up --real-node`" in line, out
    assert DASHBOARD_UNREACHED not in out and "ready: yes" in out, out
    # the negative control: the JSON keeps KubeRay's own words (what a script reads is the cluster's)
    assert DASHBOARD_UNREACHED in _status(capsys, playground, namespace)["rayjob"]["message"]


def test_status_reads_a_bounded_number_of_api_calls(playground, namespace, release, capsys, tmp_path):
    from generator.live.state.snapshot import take

    kc = playground.kubeconfig
    assert cli(capsys, "run", RECIPE, INFRA, "-n", namespace, "--wait", "--kubeconfig", kc, "--timeout", 120)[0] == 0
    k = kube(playground)
    small = take(k, "small", namespace)
    more = infra_variant(tmp_path, "more.yaml", lambda d: d["sandbox"].update(replicas=8))
    assert cli(capsys, "run", RECIPE, more, "-n", namespace, "--wait", "--kubeconfig", kc, "--timeout", 120)[0] == 0
    big = take(k, "small", namespace)
    assert big.fleets["sandbox"].ready == 8
    print(f"status API calls: {small.calls} with 2 sandbox pods, {big.calls} with 8")
    assert small.calls == big.calls <= 8

    # with an HPA (sandbox.autoscaling) one more list: status shows its replicas, min/max and metric (no metrics API on
    # this playground, so the HPA controller reports it cannot scale, and status says why)
    scaled = infra_variant(tmp_path, "hpa.yaml", lambda d: d["sandbox"].update(autoscaling={
        "enabled": True, "minReplicas": 2, "maxReplicas": 4, "targetCPUUtilizationPercentage": 70}))
    assert cli(capsys, "run", RECIPE, scaled, "-n", namespace, "--wait", "--kubeconfig", kc, "--timeout", 120)[0] == 0
    hpa = wait_for(lambda: (lambda s: s if s.hpa and s.hpa["inactive"] else None)(take(k, "small", namespace)), 60,
                   "the HPA controller to report on the pool's HPA")
    assert hpa.calls == small.calls + 1 and hpa.hpa["min"] == 2 and hpa.hpa["max"] == 4
    rc, out, err = cli(capsys, "status", "small", "-n", namespace, "--kubeconfig", kc)
    line = next(x for x in out.splitlines() if x.startswith("hpa "))
    assert "small-sandbox  replicas " in line and "min 2, max 4)  cpu <unknown>/70%" in line, out
    assert "not scaling: FailedGetResourceMetric" in line, out
    assert any(x.startswith("pool       sandbox  desired ") for x in out.splitlines()), out


def test_failed_first_install_leaves_nothing(playground, namespace, release, capsys, tmp_path, helm):
    huge = infra_variant(tmp_path, "huge.yaml", lambda d: d["sandbox"]["resources"].update(cpu="500"))
    rc, out, err = cli(capsys, "run", RECIPE, huge, "-n", namespace, "--kubeconfig", playground.kubeconfig,
                       "--timeout", 8, "-q")
    assert rc == 1
    assert "nothing is left installed" in err and "Insufficient cpu" in err
    assert "Traceback" not in err
    from generator.live.changes.teardown import leftovers
    from generator.live.helm.records import release_records

    k = kube(playground)
    assert release_records(k, "small", namespace) == []
    deadline = time.monotonic() + 30
    while leftovers(k, "small", namespace) and time.monotonic() < deadline:
        time.sleep(0.5)
    assert leftovers(k, "small", namespace) == []


def test_failed_upgrade_keeps_previous_revision_and_rollback_restores_spec(playground, namespace, release, capsys,
                                                                          tmp_path, helm):
    kc = playground.kubeconfig
    assert cli(capsys, "run", RECIPE, INFRA, "-n", namespace, "--kubeconfig", kc, "--timeout", 60)[0] == 0
    assert _sandbox_cpu(playground, namespace) == "250m"

    huge = infra_variant(tmp_path, "huge.yaml", lambda d: d["sandbox"]["resources"].update(cpu="500"))
    rc, out, err = cli(capsys, "run", RECIPE, huge, "-n", namespace, "--kubeconfig", kc, "--timeout", 8, "-q")
    assert rc == 1 and "revision 3 deployed; revision 3 is the deployed one" in err, err  # the roll-back's revision
    assert _sandbox_cpu(playground, namespace) == "250m"
    st = _status(capsys, playground, namespace)
    assert st["release_status"] == "deployed" and _fleets(st)["sandbox"]["ready"] == 2

    # a "bad" upgrade that Helm accepts, then rollback restores the previous sandbox pool spec
    bigger = infra_variant(tmp_path, "bigger.yaml", lambda d: d["sandbox"]["resources"].update(cpu="500m"))
    assert cli(capsys, "run", RECIPE, bigger, "-n", namespace, "--kubeconfig", kc, "--timeout", 60)[0] == 0
    assert _sandbox_cpu(playground, namespace) == "500m"
    before = _status(capsys, playground, namespace)["revision"]
    rc, out, err = cli(capsys, "rollback", "small", "-n", namespace, "--kubeconfig", kc, "--timeout", 60)
    assert rc == 0, err
    assert _sandbox_cpu(playground, namespace) == "250m"
    assert _status(capsys, playground, namespace)["revision"] == before + 1
    rc, out, _ = cli(capsys, "history", "small", "-n", namespace, "--kubeconfig", kc)
    assert "deployed" in out and "superseded" in out


CTRL_C_TIMEOUT = 120  # the interrupted run's and the converging run's --timeout


@pytest.mark.timeout(2 * bounds.verb(CTRL_C_TIMEOUT))  # the interrupted run, then the one that converges
def test_concurrent_run_refused_and_ctrl_c_converges(playground, namespace, release, capsys, tmp_path):
    from generator.live.helm.records import release_records

    kc = playground.kubeconfig
    huge = infra_variant(tmp_path, "huge.yaml", lambda d: d["sandbox"]["resources"].update(cpu="500"))
    t0 = time.monotonic()
    first = spawn("run", RECIPE, huge, "-n", namespace, "--wait", "--kubeconfig", kc, "--timeout", CTRL_C_TIMEOUT, "-q")
    try:
        k = kube(playground)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            recs = release_records(k, "small", namespace)
            if recs and recs[-1]["metadata"]["labels"].get("status") == "pending-install":
                break
            time.sleep(0.3)
        else:
            pytest.fail("the first run never reached pending-install")
        before = [(r["metadata"]["name"], r["metadata"]["resourceVersion"])
                  for r in release_records(k, "small", namespace)]

        t1 = time.monotonic()
        rc, out, err = cli(capsys, "run", RECIPE, INFRA, "-n", namespace, "--wait", "--kubeconfig", kc, "--timeout", 60)
        assert rc == 1 and "busy" in err and "nothing was changed" in err, err
        assert time.monotonic() - t1 < 5
        assert [(r["metadata"]["name"], r["metadata"]["resourceVersion"])
                for r in release_records(k, "small", namespace)] == before

        first.send_signal(signal.SIGINT)  # helm gets SIGTERM and until the run's deadline + GRACE to roll back
        _, ferr = bounds.ended(first, t0 + bounds.verb(CTRL_C_TIMEOUT) - time.monotonic(), "the first run after Ctrl-C")
        assert first.returncode == 130 and "Traceback" not in ferr, ferr
    finally:
        if first.poll() is None:
            first.kill()
            first.communicate()

    rc, out, err = cli(capsys, "run", RECIPE, INFRA, "-n", namespace, "--wait", "--kubeconfig", kc, "--timeout",
                       CTRL_C_TIMEOUT)
    assert rc == 0, out + err
    assert _status(capsys, playground, namespace)["ready"]


def test_stale_lock_and_pending_release_from_a_killed_run_converge(playground, namespace, release, capsys, tmp_path):
    """SIGKILL (no chance to clean up) leaves a lease and a pending release; the next run takes over."""
    from generator.live.helm.records import release_records

    kc = playground.kubeconfig
    assert cli(capsys, "run", RECIPE, INFRA, "-n", namespace, "--kubeconfig", kc, "--timeout", 60)[0] == 0
    huge = infra_variant(tmp_path, "huge.yaml", lambda d: d["sandbox"]["resources"].update(cpu="500"))
    victim = spawn("run", RECIPE, huge, "-n", namespace, "--kubeconfig", kc, "--timeout", 120, "-q",
                   start_new_session=True)
    k = kube(playground)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        recs = release_records(k, "small", namespace)
        if recs[-1]["metadata"]["labels"].get("status") == "pending-upgrade":
            break
        time.sleep(0.3)
    import os

    os.killpg(victim.pid, signal.SIGKILL)  # python and its helm child
    victim.communicate()
    assert release_records(k, "small", namespace)[-1]["metadata"]["labels"]["status"] == "pending-upgrade"
    # at once, not after the lease's 15 s: a holder on this host whose process is gone is evidence enough
    t0 = time.monotonic()
    rc, out, err = cli(capsys, "run", RECIPE, INFRA, "-n", namespace, "--wait", "--kubeconfig", kc, "--timeout", 120)
    assert rc == 0, out + err
    assert "interrupted run: rolling back" in out and "waiting up to" not in out + err
    assert time.monotonic() - t0 < bounds.verb(120)
    assert _sandbox_cpu(playground, namespace) == "250m"


@pytest.mark.timeout(bounds.verb(60) * 3 + 60 + bounds.verb(8))
def test_job_that_cannot_fit_stays_pending_and_status_says_why(playground, namespace, release, capsys, wait):
    kc = playground.kubeconfig
    # 3 trainer pods x 8 GPUs + 1 inference x 8 = 32 GPUs on a 16-GPU playground
    rc, out, err = cli(capsys, "run", RECIPE, INFRA, "cluster.trainer.nodes=3", "-n", namespace, "--kubeconfig", kc,
                       "--timeout", 60)
    assert rc == 0, err

    def pending_reason():
        f = _fleets(_status(capsys, playground, namespace)).get("trainer") or {}
        return f.get("reason") if "Insufficient nvidia.com/gpu" in (f.get("reason") or "") else None

    reason = wait(pending_reason, 60, "trainer Pending with the scheduler's reason")
    assert "Unschedulable" in reason
    rc, out, _ = cli(capsys, "status", "small", "-n", namespace, "--kubeconfig", kc)
    assert "Insufficient nvidia.com/gpu" in out and "ready: no" in out

    # --wait: 3 × 8 GPUs for the trainer on 2 8-GPU nodes can never fit: refused at once, nothing changed
    rc, out, err = cli(capsys, "run", RECIPE, INFRA, "cluster.trainer.nodes=3", "-n", namespace, "--wait",
                       "--kubeconfig", kc, "--timeout", 60, "-q")
    assert rc == 1 and "can never schedule this gang (GPU capacity: trainer: 3 pod(s)" in err, err
    # the negative control: a gang that fits the empty cluster but not the busy one is waited for
    rc, out, err = cli(capsys, "run", RECIPE, INFRA, "--release", "other", "-n", namespace, "--wait",
                       "--kubeconfig", kc, "--timeout", 8, "-q")
    try:
        assert rc == 1 and "not ready after the timeout" in err and "Insufficient nvidia.com/gpu" in err, err
    finally:
        cli(capsys, "uninstall", "other", "-n", namespace, "--kubeconfig", kc, "--timeout", 60)


def test_gpu_spec_change_is_refused_or_replaced(playground, namespace, release, capsys):
    kc = playground.kubeconfig
    assert cli(capsys, "run", RECIPE, INFRA, "-n", namespace, "--wait", "--kubeconfig", kc, "--timeout", 120)[0] == 0
    cluster_before = _status(capsys, playground, namespace)["raycluster"]["name"]
    rc, out, err = cli(capsys, "run", RECIPE, INFRA, "cluster.trainer.gpusPerNode=4", "-n", namespace,
                       "--kubeconfig", kc, "--timeout", 60)
    assert rc == 1 and "KubeRay #1776" in err and "nvidia.com/gpu: 8 -> 4" in err
    assert _status(capsys, playground, namespace)["revision"] == 1

    rc, out, err = cli(capsys, "run", RECIPE, INFRA, "cluster.trainer.gpusPerNode=4", "-n", namespace, "--replace",
                       "--wait", "--kubeconfig", kc, "--timeout", 120)
    assert rc == 0, out + err
    st = _status(capsys, playground, namespace)
    assert st["raycluster"]["name"] != cluster_before
    assert _fleets(st)["trainer"]["gpus_allocated"] == 4

    # rolling back to revision 1 would change the RayJob spec back: the same guard, the same --replace
    rc, out, err = cli(capsys, "rollback", "-n", namespace, "--kubeconfig", kc, "--timeout", 60)
    assert rc == 1 and "KubeRay #1776" in err and "nvidia.com/gpu: 4 -> 8" in err, out + err
    assert _status(capsys, playground, namespace)["revision"] == 2
    rc, out, err = cli(capsys, "rollback", "-n", namespace, "--replace", "--kubeconfig", kc, "--timeout", 120)
    assert rc == 0, out + err
    assert "rolled back to revision 1" in out
    job = client.CustomObjectsApi(playground.api_client()).get_namespaced_custom_object(
        "ray.io", "v1", namespace, "rayjobs", "small")
    gpus = (job["spec"]["rayClusterSpec"]["workerGroupSpecs"][0]
            ["template"]["spec"]["containers"][0]["resources"]["limits"])
    assert str(gpus["nvidia.com/gpu"]) == "8"  # the apiserver stores quantities as strings


def test_quota_note_and_not_applied(playground, namespace, release, capsys, tmp_path):
    q = infra_variant(tmp_path, "q.yaml", lambda d: d["infra"].update(
        resourceQuota={"enabled": True, "hard": {"pods": "50"}}, limitRange={"enabled": True, "max": {"cpu": "1"}}))
    rc, out, err = cli(capsys, "run", RECIPE, q, "-n", namespace, "--kubeconfig", playground.kubeconfig,
                       "--timeout", 60)
    assert rc == 0, err
    assert "infra.resourceQuota is enabled" in err and "render" in err and "infra.limitRange is enabled" in err
    core = client.CoreV1Api(playground.api_client())
    assert core.list_namespaced_resource_quota(namespace).items == []
    assert core.list_namespaced_limit_range(namespace).items == []


def test_missing_namespace_priorityclass_crd_and_unreachable_api_are_one_line(playground, capsys, tmp_path,
                                                                              monkeypatch):
    kc = playground.kubeconfig
    rc, _, err = cli(capsys, "run", RECIPE, INFRA, "-n", "no-such-ns-x", "--kubeconfig", kc)
    assert rc == 1 and err.strip().count("\n") == 0 and "--create-namespace" in err

    pc = infra_variant(tmp_path, "pc.yaml", lambda d: d["infra"].update(priorityClassName="no-such-priority"))
    rc, _, err = cli(capsys, "run", RECIPE, pc, "--kubeconfig", kc)
    assert rc == 1 and err.strip().count("\n") == 0 and "PriorityClass no-such-priority does not exist" in err

    import generator.live.client.kube as kube_mod

    monkeypatch.setattr(kube_mod, "RAY_VERSION", "v9alpha1")  # a KubeRay API this cluster does not serve
    rc, _, err = cli(capsys, "run", RECIPE, INFRA, "--kubeconfig", kc)
    assert rc == 1 and err.strip().count("\n") == 0 and "KubeRay CRDs are not installed" in err
    rc, _, err = cli(capsys, "cluster", "list", "-n", "default", "--kubeconfig", kc)
    assert rc == 1 and "KubeRay CRDs are not installed" in err
    monkeypatch.undo()

    import socket

    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    closed = s.getsockname()[1]
    s.close()
    import re

    bad = tmp_path / "unreachable.kubeconfig"
    bad.write_text(re.sub(r"https://127\.0\.0\.1:\d+", f"https://127.0.0.1:{closed}", open(kc).read()))
    for argv in (["status", "small"], ["run", RECIPE, INFRA], ["history", "small"], ["cluster", "list"]):
        p = spawn(*argv, "--kubeconfig", bad)
        out, err = p.communicate(timeout=60)
        assert p.returncode == 1, (argv, err)
        assert "Traceback" not in err and err.strip().count("\n") == 0, err
        assert f"cannot reach the Kubernetes API at https://127.0.0.1:{closed}" in err


def test_status_names_a_quota_refusal_from_replicaset_events(playground, namespace, release, capsys, wait):
    kc = playground.kubeconfig
    assert cli(capsys, "run", RECIPE, INFRA, "-n", namespace, "--wait", "--kubeconfig", kc, "--timeout", 120)[0] == 0
    core = client.CoreV1Api(playground.api_client())
    used = len(core.list_namespaced_pod(namespace).items)
    core.create_namespaced_resource_quota(namespace, client.V1ResourceQuota(
        metadata=client.V1ObjectMeta(name="full"),
        spec=client.V1ResourceQuotaSpec(hard={"pods": str(used - 1)})))  # already full
    wait(lambda: (core.read_namespaced_resource_quota("full", namespace).status.used or {}).get("pods"), 30,
         "quota status")
    victim = core.list_namespaced_pod(namespace, label_selector="dockyard.dev/fleet=sandbox").items[0]
    core.delete_namespaced_pod(victim.metadata.name, namespace, grace_period_seconds=0)

    def refused():
        f = _fleets(_status(capsys, playground, namespace))["sandbox"]
        return f["reason"] if "exceeded quota" in f["reason"] else None

    reason = wait(refused, 60, "the sandbox row to show the quota refusal")
    assert "FailedCreate" in reason and "full" in reason
    rc, out, _ = cli(capsys, "status", "small", "-n", namespace, "--kubeconfig", kc)
    assert "exceeded quota" in out and "sandbox     1/2" in out
