"""The hardening baseline: on by default for the sandbox, opt-in for the GPU fleets, each piece droppable."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

BASELINE = {
    "allowPrivilegeEscalation": False,
    "capabilities": {"drop": ["ALL"]},
    "readOnlyRootFilesystem": False,
    "seccompProfile": {"type": "RuntimeDefault"},
}


def sandbox_pod(out):
    return out.one("Deployment")["spec"]["template"]["spec"]


def test_sandbox_baseline_is_on_by_default(render):
    out = render()
    pod = sandbox_pod(out)
    c = pod["containers"][0]
    assert c["securityContext"] == BASELINE
    assert pod["securityContext"] == {"seccompProfile": {"type": "RuntimeDefault"}}
    assert pod["automountServiceAccountToken"] is False
    assert pod["enableServiceLinks"] is False
    assert pod["serviceAccountName"] == "grpo-swe-sandbox"
    assert out.one("ServiceAccount")["automountServiceAccountToken"] is False
    assert "volumes" not in pod  # the root filesystem is writable by default


def test_sandbox_security_can_be_dropped(render):
    pod = sandbox_pod(render(sandbox={"security": {"enabled": False}}))
    assert "securityContext" not in pod
    assert "securityContext" not in pod["containers"][0]


def test_run_as_non_root_and_read_only_root_are_opt_in(render):
    pod = sandbox_pod(render(sandbox={"security": {"runAsNonRoot": True, "runAsUser": 4242,
                                                   "readOnlyRootFilesystem": True, "workDir": "/work",
                                                   "workDirSizeLimit": "20Gi"}}))
    c = pod["containers"][0]
    assert c["securityContext"]["runAsNonRoot"] is True
    assert c["securityContext"]["runAsUser"] == 4242
    assert c["securityContext"]["readOnlyRootFilesystem"] is True
    assert {"name": "workdir", "mountPath": "/work"} in c["volumeMounts"]
    assert {"name": "tmp", "mountPath": "/tmp"} in c["volumeMounts"]
    assert {"name": "workdir", "emptyDir": {"sizeLimit": "20Gi"}} in pod["volumes"]
    assert {"name": "tmp", "emptyDir": {}} in pod["volumes"]


def test_restricted_profile_is_one_switch(render):
    pod = sandbox_pod(render(sandbox={"security": {"profile": "restricted"}}))
    sc = pod["containers"][0]["securityContext"]
    assert sc["runAsNonRoot"] is True and sc["runAsUser"] == 10001
    assert sc["readOnlyRootFilesystem"] is True
    assert sc["allowPrivilegeEscalation"] is False and sc["capabilities"] == {"drop": ["ALL"]}
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert pod["securityContext"]["fsGroup"] == 10001
    assert [v["name"] for v in pod["volumes"]] == ["workdir", "tmp"]


def test_requests_are_small_and_limits_default_to_them(render):
    res = sandbox_pod(render())["containers"][0]["resources"]
    assert res["requests"] == {"cpu": "1", "memory": "2Gi", "ephemeral-storage": "10Gi"}
    assert res["limits"] == res["requests"]
    res = sandbox_pod(render(sandbox={"resources": {"cpuLimit": "4", "memoryLimit": "8Gi",
                                                    "ephemeralStorageLimit": "40Gi"}}))["containers"][0]["resources"]
    assert res["requests"] == {"cpu": "1", "memory": "2Gi", "ephemeral-storage": "10Gi"}
    assert res["limits"] == {"cpu": "4", "memory": "8Gi", "ephemeral-storage": "40Gi"}


def test_network_policy_default_semantics(render):
    np = render().one("NetworkPolicy")["spec"]
    assert np["podSelector"]["matchLabels"]["app.kubernetes.io/component"] == "sandbox"
    assert np["policyTypes"] == ["Ingress", "Egress"]
    assert np["ingress"] == [{"from": [{"podSelector": {}}], "ports": [{"protocol": "TCP", "port": 9090}]}]
    dns = {"ports": [{"protocol": "UDP", "port": 53}, {"protocol": "TCP", "port": 53}]}
    assert np["egress"][0] == dns
    assert np["egress"][1] == {"to": [
        {"ipBlock": {"cidr": "0.0.0.0/0", "except": ["169.254.169.254/32"]}},
        {"ipBlock": {"cidr": "::/0", "except": ["fd00:ec2::254/128"]}},
    ]}
    assert len(np["egress"]) == 2


def test_network_policy_metadata_block_can_be_lifted(render):
    np = render(sandbox={"networkPolicy": {"blockCloudMetadata": False}}).one("NetworkPolicy")["spec"]
    assert np["egress"][1] == {}


def test_network_policy_locked_down_egress(render):
    locked = {"allowEgress": False, "allowedEgressCidrs": ["10.20.0.0/16", "192.0.2.10/32"]}
    np = render(sandbox={"port": 8080, "networkPolicy": locked}).one("NetworkPolicy")["spec"]
    assert np["ingress"][0]["ports"] == [{"protocol": "TCP", "port": 8080}]
    assert np["egress"][0]["ports"][0]["port"] == 53
    assert np["egress"][1] == {"to": [{"ipBlock": {"cidr": "10.20.0.0/16"}}, {"ipBlock": {"cidr": "192.0.2.10/32"}}]}
    only_dns = render(sandbox={"networkPolicy": {"allowEgress": False}}).one("NetworkPolicy")["spec"]
    assert len(only_dns["egress"]) == 1


@pytest.mark.parametrize("piece, kind", [("networkPolicy", "NetworkPolicy"), ("pdb", "PodDisruptionBudget")])
def test_each_piece_can_be_dropped(render, piece, kind):
    assert render(sandbox={piece: {"enabled": False}}).all(kind) == []


def test_sandbox_pdb(render):
    pdb = render().one("PodDisruptionBudget")["spec"]
    assert pdb == {"maxUnavailable": 1, "selector": {"matchLabels": {
        "app.kubernetes.io/name": "dockyard", "app.kubernetes.io/instance": "grpo-swe",
        "app.kubernetes.io/component": "sandbox", "dockyard.dev/sandbox-backend": "pool"}}}


def test_priority_class_on_every_managed_pod(render):
    out = render(infra={"priorityClassName": "training"})
    pods = out.pod_specs()
    assert set(pods) == {"sandbox", "test", "submitter", "head", "trainer", "inference"}
    for role, spec in pods.items():
        assert spec.get("priorityClassName") == "training", role
    assert all("priorityClassName" not in s for s in render().pod_specs().values())


def test_sandbox_placement_knobs(render):
    pod = sandbox_pod(render(sandbox={
        "nodeSelector": {"pool": "cpu"},
        "tolerations": [{"key": "dedicated", "operator": "Equal", "value": "sandbox", "effect": "NoSchedule"}],
        "affinity": {"podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": []}},
        "runtimeClassName": "gvisor",
        "topologySpreadConstraints": [{"topologyKey": "kubernetes.io/hostname"}],
    }))
    assert pod["nodeSelector"] == {"pool": "cpu"}
    assert pod["tolerations"] == [{"key": "dedicated", "operator": "Equal", "value": "sandbox", "effect": "NoSchedule"}]
    assert "podAntiAffinity" in pod["affinity"]
    assert pod["runtimeClassName"] == "gvisor"
    tsc = pod["topologySpreadConstraints"][0]
    assert tsc["topologyKey"] == "kubernetes.io/hostname" and tsc["maxSkew"] == 1
    assert tsc["whenUnsatisfiable"] == "ScheduleAnyway"
    assert tsc["labelSelector"]["matchLabels"]["app.kubernetes.io/component"] == "sandbox"


def test_gpu_free_pods_prefer_cpu_nodes(render):
    out = render()
    prefer = {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 100, "preference": {
        "matchExpressions": [{"key": "nvidia.com/gpu.present", "operator": "DoesNotExist"}]}}]}}
    assert sandbox_pod(out)["affinity"] == prefer
    assert out.groups()["head"]["template"]["spec"]["affinity"] == prefer
    assert "affinity" not in out.groups()["trainer"]["template"]["spec"]


def test_sandbox_image_defaults_to_infra_image_and_can_pin_a_digest(render):
    assert sandbox_pod(render())["containers"][0]["image"] == "ghcr.io/dockyard-rl/ubuntu-swe:vllm"
    digest = "sha256:" + "a" * 64
    out = render(sandbox={"image": {"digest": digest}})
    assert sandbox_pod(out)["containers"][0]["image"] == f"ghcr.io/dockyard-rl/ubuntu-swe@{digest}"
    out = render(infra={"image": {"digest": digest}})
    assert sandbox_pod(out)["containers"][0]["image"] == f"ghcr.io/dockyard-rl/ubuntu-swe@{digest}"
    trainer = out.groups()["trainer"]["template"]["spec"]["containers"][0]
    assert trainer["image"] == f"ghcr.io/dockyard-rl/ubuntu-swe@{digest}"
    own = render(sandbox={"image": {"repository": "ghcr.io/org/executor", "tag": "2"}})
    assert sandbox_pod(own)["containers"][0]["image"] == "ghcr.io/org/executor:2"


def test_gpu_security_is_opt_in(render):
    off = render().pod_specs()
    for role in ("head", "trainer", "inference", "submitter"):
        assert "securityContext" not in off[role], role
        assert "securityContext" not in off[role]["containers"][0], role
    on = render(infra={"security": {"enabled": True, "readOnlyRootFilesystem": True}}).pod_specs()
    for role in ("head", "trainer", "inference", "submitter"):
        sc = on[role]["containers"][0]["securityContext"]
        assert sc["allowPrivilegeEscalation"] is False and sc["capabilities"] == {"drop": ["ALL"]}, role
        assert on[role]["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
    head_mounts = on["head"]["containers"][0]["volumeMounts"]
    assert [m["name"] for m in head_mounts] == ["recipe", "workdir", "tmp"]


def test_gpu_pdb_in_bringup_only(render):
    on = {"pdb": {"enabled": True}}
    cluster = {"trainer": {"nodes": 2}, "inference": {"nodes": 3}}
    pdbs = render(launch={"mode": "bringup"}, kuberay=on, recipe={"cluster": cluster}).all("PodDisruptionBudget")
    gpu = [p for p in pdbs if p["metadata"]["name"] == "grpo-swe-gpu"]
    assert gpu and gpu[0]["spec"] == {"minAvailable": 6, "selector": {"matchLabels": {"ray.io/cluster": "grpo-swe"}}}
    custom = render(launch={"mode": "bringup"},
                    kuberay={"pdb": {"enabled": True, "minAvailable": 2}}).all("PodDisruptionBudget")
    assert [p["spec"]["minAvailable"] for p in custom if p["metadata"]["name"].endswith("-gpu")] == [2]
    assert len(render(launch={"mode": "bringup"}).all("PodDisruptionBudget")) == 1
    with pytest.raises(ValidationError, match="launch.mode rayjob ignores kuberay.pdb"):  # the RayJob owns its cluster
        render(kuberay=on)


def test_quota_and_limit_range_are_opt_in(render):
    off = render()
    assert off.all("ResourceQuota") == [] and off.all("LimitRange") == []
    on = render(infra={"resourceQuota": {"enabled": True, "hard": {"requests.cpu": 32, "pods": "20"}},
                       "limitRange": {"enabled": True, "default": {"cpu": "1", "memory": "2Gi"},
                                      "defaultRequest": {"cpu": "500m", "memory": "1Gi"}, "max": {"memory": "64Gi"}}})
    assert on.one("ResourceQuota")["spec"]["hard"] == {"pods": "20", "requests.cpu": "32"}
    limits = on.one("LimitRange")["spec"]["limits"][0]
    assert limits == {"type": "Container", "default": {"cpu": "1", "memory": "2Gi"},
                      "defaultRequest": {"cpu": "500m", "memory": "1Gi"}, "max": {"memory": "64Gi"}}


def test_helm_test_hook_checks_the_service(render):
    pod = render().one("Pod")
    assert pod["metadata"]["annotations"]["helm.sh/hook"] == "test"
    cmd = pod["spec"]["containers"][0]["command"]
    assert "/dev/tcp/grpo-swe-sandbox/9090" in cmd[-1]


def test_helm_test_pod_runs_where_the_sandbox_pool_runs(render):
    # a pool pinned to a (tainted) node pool: the test pod must be able to land there too
    sel = {"playground.dockyard.dev/real-node": "true"}
    tol = [{"key": "playground.dockyard.dev/real-node", "operator": "Exists", "effect": "NoSchedule"}]
    out = render(sandbox={"nodeSelector": sel, "tolerations": tol})
    pod, dep = out.one("Pod"), out.one("Deployment")
    assert pod["spec"]["nodeSelector"] == dep["spec"]["template"]["spec"]["nodeSelector"] == sel
    assert pod["spec"]["tolerations"] == dep["spec"]["template"]["spec"]["tolerations"] == tol
    assert "nodeSelector" not in render().one("Pod")["spec"]
