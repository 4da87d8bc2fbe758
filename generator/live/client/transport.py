"""A plain HTTPS transport to the Kubernetes API, of the standard library only, for the verbs a user runs often
(`status`, its `--watch`, `run --wait`): importing the `kubernetes` client alone costs ~0.26 s a process, more
than kubectl takes for the whole read (docs/benchmarks.md).

It serves the kubeconfigs whose credentials are plain: a client certificate and key, a bearer token (inline or
`tokenFile`), the server's CA (file or data) or `insecure-skip-tls-verify`, `tls-server-name`. Anything else (an
`exec` or `auth-provider` plugin, `proxy-url`, basic auth) is the `kubernetes` client's: `for_context` returns
None and Kube uses the client, so no credential is handled two ways. One connection per thread, kept alive.

HTTP/1.1 is spoken here on the socket (_Connection), not through `http.client`: its import (it parses headers with
the `email` package) costs ~10 ms a process, as much as all the requests of `status`. What the apiserver (Go's
net/http) answers is all it has to read: a status line, headers, and a body sized by Content-Length, sent
chunked, or ended by closing the connection.

An answer that is not 2xx becomes the client's own `ApiException` (imported then, on that path only), so every
caller handles one error type whichever way the request went.
"""

from __future__ import annotations

import base64
import os
import socket
import ssl
import threading

TYPE_CHECKING = False  # typing's import costs ~3 ms at start-up: for type checkers only
if TYPE_CHECKING:
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


# What a query's names and values keep unescaped: urllib.parse.quote_plus's always-safe characters (the rest as
# %XX, a space as +), so the query is byte for byte urlencode's without importing urllib.parse (~2 ms, ipaddress
# with it) on every start.
_SAFE = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-~")


def _quote_plus(text: str) -> str:
    return "".join(chr(b) if b in _SAFE else "+" if b == 32 else f"%{b:02X}" for b in text.encode("utf-8"))


def urlencode(query: list[tuple[str, str]]) -> str:
    """urllib.parse.urlencode of (name, value) pairs of strings."""
    return "&".join(f"{_quote_plus(k)}={_quote_plus(v)}" for k, v in query)


def split_server(server: str) -> tuple[str, str, int | None, str]:
    """(scheme, host lower-cased, port or None, path) of a kubeconfig's server URL, as urllib.parse.urlsplit
    reads them (userinfo dropped, an IPv6 literal without its brackets); ValueError for a bad port."""
    scheme, sep, rest = server.partition("://")
    if not sep:
        scheme, rest = "", server
    rest = rest.split("?", 1)[0].split("#", 1)[0]
    netloc, slash, path = rest.partition("/")
    netloc = netloc.rpartition("@")[2]
    if netloc.startswith("["):
        host, _, after = netloc[1:].partition("]")
        port = after[1:] if after.startswith(":") else ""
    else:
        host, _, port = netloc.partition(":")
    if port and not (port.isascii() and port.isdigit() and int(port) <= 65535):
        raise ValueError(f"Port could not be cast to integer value as {port!r}")
    return scheme.lower(), host.lower(), int(port) if port else None, slash + path


class Transport:
    def __init__(self, server: str, tls: ssl.SSLContext | None, token: str | None, server_name: str | None) -> None:
        self.server = server
        scheme, host, port, path = split_server(server)
        self.https = scheme == "https"
        self.host, self.port = host, port or (443 if self.https else 80)
        self.base = path.rstrip("/")
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

    def _connection(self, timeout: float) -> _Connection:
        conn = getattr(self.local, "conn", None)
        if conn is None:
            conn = _Connection(self.host, self.port, self.tls if self.https else None, self.server_name or self.host)
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
        url = self.base + path + ("?" + urlencode(query) if query else "")
        headers = {**headers, "User-Agent": "dockyard-k8s"}
        if self.token:
            headers["Authorization"] = f"Bearer {self.token}"
        while True:
            conn = self._connection(timeout)
            reused = conn.sock is not None  # a kept-alive connection, which the server may have closed since
            try:
                return conn.exchange(method, url, body, headers)
            except (OSError, ProtocolError) as exc:
                conn.close()
                self.local.conn = None
                closed = isinstance(exc, BrokenPipeError | ConnectionResetError)  # RemoteDisconnected is one too
                if closed and reused and method in ("GET", "HEAD"):
                    continue  # once more on a new connection (not reused: no loop); a write is never sent twice
                raise Unreachable(_reason(exc), exc.errno if isinstance(exc, OSError) else None) from None

    def close(self) -> None:
        conn = getattr(self.local, "conn", None)
        if conn is not None:
            conn.close()
            self.local.conn = None


class ProtocolError(Exception):
    """An answer that is not HTTP/1.x as the transport reads it (a bad status line, header or chunk size, a body cut
    short)."""


class RemoteDisconnected(ConnectionResetError):
    """The server closed the connection before answering (as http.client names it): a kept-alive connection the
    server had closed since."""


MAX_LINE = 65536  # the longest status line, header or chunk-size line read (http.client's bound)
MAX_HEADERS = 100  # and the most headers (http.client's too)


