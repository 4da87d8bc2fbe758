"""Hardening enforced by the real apiserver and controllers, not just rendered.

Objects are installed the way the seed says governance is installed: `render | kubectl apply`.
NetworkPolicy *enforcement* needs a CNI, which the playground has not: only acceptance is tested
here (semantics are unit-tested in tests/chart/test_hardening.py).
"""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

import pytest
import yaml

from generator.cli import main
from generator.pinned_tools import binary

IMAGE = {"repository": "ghcr.io/dockyard-rl/ubuntu-swe", "tag": "2026.11-vllm"}


def write_inputs(tmp_path: Path, namespace: str, mode: str = "attach", infra: dict | None = None,
                 sandbox: dict | None = None, kuberay: dict | None = None) -> tuple[Path, Path]:
    recipe = tmp_path / "hardening.yaml"
    recipe.write_text(yaml.safe_dump({"name": "hard", "entrypoint": "python -m dockyard_rl.train",
                                      "cluster": {"trainer": {"nodes": 1, "gpusPerNode": 1},
                                                  "inference": {"nodes": 1, "gpusPerNode": 1}}}))
    spec = {
        "infra": {"namespace": namespace, "image": IMAGE, **(infra or {})},
        "launch": {"mode": mode, **({"clusterName": "shared"} if mode == "attach" else {})},
        # the GPU RayCluster's keys only where one is rendered: attach mode refuses them (mode_keys)
        **({} if mode == "attach" else {"kuberay": {"head": {"cpu": "500m", "memory": "1Gi"},
                                                    "worker": {"cpu": "1", "memory": "2Gi"}, **(kuberay or {})}}),
        "sandbox": {"replicas": 2, "resources": {"cpu": "250m", "memory": "256Mi", "ephemeralStorage": "1Gi"},
                    **(sandbox or {})},
    }
    path = tmp_path / "hardening.infra.yaml"
    path.write_text(yaml.safe_dump(spec, sort_keys=False))
    return recipe, path


