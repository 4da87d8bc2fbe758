"""sandbox.backend: the pool (a Deployment behind a Service) or agent-sandbox (a SandboxTemplate of the same
executor pod, a SandboxWarmPool, and the RBAC a Ray pod needs to claim one), each rendering only its own objects."""

from __future__ import annotations

from typing import Any

import pytest

from generator.render import apivalidate, kubeconform
from tests.conftest import Rendered, chart_values, deep_merge, render_values

AGENT = {"backend": "agent-sandbox"}
POOL_ONLY = {"Deployment", "Service", "PodDisruptionBudget", "HorizontalPodAutoscaler"}
AGENT_ONLY = {"SandboxTemplate", "SandboxWarmPool", "Role", "RoleBinding"}
RAY_ROLES = ("head", "trainer", "inference")
BACKEND = "dockyard.dev/sandbox-backend"
CLAIM_ENV = ("DOCKYARD_SANDBOX_WARM_POOL", "DOCKYARD_SANDBOX_TEMPLATE", "DOCKYARD_SANDBOX_NAMESPACE",
             "DOCKYARD_SANDBOX_PORT")


def _gpu_env(out: Rendered) -> dict[str, dict[str, str]]:
    """Each GPU group's Ray container env, as name -> value."""
    return {role: {e["name"]: e.get("value") for e in g["template"]["spec"]["containers"][0]["env"]}
            for role, g in out.groups().items()}


def test_the_pool_is_the_default_and_renders_no_agent_sandbox_object(render):
    out = render(sandbox={"autoscaling": {"enabled": True, "targetCPUUtilizationPercentage": 70}})
    assert POOL_ONLY <= set(out.kinds())
    assert not AGENT_ONLY & set(out.kinds())
    for env in _gpu_env(out).values():
        assert env["DOCKYARD_SANDBOX_URLS"] == "http://grpo-swe-sandbox.dockyard.svc.cluster.local:9090"
        assert not set(CLAIM_ENV) & set(env)
    assert not any(a["metadata"]["name"] == "grpo-swe-ray" for a in out.all("ServiceAccount"))


def test_agent_sandbox_renders_its_objects_and_none_of_the_pools(render):
    out = render(sandbox={**AGENT, "replicas": 5})
    kinds = set(out.kinds())
    assert AGENT_ONLY <= kinds and not POOL_ONLY & kinds
    assert "Pod" not in kinds  # the helm test dials the pool's Service, which this backend has not
    assert {"NetworkPolicy", "ServiceAccount"} <= kinds  # both backends' pods are selected and run as it
    template, pool = out.one("SandboxTemplate"), out.one("SandboxWarmPool")
    assert template["apiVersion"] == pool["apiVersion"] == "extensions.agents.x-k8s.io/v1beta1"
    assert template["metadata"]["name"] == pool["metadata"]["name"] == "grpo-swe-sandbox"
    assert pool["spec"] == {"replicas": 5, "sandboxTemplateRef": {"name": "grpo-swe-sandbox"},
                            "updateStrategy": {"type": "Recreate"}}
    spec = template["spec"]
    # the chart's NetworkPolicy governs; the controller's own would open egress to public addresses
    assert spec["networkPolicyManagement"] == "Unmanaged"
    assert spec["envVarsInjectionPolicy"] == "Disallowed" and spec["volumeClaimTemplatesPolicy"] == "Disallowed"
    assert spec["service"] is False
    out = render(sandbox={**AGENT, "warmPool": {"updateStrategy": "OnReplenish"}})
    assert out.one("SandboxWarmPool")["spec"]["updateStrategy"] == {"type": "OnReplenish"}


@pytest.mark.parametrize("over", [
    {},
    {"security": {"profile": "restricted"}, "runtimeClassName": "gvisor"},
    {"security": {"enabled": False}, "port": 8080, "readinessProbe": {"type": "tcp"}},
    {"podLabels": {"team": "rl"}, "podAnnotations": {"a": "b"}, "extraEnv": [{"name": "X", "value": "1"}],
     "resources": {"cpuLimit": "4"}, "nodeSelector": {"pool": "cpu"},
     "topologySpreadConstraints": [{"maxSkew": 1, "topologyKey": "kubernetes.io/hostname",
                                    "whenUnsatisfiable": "ScheduleAnyway"}]},
], ids=["defaults", "restricted-gvisor", "no-security-tcp", "placement-and-env"])
def test_the_template_holds_the_pools_executor_pod(render, over):
    """Same image, port, probes, resources, hardening, RuntimeClass, labels: the pod the pool runs, whichever
    backend runs it."""
    pool = render(sandbox=over).one("Deployment")["spec"]["template"]
    template = render(sandbox={**over, **AGENT}).one("SandboxTemplate")["spec"]["podTemplate"]
    backends = [p["metadata"]["labels"].pop(BACKEND) for p in (pool, template)]
    assert backends == ["pool", "agent-sandbox"]  # the one difference: which backend runs it
    assert template == pool


