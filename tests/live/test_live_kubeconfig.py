"""The kubeconfigs and environments of real desks (several kubeconfigs, exec plugins, `HELM_*`): the CLI, helm and
kubectl always
act on the same cluster, context, namespace and release storage; kubectl's own answer is the oracle."""

from __future__ import annotations

import base64
import os
import subprocess
from pathlib import Path

import bounds
import pytest
import yaml
from live_helpers import INFRA, RECIPE, cli, kube

from generator.pinned_tools import binary

pytestmark = pytest.mark.timeout(3 * bounds.verb(90) + 60)
UNREACHABLE = "https://127.0.0.1:9"  # loopback, nothing listens: a context that must never be used


@pytest.fixture
def release(playground, namespace, capsys):
    yield "small"
    from generator.live.helm.records import release_records

    if release_records(kube(playground), "small", namespace):
        cli(capsys, "uninstall", "small", "-n", namespace, "--kubeconfig", playground.kubeconfig, "--timeout", 60)


def _playground_parts(playground) -> tuple[dict, dict]:
    """(the playground's cluster entry, its user entry) from its kubeconfig."""
    doc = yaml.safe_load(Path(playground.kubeconfig).read_text())
    return doc["clusters"][0]["cluster"], doc["users"][0]["user"]


def _write(path: Path, doc: dict) -> str:
    path.write_text(yaml.safe_dump(doc))
    path.chmod(0o600)
    return str(path)


def _kubectl(*argv: str, env: dict | None = None) -> str:
    done = subprocess.run([binary("kubectl", "kubernetes"), *argv], capture_output=True, text=True, timeout=60,
                          env=env if env is not None else dict(os.environ))
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def _ran_on(err: str) -> str:
    """The context the verb's first progress line names."""
    line = next(x for x in err.splitlines() if " at https://" in x)
    return line.split("context ")[1].split(" at ")[0]


def test_kubeconfig_files_are_merged_as_kubectl_merges_them(playground, namespace, release, capsys, tmp_path,
                                                             monkeypatch):
    cluster, user = _playground_parts(playground)
    # the first file names the context and sets current-context; the second holds the cluster and the user,
    # and a current-context of its own that must lose (the first file to set it wins)
    first = _write(tmp_path / "a.yaml", {
        "apiVersion": "v1", "kind": "Config", "current-context": "desk",
        "contexts": [{"name": "desk", "context": {"cluster": "pg", "user": "me", "namespace": namespace}}]})
    second = _write(tmp_path / "b.yaml", {
        "apiVersion": "v1", "kind": "Config", "current-context": "elsewhere",
        "clusters": [{"name": "pg", "cluster": cluster}, {"name": "nowhere", "cluster": {"server": UNREACHABLE}}],
        "users": [{"name": "me", "user": user}],
        "contexts": [{"name": "elsewhere", "context": {"cluster": "nowhere", "user": "me"}},
                     {"name": "desk", "context": {"cluster": "nowhere", "user": "me"}}]})  # the first "desk" wins
    monkeypatch.setenv("KUBECONFIG", os.pathsep.join([first, second, str(tmp_path / "missing.yaml")]))
    assert _kubectl("config", "current-context") == "desk"  # the oracle
    server = _kubectl("config", "view", "--minify", "-o", "jsonpath={.clusters[0].cluster.server}")
    assert server == playground.server

    rc, out, err = cli(capsys, "run", RECIPE, INFRA, "-n", namespace, "--timeout", 90)
    assert rc == 0, out + err
    assert _ran_on(out + err) == "desk" and f"context desk at {playground.server}" in out + err
    rc, out, err = cli(capsys, "status", "small", "-n", namespace)
    assert rc == 0 and "deployed" in out, out + err
    assert _kubectl("get", "deployment", "small-sandbox", "-n", namespace, "-o", "name") == \
        "deployment.apps/small-sandbox"  # helm installed where kubectl looks


