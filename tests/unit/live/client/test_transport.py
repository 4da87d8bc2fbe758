"""client/transport.py against real TLS servers on 127.0.0.1 (certificates made here): the server's CA checked
(and the name in tls-server-name), a client certificate presented, a bearer token sent, a kept-alive connection
the server closed replaced, and the kubeconfigs it leaves to the kubernetes client; and against a plain socket that
answers raw bytes, the HTTP/1.1 framing the transport reads itself (chunked, sized, ended by the connection)."""

from __future__ import annotations

import base64
import datetime
import http.server
import json
import socket
import ssl
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID
from hypothesis import given
from hypothesis import strategies as st

from generator.live.client.transport import Transport, Unreachable


def _cert(name: str, issuer: tuple | None = None, ca: bool = False, san: list | None = None) -> tuple:
    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
    now = datetime.datetime.now(datetime.UTC)
    builder = (x509.CertificateBuilder().subject_name(subject)
               .issuer_name(issuer[0].subject if issuer else subject).public_key(key.public_key())
               .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(minutes=1))
               .not_valid_after(now + datetime.timedelta(hours=1))
               .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True))
    if san:
        builder = builder.add_extension(x509.SubjectAlternativeName(san), critical=False)
    cert = builder.sign(issuer[1] if issuer else key, hashes.SHA256())
    return cert, key


def _pem(cert, key=None) -> bytes:
    out = cert.public_bytes(serialization.Encoding.PEM)
    if key is not None:
        out = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                serialization.NoEncryption())
    return out


@pytest.fixture(scope="module")
def pki(tmp_path_factory) -> dict[str, object]:
    folder = tmp_path_factory.mktemp("pki")
    ca = _cert("dockyard test CA", ca=True)
    server = _cert("kube.test", issuer=ca, san=[x509.DNSName("kube.test")])  # not 127.0.0.1: tls-server-name
    client = _cert("alice", issuer=ca)
    files = {}
    for name, (cert, key) in (("ca", ca), ("server", server), ("client", client)):
        files[f"{name}.crt"] = folder / f"{name}.crt"
        files[f"{name}.crt"].write_bytes(_pem(cert))
        files[f"{name}.key"] = folder / f"{name}.key"
        files[f"{name}.key"].write_bytes(_pem(cert, key))
    return files


class _Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, as the apiserver

    def do_GET(self) -> None:
        seen = {"path": self.path, "auth": self.headers.get("Authorization"),
                "client": (self.connection.getpeercert() or {}).get("subject")}
        self.server.seen.append(seen)  # type: ignore[attr-defined]
        self.server.last = self.connection  # type: ignore[attr-defined]
        status = 404 if self.path.startswith("/missing") else 200
        body = json.dumps({"kind": "Status", "code": 404} if status == 404 else seen).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *a: object) -> None:
        pass


@pytest.fixture
def server(pki) -> Iterator[http.server.ThreadingHTTPServer]:
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    srv.seen = []  # type: ignore[attr-defined]
    tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    tls.load_cert_chain(pki["server.crt"], pki["server.key"])
    tls.load_verify_locations(pki["ca.crt"])
    tls.verify_mode = ssl.CERT_OPTIONAL  # a client certificate is read when presented
    srv.socket = tls.wrap_socket(srv.socket, server_side=True)
    thread = threading.Thread(target=srv.serve_forever, daemon=True)
    thread.start()
    yield srv
    srv.shutdown()
    srv.server_close()


def _doc(server, cluster: dict, user: dict) -> dict:
    return {"clusters": [{"name": "c", "cluster": {"server": f"https://127.0.0.1:{server.server_port}", **cluster}}],
            "users": [{"name": "u", "user": user}],
            "contexts": [{"name": "x", "context": {"cluster": "c", "user": "u"}}]}


def _get(t: Transport, path: str = "/api/v1/pods") -> tuple[int, dict]:
    status, _reason, _headers, body = t.send("GET", path, [("labelSelector", "a=b")], None, {}, 5.0)
    return status, json.loads(body)


def test_ca_and_server_name_checked_token_and_client_certificate_sent(server, pki):
    ca = base64.b64encode(Path(pki["ca.crt"]).read_bytes()).decode()
    t = Transport.for_context(_doc(server, {"certificate-authority-data": ca, "tls-server-name": "kube.test"},
                                   {"token": "s3cret", "client-certificate": str(pki["client.crt"]),
                                    "client-key": str(pki["client.key"])}), "x")
    assert t is not None
    status, seen = _get(t)
    assert status == 200 and seen["path"] == "/api/v1/pods?labelSelector=a%3Db" and seen["auth"] == "Bearer s3cret"
    assert seen["client"] == [[["commonName", "alice"]]]
    assert _get(t, "/missing")[0] == 404  # an answer, not an error: Kube makes it the client's ApiException
    t.close()


