"""Waits that cannot end well end at once, and a timeout names what held it: a gang no node could hold,
a namespace deleted under `run --wait`, an operator that does not reconcile, a finalizer nobody removes."""

from __future__ import annotations

import os
import signal
import threading
import time

import bounds
import pytest
from kubernetes import client
from live_helpers import INFRA, RECIPE, cli, infra_variant, kube

pytestmark = pytest.mark.timeout(240)  # each test's steps end far sooner: that they do is what is tested


@pytest.fixture
def release(playground, namespace, capsys):
    yield "small"
    from generator.live.helm.records import release_records

    if release_records(kube(playground), "small", namespace):
        cli(capsys, "uninstall", "small", "-n", namespace, "--kubeconfig", playground.kubeconfig, "--timeout", 60)


def test_a_gang_no_node_could_hold_is_refused_at_once(playground, namespace, release, capsys):
    kc, gpus = playground.kubeconfig, playground.gpus_per_node
    t0 = time.monotonic()
    rc, out, err = cli(capsys, "run", RECIPE, INFRA, f"cluster.trainer.gpusPerNode={gpus * 2}", "-n", namespace,
                       "--wait", "--kubeconfig", kc, "--timeout", 120)
    assert rc == 1, out + err
    assert "the cluster can never schedule this gang (GPU capacity: trainer:" in err and "nothing was changed" in err
    assert time.monotonic() - t0 < 60  # not the --timeout
    from generator.live.helm.records import release_records

    assert release_records(kube(playground), "small", namespace) == []
    t0 = time.monotonic()
    rc, out, err = cli(capsys, "smoke", RECIPE, INFRA, f"cluster.inference.gpusPerNode={gpus * 2}", "-n", namespace,
                       "--kubeconfig", kc, "--timeout", 120)
    assert rc == 1 and "can never schedule this gang (GPU capacity: inference:" in err, out + err
    assert time.monotonic() - t0 < 60


@pytest.mark.timeout(bounds.verb(180) + 60)  # the run's own bound, then the namespace's pods to go
def test_run_wait_says_at_once_that_its_namespace_was_deleted(playground, make_namespace, capsys, tmp_path):
    from conftest import delete_namespace_and_wait

    from generator.live.helm.records import labels, release_records

    ns, kc = make_namespace(), playground.kubeconfig
    core = client.CoreV1Api(playground.api_client())
    # a head no node has the cpu for: --wait waits (a busy cluster, not a never-fitting gang)
    big_head = infra_variant(tmp_path, "big-head.yaml", lambda d: d["kuberay"]["head"].update(cpu="500"))

    def delete_once_installed() -> None:
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline:
            recs = release_records(kube(playground), "small", ns)
            if recs and labels(recs[-1]).get("status") == "deployed":
                time.sleep(2.0)  # follow() is waiting now
                core.delete_namespace(ns)
                return
            time.sleep(0.5)

    deleter = threading.Thread(target=delete_once_installed, daemon=True)
    deleter.start()
    t0 = time.monotonic()
    rc, out, err = cli(capsys, "run", RECIPE, big_head, "-n", ns, "--wait", "--kubeconfig", kc, "--timeout", 180)
    took = time.monotonic() - t0
    deleter.join(timeout=5)
    assert rc == 1, out + err
    assert f"namespace {ns} is being deleted" in err or f"namespace {ns} was deleted" in err, err
    assert "not ready after the timeout" not in err and took < 150, (took, err)
    delete_namespace_and_wait(core, ns)


def test_doctor_sees_an_operator_that_does_not_reconcile(playground, capsys):
    kc = playground.kubeconfig
    from generator.live.client.kube import Kube
    from generator.live.doctor.kuberay import kuberay_reconciling_row

    row = kuberay_reconciling_row(Kube(kc))
    assert row.mark == "✓" and "leader Lease kube-system/ray-operator-leader renewed by" in row.detail, row
    pid = playground.pids()["kuberay-operator"]
    os.kill(pid, signal.SIGSTOP)  # shorter than its 10 s renew deadline: it leads on when resumed
    try:
        row = kuberay_reconciling_row(Kube(kc), watch=4.0)
    finally:
        os.kill(pid, signal.SIGCONT)
    assert row.mark == "✗" and "was not renewed in 4s of watching" in row.detail, row
    assert "ray.io/rayjob-finalizer" in row.remedy
    time.sleep(3)
    assert kuberay_reconciling_row(Kube(kc)).mark == "✓"  # the negative control: resumed, it renews again


