"""The reference claim client (generator/in_image/sandbox_client.py): a file a runtime copies into any image, so the
standard library only, and what it says when it is not in a pod that may claim. Its claims against agent-sandbox's
real controller: tests/live/test_live_agent_sandbox.py."""

from __future__ import annotations

import ast
import json
import sys
from pathlib import Path

import pytest

from generator.in_image import sandbox_client

SOURCE = Path(sandbox_client.__file__)


def test_it_imports_the_standard_library_only():
    tree = ast.parse(SOURCE.read_text())
    names = {a.name.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    names |= {n.module.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.level == 0}
    assert names - {"__future__"} <= set(sys.stdlib_module_names), names


def test_outside_a_claiming_pod_it_names_what_is_missing(tmp_path):
    with pytest.raises(sandbox_client.ClaimError, match="not set: DOCKYARD_SANDBOX_WARM_POOL, .*KUBERNETES"):
        sandbox_client.Claims.from_env({}, str(tmp_path))
    env = {"DOCKYARD_SANDBOX_WARM_POOL": "p", "DOCKYARD_SANDBOX_NAMESPACE": "n", "DOCKYARD_SANDBOX_PORT": "9090",
           "KUBERNETES_SERVICE_HOST": "127.32.0.1"}
    with pytest.raises(sandbox_client.ClaimError, match="no ServiceAccount token at"):
        sandbox_client.Claims.from_env(env, str(tmp_path))
    (tmp_path / "token").write_text("t\n")
    with pytest.raises(sandbox_client.ClaimError, match="no cluster CA at"):
        sandbox_client.Claims.from_env(env, str(tmp_path))


class FakeClaims:
    """Claims whose claims bind at once (or never, for the names in `stuck`), recording what was asked."""

    def __init__(self, stuck: tuple[str, ...] = ()):
        self.made, self.released, self.stuck = [], [], stuck

    def claim(self) -> str:
        self.made.append(f"c{len(self.made) + 1}")
        return self.made[-1]

    def wait_bound(self, name: str, timeout: float) -> sandbox_client.Executor:
        if name in self.stuck:
            raise sandbox_client.ClaimError(f"{name} not bound")
        return sandbox_client.Executor(name, f"http://{name}:9090")

    def release(self, name: str) -> None:
        self.released.append(name)


def test_claiming_ahead_hands_out_the_spare_and_claims_the_next_in_its_place():
    fake = FakeClaims()
    with sandbox_client.Ahead(fake) as ahead:
        name, executor = ahead.take()  # the first, claimed and bound by the thread
        assert (name, executor.url) == ("c1", "http://c1:9090")
        assert ahead.take()[0] == "c2"
        assert fake.released == []  # the episodes' claims are the caller's to release
    assert fake.made == ["c1", "c2", "c3"] and fake.released == ["c3"]  # the spare goes with the block
    with pytest.raises(sandbox_client.ClaimError, match="closed"):
        ahead.take()


def test_a_spare_that_never_binds_is_released_and_said():
    fake = FakeClaims(stuck=("c1",))
    ahead = sandbox_client.Ahead(fake)
    with pytest.raises(sandbox_client.ClaimError, match="c1 not bound"):
        ahead.take()
    assert fake.released == ["c1"]
    assert ahead.take()[0] == "c2"  # the next was started all the same
    ahead.close()
    assert fake.made == ["c1", "c2", "c3"] and fake.released == ["c1", "c3"]


class FakeApi:
    """An API server on 127.0.0.1 for one claim: GET answers `claim`; a watch sends `events` (JSON lines), then
    ends as `end` says: "close" (cleanly), or "cut" (mid-chunk, as a reset proxy would)."""

    def __init__(self, claim: dict, events: list[dict], end: str = "close"):
        import http.server
        import threading

        api = self
        self.claim, self.events, self.end, self.requests = claim, events, end, []

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def do_GET(self):
                api.requests.append(self.path)
                if "watch=1" not in self.path:
                    body = json.dumps(api.claim).encode()
                    self.send_response(200)
                    self.send_header("Content-Length", str(len(body)))
                    self.end_headers()
                    self.wfile.write(body)
                    return
                self.send_response(200)
                self.send_header("Transfer-Encoding", "chunked")
                self.end_headers()
                for event in api.events:
                    line = json.dumps(event).encode() + b"\n"
                    self.wfile.write(b"%x\r\n%s\r\n" % (len(line), line))
                if api.end == "cut":
                    self.wfile.write(b"40\r\n{\"type\": ")  # a chunk that never ends
                else:
                    self.wfile.write(b"0\r\n\r\n")
                self.close_connection = True

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.claims = sandbox_client.Claims("pool", "ns", 9090, f"http://127.0.0.1:{self.server.server_port}", "t",
                                            None)

    def close(self):
        self.server.shutdown()
        self.server.server_close()


def _claim_obj(reason: str | None = None, ip: str | None = None) -> dict:
    cond = [{"type": "Ready", "status": "True" if ip else "False", "reason": reason or "SandboxNotReady",
             "message": f"{reason} here"}]
    return {"metadata": {"name": "c", "resourceVersion": "7"},
            "status": {"conditions": cond, **({"sandbox": {"podIPs": [ip]}} if ip else {})}}


def test_the_watch_hands_over_the_executor_once_bound():
    api = FakeApi(_claim_obj(), [{"type": "MODIFIED", "object": _claim_obj()},
                                 {"type": "MODIFIED", "object": _claim_obj(ip="10.244.0.9")}])
    try:
        assert api.claims.wait_bound("c", 5).url == "http://10.244.0.9:9090"
        assert len(api.requests) == 2 and "fieldSelector=metadata.name%3Dc" in api.requests[1]
    finally:
        api.close()


def test_a_claim_deleted_while_waiting_is_said():
    api = FakeApi(_claim_obj(), [{"type": "DELETED", "object": _claim_obj()}])
    try:
        with pytest.raises(sandbox_client.ClaimError, match="was deleted while waiting"):
            api.claims.wait_bound("c", 5)
    finally:
        api.close()


@pytest.mark.parametrize("end", ["close", "cut"])
def test_a_watch_that_ends_at_once_is_read_again_after_a_growing_pause(end):
    """A stream cut mid-chunk is read again like one that ends cleanly (not an http.client error to the caller),
    and neither becomes a tight loop of requests."""
    api = FakeApi(_claim_obj(), [], end=end)
    try:
        with pytest.raises(sandbox_client.ClaimError, match=r"not bound after 2s \(SandboxNotReady"):
            api.claims.wait_bound("c", 2)
        assert len(api.requests) < 20, len(api.requests)  # without the pause: thousands in 2 s
    finally:
        api.close()


def test_a_reason_waiting_cannot_cure_ends_the_wait_after_the_grace(monkeypatch):
    monkeypatch.setattr(sandbox_client, "REFUSED_GRACE", 0.5)
    api = FakeApi(_claim_obj("WarmPoolNotFound"), [])
    try:
        import time

        t0 = time.monotonic()
        with pytest.raises(sandbox_client.ClaimError, match="cannot be bound .WarmPoolNotFound: WarmPoolNotFound"):
            api.claims.wait_bound("c", 60)
        assert time.monotonic() - t0 < 10
    finally:
        api.close()
