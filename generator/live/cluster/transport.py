"""A plain HTTPS transport to the Kubernetes API, of the standard library only, for the verbs a user runs often
(`status`, its `--watch`, `run --wait`): importing the `kubernetes` client alone costs ~0.26 s a process, more
than kubectl takes for the whole read (docs/benchmarks.md).

It serves the kubeconfigs whose credentials are plain: a client certificate and key, a bearer token (inline or
`tokenFile`), the server's CA (file or data) or `insecure-skip-tls-verify`, `tls-server-name`. Anything else (an
`exec` or `auth-provider` plugin, `proxy-url`, basic auth) is the `kubernetes` client's: `for_context` returns
None and Kube uses the client, so no credential is handled two ways. One connection per thread, kept alive.

An answer that is not 2xx becomes the client's own `ApiException` (imported then, on that path only), so every
caller handles one error type whichever way the request went.
"""

from __future__ import annotations

import base64
import http.client
import os
import ssl
import tempfile
import threading
import urllib.parse
from typing import Any

# kubeconfig keys the transport does not implement: their presence hands the context to the kubernetes client
CLIENT_ONLY_USER = ("exec", "auth-provider", "username", "password", "as", "as-groups", "as-user-extra")
CLIENT_ONLY_CLUSTER = ("proxy-url",)


class Unreachable(Exception):
    """The API server could not be reached (connection refused, DNS, TLS): `detail` says how, `errno` the
    system's error number when there is one."""

    def __init__(self, detail: str, errno: int | None = None) -> None:
        super().__init__(detail)
        self.detail, self.errno = detail, errno


class Transport:
    def __init__(self, server: str, tls: ssl.SSLContext | None, token: str | None, server_name: str | None) -> None:
        self.server = server
        url = urllib.parse.urlsplit(server)
        self.https = url.scheme == "https"
        self.host, self.port = url.hostname or "", url.port or (443 if self.https else 80)
        self.base = url.path.rstrip("/")
        self.tls, self.token, self.server_name = tls, token, server_name
        self.local = threading.local()

    @classmethod
    def for_context(cls, doc: dict[str, Any], context: str) -> Transport | None:
        """The transport for `context` of the merged kubeconfig `doc`, or None when its credentials need the
        kubernetes client. ValueError with the reason when the kubeconfig is wrong."""
        ctx = next((c.get("context") or {} for c in doc.get("contexts") or [] if c.get("name") == context), {})
        cluster = next((c.get("cluster") or {} for c in doc.get("clusters") or []
                        if c.get("name") == ctx.get("cluster")), None)
        user = next((u.get("user") or {} for u in doc.get("users") or [] if u.get("name") == ctx.get("user")), {})
        if cluster is None or not cluster.get("server"):
            return None  # the client says what is missing, in its words
        if any(k in user for k in CLIENT_ONLY_USER) or any(k in cluster for k in CLIENT_ONLY_CLUSTER):
            return None
        server = str(cluster["server"])
        if _proxied(server):
            return None  # the client dials through the proxy the environment names, as kubectl does
        tls = None
        if server.startswith("https://"):
            # The kubeconfig's CA alone is trusted when it names one (as client-go does), the system's roots
            # only when it names none; loading those costs ~20 ms, as much as the rest of a TLS setup.
            tls = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)  # hostname checked, certificate required
            if cluster.get("insecure-skip-tls-verify"):
                tls.check_hostname = False
                tls.verify_mode = ssl.CERT_NONE
            elif cluster.get("certificate-authority-data"):
                tls.load_verify_locations(cadata=base64.b64decode(cluster["certificate-authority-data"]).decode())
            elif cluster.get("certificate-authority"):
                tls.load_verify_locations(cafile=cluster["certificate-authority"])
            else:
                tls.load_default_certs()
            cert, key = _pem(user, "client-certificate"), _pem(user, "client-key")
            if cert and key:
                _load_chain(tls, cert, key)
            elif cert or key:
                raise ValueError("a client certificate needs its key, and a key its certificate")
        token = user.get("token")
        if not token and user.get("tokenFile"):
            with open(user["tokenFile"], encoding="utf-8") as fh:
                token = fh.read().strip()
        return cls(server, tls, token or None, cluster.get("tls-server-name"))

    def _connection(self, timeout: float) -> http.client.HTTPConnection:
        conn = getattr(self.local, "conn", None)
        if conn is None:
            if self.https:
                assert self.tls is not None
                conn = _Https(self.host, self.port, self.tls, self.server_name or self.host, timeout)
            else:
                conn = http.client.HTTPConnection(self.host, self.port, timeout=timeout)
            self.local.conn = conn
        conn.timeout = timeout
        if conn.sock is not None:
            try:
                conn.sock.settimeout(timeout)
            except OSError:  # closed under us: a new connection
                conn.close()
                self.local.conn = None
                return self._connection(timeout)
        return conn

    def send(self, method: str, path: str, query: list[tuple[str, str]], body: bytes | None,
             headers: dict[str, str], timeout: float) -> tuple[int, str, dict[str, str], bytes]:
        """(status, reason, headers, body) of one request; Unreachable when the server is not reached."""
        url = self.base + path + ("?" + urllib.parse.urlencode(query) if query else "")
        headers = {**headers, "User-Agent": "dockyard-k8s"}
        if self.token:
            headers["Authorization"] = f"Bearer {self.token}"
        while True:
            conn = self._connection(timeout)
            reused = conn.sock is not None  # a kept-alive connection, which the server may have closed since
            try:
                conn.request(method, url, body=body, headers=headers)
                resp = conn.getresponse()
                data = resp.read()
                return resp.status, resp.reason, dict(resp.getheaders()), data
            except (OSError, http.client.HTTPException) as exc:
                conn.close()
                self.local.conn = None
                closed = isinstance(exc, http.client.RemoteDisconnected | BrokenPipeError | ConnectionResetError)
                if closed and reused and method in ("GET", "HEAD"):
                    continue  # once more on a new connection (not reused: no loop); a write is never sent twice
                raise Unreachable(_reason(exc), exc.errno if isinstance(exc, OSError) else None) from None

    def close(self) -> None:
        conn = getattr(self.local, "conn", None)
        if conn is not None:
            conn.close()
            self.local.conn = None


