"""infra.storage: the claims the chart creates (kept by Helm, named after the release), the mounts and env of
the GPU pods (after the overlay), the model cache's fill and offline switch, and the refusals (exit 2 with the
key path; plain helm refuses the same)."""

from __future__ import annotations

import re
import subprocess
from typing import Any

import pytest
from pydantic import ValidationError

from generator.cli import main
from generator.pinned_tools import CHART_DIR, binary, versions
from generator.render.helm import values_json
from tests.conftest import RECIPE, chart_values, deep_merge, write
from tests.support.infra import GOOD_INFRA

CREATED = {"checkpoints": {"size": "500Gi", "storageClassName": "fast"}}


def _storage(**volumes: Any) -> dict[str, Any]:
    return {"infra": {"storage": volumes}}


def test_a_created_claim_is_kept_named_after_the_release_and_defaults_to_read_write_many(render):
    out = render(**_storage(**CREATED, logs={"claimName": "team-logs"}))
    (claim,) = out.all("PersistentVolumeClaim")  # logs names an existing claim: none created for it
    assert claim["metadata"]["name"] == "grpo-swe-checkpoints"
    assert claim["metadata"]["annotations"] == {"helm.sh/resource-policy": "keep"}
    assert claim["metadata"]["labels"]["dockyard.dev/volume"] == "checkpoints"
    assert claim["spec"] == {"accessModes": ["ReadWriteMany"], "storageClassName": "fast",
                             "resources": {"requests": {"storage": "500Gi"}}}


def test_the_claim_name_is_the_same_on_every_render_and_in_every_mode_but_attach(render):
    names = {mode: [c["metadata"]["name"] for c in render(launch={"mode": mode}, **_storage(**CREATED))
                    .all("PersistentVolumeClaim")] for mode in ("rayjob", "bringup")}
    assert names == {"rayjob": ["grpo-swe-checkpoints"], "bringup": ["grpo-swe-checkpoints"]}
    with pytest.raises(ValidationError, match="launch.mode attach ignores infra.storage"):  # no GPU pods to mount
        render(launch={"mode": "attach", "clusterName": "shared"}, **_storage(**CREATED))


def test_every_group_mounts_each_volume_and_is_told_its_path(render):
    out = render(**_storage(checkpoints={"size": "1Ti"}, modelCache={"claimName": "hf"}, logs={"size": "10Gi"}))
    for role, group in out.groups().items():
        spec = group["template"]["spec"]
        ray = spec["containers"][0]
        assert {m["mountPath"]: m["name"] for m in ray["volumeMounts"]}.items() >= {
            "/dockyard/checkpoints": "dockyard-checkpoints", "/dockyard/model-cache": "dockyard-model-cache",
            "/dockyard/logs": "dockyard-logs"}.items(), role
        claims = {v["name"]: v["persistentVolumeClaim"]["claimName"] for v in spec["volumes"]
                  if "persistentVolumeClaim" in v}
        assert claims == {"dockyard-checkpoints": "grpo-swe-checkpoints", "dockyard-model-cache": "hf",
                          "dockyard-logs": "grpo-swe-logs"}
        env = {e["name"]: e["value"] for e in ray["env"]}
        assert env["DOCKYARD_CHECKPOINT_DIR"] == "/dockyard/checkpoints"
        assert env["HF_HOME"] == env["DOCKYARD_MODEL_CACHE_DIR"] == "/dockyard/model-cache"
        assert env["DOCKYARD_LOG_DIR"] == "/dockyard/logs"
        assert "HF_HUB_OFFLINE" not in env  # online unless asked


def test_mount_on_picks_the_groups(render):
    out = render(**_storage(checkpoints={"size": "1Ti", "accessModes": ["ReadWriteOnce"], "mountOn": ["head"]}))
    mounted = {role for role, g in out.groups().items()
               if any(m["name"] == "dockyard-checkpoints" for m in g["template"]["spec"]["containers"][0]
                      .get("volumeMounts", []))}
    assert mounted == {"head"}


def test_an_overlay_cannot_remove_move_or_rename_the_storage(render):
    overlay = {"template": {"spec": {
        "volumes": [{"name": "dockyard-checkpoints", "emptyDir": {}}, {"name": "mine", "emptyDir": {}}],
        "containers": [{"name": "ray-worker",
                        "env": [{"name": "HF_HOME", "value": "/root/.cache"}, {"name": "KEEP", "value": "1"}],
                        "volumeMounts": [{"name": "mine", "mountPath": "/dockyard/checkpoints/"},
                                         {"name": "mine", "mountPath": "/data"}]}]}}}
    out = render(kuberay={"spec": {"workerGroupSpecs": [{"groupName": "trainer", **overlay}]}},
                 **_storage(checkpoints={"size": "1Ti"}, modelCache={"size": "1Ti"}))
    spec = out.groups()["trainer"]["template"]["spec"]
    ray = spec["containers"][0]
    assert ray["volumeMounts"] == [{"name": "mine", "mountPath": "/data"},
                                   {"name": "dockyard-checkpoints", "mountPath": "/dockyard/checkpoints"},
                                   {"name": "dockyard-model-cache", "mountPath": "/dockyard/model-cache"}]
    assert [v["name"] for v in spec["volumes"]] == ["mine", "dockyard-checkpoints", "dockyard-model-cache"]
    assert [(e["name"], e["value"]) for e in ray["env"] if e["name"] in ("HF_HOME", "KEEP")] == [
        ("KEEP", "1"), ("HF_HOME", "/dockyard/model-cache")]