def test_the_pools_service_never_selects_a_claimed_sandbox(render):
    """After a switch from agent-sandbox back to pool, sandboxes still claimed keep running until released: the
    pool's Service and PodDisruptionBudget select the Deployment's executors only."""
    pool = render()
    deployment = pool.one("Deployment")["spec"]
    claimed = render(sandbox=AGENT).one("SandboxTemplate")["spec"]["podTemplate"]["metadata"]["labels"]
    for selector in (pool.one("Service")["spec"]["selector"],
                     pool.one("PodDisruptionBudget")["spec"]["selector"]["matchLabels"]):
        assert selector.items() <= deployment["template"]["metadata"]["labels"].items()
        assert not selector.items() <= claimed.items()
        # without the backend label the claimed pod would match: the label is what keeps it out
        assert {k: v for k, v in selector.items() if k != BACKEND}.items() <= claimed.items()
    # the Deployment's own selector is what it was (immutable: an upgrade would be refused)
    assert BACKEND not in deployment["selector"]["matchLabels"]


def test_the_network_policy_selects_the_sandbox_pods(render):
    out = render(sandbox=AGENT)
    selector = out.one("NetworkPolicy")["spec"]["podSelector"]["matchLabels"]
    labels = out.one("SandboxTemplate")["spec"]["podTemplate"]["metadata"]["labels"]
    assert selector.items() <= labels.items()


@pytest.mark.parametrize("name", ["", None])
def test_an_empty_account_in_the_overlay_binds_the_releases(name):
    """An overlay's empty serviceAccountName merges as nothing: the pod runs as the release's account, and the
    RoleBinding names that one (an empty subject name is refused by the API)."""
    values = deep_merge(chart_values(sandbox=AGENT), {"kuberay": {"spec": {"workerGroupSpecs": [
        {"groupName": "trainer", "template": {"spec": {"serviceAccountName": name}}}]}}})
    out = render_values(values)
    assert out.one("RoleBinding")["subjects"] == [{"kind": "ServiceAccount", "name": "grpo-swe-ray",
                                                   "namespace": "dockyard"}]
    assert out.groups()["trainer"]["template"]["spec"]["serviceAccountName"] == "grpo-swe-ray"


def test_a_claimed_sandbox_admits_only_the_releases_ray_pods(render):
    """One episode per sandbox: no other pod of the namespace (another sandbox's untrusted code above all) is
    admitted to its executor port; the pool backend keeps its namespace-wide rule."""
    (rule,) = render(sandbox=AGENT).one("NetworkPolicy")["spec"]["ingress"]
    assert rule["from"] == [{"podSelector": {"matchLabels": {"app.kubernetes.io/instance": "grpo-swe",
                                                             "app.kubernetes.io/component": "ray"}}}]
    (rule,) = render().one("NetworkPolicy")["spec"]["ingress"]
    assert rule["from"] == [{"podSelector": {}}]
    ray = render(sandbox=AGENT).groups()["trainer"]["template"]["metadata"]["labels"]
    assert {"app.kubernetes.io/instance": "grpo-swe", "app.kubernetes.io/component": "ray"}.items() <= ray.items()


def _rbac(out: Rendered) -> tuple[dict[str, Any], dict[str, Any]]:
    return out.one("Role"), out.one("RoleBinding")


