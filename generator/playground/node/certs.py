"""Certificates for the real node, signed by the playground CA: the kubelet's serving certificate
(the apiserver verifies it with --kubelet-certificate-authority) and the apiserver's client
certificate for calls to the kubelet (logs, exec, port-forward); metrics-server's serving and kubelet client
certificates (metrics.py)."""

from __future__ import annotations

import datetime as dt
import ipaddress
from pathlib import Path

from generator.playground.node import spec as S
from generator.playground.state import Pki


def _issue(ca_crt: str, ca_key: str, cn: str, org: str | None, server: bool, out: Path, stem: str,
           dns: tuple[str, ...] = (S.NODE_NAME,)) -> tuple[str, str]:
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

    ca_cert = x509.load_pem_x509_certificate(Path(ca_crt).read_bytes())
    ca_priv = serialization.load_pem_private_key(Path(ca_key).read_bytes(), password=None)
    if not isinstance(ca_priv, ec.EllipticCurvePrivateKey):  # pki.py makes an EC P-256 CA
        raise TypeError(f"{ca_key}: not an EC private key")
    key = ec.generate_private_key(ec.SECP256R1())
    usage = ExtendedKeyUsageOID.SERVER_AUTH if server else ExtendedKeyUsageOID.CLIENT_AUTH
    now = dt.datetime.now(dt.UTC) - dt.timedelta(minutes=5)
    attrs = [x509.NameAttribute(NameOID.COMMON_NAME, cn)]
    if org:
        attrs.insert(0, x509.NameAttribute(NameOID.ORGANIZATION_NAME, org))
    builder = (
        x509.CertificateBuilder()
        .subject_name(x509.Name(attrs))
        .issuer_name(ca_cert.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now)
        .not_valid_after(now + dt.timedelta(days=365))
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.ExtendedKeyUsage([usage]), critical=False)
    )
    if server:
        builder = builder.add_extension(x509.SubjectAlternativeName([
            *(x509.DNSName(d) for d in dns), x509.IPAddress(ipaddress.ip_address(S.NODE_IP)),
        ]), critical=False)
    cert = builder.sign(ca_priv, hashes.SHA256())
    out.mkdir(parents=True, exist_ok=True)
    crt, keyf = out / f"{stem}.crt", out / f"{stem}.key"
    crt.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    keyf.write_bytes(pem)
    keyf.chmod(0o600)
    return str(crt), str(keyf)


def kubelet_serving(pki: Pki, out: Path) -> tuple[str, str]:
    return _issue(pki.ca_crt, pki.ca_key, f"system:node:{S.NODE_NAME}", "system:nodes", True, out, "kubelet-serving")


def apiserver_kubelet_client(pki: Pki, out: Path) -> tuple[str, str]:
    return _issue(pki.ca_crt, pki.ca_key, "kube-apiserver-kubelet-client", "system:masters", False, out,
                  "apiserver-kubelet-client")


def metrics_server_serving(pki: Pki, out: Path, service_dns: str) -> tuple[str, str]:
    """What the apiserver's aggregator verifies (the APIService's caBundle): the Service's DNS name."""
    return _issue(pki.ca_crt, pki.ca_key, service_dns, None, True, out, "metrics-server-serving",
                  dns=(service_dns, f"{service_dns}.cluster.local"))


def metrics_server_kubelet_client(pki: Pki, out: Path) -> tuple[str, str]:
    """metrics-server's client certificate for the kubelet's /metrics/resource (the kubelet takes x509 only)."""
    return _issue(pki.ca_crt, pki.ca_key, "metrics-server-kubelet-client", None, False, out,
                  "metrics-server-kubelet-client")
