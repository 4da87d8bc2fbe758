"""Credentials reach the GPU pods from Secrets, never as literals: `infra.env` / `infra.envFrom` are applied to the
Ray container of the head and both fleets after the kuberay.spec overlay; a literal value under a name that reads
as a credential is refused with exit 2, naming the key path and the secretKeyRef to write instead, in infra.env,
sandbox.extraEnv and a recipe override, by the models and by the schema twin (Helm's values.schema.json)."""

from __future__ import annotations

import json
import subprocess

import pytest
import yaml

from generator.cli import main
from generator.inputs import credentials, schema_check
from generator.inputs.credentials import reads_as_credential
from generator.pinned_tools import CHART_DIR, REPO, binary
from tests.conftest import RECIPE, chart_values, render_values, write

INFRA = REPO / "values-examples" / "grpo_swe.infra.yaml"
IMAGE = {"repository": "ghcr.io/dockyard-rl/ubuntu-swe", "tag": "2026.11-vllm"}
TOKEN_REF = {"name": "HF_TOKEN", "valueFrom": {"secretKeyRef": {"name": "hf", "key": "token"}}}


@pytest.mark.parametrize("name", ["HF_TOKEN", "hf_token", "GITHUB_TOKEN", "NGROK_AUTHTOKEN", "TOKEN", "accessToken",
                                  "WANDB_API_KEY", "api-key", "apiKey", "WANDB_APIKEY", "AWS_SECRET_ACCESS_KEY",
                                  "private_key", "wandb.api.key", "hf.token", "DB_PASSWORD", "passwd", "CLIENT_SECRET",
                                  "secretKey", "DB_PASSWORD_PROFILE", "PASSWORDPATH"])
def test_names_that_read_as_credentials(name):
    assert reads_as_credential(name)


@pytest.mark.parametrize("name", ["MAX_TOKENS", "max_new_tokens", "tokenizer", "TOKENIZERS_PARALLELISM", "KEYS",
                                  "monkey", "KEY_ID", "HF_HOME", "NCCL_SOCKET_IFNAME", "keyboard",
                                  # a recipe's data keys and a tokenizer's special tokens; a file path; a Secret's name
                                  "data.prompt_key", "reward_fn_key", "label_key", "tokenizer.pad_token", "eos_token",
                                  "max_token", "HF_TOKEN_PATH", "token_file", "SECRET_NAME",
                                  # a file that holds the credential (the *_FILE / *_PATH convention)
                                  "POSTGRES_PASSWORD_FILE", "passwordFile", "DB_PASSWORD_PATH", "api_key_file",
                                  "CLIENT_SECRET_FILE"])
def test_names_that_do_not(name):
    assert not reads_as_credential(name)


def _infra(tmp_path, **blocks):
    data = yaml.safe_load(INFRA.read_text())
    for key, value in blocks.items():
        data.setdefault(key, {}).update(value)
    return write(tmp_path, "infra.yaml", data)


@pytest.mark.parametrize("block, where", [
    ("infra", "infra.env[1].value"),
    ("sandbox", "sandbox.extraEnv[1].value"),
])
def test_a_literal_credential_is_refused_with_the_secret_ref_to_write(tmp_path, capsys, block, where):
    env = [{"name": "A", "value": "1"}, {"name": "WANDB_API_KEY", "value": "wk-1234"}]
    infra = _infra(tmp_path, **{block: {"env" if block == "infra" else "extraEnv": env}})
    assert main(["values", str(RECIPE), str(infra)]) == 2
    err = capsys.readouterr().err
    assert f"{where}: WANDB_API_KEY reads as a credential" in err, err
    assert "valueFrom: {secretKeyRef: {name: wandb-api-key, key: WANDB_API_KEY}}" in err
    assert "wk-1234" not in err  # the refusal does not repeat the secret
    assert "Traceback" not in err