def render_and_apply(playground, recipe: Path, infra: Path, tmp_path: Path) -> str:
    """`dockyard-k8s render … | kubectl apply -f -` with the pinned binaries."""
    out = tmp_path / "manifests.yaml"
    assert main(["render", str(recipe), str(infra), "-o", str(out)]) == 0
    proc = subprocess.run([binary("kubectl", "kubernetes"), "--kubeconfig", playground.kubeconfig,
                           "apply", "-f", str(out)],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def label_namespace(k8s, namespace: str, level: str) -> None:
    from kubernetes import client

    client.CoreV1Api(k8s).patch_namespace(
        namespace, {"metadata": {"labels": {"pod-security.kubernetes.io/enforce": level}}})


def pods(k8s, namespace: str, selector: str) -> list:
    from kubernetes import client

    return client.CoreV1Api(k8s).list_namespaced_pod(namespace, label_selector=selector).items


def event_messages(k8s, namespace: str, reason: str) -> list[str]:
    from kubernetes import client

    return [e.message for e in client.CoreV1Api(k8s).list_namespaced_event(namespace).items if e.reason == reason]


SANDBOX = "app.kubernetes.io/component=sandbox"


def test_default_pool_is_admitted_under_baseline(playground, k8s, namespace, tmp_path, wait):
    label_namespace(k8s, namespace, "baseline")
    out = render_and_apply(playground, *write_inputs(tmp_path, namespace), tmp_path)
    assert "networkpolicy.networking.k8s.io/hard-sandbox created" in out  # the apiserver accepts it
    wait(lambda: len([p for p in pods(k8s, namespace, SANDBOX) if p.status.phase == "Running"]) == 2, 60,
         "2 sandbox pods Running")


def test_default_pool_is_refused_under_restricted_with_podsecuritys_message(playground, k8s, namespace, tmp_path, wait):
    label_namespace(k8s, namespace, "restricted")
    render_and_apply(playground, *write_inputs(tmp_path, namespace), tmp_path)
    msgs = wait(lambda: [m for m in event_messages(k8s, namespace, "FailedCreate") if "violates PodSecurity" in m], 60,
                "a FailedCreate event from the ReplicaSet")
    assert 'violates PodSecurity "restricted:latest"' in msgs[0]
    assert "runAsNonRoot != true" in msgs[0]
    assert pods(k8s, namespace, SANDBOX) == []


def test_restricted_profile_pool_is_admitted_under_restricted(playground, k8s, namespace, tmp_path, wait):
    label_namespace(k8s, namespace, "restricted")
    render_and_apply(playground, *write_inputs(tmp_path, namespace, sandbox={"security": {"profile": "restricted"}}),
                     tmp_path)
    wait(lambda: len([p for p in pods(k8s, namespace, SANDBOX) if p.status.phase == "Running"]) == 2, 60,
         "2 restricted sandbox pods Running")
    assert not [m for m in event_messages(k8s, namespace, "FailedCreate") if "PodSecurity" in m]


@pytest.mark.parametrize("security, admitted", [({"enabled": True, "profile": "restricted"}, True), ({}, False)])
def test_gpu_pods_under_restricted(playground, k8s, namespace, tmp_path, wait, security, admitted):
    """GPU pods pass `restricted` only with infra.security on (restricted profile); KubeRay creates them."""
    label_namespace(k8s, namespace, "restricted")
    recipe, infra = write_inputs(tmp_path, namespace, mode="bringup", infra={"security": security},
                                 sandbox={"security": {"profile": "restricted"}})
    render_and_apply(playground, recipe, infra, tmp_path)
    ray = "ray.io/cluster=hard"
    if admitted:
        found = wait(lambda: len(pods(k8s, namespace, ray)) == 3 and pods(k8s, namespace, ray), 90,
                     "head + 2 worker pods created")
        assert {p.metadata.labels["dockyard.dev/fleet"] for p in found} == {"head", "trainer", "inference"}
    else:
        msgs = wait(lambda: [m for m in event_messages(k8s, namespace, "FailedToCreateHeadPod") if "PodSecurity" in m],
                    90, "KubeRay's head pod refused by PodSecurity")
        assert ('violates PodSecurity "restricted:latest": '
                'allowPrivilegeEscalation != false (container "ray-head"') in msgs[0]
        assert pods(k8s, namespace, ray) == []


def test_resource_quota_refuses_a_pool_that_exceeds_it(playground, k8s, namespace, tmp_path, wait, capsys):
    """A quota that cannot hold the release is refused at input (the quota rule); one that holds it exactly is
    rendered, applied and enforced by the API server. Exactly, at its peak: a rollout's extra executor (maxSurge
    25% of 3, rounded up) fits, and the rollout ends; a quota with no room beside the 3 executors running (this
    namespace runs no `helm test` pod, which the rule counts too) stalls the next rollout at the quota. (An old
    executor still counts against the quota until it is gone, and the quota's usage lags a deletion: at exactly this
    total a step of the rollout may be refused once and retried by the ReplicaSet controller — slower, not stalled.
    On kwok that lasts a moment; a real executor draining holds each step until it is gone.)"""
    from kubernetes import client

    short = {"resourceQuota": {"enabled": True, "hard": {"pods": "4", "requests.cpu": "1100m"}}}
    recipe, infra = write_inputs(tmp_path, namespace, infra=short, sandbox={"replicas": 3})
    assert main(["render", str(recipe), str(infra), "-o", str(tmp_path / "refused.yaml")]) == 2
    err = capsys.readouterr().err
    assert "infra.resourceQuota.hard.pods: the quota holds 4 but the release asks for 5" in err, err
    assert "sandbox 3" in err and "sandbox rollout surge 1" in err
    # 3 executors (250m each), 1 more in a rollout, the test pod (100m)
    exact = {"resourceQuota": {"enabled": True, "hard": {"pods": "5", "requests.cpu": "1100m"}}}
    out = render_and_apply(playground, *write_inputs(tmp_path, namespace, infra=exact, sandbox={"replicas": 3}),
                           tmp_path)
    assert "resourcequota/hard created" in out
    apps, core = client.AppsV1Api(k8s), client.CoreV1Api(k8s)
    (pool,) = apps.list_namespaced_deployment(namespace, label_selector=SANDBOX).items
    name = pool.metadata.name

    def roll(mark: str) -> None:
        apps.patch_namespaced_deployment(name, namespace, {"spec": {"template": {"metadata": {"annotations": {
            "dockyard.test/rollout": mark}}}}})

    def rolled() -> bool:
        d = apps.read_namespaced_deployment(name, namespace)
        st = d.status
        return (st.observed_generation == d.metadata.generation and st.updated_replicas == 3
                and st.replicas == 3 and st.ready_replicas == 3)

    wait(rolled, 60, "the pool's 3 executors ready")
    roll("1")
    wait(rolled, 60, "the rollout to end within the exact quota")
    core.patch_namespaced_resource_quota("hard", namespace, {"spec": {"hard": {"pods": "3"}}})
    wait(lambda: (core.read_namespaced_resource_quota("hard", namespace).status.hard or {}).get("pods") == "3", 30,
         "the smaller quota in force")
    roll("2")
    msgs = wait(lambda: [m for m in event_messages(k8s, namespace, "FailedCreate") if "limited: pods=3" in m], 60,
                "the rollout's extra executor refused by the smaller quota")
    assert "forbidden: exceeded quota: hard" in msgs[0]
    time.sleep(5)  # the ReplicaSet controller's retries in the meantime: refused too, the rollout stays where it was
    assert not rolled() and len(pods(k8s, namespace, SANDBOX)) == 3


def test_limit_range_refuses_a_container_over_its_max(playground, k8s, namespace, tmp_path, wait):
    lr = {"limitRange": {"enabled": True, "max": {"cpu": "200m"}}}
    render_and_apply(playground, *write_inputs(tmp_path, namespace, infra=lr), tmp_path)
    msgs = wait(lambda: [m for m in event_messages(k8s, namespace, "FailedCreate") if "maximum cpu usage" in m], 60,
                "a LimitRange refusal")
    assert "maximum cpu usage per Container is 200m, but limit is 250m" in msgs[0]


def test_pdb_lets_one_eviction_through_and_refuses_the_second(playground, k8s, namespace, tmp_path, wait):
    """The replacement of an evicted pod must not become Ready before the second eviction (kwok
    would make it Ready at once): the pool is pinned to a node label that is removed before evicting,
    so the replacement stays Pending, as it would while a real node pulls the image."""
    from kubernetes import client
    from kubernetes.client.exceptions import ApiException

    core, policy = client.CoreV1Api(k8s), client.PolicyV1Api(k8s)
    node, label = playground.cpu_node_names[0], f"dockyard-test-pdb-{namespace}"
    core.patch_node(node, {"metadata": {"labels": {label: "yes"}}})
    try:
        render_and_apply(playground, *write_inputs(tmp_path, namespace, sandbox={"nodeSelector": {label: "yes"}}),
                         tmp_path)
        wait(lambda: (policy.read_namespaced_pod_disruption_budget("hard-sandbox", namespace)
                      .status.disruptions_allowed or 0) == 1,
             60, "the sandbox PDB to allow one disruption")
    finally:
        core.patch_node(node, {"metadata": {"labels": {label: None}}})
    first, second = sorted(p.metadata.name for p in pods(k8s, namespace, SANDBOX))[:2]

    def evict(name: str) -> None:
        core.create_namespaced_pod_eviction(
            name, namespace, client.V1Eviction(metadata=client.V1ObjectMeta(name=name, namespace=namespace)))

    evict(first)
    with pytest.raises(ApiException) as refused:
        evict(second)
    assert refused.value.status == 429
    assert "Cannot evict pod as it would violate the pod's disruption budget" in refused.value.body
    assert policy.read_namespaced_pod_disruption_budget("hard-sandbox", namespace).status.disruptions_allowed == 0


def test_check_server_reports_what_the_apiserver_refuses(playground, k8s, namespace, tmp_path, capsys):
    recipe, infra = write_inputs(tmp_path, namespace)
    assert main(["check", str(recipe), str(infra), "--server", "--kubeconfig", playground.kubeconfig]) == 0
    assert "✓ server dry-run 6 accepted, 0 refused" in capsys.readouterr().out
    label_namespace(k8s, namespace, "restricted")
    assert main(["check", str(recipe), str(infra), "--server", "--kubeconfig", playground.kubeconfig]) == 1
    out = capsys.readouterr().out
    assert ('✗ server refused Pod hard-sandbox-test: pods "hard-sandbox-test" is forbidden: '
            'violates PodSecurity "restricted:latest"') in out
    assert '! server warns on Deployment hard-sandbox: would violate PodSecurity "restricted:latest"' in out
    from kubernetes import client

    assert client.AppsV1Api(k8s).list_namespaced_deployment(namespace).items == []  # a dry run stores nothing
