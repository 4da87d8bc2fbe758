"""The training-loss gate before every path that deletes or replaces live Ray objects, on releases made
by hand with plain helm (the design card's `helm install ... --wait` that times out while its RayJob
already trains): recovery, `run` over a release with no deployed revision, and `rollback`."""

from __future__ import annotations

import os
import signal
import subprocess

import bounds
import pytest
import yaml
from kubernetes import client
from live_helpers import INFRA, RECIPE, cli, infra_variant, kube

from generator.pinned_tools import CHART_DIR, binary

TRAINING = 120  # seconds for KubeRay to run a hand-made release's RayJob (_training)

HUGE_SANDBOX = {"cpu": "500"}  # no node has it: helm's --wait on the sandbox Deployment never ends


@pytest.fixture
def release(playground, namespace, capsys):
    yield "small"
    from generator.live.helm.records import release_records

    if release_records(kube(playground), "small", namespace):
        cli(capsys, "uninstall", "small", "-n", namespace, "--kubeconfig", playground.kubeconfig, "--timeout", 60)


def _values_file(tmp_path, namespace, infra, *overrides) -> str:
    from generator.live.changes.plan import plan

    path = tmp_path / f"values-{len(list(tmp_path.iterdir()))}.yaml"
    path.write_text(yaml.safe_dump(plan(str(RECIPE), str(infra), list(overrides), None, namespace).values))
    return str(path)


def _helm(playground, verb, namespace, values, *flags) -> subprocess.Popen:
    """Plain helm, as a user types it (no dockyard-k8s in between)."""
    return subprocess.Popen([binary("helm"), verb, "small", str(CHART_DIR), "-n", namespace, "-f", values,
                             "--kubeconfig", playground.kubeconfig, "--wait", *flags],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True)


def _rayjob(playground, namespace) -> dict | None:
    from kubernetes.client.exceptions import ApiException

    try:
        return client.CustomObjectsApi(playground.api_client()).get_namespaced_custom_object(
            "ray.io", "v1", namespace, "rayjobs", "small")
    except ApiException as exc:
        if exc.status == 404:
            return None
        raise


def _training(playground, namespace, wait) -> str:
    """Wait until KubeRay runs the RayJob; its UID."""
    wait(lambda: ((_rayjob(playground, namespace) or {}).get("status") or {}).get("jobDeploymentStatus")
         == "Running", TRAINING, "the hand-made release's RayJob to be Running")
    return _rayjob(playground, namespace)["metadata"]["uid"]


def _status(playground, namespace) -> str:
    from generator.live.helm.records import labels, release_records

    return labels(release_records(kube(playground), "small", namespace)[-1]).get("status")


@pytest.mark.timeout(60 + 5 + TRAINING + bounds.verb(60) + bounds.verb(90))
def test_run_over_a_failed_hand_made_install_keeps_the_training(playground, namespace, release, capsys, tmp_path,
                                                                  wait):
    kc = playground.kubeconfig
    huge = infra_variant(tmp_path, "huge.yaml", lambda d: d["sandbox"]["resources"].update(HUGE_SANDBOX))
    helm = _helm(playground, "install", namespace, _values_file(tmp_path, namespace, huge), "--timeout", "60s")
    uid = _training(playground, namespace, wait)
    out, _ = helm.communicate(timeout=120)
    assert helm.returncode != 0 and _status(playground, namespace) == "failed", out

    # a change KubeRay would not pass to the running job: refused, nothing changed
    rc, out, err = cli(capsys, "run", RECIPE, INFRA, "cluster.trainer.gpusPerNode=4", "-n", namespace,
                       "--kubeconfig", kc, "--timeout", 60)
    assert rc == 1 and "would lose running training" in err and "KubeRay #1776" in err, out + err
    assert _rayjob(playground, namespace)["metadata"]["uid"] == uid and _status(playground, namespace) == "failed"

    # the same job with a sandbox pool that fits: Helm upgrades over the failed revision, the job trains on
    rc, out, err = cli(capsys, "run", RECIPE, INFRA, "-n", namespace, "--kubeconfig", kc, "--timeout", 90)
    assert rc == 0, out + err
    assert "no deployed revision (last: failed): upgrading over it" in out + err
    job = _rayjob(playground, namespace)
    assert job["metadata"]["uid"] == uid and not job["metadata"].get("deletionTimestamp")
    assert _status(playground, namespace) == "deployed"


@pytest.mark.timeout(2 * TRAINING + bounds.verb(60) + bounds.verb(120) + 60 + 60 + bounds.verb(60))
def test_recovery_of_a_killed_first_install_and_rollback_are_gated(playground, namespace, release, capsys,
                                                                     tmp_path, wait):
    kc = playground.kubeconfig
    huge = infra_variant(tmp_path, "huge.yaml", lambda d: d["sandbox"]["resources"].update(HUGE_SANDBOX))
    helm = _helm(playground, "install", namespace, _values_file(tmp_path, namespace, huge), "--timeout", "300s")
    uid = _training(playground, namespace, wait)
    os.killpg(helm.pid, signal.SIGKILL)  # helm gets no chance to mark the release failed
    helm.communicate()
    assert _status(playground, namespace) == "pending-install"

    # recovering means uninstalling it: the gate refuses, naming the job and why
    rc, out, err = cli(capsys, "run", RECIPE, INFRA, "-n", namespace, "--kubeconfig", kc, "--timeout", 60)
    assert rc == 1, out + err
    assert "left pending-install by an interrupted first install, and recovering it means removing it" in err
    assert "RayJob small (jobDeploymentStatus Running" in err and "would be deleted" in err
    assert _rayjob(playground, namespace)["metadata"]["uid"] == uid and _status(playground, namespace) == \
        "pending-install"

    # --replace accepts the loss: the release is removed and installed anew
    rc, out, err = cli(capsys, "run", RECIPE, INFRA, "-n", namespace, "--replace", "--kubeconfig", kc,
                       "--timeout", 120)
    assert rc == 0, out + err
    new_uid = _training(playground, namespace, wait)
    assert new_uid != uid and _status(playground, namespace) == "deployed"

    # a plain `helm upgrade` to bringup that fails (--wait times out) leaves the newest revision failed
    # with its objects applied: the RayJob is gone, a bare RayCluster runs. Rolling back to revision 1
    # would delete that cluster (helm rollback diffs against the newest revision): refused
    bringup = infra_variant(tmp_path, "bringup.yaml", lambda d: (d["sandbox"]["resources"].update(HUGE_SANDBOX),
                                                                 d["launch"].update(mode="bringup")))
    helm = _helm(playground, "upgrade", namespace, _values_file(tmp_path, namespace, bringup), "--timeout", "5s")
    helm.communicate(timeout=60)
    assert _status(playground, namespace) == "failed"
    wait(lambda: _rayjob(playground, namespace) is None, 60, "helm's upgrade to delete the RayJob")
    rc, out, err = cli(capsys, "rollback", "small", "1", "-n", namespace, "--kubeconfig", kc, "--timeout", 60)
    assert rc == 1 and "would lose running training" in err and "RayCluster small" in err, out + err
    assert "would be deleted" in err and _status(playground, namespace) == "failed"