def test_uninstall_stopped_at_the_timeout_names_the_finalizer_that_holds_it(playground, namespace, release, capsys,
                                                                           wait):
    kc = playground.kubeconfig
    assert cli(capsys, "run", RECIPE, INFRA, "-n", namespace, "--kubeconfig", kc, "--timeout", 60)[0] == 0
    ray = client.CustomObjectsApi(playground.api_client())
    wait(lambda: ray.get_namespaced_custom_object("ray.io", "v1", namespace, "rayjobs", "small")["metadata"]
         .get("finalizers"), 60, "KubeRay's finalizer on the RayJob")
    hold = "example.com/hold"
    job = ray.get_namespaced_custom_object("ray.io", "v1", namespace, "rayjobs", "small")
    ray.patch_namespaced_custom_object("ray.io", "v1", namespace, "rayjobs", "small",
                                       {"metadata": {"finalizers": [*job["metadata"]["finalizers"], hold]}})
    try:
        rc, out, err = cli(capsys, "uninstall", "small", "-n", namespace, "--kubeconfig", kc, "--timeout", 15)
        assert rc == 1, out + err
        assert "uninstall ends running training: RayJob small" in out or "uninstall ends running training" in out
        assert f"RayJob small is held by the finalizer {hold}" in err, err
    finally:
        job = ray.get_namespaced_custom_object("ray.io", "v1", namespace, "rayjobs", "small")
        ray.patch_namespaced_custom_object(
            "ray.io", "v1", namespace, "rayjobs", "small",
            {"metadata": {"finalizers": [f for f in job["metadata"]["finalizers"] if f != hold]}})


def test_uninstall_run_again_finishes_a_release_whose_helm_record_went_at_the_timeout(playground, namespace, release,
                                                                                     capsys, wait):
    from generator.live.changes.remnants import listed
    from generator.live.helm.records import release_records

    kc = playground.kubeconfig
    assert cli(capsys, "run", RECIPE, INFRA, "-n", namespace, "--kubeconfig", kc, "--timeout", 60)[0] == 0
    ray = client.CustomObjectsApi(playground.api_client())
    wait(lambda: ray.get_namespaced_custom_object("ray.io", "v1", namespace, "rayjobs", "small")["metadata"]
         .get("finalizers"), 60, "KubeRay's finalizer on the RayJob")
    hold = "example.com/hold"  # stands for a controller that is down: nobody removes it until the test does
    job = ray.get_namespaced_custom_object("ray.io", "v1", namespace, "rayjobs", "small")
    ray.patch_namespaced_custom_object("ray.io", "v1", namespace, "rayjobs", "small",
                                       {"metadata": {"finalizers": [*job["metadata"]["finalizers"], hold]}})

    def unhold() -> None:
        job = ray.get_namespaced_custom_object("ray.io", "v1", namespace, "rayjobs", "small")
        ray.patch_namespaced_custom_object(
            "ray.io", "v1", namespace, "rayjobs", "small",
            {"metadata": {"finalizers": [f for f in job["metadata"]["finalizers"] if f != hold]}})

    resumer = threading.Timer(4.0, unhold)  # the controller comes back while the second uninstall waits
    try:
        rc, out, err = cli(capsys, "uninstall", "small", "-n", namespace, "--kubeconfig", kc, "--timeout", 8)
        assert rc == 1 and f"RayJob small is held by the finalizer {hold}" in err, out + err
        assert f"`dockyard-k8s uninstall small -n {namespace}` run again once that is resolved" in err, err
        assert release_records(kube(playground), "small", namespace) == []  # Helm dropped the record anyway
        assert listed(kube(playground), "small", namespace)  # ... while the RayJob is still being finalized
        resumer.start()
        rc, out, err = cli(capsys, "uninstall", "small", "-n", namespace, "--kubeconfig", kc, "--timeout", 60)
    finally:
        if resumer.is_alive() or resumer.finished.is_set():
            resumer.join()
        else:  # failed before the second uninstall: let the RayJob go for the fixture's clean-up
            unhold()
    assert rc == 0, out + err
    assert f"release small has no Helm record in {namespace} (uninstalled), but" in err, err
    assert out.startswith(f"release small uninstalled from {namespace}: nothing left"), out
    assert listed(kube(playground), "small", namespace) == []
    # the negative controls: nothing of it left, and a name never installed, are not found (exit 1)
    for name in ("small", "never-installed"):
        rc, out, err = cli(capsys, "uninstall", name, "-n", namespace, "--kubeconfig", kc, "--timeout", 10)
        assert rc == 1 and f"release {name} not found in namespace {namespace}" in err, out + err


