"""A credential reaches the GPU pods from a Secret and appears in no release, object or output: on the session
playground, `run --wait` with infra.env's HF_TOKEN read from a Secret; the Ray pods' specs carry it as a
secretKeyRef (kwok pods have no environment; the process environment on the real node is not proven yet), and
the token's value is in none of `helm get values`, `helm get manifest`, the RayJob and RayCluster objects, the
pods, `status` (table and JSON) and `logs`. doctor's row sees the Secret and its key, and a missing key is ✗."""

from __future__ import annotations

import base64
import json
import subprocess

import pytest
from kubernetes import client
from live_helpers import RECIPE, cli, infra_variant

from generator.pinned_tools import binary

pytestmark = pytest.mark.timeout(300)

TOKEN = "hf_live-proof-6b1f0c2e9d"  # what must not leak
REF = {"name": "HF_TOKEN", "valueFrom": {"secretKeyRef": {"name": "hf-token", "key": "HF_TOKEN"}}}


def _with_token(d):
    d["infra"]["env"] = [REF]
    d["infra"]["envFrom"] = [{"secretRef": {"name": "hf-token"}, "prefix": "FROM_"}]


def test_a_token_from_a_secret_reaches_the_ray_pods_and_leaks_nowhere(playground, namespace, capsys, tmp_path):
    kc = playground.kubeconfig
    core = client.CoreV1Api(playground.api_client())
    core.create_namespaced_secret(namespace, client.V1Secret(
        metadata=client.V1ObjectMeta(name="hf-token"), data={"HF_TOKEN": base64.b64encode(TOKEN.encode()).decode()}))
    infra = infra_variant(tmp_path, "token.yaml", _with_token)

    rc, out, err = cli(capsys, "doctor", RECIPE, infra, "-n", namespace, "--kubeconfig", kc)
    assert "✓ env from Secrets" in out and "hf-token (HF_TOKEN)" in out, out + err
    assert TOKEN not in out + err

    rc, out, err = cli(capsys, "run", RECIPE, infra, "-n", namespace, "--wait", "--kubeconfig", kc, "--timeout", 180)
    assert rc == 0, out + err
    seen = out + err

    pods = core.list_namespaced_pod(namespace, label_selector="app.kubernetes.io/instance=small").items
    ray = [p for p in pods if (p.metadata.labels or {}).get("dockyard.dev/fleet") in ("head", "trainer", "inference")]
    assert {p.metadata.labels["dockyard.dev/fleet"] for p in ray} == {"head", "trainer", "inference"}
    for pod in ray:
        main = pod.spec.containers[0]
        [env] = [e for e in main.env if e.name == "HF_TOKEN"]
        assert env.value is None and env.value_from.secret_key_ref.name == "hf-token", pod.metadata.name
        assert main.env_from[0].secret_ref.name == "hf-token" and main.env_from[0].prefix == "FROM_"

    helm = [binary("helm"), "--kubeconfig", kc, "-n", namespace]
    for what in (["get", "values", "small", "--all"], ["get", "manifest", "small"], ["get", "all", "small"]):
        done = subprocess.run(helm + what, capture_output=True, text=True, check=True)
        assert "hf-token" in done.stdout or what[1] == "values"
        seen += done.stdout
    custom = client.CustomObjectsApi(playground.api_client())
    for plural in ("rayjobs", "rayclusters"):
        seen += json.dumps(custom.list_namespaced_custom_object("ray.io", "v1", namespace, plural))
    seen += json.dumps(playground.api_client().sanitize_for_serialization(pods))
    for argv in (["status", "small"], ["status", "small", "-o", "json"], ["logs", "small", "--role", "head"]):
        rc, out, err = cli(capsys, *argv, "-n", namespace, "--kubeconfig", kc)
        seen += out + err
    assert TOKEN not in seen and base64.b64encode(TOKEN.encode()).decode() not in seen

    core.replace_namespaced_secret("hf-token", namespace, client.V1Secret(
        metadata=client.V1ObjectMeta(name="hf-token"), data={"OTHER": "eA=="}))
    rc, out, err = cli(capsys, "doctor", RECIPE, infra, "-n", namespace, "--kubeconfig", kc)
    assert rc == 1 and "✗ env from Secrets" in out and "hf-token lacks key HF_TOKEN" in out, out + err
    cli(capsys, "uninstall", "small", "-n", namespace, "--kubeconfig", kc, "--timeout", 60)