def test_the_ray_pods_may_claim_and_nothing_more(render):
    role, binding = _rbac(render(sandbox=AGENT))
    assert role["metadata"]["name"] == binding["metadata"]["name"] == "grpo-swe-sandbox-claims"
    assert role["rules"] == [{"apiGroups": ["extensions.agents.x-k8s.io"], "resources": ["sandboxclaims"],
                              "verbs": ["create", "get", "watch", "delete"]}]
    assert binding["roleRef"] == {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role",
                                  "name": "grpo-swe-sandbox-claims"}
    # no group names a ServiceAccount: the Ray pods run as the release's own, not as the namespace's default
    assert binding["subjects"] == [{"kind": "ServiceAccount", "name": "grpo-swe-ray", "namespace": "dockyard"}]
    out = render(sandbox=AGENT)
    assert {p["serviceAccountName"] for r, p in out.pod_specs().items() if r in RAY_ROLES} == {"grpo-swe-ray"}
    assert "grpo-swe-ray" in [a["metadata"]["name"] for a in out.all("ServiceAccount")]
    # the pool's Ray pods are as they were
    assert not any("serviceAccountName" in p for r, p in render().pod_specs().items() if r in RAY_ROLES)


def test_the_binding_follows_the_service_accounts_the_overlay_names(render):
    def sa(name: str) -> dict[str, Any]:
        return {"template": {"spec": {"serviceAccountName": name}}}

    spec = {"headGroupSpec": sa("ray"), "workerGroupSpecs": [{"groupName": "trainer", **sa("ray")}]}
    _, binding = _rbac(render(sandbox=AGENT, kuberay={"spec": spec}))
    assert [s["name"] for s in binding["subjects"]] == ["ray", "grpo-swe-ray"]  # inference has no overlay
    spec["workerGroupSpecs"].append({"groupName": "inference", **sa("infer")})
    _, binding = _rbac(render(sandbox=AGENT, kuberay={"spec": spec}))
    assert [s["name"] for s in binding["subjects"]] == ["ray", "infer"]


def test_the_gpu_pods_get_what_a_claim_needs_instead_of_urls(render):
    out = render(sandbox={**AGENT, "port": 8080})
    for env in _gpu_env(out).values():
        assert "DOCKYARD_SANDBOX_URLS" not in env
        assert {k: env[k] for k in CLAIM_ENV} == {
            "DOCKYARD_SANDBOX_WARM_POOL": "grpo-swe-sandbox", "DOCKYARD_SANDBOX_TEMPLATE": "grpo-swe-sandbox",
            "DOCKYARD_SANDBOX_NAMESPACE": "dockyard", "DOCKYARD_SANDBOX_PORT": "8080"}
    for env in _gpu_env(render(sandbox={**AGENT, "injectUrls": False})).values():
        assert not set(CLAIM_ENV) & set(env)


def test_an_overlay_cannot_replace_the_claim_env(render):
    spec = {"headGroupSpec": {"template": {"spec": {"containers": [
        {"name": "ray-head", "env": [{"name": "DOCKYARD_SANDBOX_WARM_POOL", "value": "someone-elses"}]}]}}}}
    env = _gpu_env(render(sandbox=AGENT, kuberay={"spec": spec}))["head"]
    assert env["DOCKYARD_SANDBOX_WARM_POOL"] == "grpo-swe-sandbox"


def test_the_agent_sandbox_kinds_pass_kubeconform_and_api_validation(render):
    out = render(sandbox={**AGENT, "runtimeClassName": "gvisor"}, launch={"mode": "bringup"})
    results = {r.kind: r.status for r in kubeconform.validate(out.text)}
    assert results["SandboxTemplate"] == results["SandboxWarmPool"] == "valid", results
    assert set(results.values()) == {"valid"}
    report = apivalidate.validate(out.text)
    assert report.findings == [] and report.skipped == [], report
    assert report.pod_templates == 4  # head, trainer, inference and the sandbox template's


@pytest.mark.parametrize("mutate, field", [
    (lambda t: t["spec"]["podTemplate"]["spec"]["containers"][0].update(name="Executor"),
     "spec.podTemplate.spec.containers[0].name"),
    (lambda t: t["spec"].update(networkPolicyManagement="Sometimes"), "spec.networkPolicyManagement"),
], ids=["pod", "crd-enum"])
def test_api_validation_reads_the_template_and_its_pod(render, mutate, field):
    """Negative controls: a pod the apiserver refuses inside the template, and a value the CRD refuses."""
    import yaml

    docs = render(sandbox=AGENT).docs
    for d in docs:
        if d["kind"] == "SandboxTemplate":
            mutate(d)
    report = apivalidate.validate(yaml.safe_dump_all(docs))
    assert any(f.field.startswith(field) for f in report.findings), report
