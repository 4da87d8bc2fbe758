"""The chart rendered by the real helm: modes, order, invariants, overlay merging."""

from __future__ import annotations

import json
import shlex
import subprocess

import pytest
from pydantic import ValidationError

from generator.errors import CheckFailed
from generator.inputs.models import ChartValues
from generator.pinned_tools import CHART_DIR, binary, versions
from tests.conftest import Rendered, chart_values, deep_merge, render_values

INVARIANT_NAMES = ("RAY_ENABLE_UV_RUN_RUNTIME_ENV", "DOCKYARD_FLEET_ROLE", "DOCKYARD_SANDBOX_URLS")
SANDBOX_URL = "http://grpo-swe-sandbox.dockyard.svc.cluster.local:9090"
GPU_ROLES = ("head", "trainer", "inference")


def env_of(container):
    return {e["name"]: e.get("value") for e in container.get("env", [])}


def fleet_resources(group):
    if group.get("resources"):
        return {k: int(v) for k, v in group["resources"].items()}
    raw = group["rayStartParams"]["resources"]
    # one shell word that `ray start` reads as JSON, and JSON once KubeRay trims the outer quotes
    # (its getResourcesMap: a failure there drops the group's num-gpus)
    assert raw.startswith("'") and raw.endswith("'"), raw
    assert json.loads(shlex.split(f"--resources={raw}")[0].split("=", 1)[1]) == json.loads(raw.strip("'\"` "))
    return json.loads(raw.strip("'\"` "))


@pytest.mark.parametrize(
    "mode, gpu_kind, has_recipe",
    [("rayjob", "RayJob", True), ("bringup", "RayCluster", True), ("attach", None, False)],
)
def test_each_mode_renders_its_gpu_fleet(render, mode, gpu_kind, has_recipe):
    out = render(launch={"mode": mode, "clusterName": "shared" if mode == "attach" else None})
    gpu = [k for k in out.kinds() if k in ("RayJob", "RayCluster")]
    assert gpu == ([gpu_kind] if gpu_kind else [])
    assert bool(out.all("ConfigMap")) is has_recipe
    for kind in ("ServiceAccount", "Deployment", "Service", "NetworkPolicy", "PodDisruptionBudget"):
        assert len(out.all(kind)) == 1, kind


def test_apply_order_puts_governance_first_and_gpu_fleet_last(render):
    out = render(infra={"resourceQuota": {"enabled": True, "hard": {"pods": 10}}, "limitRange": {"enabled": True}})
    kinds = out.kinds()
    assert kinds.index("ResourceQuota") < kinds.index("Deployment")
    assert kinds.index("LimitRange") < kinds.index("Deployment")
    assert kinds.index("ServiceAccount") < kinds.index("Deployment")
    assert kinds.index("ConfigMap") < kinds.index("RayJob")
    assert kinds[-2:] == ["RayJob", "Pod"]  # the helm test hook comes last


def test_worker_groups_follow_the_recipe(render):
    out = render(recipe={"cluster": {"trainer": {"nodes": 3, "gpusPerNode": 4},
                                     "inference": {"nodes": 2, "gpusPerNode": 2}}})
    groups = out.groups()
    assert [g["groupName"] for g in out.ray_spec()["workerGroupSpecs"]] == ["trainer", "inference"]
    for role, nodes, gpus in (("trainer", 3, 4), ("inference", 2, 2)):
        g = groups[role]
        assert g["replicas"] == g["minReplicas"] == g["maxReplicas"] == nodes
        res = g["template"]["spec"]["containers"][0]["resources"]
        assert res["limits"]["nvidia.com/gpu"] == res["requests"]["nvidia.com/gpu"] == gpus
    assert "nvidia.com/gpu" not in groups["head"]["template"]["spec"]["containers"][0]["resources"]["limits"]