def test_a_namespace_whose_service_account_never_appears_is_not_reported_created(playground):
    import uuid

    from generator.errors import CheckFailed
    from generator.live.client.kube import Kube

    k = Kube(playground.kubeconfig)
    k.deadline = time.monotonic() + 3
    name = f"t-{uuid.uuid4().hex[:8]}"
    pid = playground.pids()["kube-controller-manager"]  # what creates each namespace's `default` ServiceAccount
    os.kill(pid, signal.SIGSTOP)
    try:
        with pytest.raises(CheckFailed, match=f"namespace {name} was created, but its `default` ServiceAccount did "
                                              "not appear within 3s"):
            k.ensure_namespace(name)
    finally:
        os.kill(pid, signal.SIGCONT)
        client.CoreV1Api(playground.api_client()).delete_namespace(name)
    other = f"t-{uuid.uuid4().hex[:8]}"  # the negative control: with the controller manager running, it is
    k.deadline = time.monotonic() + 30
    try:
        assert k.ensure_namespace(other) is True
    finally:
        client.CoreV1Api(playground.api_client()).delete_namespace(other)


def test_a_wait_says_when_no_kuberay_operator_leads(playground, namespace, release, capsys):
    """`run --wait` with the KubeRay operator stopped: its leader Lease stops changing, and the wait says no
    operator leads as soon as the Lease's duration has passed on this host's clock — well before the timeout —
    and the timeout names it as what held the wait. The control: once the playground's supervisor has the
    operator back, the same `run --wait` ends ready and says nothing of the kind."""
    import subprocess

    from live_helpers import spawn

    from generator.live.client.kube import Kube
    from generator.live.doctor.kuberay import kuberay_reconciling_row

    kc, timeout = playground.kubeconfig, 50
    operator = playground.pids()["kuberay-operator"]
    os.kill(operator, signal.SIGSTOP)
    try:
        t0 = time.monotonic()
        proc = spawn("run", RECIPE, INFRA, "-n", namespace, "--wait", "--kubeconfig", kc, "--timeout", timeout)
        assert proc.stdout is not None
        said_at = None
        for line in proc.stdout:
            if "no instance of the KubeRay operator leads" in line and said_at is None:
                said_at = time.monotonic() - t0
        err = proc.stderr.read() if proc.stderr else ""
        proc.wait(timeout=30)
        ended_at = time.monotonic() - t0
    except subprocess.TimeoutExpired:
        proc.kill()
        raise
    finally:
        os.kill(operator, signal.SIGCONT)  # past its renew deadline it exits "leader election lost": restarted
    assert proc.returncode == 1, err
    assert said_at is not None and said_at < ended_at - 15, (said_at, ended_at, err)
    assert "not ready after the timeout" in err and "waiting for KubeRay to create the RayCluster" in err, err
    assert "held by: no instance of the KubeRay operator leads: its leader Lease kube-system/ray-operator-leader" in err
    deadline = time.monotonic() + 90
    while kuberay_reconciling_row(Kube(kc)).mark != "✓":
        assert time.monotonic() < deadline, "the supervisor did not bring the KubeRay operator back"
        time.sleep(2)
    rc, out, err = cli(capsys, "run", RECIPE, INFRA, "-n", namespace, "--wait", "--kubeconfig", kc, "--timeout", 90)
    assert rc == 0, out + err
    assert "no instance of" not in out + err