def test_offline_sets_the_hub_offline_in_every_group(render):
    out = render(**_storage(modelCache={"claimName": "hf", "offline": True}))
    for group in out.groups().values():
        env = {e["name"]: e["value"] for e in group["template"]["spec"]["containers"][0]["env"]}
        assert env["HF_HUB_OFFLINE"] == env["TRANSFORMERS_OFFLINE"] == "1"


def test_fill_runs_once_in_the_head_before_ray_online_with_the_cache_mounted(render):
    fill = {"command": ["huggingface-cli", "download", "Qwen/Qwen3-8B"], "image": {"tag": "hf-cli"}}
    out = render(infra={"security": {"enabled": True, "readOnlyRootFilesystem": True},
                        "storage": {"modelCache": {"size": "200Gi", "offline": True, "fill": fill}}},
                 kuberay={"spec": {"headGroupSpec": {"template": {"spec": {"initContainers": [
                     {"name": "model-cache-fill", "image": "evil"}, {"name": "other", "image": "busybox"}]}}}}})
    groups = out.groups()
    inits = groups["head"]["template"]["spec"]["initContainers"]
    assert [c["name"] for c in inits] == ["other", "model-cache-fill"]
    fill_c = inits[-1]
    assert fill_c["command"] == fill["command"]
    assert fill_c["image"] == "ghcr.io/dockyard-rl/ubuntu-swe:hf-cli"
    assert {e["name"]: e["value"] for e in fill_c["env"]} == {
        "DOCKYARD_MODEL_CACHE_DIR": "/dockyard/model-cache", "HF_HOME": "/dockyard/model-cache"}  # online
    assert {"name": "dockyard-model-cache", "mountPath": "/dockyard/model-cache"} in fill_c["volumeMounts"]
    assert fill_c["securityContext"]["readOnlyRootFilesystem"] is True
    assert all("initContainers" not in groups[r]["template"]["spec"] for r in ("trainer", "inference"))


def test_fill_gets_the_gpu_pods_credentials_from_their_secrets(render):
    """A gated model's download needs the token: infra.env and infra.envFrom reach the fill as they reach the Ray
    container (by reference), and the cache's own names are the chart's."""
    token = {"name": "HF_TOKEN", "valueFrom": {"secretKeyRef": {"name": "hf", "key": "token"}}}
    fill = {"command": ["huggingface-cli", "download", "meta-llama/Llama-3.1-8B"]}
    out = render(infra={"env": [token],
                        "envFrom": [{"secretRef": {"name": "wandb"}}],
                        "storage": {"modelCache": {"size": "200Gi", "fill": fill}}})
    fill_c = next(c for c in out.groups()["head"]["template"]["spec"]["initContainers"]
                  if c["name"] == "model-cache-fill")
    assert token in fill_c["env"] and fill_c["envFrom"] == [{"secretRef": {"name": "wandb"}}]
    assert [e.get("value") for e in fill_c["env"] if e["name"] == "HF_HOME"] == ["/dockyard/model-cache"]


@pytest.mark.parametrize("env, storage", [
    ("HF_HOME", {"modelCache": {"size": "1Ti"}}),
    ("DOCKYARD_CHECKPOINT_DIR", {"checkpoints": {"size": "1Ti"}}),
    ("HF_HUB_OFFLINE", {"modelCache": {"size": "1Ti", "offline": True}}),
])
def test_infra_env_may_not_set_a_volumes_own_env(tmp_path, env, storage):
    """HF_HOME in infra.env beside a model cache would point the downloads off the volume (and the chart's would
    win silently): refused with the key path by the models, the fast path and Helm; without the volume it is
    the user's."""
    import yaml

    from generator.inputs import schema_check

    over = {"infra": {"env": [{"name": env, "value": "x"}], "storage": storage}}
    values = deep_merge(chart_values(), over)
    with pytest.raises(schema_check.Refused):
        schema_check.check("values", values)
    path = tmp_path / "values.yaml"
    path.write_text(yaml.safe_dump(over))
    done = subprocess.run([binary("helm"), "template", "x", str(CHART_DIR), "-f", str(path)],
                          capture_output=True, text=True)
    assert done.returncode != 0 and "/infra" in done.stderr, done.stderr
    from pydantic import ValidationError

    from generator.inputs.models import ChartValues

    with pytest.raises(ValidationError, match=f"{env} is set by the chart for infra.storage"):
        ChartValues.model_validate(values)
    ChartValues.model_validate(deep_merge(chart_values(), {"infra": {"env": [{"name": env, "value": "x"}]}}))