@pytest.mark.parametrize("inject", [True, False])
def test_invariants_in_every_gpu_container(render, inject):
    out = render(sandbox={"injectUrls": inject}, infra={"imagePullSecrets": ["regcred"]})
    for role, group in out.groups().items():
        spec = group["template"]["spec"]
        assert spec["imagePullSecrets"] == [{"name": "regcred"}]
        for c in spec["containers"]:
            env = env_of(c)
            assert env["RAY_ENABLE_UV_RUN_RUNTIME_ENV"] == "0"
            assert env["DOCKYARD_FLEET_ROLE"] == role
            assert env.get("DOCKYARD_SANDBOX_URLS") == (SANDBOX_URL if inject else None)
        assert spec["containers"][0]["image"] == "ghcr.io/dockyard-rl/ubuntu-swe:vllm"
        assert fleet_resources(group) == {f"dockyard_fleet_{role}": 1}
    entry = shlex.split(out.one("RayJob")["spec"]["entrypoint"])[-1]  # the run watcher's command
    assert entry.startswith("python -m dockyard_rl.train --config /etc/dockyard/recipe.yaml")
    assert entry.endswith("env.code.sandbox_urls=null") is inject


def test_overlay_cannot_remove_invariants(render):
    hostile = {
        "template": {"spec": {"containers": [{
            "name": "ray-worker",
            "image": "evil/image:1",
            "env": [
                {"name": "RAY_ENABLE_UV_RUN_RUNTIME_ENV", "value": "1"},
                {"name": "DOCKYARD_FLEET_ROLE", "value": "inference"},
                {"name": "DOCKYARD_SANDBOX_URLS", "value": "http://localhost:9090"},
                {"name": "EXTRA", "value": "kept"},
            ],
            "resources": {"limits": {"nvidia.com/gpu": 1}},
        }]}},
        "rayStartParams": {"resources": '"{\\"custom\\": 2}"'},
    }
    out = render(kuberay={"spec": {"workerGroupSpecs": [{"groupName": "trainer", **hostile}]}})
    trainer = out.groups()["trainer"]
    c = trainer["template"]["spec"]["containers"][0]
    env = env_of(c)
    assert env["RAY_ENABLE_UV_RUN_RUNTIME_ENV"] == "0"
    assert env["DOCKYARD_FLEET_ROLE"] == "trainer"
    assert env["DOCKYARD_SANDBOX_URLS"] == SANDBOX_URL
    assert env["EXTRA"] == "kept"
    assert [e["name"] for e in c["env"]].count("DOCKYARD_FLEET_ROLE") == 1
    assert c["image"] == "ghcr.io/dockyard-rl/ubuntu-swe:vllm"
    assert c["resources"]["limits"]["nvidia.com/gpu"] == 8
    assert fleet_resources(trainer) == {"custom": 2, "dockyard_fleet_trainer": 1}


def test_overlay_merges_scheduling_volumes_and_sidecars(render):
    ov = {
        "headGroupSpec": {"template": {"spec": {"nodeSelector": {"pool": "cpu"},
                                                "volumes": [{"name": "data", "emptyDir": {}}]}}},
        "workerGroupSpecs": [{
            "groupName": "inference",
            "template": {"spec": {
                "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}],
                "priorityClassName": "inference-high",
                "containers": [{"name": "log-shipper", "image": "fluent/fluent-bit:3"},
                               {"name": "ray-worker", "volumeMounts": [{"name": "shm", "mountPath": "/dev/shm"}]}],
                "volumes": [{"name": "shm", "emptyDir": {"medium": "Memory"}}],
            }},
        }],
        "enableInTreeAutoscaling": False,
    }
    out = render(kuberay={"spec": ov}, infra={"priorityClassName": "training"})
    groups = out.groups()
    head = groups["head"]["template"]["spec"]
    assert head["nodeSelector"] == {"pool": "cpu"}
    assert [v["name"] for v in head["volumes"]] == ["recipe", "data"]
    assert head["priorityClassName"] == "training"
    inf = groups["inference"]["template"]["spec"]
    assert inf["priorityClassName"] == "inference-high"  # a fleet may override it
    assert inf["tolerations"][0]["key"] == "nvidia.com/gpu"
    names = [c["name"] for c in inf["containers"]]
    assert names == ["ray-worker", "log-shipper"]
    sidecar = inf["containers"][1]
    assert sidecar["image"] == "fluent/fluent-bit:3"
    assert env_of(sidecar)["DOCKYARD_FLEET_ROLE"] == "inference"
    assert inf["containers"][0]["volumeMounts"] == [{"name": "shm", "mountPath": "/dev/shm"}]
    assert groups["trainer"]["template"]["spec"]["priorityClassName"] == "training"