def test_the_server_certificate_is_refused_without_the_ca_or_for_another_name(server, pki):
    no_ca = Transport.for_context(_doc(server, {"tls-server-name": "kube.test"}, {"token": "t"}), "x")
    with pytest.raises(Unreachable, match="TLS: .*certificate"):
        _get(no_ca)
    wrong_name = Transport.for_context(_doc(server, {"certificate-authority": str(pki["ca.crt"])}, {}), "x")
    with pytest.raises(Unreachable, match="TLS: .*(mismatch|match)"):  # dialled as 127.0.0.1, named kube.test
        _get(wrong_name)
    skip = Transport.for_context(_doc(server, {"insecure-skip-tls-verify": True}, {}), "x")
    assert _get(skip)[0] == 200


def test_a_kept_alive_connection_the_server_closed_is_replaced(server, pki):
    t = Transport.for_context(_doc(server, {"insecure-skip-tls-verify": True}, {}), "x")
    assert _get(t)[0] == 200
    server.last.shutdown(socket.SHUT_RDWR)  # the server closes the idle connection, as the apiserver does
    time.sleep(0.2)
    assert _get(t)[0] == 200
    assert len(server.seen) == 2


def test_a_closed_port_is_unreachable(pki):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # bound, never listening: refused
        doc = {"clusters": [{"name": "c", "cluster": {"server": f"https://127.0.0.1:{port}"}}],
               "users": [{"name": "u", "user": {}}],
               "contexts": [{"name": "x", "context": {"cluster": "c", "user": "u"}}]}
        t = Transport.for_context(doc, "x")
        with pytest.raises(Unreachable, match="Connection refused"):
            _get(t)


def test_credentials_it_does_not_implement_are_left_to_the_kubernetes_client(server):
    for user in ({"exec": {"command": "aws"}}, {"auth-provider": {"name": "oidc"}},
                 {"username": "a", "password": "b"}, {"as": "bob"}):
        assert Transport.for_context(_doc(server, {}, user), "x") is None
    assert Transport.for_context(_doc(server, {"proxy-url": "http://127.0.0.1:3128"}, {}), "x") is None
    with pytest.raises(ValueError, match="a client certificate needs its key"):
        Transport.for_context(_doc(server, {}, {"client-certificate-data": "eA=="}), "x")



def test_a_server_behind_a_proxy_is_left_to_the_client_and_loopback_never_is(monkeypatch):
    doc = {"clusters": [{"name": "c", "cluster": {"server": "https://api.example.test:6443"}}],
           "users": [{"name": "u", "user": {"token": "t"}}],
           "contexts": [{"name": "x", "context": {"cluster": "c", "user": "u"}}]}
    for var in ("HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy", "ALL_PROXY", "all_proxy", "NO_PROXY",
                "no_proxy"):
        monkeypatch.delenv(var, raising=False)
    assert Transport.for_context(doc, "x") is not None
    monkeypatch.setenv("HTTPS_PROXY", "http://127.0.0.1:3128")
    assert Transport.for_context(doc, "x") is None  # the kubernetes client honours the proxy
    monkeypatch.setenv("NO_PROXY", ".example.test")
    assert Transport.for_context(doc, "x") is not None
    monkeypatch.delenv("NO_PROXY")
    doc["clusters"][0]["cluster"]["server"] = "https://127.0.0.1:6443"
    assert Transport.for_context(doc, "x") is not None  # loopback is never proxied


class _Raw:
    """A plain-HTTP server on 127.0.0.1 that answers each request with the next of `answers` (raw bytes, as a server
    may frame them); it keeps what it was sent and counts the connections it accepted."""

    def __init__(self, answers: list[bytes]) -> None:
        self.answers, self.requests, self.connections = list(answers), [], 0
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(4)
        self.port = self.sock.getsockname()[1]
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while self.answers:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.connections += 1
            with conn, conn.makefile("rb") as reader:
                while self.answers:
                    head = b""
                    while not head.endswith(b"\r\n\r\n"):
                        line = reader.readline()
                        if not line:
                            break
                        head += line
                    if not head:
                        break
                    length = next((int(x.split(b":")[1]) for x in head.split(b"\r\n")
                                   if x.lower().startswith(b"content-length:")), 0)
                    self.requests.append(head + reader.read(length))
                    answer = self.answers.pop(0)
                    conn.sendall(answer)
                    if b"connection: close" in answer.lower() or b"content-length" not in answer.lower() \
                            and b"chunked" not in answer.lower():
                        break  # the answer ends with the connection

    def transport(self) -> Transport:
        doc = {"clusters": [{"name": "c", "cluster": {"server": f"http://127.0.0.1:{self.port}"}}],
               "users": [{"name": "u", "user": {"token": "t"}}],
               "contexts": [{"name": "x", "context": {"cluster": "c", "user": "u"}}]}
        t = Transport.for_context(doc, "x")
        assert t is not None
        return t