# Refusals -----------------------------------------------------------------------------------------

REFUSED = [
    ("claim and size", {"checkpoints": {"claimName": "ckpt", "size": "1Ti"}},
     "infra.storage.checkpoints.size: claimName and size are both set"),
    ("size not a quantity", {"modelCache": {"size": "lots"}},
     "infra.storage.modelCache.size: 'lots' is not a Kubernetes quantity"),
    ("gang without ReadWriteMany", {"checkpoints": {"size": "1Ti", "accessModes": ["ReadWriteOnce"]}},
     "infra.storage.checkpoints.accessModes: 4 pods (head, trainer, inference) mount it and write"),
    ("both fleets, one node each", {"logs": {"size": "1Ti", "accessModes": ["ReadWriteOncePod"],
                                             "mountOn": ["trainer", "inference"]}},
     "infra.storage.logs.accessModes: 3 pods (trainer, inference) mount it and write"),
    ("class of an existing claim", {"checkpoints": {"claimName": "ckpt", "storageClassName": "fast"}},
     "infra.storage.checkpoints.storageClassName: storageClassName belongs to the claim 'ckpt'"),
    ("neither claim nor size", {"checkpoints": {"mountOn": ["head"]}},
     "infra.storage.checkpoints: neither claimName nor size is set"),
]


@pytest.mark.parametrize("storage, words", [r[1:] for r in REFUSED], ids=[r[0] for r in REFUSED])
def test_refused_with_exit_2_the_file_line_and_key_path(tmp_path, capsys, storage, words):
    infra = write(tmp_path, "i.yaml", deep_merge(GOOD_INFRA, _storage(**storage)))
    assert main(["values", str(RECIPE), str(infra)]) == 2
    err = capsys.readouterr().err
    assert re.search(rf"^error: {re.escape(str(infra))}:\d+: ", err, re.M) and words in err, err
    assert "Traceback" not in err


def test_one_pod_may_write_a_read_write_once_claim(tmp_path, capsys):
    infra = write(tmp_path, "i.yaml", deep_merge(GOOD_INFRA, _storage(
        checkpoints={"size": "1Ti", "accessModes": ["ReadWriteOnce"], "mountOn": ["head"]})))
    assert main(["values", str(RECIPE), str(infra)]) == 0, capsys.readouterr().err


def _helm(values: dict[str, Any]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([binary("helm"), "template", "grpo-swe", str(CHART_DIR), "--namespace", "dockyard",
                           "--values", "-", "--kube-version", versions()["KUBERNETES_VERSION"]],
                          input=values_json(values), capture_output=True, text=True, encoding="utf-8")


@pytest.mark.parametrize("storage", [r[1] for r in REFUSED[:3]], ids=[r[0] for r in REFUSED[:3]])
def test_plain_helm_refuses_the_same(storage):
    done = _helm(deep_merge(chart_values(), _storage(**storage)))
    assert done.returncode == 1 and ("/infra/storage/" in done.stderr or "infra.storage." in done.stderr), done.stderr


@pytest.mark.parametrize("storage", [
    {"checkpoints": {"size": "1Ti", "mountOn": ["head", "head"]}},
    {"modelCache": {"size": "1Ti", "mountOn": ["trainer"], "fill": {"command": ["true"]}}},
])
def test_the_schema_twins_refuse_what_the_models_refuse(tmp_path, storage):
    """A group named twice in mountOn, a fill whose head does not mount the cache: Helm's schema and the fast
    path's validator refuse them as the models do (the fill's pod would name a volume it does not have)."""
    import yaml

    from generator.inputs import schema_check

    values = deep_merge(chart_values(), {"infra": {"storage": storage}})
    with pytest.raises(schema_check.Refused):
        schema_check.check("values", values)
    path = tmp_path / "values.yaml"
    path.write_text(yaml.safe_dump({"infra": {"storage": storage}}))
    done = subprocess.run([binary("helm"), "template", "x", str(CHART_DIR), "-f", str(path)],
                          capture_output=True, text=True)
    assert done.returncode != 0 and "/infra/storage/" in done.stderr, done.stderr


def test_an_empty_class_asks_for_no_class_and_is_rendered_as_such(render):
    """storageClassName "" is Kubernetes' "no class" (a pre-made volume, no provisioning): rendered as "",
    where unset renders none (the cluster's default class)."""
    (empty,) = render(**_storage(checkpoints={"size": "1Ti", "storageClassName": ""})).all("PersistentVolumeClaim")
    assert empty["spec"]["storageClassName"] == ""
    (unset,) = render(**_storage(checkpoints={"size": "1Ti"})).all("PersistentVolumeClaim")
    assert "storageClassName" not in unset["spec"]