def test_exec_plugin_relative_paths_and_a_context_that_is_not_current(playground, namespace, release, capsys,
                                                                       tmp_path):
    cluster, user = _playground_parts(playground)
    (tmp_path / "certs").mkdir()
    (tmp_path / "certs" / "ca.crt").write_bytes(base64.b64decode(cluster["certificate-authority-data"]))
    plugin = tmp_path / "bin" / "token-plugin"  # as EKS/GKE/AKS hand out tokens: an exec credential plugin
    plugin.parent.mkdir()
    plugin.write_text("#!/bin/sh\nprintf '{\"apiVersion\":\"client.authentication.k8s.io/v1\",\"kind\":"
                      f"\"ExecCredential\",\"status\":{{\"token\":\"{user['token']}\"}}}}'\n")
    plugin.chmod(0o755)
    path = _write(tmp_path / "desk.kubeconfig", {
        "apiVersion": "v1", "kind": "Config", "current-context": "other",
        "clusters": [{"name": "pg", "cluster": {"server": cluster["server"], "certificate-authority": "certs/ca.crt"}},
                     {"name": "nowhere", "cluster": {"server": UNREACHABLE}}],
        "users": [{"name": "me", "user": {"exec": {"apiVersion": "client.authentication.k8s.io/v1",
                                                   "command": "./bin/token-plugin", "interactiveMode": "Never"}}}],
        "contexts": [{"name": "other", "context": {"cluster": "nowhere", "user": "me"}},
                     {"name": "pg", "context": {"cluster": "pg", "user": "me"}}]})
    env = {k: v for k, v in os.environ.items() if k != "KUBECONFIG"}
    assert _kubectl("--kubeconfig", path, "--context", "pg", "get", "ns", namespace, "-o", "name", env=env) == \
        f"namespace/{namespace}"  # the oracle: cwd-independent relative paths, the plugin's token
    common = ("-n", namespace, "--kubeconfig", path, "--context", "pg")
    rc, out, err = cli(capsys, "run", RECIPE, INFRA, *common, "--timeout", 90)
    assert rc == 0 and _ran_on(out + err) == "pg", out + err
    rc, out, err = cli(capsys, "status", "small", *common)
    assert rc == 0 and "deployed" in out, out + err
    rc, out, err = cli(capsys, "uninstall", "small", *common, "--timeout", 90)
    assert rc == 0 and "nothing left" in out, out + err


def test_helm_environment_never_points_helm_elsewhere(playground, namespace, release, capsys, tmp_path, monkeypatch):
    cluster, user = _playground_parts(playground)
    path = _write(tmp_path / "two.kubeconfig", {
        "apiVersion": "v1", "kind": "Config", "current-context": "pg",
        "clusters": [{"name": "pg", "cluster": cluster}, {"name": "nowhere", "cluster": {"server": UNREACHABLE}}],
        "users": [{"name": "me", "user": user}],
        "contexts": [{"name": "pg", "context": {"cluster": "pg", "user": "me"}},
                     {"name": "other", "context": {"cluster": "nowhere", "user": "me"}}]})
    for var, value in (("HELM_KUBECONTEXT", "other"), ("HELM_NAMESPACE", "default"), ("HELM_DRIVER", "configmap"),
                       ("HELM_KUBEAPISERVER", UNREACHABLE)):
        monkeypatch.setenv(var, value)
    rc, out, err = cli(capsys, "run", RECIPE, INFRA, "-n", namespace, "--kubeconfig", path, "--timeout", 90)
    assert rc == 0, out + err
    assert "note: HELM_KUBECONTEXT=other is set" in err and "note: HELM_DRIVER=configmap is set" in err
    from generator.live.helm.records import labels, release_records

    records = release_records(kube(playground), "small", namespace)  # Secrets, in the CLI's namespace
    assert [labels(r)["status"] for r in records] == ["deployed"]
    cms = kube(playground).list(f"/api/v1/namespaces/{namespace}/configmaps", label_selector="owner=helm")
    assert cms == []
    rc, out, err = cli(capsys, "status", "small", "-n", namespace, "--kubeconfig", path)
    assert rc == 0 and "deployed" in out, out + err


def test_a_release_kept_by_the_configmap_driver_is_named_never_missed(playground, namespace, release, capsys,
                                                                      tmp_path):
    from generator.live.changes.plan import plan
    from generator.pinned_tools import CHART_DIR

    values = tmp_path / "values.yaml"
    values.write_text(yaml.safe_dump(plan(str(RECIPE), str(INFRA), [], None, namespace).values))
    env = dict(os.environ, HELM_DRIVER="configmap")
    helm = [binary("helm"), "-n", namespace, "--kubeconfig", playground.kubeconfig]
    done = subprocess.run([*helm, "install", "small", str(CHART_DIR), "-f", str(values)], env=env,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    try:
        rc, out, err = cli(capsys, "run", RECIPE, INFRA, "-n", namespace, "--kubeconfig", playground.kubeconfig,
                           "--timeout", 60)
        assert rc == 1 and "is stored in ConfigMaps (Helm's configmap driver" in err, out + err
        assert "nothing was changed" in err
        rc, out, err = cli(capsys, "status", "small", "-n", namespace, "--kubeconfig", playground.kubeconfig)
        assert rc == 1 and "Helm's configmap driver holds a release small" in err, out + err
    finally:
        subprocess.run([*helm, "uninstall", "small", "--wait", "--timeout", "60s"], env=env, capture_output=True,
                       timeout=120)