class _Connection:
    """One HTTP/1.1 connection (TLS when `tls` is given, the certificate checked against `server_name`, which may
    differ from the address dialled: kubeconfig's tls-server-name), kept alive between requests."""

    def __init__(self, host: str, port: int, tls: ssl.SSLContext | None, server_name: str) -> None:
        self.host, self.port, self.tls, self.server_name = host, port, tls, server_name
        self.timeout: float | None = None
        self.sock: socket.socket | None = None
        self.reader: Any = None
        default = 443 if tls is not None else 80
        name = f"[{host}]" if ":" in host else host  # an IPv6 literal
        self.host_header = name if port == default else f"{name}:{port}"

    def connect(self) -> None:
        # the host as bytes when ASCII: getaddrinfo then skips the `idna` codec's import (~1.4 ms a start)
        host: str | bytes = self.host.encode("ascii") if self.host.isascii() else self.host
        sock = socket.create_connection((host, self.port), self.timeout)  # type: ignore[arg-type]
        try:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)  # a request is one write: no Nagle delay
            if self.tls is not None:
                # as bytes when ASCII: ssl skips the `idna` codec's import (~1 ms) for a name that needs none
                name: str | bytes = self.server_name.encode("ascii") if self.server_name.isascii() else self.server_name
                sock = self.tls.wrap_socket(sock, server_hostname=name)
        except BaseException:
            sock.close()
            raise
        self.sock, self.reader = sock, sock.makefile("rb")

    def close(self) -> None:
        reader, sock, self.reader, self.sock = self.reader, self.sock, None, None
        if reader is not None:
            reader.close()
        if sock is not None:
            sock.close()

    def exchange(self, method: str, url: str, body: bytes | None,
                 headers: dict[str, str]) -> tuple[int, str, dict[str, str], bytes]:
        if self.sock is None:
            self.connect()
        assert self.sock is not None
        lines = [f"{method} {url} HTTP/1.1", f"Host: {self.host_header}", "Accept-Encoding: identity"]
        if body is not None or method in ("POST", "PUT", "PATCH"):
            lines.append(f"Content-Length: {len(body or b'')}")
        lines += [f"{k}: {v}" for k, v in headers.items()]
        self.sock.sendall(("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + (body or b""))
        while True:
            version, status, reason = self._status_line()
            answer = self._headers()
            if status != 100:  # a 100 Continue is followed by the answer
                break
        fields = {k.lower(): v for k, v in answer.items()}
        keep = version == "HTTP/1.1"
        tokens = {t.strip().lower() for t in fields.get("connection", "").split(",")}
        if "close" in tokens or (not keep and "keep-alive" not in tokens):
            keep = False
        if method == "HEAD" or status in (204, 304) or 100 <= status < 200:
            data = b""
        elif "chunked" in fields.get("transfer-encoding", "").lower():
            data = self._chunked()
        elif fields.get("content-length") is not None:
            data = self._exactly(_length(fields["content-length"]))
        else:  # the body ends where the connection does
            data = self.reader.read()
            keep = False
        if not keep:
            self.close()
        return status, reason, answer, data

    def _line(self) -> bytes:
        line = self.reader.readline(MAX_LINE + 1)
        if len(line) > MAX_LINE:
            raise ProtocolError("line too long")
        return bytes(line)

    def _status_line(self) -> tuple[str, int, str]:
        line = self._line()
        if not line:
            raise RemoteDisconnected("Remote end closed connection without response")
        version, _, rest = line.decode("iso-8859-1").rstrip("\r\n").partition(" ")
        code, _, reason = rest.partition(" ")
        if not version.startswith("HTTP/1.") or len(code) != 3 or not code.isdigit():
            raise ProtocolError(f"bad status line {line[:80]!r}")
        return version, int(code), reason.strip()

    def _headers(self) -> dict[str, str]:
        """The headers, in the order sent; of a name sent twice, the last (as dict(http.client's getheaders()))."""
        out: dict[str, str] = {}
        last = None
        for _ in range(MAX_HEADERS + 1):
            line = self._line()
            if line in (b"\r\n", b"\n", b""):
                return out
            text = line.decode("iso-8859-1").rstrip("\r\n")
            if text[:1] in (" ", "\t") and last is not None:  # an obsolete folded continuation
                out[last] += " " + text.strip()
                continue
            name, colon, value = text.partition(":")
            if not colon or not name or name != name.strip():
                raise ProtocolError(f"bad header line {text[:80]!r}")
            last = name
            out[name] = value.strip()
        raise ProtocolError(f"more than {MAX_HEADERS} headers")

    def _exactly(self, n: int) -> bytes:
        data = self.reader.read(n)
        if len(data) < n:
            raise ProtocolError(f"the body ended after {len(data)} of {n} bytes")
        return bytes(data)

    def _chunked(self) -> bytes:
        parts: list[bytes] = []
        while True:
            size = self._line().split(b";", 1)[0].strip()
            try:
                n = int(size, 16)
            except ValueError:
                raise ProtocolError(f"bad chunk size {size[:20]!r}") from None
            if n < 0:
                raise ProtocolError(f"bad chunk size {size[:20]!r}")
            if n == 0:
                self._headers()  # the trailers, if any, up to the empty line
                return b"".join(parts)
            parts.append(self._exactly(n))
            if self._line() not in (b"\r\n", b"\n"):
                raise ProtocolError("no line end after a chunk")


def _length(text: str) -> int:
    if not text.strip().isdigit():
        raise ProtocolError(f"bad Content-Length {text[:20]!r}")
    return int(text)


def _proxied(server: str) -> bool:
    """Whether the environment sends requests to `server` through a proxy (HTTPS_PROXY / HTTP_PROXY / ALL_PROXY,
    less NO_PROXY), which the transport does not implement. Loopback and localhost never are, as in Go's
    ProxyFromEnvironment."""
    import ipaddress

    scheme, host, _, _ = split_server(server)
    names = ("HTTPS_PROXY", "ALL_PROXY") if scheme == "https" else ("HTTP_PROXY", "ALL_PROXY")
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
    import tempfile  # here: a kubeconfig with a token, or certificate files, never needs it (~1.5 ms of imports)

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