def test_the_schema_twin_refuses_the_same(tmp_path):
    """The happy path's validator (the committed JSON Schemas) and Helm refuse the literal too."""
    data = yaml.safe_load(INFRA.read_text())
    data["infra"]["env"] = [{"name": "HF_TOKEN", "value": "hf_x"}]
    with pytest.raises(schema_check.Refused):
        schema_check.check("infra", data)
    data["infra"]["env"] = [TOKEN_REF, {"name": "MAX_TOKENS", "value": "8"},
                            {"name": "POSTGRES_PASSWORD_FILE", "value": "/run/secrets/db"}]
    schema_check.check("infra", data)
    values = write(tmp_path, "values.yaml", {"infra": {"env": [{"name": "GITHUB_TOKEN", "value": "ghp_x"}]}})
    done = subprocess.run([binary("helm"), "template", "x", str(CHART_DIR), "-f", str(values)],
                          capture_output=True, text=True)
    assert done.returncode != 0 and "/infra/env/0" in done.stderr, done.stderr


def test_a_credential_override_is_refused_and_a_token_count_is_not(tmp_path, capsys):
    assert main(["values", str(RECIPE), str(INFRA), "wandb.api_key=wk-1234"]) == 2
    err = capsys.readouterr().err
    assert "<command line>: wandb.api_key: the override sets 'api_key', which reads as a credential" in err, err
    assert "infra.env: [{name: WANDB_API_KEY, valueFrom: {secretKeyRef:" in err
    assert main(["values", str(RECIPE), str(INFRA), "logger={wandb: {api_key: wk-1}}"]) == 2
    capsys.readouterr()
    assert main(["values", str(RECIPE), str(INFRA), "policy.generation.max_new_tokens=512",
                 "policy.tokenizer.name=Qwen/Qwen3-8B", "policy.ppo_max_token_len=16384",
                 "data.prompt_key=question", "tokenizer.pad_token=<|endoftext|>"]) == 0
    capsys.readouterr()
    assert main(["values", str(RECIPE), str(INFRA), "wandb.api.key=wk-1234"]) == 2  # judged by the whole path


def _ray_containers(values: dict) -> dict[str, dict]:
    """The Ray container of each group of the rendered RayJob, by group."""
    groups = render_values(chart_values(**values)).groups()
    return {name: g["template"]["spec"]["containers"] for name, g in groups.items()}


def test_env_and_env_from_reach_the_ray_container_of_every_group_after_the_overlay(tmp_path):
    overlay = {"containers": [
        {"name": "ray-head", "env": [{"name": "HF_TOKEN", "valueFrom": {"secretKeyRef": {"name": "overlay-ref",
                                                                                     "key": "t"}}},
                                     {"name": "B", "value": "b"}],
         "envFrom": [{"configMapRef": {"name": "cm"}}]},
        {"name": "log-shipper", "image": "fluent-bit"}]}
    values = {"infra": {"image": IMAGE, "env": [TOKEN_REF], "envFrom": [{"secretRef": {"name": "wandb"}}]},
              "kuberay": {"spec": {"headGroupSpec": {"template": {"spec": overlay}}}}}
    found = _ray_containers(values)
    assert set(found) == {"head", "trainer", "inference"}
    for group, containers in found.items():
        ray, *sidecars = containers
        names = [e["name"] for e in ray["env"]]
        assert TOKEN_REF in ray["env"] and names.count("HF_TOKEN") == 1, (group, ray["env"])
        assert ray["envFrom"][-1] == {"secretRef": {"name": "wandb"}}
        assert names[-2:] == ["DOCKYARD_FLEET_ROLE", "DOCKYARD_SANDBOX_URLS"]  # the invariants still end it
        for sidecar in sidecars:  # a credential goes to the Ray container only
            assert "HF_TOKEN" not in [e["name"] for e in sidecar["env"]] and "envFrom" not in sidecar
    head = found["head"][0]
    assert head["envFrom"] == [{"configMapRef": {"name": "cm"}}, {"secretRef": {"name": "wandb"}}]
    assert {"name": "B", "value": "b"} in head["env"]
    assert "overlay-ref" not in json.dumps(found)  # infra.env replaced the overlay's variable of that name