def test_group_level_ray_resources_take_the_fleet_tag(render):
    ov = {"workerGroupSpecs": [{"groupName": "trainer", "resources": {"custom": "2"}}]}
    trainer = render(kuberay={"spec": ov}).groups()["trainer"]
    assert trainer["resources"] == {"custom": "2", "dockyard_fleet_trainer": "1"}
    assert "resources" not in trainer["rayStartParams"]  # KubeRay refuses both at once


def test_head_mounts_the_recipe_configmap():
    values = chart_values(recipe={"config": "name: grpo-swe\ngrpo: {steps: 3}\n"})
    out = render_values(values)
    cm = out.one("ConfigMap")
    assert cm["metadata"]["name"] == "grpo-swe-recipe"
    assert cm["data"]["recipe.yaml"] == "name: grpo-swe\ngrpo: {steps: 3}\n"
    head = out.groups()["head"]["template"]["spec"]
    assert {"name": "recipe", "configMap": {"name": "grpo-swe-recipe"}} in head["volumes"]
    mount = head["containers"][0]["volumeMounts"][0]
    assert mount == {"name": "recipe", "mountPath": "/etc/dockyard", "readOnly": True}


def test_standard_labels_on_every_object(render):
    out = render(infra={"resourceQuota": {"enabled": True, "hard": {"pods": 10}}})
    for doc in out.docs:
        labels = doc["metadata"]["labels"]
        assert labels["app.kubernetes.io/name"] == "dockyard"
        assert labels["app.kubernetes.io/instance"] == "grpo-swe"
        assert labels["app.kubernetes.io/managed-by"] == "Helm"
        assert labels["helm.sh/chart"] == "dockyard-0.1.0"
        assert doc["metadata"]["namespace"] == "dockyard"


@pytest.mark.parametrize("mode, limit", [("rayjob", 47), ("bringup", 53)])
def test_release_name_limits_of_kuberay(mode, limit):
    values = chart_values(launch={"mode": mode})
    ok = "a" * limit
    assert render_values(values, release=ok).all("RayJob" if mode == "rayjob" else "RayCluster")
    with pytest.raises(CheckFailed, match=f"(at most|longer than) {limit}"):  # helm itself caps at 53
        render_values(values, release="a" * (limit + 1))


def test_release_name_must_be_dns1035():
    with pytest.raises(CheckFailed, match="DNS-1035"):
        render_values(chart_values(), release="1abc")


def test_submitter_pod_gets_image_priority_and_secrets(render):
    out = render(infra={"priorityClassName": "training", "imagePullSecrets": ["regcred"]})
    sub = out.one("RayJob")["spec"]["submitterPodTemplate"]["spec"]
    assert sub["priorityClassName"] == "training"
    assert sub["imagePullSecrets"] == [{"name": "regcred"}]
    assert sub["containers"][0]["image"] == "ghcr.io/dockyard-rl/ubuntu-swe:vllm"
    assert "command" not in sub["containers"][0]  # KubeRay fills in `ray job submit`
    http = render(launch={"submissionMode": "HTTPMode"}).one("RayJob")["spec"]
    assert "submitterPodTemplate" not in http


def test_rendering_is_deterministic():
    values = chart_values(kuberay={"spec": {"workerGroupSpecs": [{"groupName": "trainer",
                                                                  "labels": {"a": "1", "b": "2"}}]}})
    assert render_values(values).text == render_values(values).text


