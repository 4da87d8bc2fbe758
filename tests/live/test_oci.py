"""The chart as users install charts: `make package`, `helm push` to a real OCI registry (the CNCF
distribution registry, pinned and built like the other tools) on 127.0.0.1 with TLS, then
`helm template` / `helm install oci://...` with both Helm majors and `dockyard-k8s run --chart oci://...`."""

from __future__ import annotations

import json
import ssl
import subprocess
import time
import urllib.request
from pathlib import Path

import pytest
import yaml
from live_helpers import INFRA, RECIPE, cli, kube

from generator.pinned_tools import CHART_DIR, REPO, tool_dir

pytestmark = pytest.mark.timeout(300)

PLAIN_VALUES = REPO / "values-examples" / "sandbox-only.values.yaml"
HELMS = {3: tool_dir("helm") / "helm", 4: tool_dir("helm4") / "helm"}
VERSION = yaml.safe_load((CHART_DIR / "Chart.yaml").read_text())["version"]


class Registry:
    def __init__(self, root: Path):
        from generator.playground import pki
        from generator.playground.processes import free_ports

        self.root = root
        paths = pki.generate(root / "pki", "127.0.0.1")  # serving cert for 127.0.0.1, signed by its own CA
        self.ca = paths["ca_crt"]
        self.port = free_ports(1)[0]
        self.host = f"127.0.0.1:{self.port}"
        config = {
            "version": 0.1,
            "log": {"level": "info", "accesslog": {"disabled": False}},
            "storage": {"filesystem": {"rootdirectory": str(root / "data")}},
            "http": {"addr": self.host, "tls": {"certificate": paths["serving_crt"], "key": paths["serving_key"]}},
        }
        (root / "config.yml").write_text(yaml.safe_dump(config))
        self.log = root / "registry.log"
        self.proc = subprocess.Popen([str(tool_dir("registry") / "registry"), "serve", str(root / "config.yml")],
                                     stdout=self.log.open("w"), stderr=subprocess.STDOUT)
        ctx = ssl.create_default_context(cafile=self.ca)
        deadline = time.monotonic() + 30
        while True:
            try:
                with urllib.request.urlopen(f"https://{self.host}/v2/", context=ctx, timeout=2) as resp:
                    assert resp.status == 200
                    break
            except OSError:
                if self.proc.poll() is not None or time.monotonic() > deadline:
                    raise AssertionError(f"registry did not start:\n{self.log.read_text()[-2000:]}") from None
                time.sleep(0.2)

    def requests(self) -> str:
        return self.log.read_text()

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(timeout=15)


@pytest.fixture(scope="module")
def archive() -> Path:
    proc = subprocess.run(["make", "-s", "package"], cwd=REPO, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    path = Path(proc.stdout.strip().splitlines()[-1])
    assert path.name == f"dockyard-{VERSION}.tgz"
    return path


@pytest.fixture(scope="module")
def registry(playground, tmp_path_factory, archive):
    """A registry holding the packaged chart at oci://HOST/charts/dockyard:VERSION, pushed by Helm 3."""
    reg = Registry(tmp_path_factory.mktemp("registry"))
    try:
        push = run(3, "push", archive, f"oci://{reg.host}/charts", ca=reg.ca)
        assert f"Pushed: {reg.host}/charts/dockyard:{VERSION}" in push.stdout + push.stderr
        yield reg
    finally:
        reg.stop()


def run(major: int, *args, ca: str, check: bool = True) -> subprocess.CompletedProcess:
    """helm of `major` trusting the registry's CA through SSL_CERT_FILE (Go's system roots); its config,
    cache and data folders are the test session's (see conftest)."""
    import os

    env = dict(os.environ, SSL_CERT_FILE=ca)
    proc = subprocess.run([str(HELMS[major]), *map(str, args)], capture_output=True, text=True, env=env, timeout=240)
    if check:
        assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc


def _docs(text: str) -> list[str]:
    return [p.rstrip("\n") for p in text.split("\n---\n") if p.strip() not in ("", "---")]


def test_push_with_either_major_and_render_with_plain_helm_template(playground, registry, archive):
    """Argo CD and Flux render a chart from a registry with `helm template`: the same manifests with
    either major, whichever major pushed it, as from the chart folder; no --kube-version."""
    push4 = run(4, "push", archive, f"oci://{registry.host}/charts4", ca=registry.ca)
    assert f"{registry.host}/charts4/dockyard:{VERSION}" in push4.stdout + push4.stderr
    folder = _docs(run(3, "template", "dockyard", CHART_DIR, "-f", PLAIN_VALUES, ca=registry.ca).stdout)
    for repo in ("charts", "charts4"):
        for major in HELMS:
            out = run(major, "template", "dockyard", f"oci://{registry.host}/{repo}/dockyard", "--version", VERSION,
                      "-f", PLAIN_VALUES, ca=registry.ca).stdout
            assert _docs(out[out.index("---"):]) == folder, (repo, major)


def test_helm_install_from_oci(playground, registry, namespace, helm):
    """`helm install dockyard oci://HOST/charts/dockyard --version X -f values.yaml`, no generator."""
    from kubernetes import client

    ref = f"oci://{registry.host}/charts/dockyard"
    run(helm, "install", "dockyard", ref, "--version", VERSION, "-f", PLAIN_VALUES, "-n", namespace,
        "--wait", "--timeout", "120s", ca=registry.ca)
    listed = json.loads(run(helm, "list", "-n", namespace, "-o", "json", ca=registry.ca).stdout)
    assert [(r["name"], r["chart"], r["app_version"], r["status"]) for r in listed] == \
        [("dockyard", f"dockyard-{VERSION}", VERSION, "deployed")]
    dep = client.AppsV1Api(playground.api_client()).read_namespaced_deployment("dockyard-sandbox", namespace)
    assert dep.status.ready_replicas == 3
    run(helm, "uninstall", "dockyard", "-n", namespace, "--wait", "--timeout", "60s", ca=registry.ca)


def test_run_with_chart_from_oci(playground, registry, namespace, capsys, monkeypatch, helm):
    """`dockyard-k8s run --chart oci://...`: the generator's values, the registry's chart."""
    from generator.live.helm.records import release_records

    monkeypatch.setenv("SSL_CERT_FILE", registry.ca)
    ref = f"oci://{registry.host}/charts/dockyard"
    before = registry.requests().count(f"/v2/charts/dockyard/manifests/{VERSION}")
    kc = playground.kubeconfig
    rc, out, err = cli(capsys, "run", RECIPE, INFRA, "-n", namespace, "--chart", ref, "--chart-version", VERSION,
                       "--kubeconfig", kc, "--timeout", 120, "-q")
    assert rc == 0, out + err
    assert registry.requests().count(f"/v2/charts/dockyard/manifests/{VERSION}") > before  # fetched from there
    rc, out, err = cli(capsys, "history", "small", "-n", namespace, "-o", "json", "--kubeconfig", kc)
    assert rc == 0, err
    assert [(r["chart"], r["status"]) for r in json.loads(out)] == [(f"dockyard-{VERSION}", "deployed")]
    rc, out, err = cli(capsys, "uninstall", "small", "-n", namespace, "--kubeconfig", kc, "--timeout", 60)
    assert rc == 0, err
    assert release_records(kube(playground), "small", namespace) == []