@pytest.mark.parametrize("where", ["containers", "initContainers"])
def test_the_overlay_is_no_way_around_the_literal_rule(tmp_path, capsys, where):
    """A literal credential in an overlay container's env is refused like one in infra.env (exit 2, key path)."""
    data = yaml.safe_load(INFRA.read_text())
    data["kuberay"]["spec"] = {"headGroupSpec": {"template": {"spec": {where: [
        {"name": "ray-head" if where == "containers" else "init", "image": "x",
         "env": [{"name": "WANDB_API_KEY", "value": "wk-LEAK"}]}]}}}}
    infra = write(tmp_path, "infra.yaml", data)
    assert main(["values", str(RECIPE), str(infra)]) == 2
    err = capsys.readouterr().err
    assert f"kuberay.spec.headGroupSpec.template.spec.{where}[0].env[0].value: WANDB_API_KEY reads as a credential" \
        in err, err
    assert "wk-LEAK" not in err


# Made-up values of each well-known shape (none is a live credential: random letters of the right form).
SHAPED = {
    "a Hugging Face token": "hf_" + "Q" * 34,
    "a GitHub token": "ghp_" + "a1B2" * 9,
    "an OpenAI-style API key": "sk-proj-" + "x" * 40,
    "an AWS access key id": "AKIA" + "ABCDEFGHIJKLMNOP",
    "a Slack token": "xoxb-1234567890-abcdefghij",
    "a PEM private key": "-----BEGIN RSA PRIVATE KEY-----\nMIIB...",
}


@pytest.mark.parametrize("what", list(SHAPED))
def test_a_value_shaped_like_a_credential_is_refused_under_any_name(tmp_path, capsys, what):
    value = SHAPED[what]
    for block, key in (("infra", "env"), ("sandbox", "extraEnv")):
        infra = _infra(tmp_path, **{block: {key: [{"name": "MODEL_URL", "value": f"https://x/{value}"}]}})
        assert main(["values", str(RECIPE), str(infra)]) == 2
        err = capsys.readouterr().err
        assert f"{block}.{key}[0].value: the value of MODEL_URL is shaped like {what}" in err, err
        assert value not in err and value.splitlines()[0] not in err  # the refusal does not repeat it
    # the happy path's validator and Helm (the schema twin) refuse it too
    data = yaml.safe_load(INFRA.read_text())
    data["infra"]["env"] = [{"name": "MODEL_URL", "value": value}]
    with pytest.raises(schema_check.Refused):
        schema_check.check("infra", data)
    assert main(["values", str(RECIPE), str(INFRA), f"trainer.hub={value}"]) == 2
    err = capsys.readouterr().err
    assert f"the override sets 'hub' to a value shaped like {what}" in err and value.splitlines()[0] not in err


@pytest.mark.parametrize("value", ["hf_transfer", "sk-learn", "AKIAlower", "ghp_short", "-----BEGIN CERTIFICATE-----",
                                   "s3://bucket/AKIA", "xoxb-", "task-admin-notifications-channel",
                                   "desk-" + "a1" * 24, "SOUTHEASTASIAPACIFICDATACENTER", "/data/hf_" + "a" * 40])
def test_values_that_only_look_alike_pass(value):
    assert credentials.shaped_like(value) is None
    assert credentials.literal_problem("SOME_SETTING", value) is None


def test_helm_refuses_a_shaped_value_too(tmp_path):
    env = [{"name": "X", "value": SHAPED["a GitHub token"]}]
    values = write(tmp_path, "values.yaml", {"sandbox": {"extraEnv": env}})
    done = subprocess.run([binary("helm"), "template", "x", str(CHART_DIR), "-f", str(values)],
                          capture_output=True, text=True)
    assert done.returncode != 0 and "/sandbox/extraEnv/0" in done.stderr, done.stderr