def test_http_framing_chunked_sized_and_ended_by_the_connection():
    """The three ways an answer's body is framed, read as http.client read them; a connection the server ends (no
    length, or Connection: close) is not reused, a kept-alive one is."""
    raw = _Raw([
        (b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"
         b"5;ext=1\r\n{\"a\":\r\n3\r\n 1}\r\n0\r\nX-Trailer: t\r\n\r\n"),
        b"HTTP/1.1 404 Not Found\r\nContent-Length: 2\r\nX-Twice: 1\r\nX-Twice: 2\r\n\r\n{}",
        b"HTTP/1.0 200 OK\r\nContent-Type: text/plain\r\n\r\nto the end",
        b"HTTP/1.1 201 Created\r\nContent-Length: 4\r\nConnection: close\r\n\r\nmade",
        b"HTTP/1.1 204 No Content\r\n\r\n",
    ])
    t = raw.transport()
    assert t.send("GET", "/a", [("x", "1 2")], None, {}, 5.0) == (
        200, "OK", {"Content-Type": "application/json", "Transfer-Encoding": "chunked"}, b'{"a": 1}')
    status, reason, headers, body = t.send("GET", "/missing", [], None, {}, 5.0)
    assert (status, reason, headers["X-Twice"], body) == (404, "Not Found", "2", b"{}")  # the last of a name
    assert t.send("GET", "/b", [], None, {}, 5.0)[3] == b"to the end"
    assert t.send("POST", "/c", [], b'{"k": 1}', {"Content-Type": "application/json"}, 5.0)[:1] == (201,)
    assert t.send("DELETE", "/d", [], None, {}, 5.0)[:2] == (204, "No Content")
    assert raw.connections == 3  # kept alive for the first two; a new one after each that ended with its answer
    first, _, _, post, delete = raw.requests
    assert first.startswith(b"GET /a?x=1+2 HTTP/1.1\r\nHost: 127.0.0.1:") and b"Authorization: Bearer t\r\n" in first
    assert b"Content-Length" not in first and b"Content-Length" not in delete
    assert post.startswith(b"POST /c HTTP/1.1\r\n") and post.endswith(b'Content-Length: 8\r\nContent-Type: '
                                                                      b'application/json\r\nUser-Agent: dockyard-k8s'
                                                                      b'\r\nAuthorization: Bearer t\r\n\r\n{"k": 1}')
    t.close()


def test_an_answer_cut_short_or_garbled_is_unreachable_not_a_hang():
    for answer, why in ((b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc", "ProtocolError: the body ended after 3"),
                        (b"SSH-2.0-OpenSSH\r\n\r\n", "ProtocolError: bad status line"),
                        (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", "ProtocolError: bad chunk"),
                        (b"", "RemoteDisconnected: Remote end closed connection without response")):
        raw = _Raw([answer])  # b"": the request read, the connection closed unanswered (a fresh one: not retried)
        t = raw.transport()
        with pytest.raises(Unreachable, match=why):
            t.send("GET", "/x", [], None, {}, 2.0)
        t.close()


@given(st.lists(st.tuples(st.text(max_size=12), st.text(max_size=12)), max_size=4))
def test_the_query_is_urlencodes_byte_for_byte(query):
    """The transport encodes a query without urllib.parse, and exactly as urllib.parse.urlencode does."""
    import urllib.parse

    from generator.live.client.transport import urlencode

    assert urlencode(query) == urllib.parse.urlencode(query)


@pytest.mark.parametrize("server", ["https://127.0.0.1:6443", "https://Example.COM", "http://h:80/base/path/",
                                    "https://user:pw@h.example:8443/x", "https://[::1]:6443", "https://[fd00::1]/p",
                                    "https://h.example:6443?q=1#f"])
def test_the_server_splits_as_urlsplit_reads_it(server):
    import urllib.parse

    from generator.live.client.transport import split_server

    url = urllib.parse.urlsplit(server)
    assert split_server(server) == (url.scheme, url.hostname, url.port, url.path)


def test_a_bad_port_is_a_value_error():
    from generator.live.client.transport import split_server

    with pytest.raises(ValueError):
        split_server("https://h:notaport")