def test_helm_lint_strict_is_clean():
    proc = subprocess.run(
        [binary("helm"), "lint", "--strict", str(CHART_DIR), "--kube-version", versions()["KUBERNETES_VERSION"]],
        capture_output=True, text=True,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "1 chart(s) linted, 0 chart(s) failed" in proc.stdout
    assert "[WARNING]" not in proc.stdout and "[ERROR]" not in proc.stdout


def test_overlay_container_without_mounts_leaves_no_null_lists(render):
    ov = {"workerGroupSpecs": [{"groupName": "trainer",
                                "template": {"spec": {"containers": [{"name": "ray-worker"}]}}}]}
    c = render(kuberay={"spec": ov}).groups()["trainer"]["template"]["spec"]["containers"][0]
    assert "volumeMounts" not in c


def test_characters_beyond_the_bmp_reach_helm(tmp_path):
    """json.dumps' surrogate-pair escapes (an emoji) are refused by Go's YAML reader: values go as UTF-8."""
    import yaml as _yaml

    from generator.cli import main

    recipe = tmp_path / "emo.yaml"
    recipe.write_text("name: emo\nentrypoint: python -m x\ncluster:\n  trainer: {nodes: 1, gpusPerNode: 8}\n"
                      "  inference: {nodes: 1, gpusPerNode: 8}\n# ship it 🚀\nnotes: \"\\u0085 and 🚀\"\n",
                      encoding="utf-8")
    out = tmp_path / "out.yaml"
    from generator.pinned_tools import REPO

    assert main(["render", str(recipe), str(REPO / "values-examples" / "grpo_swe.infra.yaml"), "-o", str(out)]) == 0
    cm = next(d for d in _yaml.safe_load_all(out.read_text(encoding="utf-8")) if d and d["kind"] == "ConfigMap")
    assert cm["data"]["recipe.yaml"] == recipe.read_text(encoding="utf-8")


# kuberay.placement ------------------------------------------------------------------------------

GPU_TOLERATION = {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}
NO_GPU_LABEL = {"matchExpressions": [{"key": "nvidia.com/gpu.present", "operator": "DoesNotExist"}]}
PREFER_CPU = {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
    {"weight": 100, "preference": NO_GPU_LABEL}]}}


def test_placement_defaults_gpu_fleets_tolerate_the_gpu_taint_head_and_submitter_stay_off(render):
    specs = render().pod_specs()
    for role in ("trainer", "inference"):
        assert specs[role]["tolerations"] == [GPU_TOLERATION], role
        assert "nodeSelector" not in specs[role] and "affinity" not in specs[role], role
    for role in ("head", "submitter"):  # CPU nodes: no GPU toleration, GPU-labelled nodes avoided
        assert "tolerations" not in specs[role] and "nodeSelector" not in specs[role], role
        assert specs[role]["affinity"] == PREFER_CPU, role


def test_placement_per_fleet_keys_replace_the_shared_ones(render):
    dedicated = {"key": "dedicated", "operator": "Equal", "value": "rl", "effect": "NoSchedule"}
    affinity = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchExpressions": [{"key": "gpu.type", "operator": "In", "values": ["h100"]}]}]}}}
    specs = render(kuberay={"placement": {
        "gpu": {"nodeSelector": {"pool": "gpu"}, "tolerations": [GPU_TOLERATION, dedicated]},
        "inference": {"nodeSelector": {"pool": "serve"}, "affinity": affinity},
        "head": {"nodeSelector": {"pool": "cpu"}, "tolerations": [dedicated]},
        "submitter": {"affinity": affinity},
    }}).pod_specs()
    assert specs["trainer"]["nodeSelector"] == {"pool": "gpu"} and "affinity" not in specs["trainer"]
    assert specs["trainer"]["tolerations"] == specs["inference"]["tolerations"] == [GPU_TOLERATION, dedicated]
    assert specs["inference"]["nodeSelector"] == {"pool": "serve"} and specs["inference"]["affinity"] == affinity
    assert specs["head"]["nodeSelector"] == {"pool": "cpu"} and specs["head"]["tolerations"] == [dedicated]
    assert specs["head"]["affinity"] == PREFER_CPU  # its own affinity unset: still CPU nodes preferred
    assert specs["submitter"]["affinity"] == affinity and "tolerations" not in specs["submitter"]
    # an empty list set for one fleet removes the shared tolerations from it only
    specs = render(kuberay={"placement": {"trainer": {"tolerations": []}}}).pod_specs()
    assert "tolerations" not in specs["trainer"] and specs["inference"]["tolerations"] == [GPU_TOLERATION]


