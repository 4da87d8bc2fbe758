"""metrics-server on the real node (generator/playground/node/metrics.py), offline: its command
line, the objects that register it with the aggregation layer, and its certificates."""

from __future__ import annotations

import base64
from pathlib import Path

from generator.playground import pki as P
from generator.playground.node import certs, metrics
from generator.playground.node import spec as S
from generator.playground.state import Pki


def _pki(tmp_path: Path) -> Pki:
    files = P.generate(tmp_path / "pki", "127.32.0.1")
    return Pki(**{k: files[k] for k in Pki.__dataclass_fields__})


def test_it_serves_on_the_node_and_scrapes_the_kubelet_with_a_client_certificate(tmp_path):
    spec = S.NodeSpec(tmp_path / "pg")
    args = metrics.argv(tmp_path / "bin", spec, "/ca.crt", ("/s.crt", "/s.key"), ("/c.crt", "/c.key"))
    flags = dict(a.removeprefix("--").split("=", 1) for a in args[1:])
    assert args[0] == str(tmp_path / "bin" / "metrics-server")
    assert (flags["bind-address"], flags["secure-port"]) == (S.NODE_IP, str(metrics.PORT))
    assert flags["kubelet-client-certificate"] == "/c.crt" and flags["kubelet-certificate-authority"] == "/ca.crt"
    assert flags["kubeconfig"] == str(spec.kubeconfig("metrics-server"))  # through the loopback relay
    # metrics-server refuses a kubelet timeout over 90% of the resolution
    assert int(flags["kubelet-request-timeout"].rstrip("s")) < 0.9 * int(flags["metric-resolution"].rstrip("s"))


def test_the_apiservice_routes_to_the_nodes_address_and_trusts_the_playground_ca(tmp_path):
    ca = tmp_path / "ca.crt"
    ca.write_bytes(b"-----BEGIN CERTIFICATE-----\nx\n-----END CERTIFICATE-----\n")
    (_, svc), (_, eps), (path, aps) = metrics.objects(str(ca))
    assert "selector" not in svc["spec"] and svc["spec"]["ports"][0]["targetPort"] == metrics.PORT
    assert eps["metadata"]["labels"]["kubernetes.io/service-name"] == svc["metadata"]["name"] == "metrics-server"
    assert eps["endpoints"][0]["addresses"] == [S.NODE_IP] and eps["ports"][0]["port"] == metrics.PORT
    assert path == "/apis/apiregistration.k8s.io/v1/apiservices" and aps["metadata"]["name"] == metrics.API_SERVICE
    assert base64.b64decode(aps["spec"]["caBundle"]) == ca.read_bytes()
    assert aps["spec"]["service"] == {"namespace": "kube-system", "name": "metrics-server", "port": 443}


def test_its_serving_certificate_names_the_service(tmp_path):
    from cryptography import x509

    crt, _key = certs.metrics_server_serving(_pki(tmp_path), tmp_path / "out", metrics.SERVICE_DNS)
    cert = x509.load_pem_x509_certificate(Path(crt).read_bytes())
    names = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert "metrics-server.kube-system.svc" in names.get_values_for_type(x509.DNSName)


def test_available_reads_the_aggregators_condition():
    ok = {"status": {"conditions": [{"type": "Available", "status": "True"}]}}
    down = {"status": {"conditions": [{"type": "Available", "status": "False",
                                       "message": "failing or missing response from https://10.250.0.2:4443"}]}}
    assert metrics.available(ok) == (True, "v1beta1.metrics.k8s.io Available=True")
    assert metrics.available(down)[0] is False and "failing or missing" in metrics.available(down)[1]
    assert metrics.available({})[0] is False