class _Https(http.client.HTTPConnection):
    """HTTPS with the certificate checked against `server_name` (kubeconfig's tls-server-name), which may differ
    from the address dialled."""

    def __init__(self, host: str, port: int, tls: ssl.SSLContext, server_name: str, timeout: float) -> None:
        super().__init__(host, port, timeout=timeout)
        self.tls, self.server_name = tls, server_name

    def connect(self) -> None:
        super().connect()
        self.sock = self.tls.wrap_socket(self.sock, server_hostname=self.server_name)


def _proxied(server: str) -> bool:
    """Whether the environment sends requests to `server` through a proxy (HTTPS_PROXY / HTTP_PROXY / ALL_PROXY,
    less NO_PROXY), which the transport does not implement. Loopback and localhost never are, as in Go's
    ProxyFromEnvironment."""
    import ipaddress

    url = urllib.parse.urlsplit(server)
    host = (url.hostname or "").lower()
    names = ("HTTPS_PROXY", "ALL_PROXY") if url.scheme == "https" else ("HTTP_PROXY", "ALL_PROXY")
    if not any(os.environ.get(n) or os.environ.get(n.lower()) for n in names) or host == "localhost":
        return False
    try:
        if ipaddress.ip_address(host).is_loopback:
            return False
    except ValueError:
        pass
    for entry in (os.environ.get("NO_PROXY") or os.environ.get("no_proxy") or "").split(","):
        entry = entry.strip().lower().split(":")[0]
        if entry == "*" or (entry and (host == entry.lstrip(".") or host.endswith("." + entry.lstrip(".")))):
            return False
    return True


def _pem(user: dict[str, Any], key: str) -> bytes | None:
    if user.get(f"{key}-data"):
        return base64.b64decode(user[f"{key}-data"])
    if user.get(key):
        with open(user[key], "rb") as fh:
            return fh.read()
    return None


def _load_chain(tls: ssl.SSLContext, cert: bytes, key: bytes) -> None:
    """ssl loads a client certificate from files only: written to a private folder, loaded, removed."""
    with tempfile.TemporaryDirectory(prefix="dockyard-tls-") as folder:
        paths = []
        for name, data in (("cert.pem", cert), ("key.pem", key)):
            path = os.path.join(folder, name)
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "wb") as fh:
                fh.write(data)
            paths.append(path)
        tls.load_cert_chain(paths[0], paths[1])


def _reason(exc: BaseException) -> str:
    if isinstance(exc, ssl.SSLCertVerificationError):
        return f"TLS: {exc.verify_message or exc}"
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
