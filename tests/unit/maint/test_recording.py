"""The recordings and the fake that replays them: no credentials in the committed files, every request the
fake cannot answer fails the test, and the typed client's models are built from the replayed JSON too."""

from __future__ import annotations

import json
import re

import pytest

from generator.live.client.kube import Kube
from tests.support.fake_cluster import RECORDED, install, recording

SCENARIOS = sorted(p.stem for p in RECORDED.glob("*.json"))
CREDENTIALS = re.compile(r"eyJ[\w-]{20,}|-----BEGIN|\"token\"|client-key|bearer ", re.IGNORECASE)


def test_every_scenario_is_recorded_small_and_without_credentials():
    assert {"status_pending", "lease", "forbidden", "errors", "crd_missing", "doctor_admin", "doctor_alice"} <= set(
        SCENARIOS)
    for name in SCENARIOS:
        text = (RECORDED / f"{name}.json").read_text()
        assert not CREDENTIALS.search(text), name
        assert len(text) < 100_000, f"{name}.json: trim it (generator/maint/recording.py DROP)"
        doc = recording(name)
        assert doc["scenario"] == name and doc["exchanges"]


def test_a_request_nothing_was_recorded_for_fails_loudly(monkeypatch, tmp_path):
    fake = install(monkeypatch, tmp_path, "errors")
    with pytest.raises(AssertionError, match="nothing recorded for GET /api/v1/nodes"):
        Kube().request("GET", "/api/v1/nodes")
    assert fake.unmatched == ["GET /api/v1/nodes {}"]
    fake.expect_unmatched("GET /api/v1/nodes {}")  # this test's purpose: not a teardown failure


def test_typed_calls_replay_too(monkeypatch, tmp_path):
    install(monkeypatch, tmp_path, "status_pending")
    kube = Kube()
    ns = kube.core.read_namespace("rec")
    assert ns.metadata.name == "rec" and ns.status.phase == "Active"
    assert kube.calls == 1


def test_requests_are_bounded_by_the_verbs_deadline(monkeypatch, tmp_path):
    """Kube gives each request its request_timeout, cut to what is left of the verb's deadline (at least
    REQUEST_FLOOR seconds to read the end state)."""
    import time

    from generator.live.client.kube import REQUEST_FLOOR

    fake = install(monkeypatch, tmp_path, "status_pending")
    kube = Kube()
    kube.namespace_exists("rec")
    kube.deadline = time.monotonic() + 10
    kube.namespace_exists("rec")
    kube.deadline = time.monotonic() - 1  # past it
    kube.namespace_exists("rec")
    assert fake.timeouts[0] == kube.request_timeout == 30.0
    assert 9 < fake.timeouts[1] <= 10 and fake.timeouts[2] == REQUEST_FLOOR


def test_the_standard_library_transport_is_recorded_as_the_client_is(monkeypatch, tmp_path):
    """`make record` hooks both ways a request leaves: the plain requests of a context with plain credentials go
    through Transport.send, and a tape of them (answers and a refused connection) reads as the client's does."""
    import http.server
    import socket
    import threading

    from generator.live.client.transport import Transport, Unreachable
    from generator.maint import recording as rec

    monkeypatch.setattr(Transport, "send", Transport.send)  # restored at teardown: install() patches it
    from kubernetes.client import rest

    monkeypatch.setattr(rest.RESTClientObject, "__init__", rest.RESTClientObject.__init__)
    rec.install()

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            body = b'{"kind": "PodList", "items": []}'
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *a: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))
        refused = Transport(f"http://127.0.0.1:{closed.getsockname()[1]}", None, None, None)
        try:
            with rec.scenario(tmp_path, "plain", "test"):
                up = Transport(f"http://127.0.0.1:{server.server_port}", None, None, None)
                assert up.send("GET", "/api/v1/pods", [("labelSelector", "a=b")], None, {}, 5.0)[0] == 200
                with pytest.raises(Unreachable):
                    refused.send("GET", "/version", [], None, {}, 5.0)
        finally:
            server.shutdown()
            server.server_close()
    answer, failure = json.loads((tmp_path / "plain.json").read_text())["exchanges"]
    assert answer == {"method": "GET", "path": "/api/v1/pods", "query": {"labelSelector": "a=b"}, "status": 200,
                      "reason": "OK", "body": {"kind": "PodList", "items": []}}
    assert failure["path"] == "/version" and failure["error"]["type"] == "MaxRetryError"
    assert "[Errno 111] Connection refused" in failure["error"]["reason"]
