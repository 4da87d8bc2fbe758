"""The playground's PKI: a CA, one loopback serving certificate, the service-account key pair, tokens.

Generated with python `cryptography` (EC P-256: fast to make, accepted everywhere it is used).
The serving certificate names only loopback and the in-cluster `kubernetes` service names; it is
used by the apiserver, the controller manager, the scheduler and kwok's kubelet endpoint.
"""

from __future__ import annotations

import datetime as dt
import ipaddress
import secrets
from pathlib import Path

FRONT_PROXY_CN = "front-proxy-client"
SERVICE_NAMES = [
    "localhost",
    "kubernetes",
    "kubernetes.default",
    "kubernetes.default.svc",
    "kubernetes.default.svc.cluster.local",
]


def _write(path: Path, data: bytes, private: bool = False) -> None:
    path.write_bytes(data)
    path.chmod(0o600 if private else 0o644)


def generate(pki: Path, *service_ips: str) -> dict[str, str]:
    """Write ca.crt/ca.key, serving.crt/serving.key, sa.key/sa.pub under `pki`; return their paths. The serving
    certificate names 127.0.0.1 and each of `service_ips` (the `kubernetes` Service's ClusterIP, whichever Service
    range the apiserver runs with)."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

    pki.mkdir(parents=True, exist_ok=True)
    pki.chmod(0o700)
    now = dt.datetime.now(dt.UTC) - dt.timedelta(minutes=5)
    ten_years = now + dt.timedelta(days=3650)

    def key_pem(key) -> bytes:
        return key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )

    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "dockyard-playground-ca")])
    ca_cert = (
        x509.CertificateBuilder()
        .subject_name(ca_name)
        .issuer_name(ca_name)
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now)
        .not_valid_after(ten_years)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True, key_cert_sign=True, crl_sign=True,
                content_commitment=False, key_encipherment=False, data_encipherment=False,
                key_agreement=False, encipher_only=False, decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()), critical=False)
        .sign(ca_key, hashes.SHA256())
    )

    srv_key = ec.generate_private_key(ec.SECP256R1())
    sans: list[x509.GeneralName] = [x509.DNSName(n) for n in SERVICE_NAMES]
    sans += [x509.IPAddress(ipaddress.ip_address(ip)) for ip in ("127.0.0.1", *service_ips)]
    srv_cert = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "dockyard-playground")]))
        .issuer_name(ca_name)
        .public_key(srv_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now)
        .not_valid_after(ten_years)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.SubjectAlternativeName(sans), critical=False)
        .add_extension(
            x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH, ExtendedKeyUsageOID.CLIENT_AUTH]),
            critical=False,
        )
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), critical=False
        )
        .sign(ca_key, hashes.SHA256())
    )

    # the apiserver's front-proxy client identity (aggregation layer / requestheader authentication)
    fp_key = ec.generate_private_key(ec.SECP256R1())
    fp_cert = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, FRONT_PROXY_CN)]))
        .issuer_name(ca_name)
        .public_key(fp_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now)
        .not_valid_after(ten_years)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.CLIENT_AUTH]), critical=False)
        .sign(ca_key, hashes.SHA256())
    )

    sa_key = ec.generate_private_key(ec.SECP256R1())
    paths = {
        "ca_crt": pki / "ca.crt",
        "ca_key": pki / "ca.key",
        "serving_crt": pki / "serving.crt",
        "serving_key": pki / "serving.key",
        "sa_key": pki / "sa.key",
        "sa_pub": pki / "sa.pub",
        "front_proxy_crt": pki / "front-proxy-client.crt",
        "front_proxy_key": pki / "front-proxy-client.key",
    }
    _write(paths["front_proxy_crt"], fp_cert.public_bytes(serialization.Encoding.PEM))
    _write(paths["front_proxy_key"], key_pem(fp_key), private=True)
    _write(paths["ca_crt"], ca_cert.public_bytes(serialization.Encoding.PEM))
    _write(paths["ca_key"], key_pem(ca_key), private=True)
    _write(paths["serving_crt"], srv_cert.public_bytes(serialization.Encoding.PEM))
    _write(paths["serving_key"], key_pem(srv_key), private=True)
    _write(paths["sa_key"], key_pem(sa_key), private=True)
    _write(
        paths["sa_pub"],
        sa_key.public_key().public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
        ),
    )
    return {k: str(v) for k, v in paths.items()}


# user name, uid, groups: one static token each (--token-auth-file).
USERS: dict[str, tuple[str, str, list[str]]] = {
    "admin": ("admin", "dockyard-admin", ["system:masters"]),
    "kube-controller-manager": ("system:kube-controller-manager", "dockyard-kcm", ["system:masters"]),
    "kube-scheduler": ("system:kube-scheduler", "dockyard-sched", []),
    "kwok": ("system:kwok-controller", "dockyard-kwok", ["system:masters"]),
    "kuberay-operator": ("system:kuberay-operator", "dockyard-kuberay", ["system:masters"]),
    "kueue": ("system:kueue", "dockyard-kueue", ["system:masters"]),
    "agent-sandbox": ("system:agent-sandbox", "dockyard-agent-sandbox", ["system:masters"]),
}


def write_tokens(path: Path) -> dict[str, str]:
    """Write the apiserver's static token file; return {identity: token}."""
    from generator.playground.files import token_line

    tokens = {ident: secrets.token_hex(24) for ident in USERS}
    lines = [token_line(tokens[ident], identity) for ident, identity in USERS.items()]
    _write(path, ("\n".join(lines) + "\n").encode(), private=True)
    return tokens