def test_placement_then_the_overlay_tolerations_added_selector_and_affinity_merged_over(render):
    extra = {"key": "spot", "operator": "Exists"}
    ov = {"headGroupSpec": {"template": {"spec": {"tolerations": [extra], "nodeSelector": {"zone": "a"}}}},
          "workerGroupSpecs": [{"groupName": "trainer", "template": {"spec": {
              "tolerations": [GPU_TOLERATION, extra], "nodeSelector": {"pool": "big"},
              "affinity": {"podAntiAffinity": {"x": 1}}}}}]}
    placement = {"gpu": {"nodeSelector": {"pool": "gpu", "tier": "1"}}}
    specs = render(kuberay={"placement": placement, "spec": ov}).pod_specs()
    assert specs["trainer"]["tolerations"] == [GPU_TOLERATION, extra]  # added, the same one not twice
    assert specs["trainer"]["nodeSelector"] == {"pool": "big", "tier": "1"}  # the overlay's key wins
    assert specs["trainer"]["affinity"] == {"podAntiAffinity": {"x": 1}}
    assert specs["head"]["tolerations"] == [extra] and specs["head"]["nodeSelector"] == {"zone": "a"}
    assert specs["head"]["affinity"] == PREFER_CPU


def test_placement_from_plain_helm_values_nulls_dropped():
    """values.yaml holds nulls (a toleration's value, an unset fleet key): nothing null reaches a pod."""
    out = subprocess.run([binary("helm"), "template", "x", str(CHART_DIR),
                          "--set", "kuberay.placement.inference.tolerations[0].key=pool",
                          "--set", "kuberay.placement.inference.tolerations[0].value=serve"],
                         capture_output=True, text=True, timeout=60, check=True).stdout
    specs = Rendered(out).pod_specs()
    assert specs["trainer"]["tolerations"] == [GPU_TOLERATION]
    assert specs["inference"]["tolerations"] == [{"key": "pool", "value": "serve"}]  # as given: Equal by default
    assert "null" not in json.dumps(specs)


@pytest.mark.parametrize("space", ["\u00a0", "\u3000", "\u2003"])
def test_placement_strings_ending_in_a_unicode_space_never_reach_the_template(space):
    """The placement block was once trimmed whole (Go's TrimSpace), so a last value ending in U+00A0 or another
    Unicode space lost it. Every string of the placement block is now a label key or value, a DNS name or a
    typed enum, as the API wants: such a value is refused by the models and by Helm's schema before any template
    runs, and an ASCII value right beside it comes back whole."""
    term = {"topologyKey": "kubernetes.io/hostname", "labelSelector": {"matchLabels": {"app": f"b{space}"}}}
    over = {"kuberay": {"placement": {"gpu": {"affinity": {"podAntiAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": [term]}}}}}}
    values = deep_merge(chart_values(), over)
    with pytest.raises(ValidationError):
        ChartValues.model_validate(values)
    with pytest.raises(CheckFailed, match="values don't meet the specifications of the schema"):
        render_values(values)
    term["labelSelector"]["matchLabels"]["app"] = "b"
    specs = render_values(deep_merge(chart_values(), over)).pod_specs()
    for role in ("trainer", "inference"):
        assert specs[role]["affinity"]["podAntiAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"] == [term]
