"""A fake Kubernetes API server for offline tests of generator/live, replaying tests/unit/recorded/*.json.

There are two seams, one per way a request of `Kube` leaves the process, and the fake answers both alike:
the urllib3 PoolManager inside the kubernetes client's RESTClientObject (the typed CoreV1Api/... calls, and
every request of a context whose credentials need the client), and `Transport.send` of the standard library's
HTTPS (generator/live/client/transport.py: the plain-JSON `request`/`list` of a context with plain
credentials, as the fake's kubeconfig has). Kube, the client's ApiClient and RESTClientObject, and the live
code's error translation run for real; only the socket is replaced. An answer is the recorded status, reason
and body (a real urllib3 HTTPResponse, or the transport's tuple); a recorded connection failure is raised as
urllib3's MaxRetryError(NewConnectionError), or the transport's Unreachable, with the recorded text.

Replays are keyed by method + path + query (+ the body's `match` part for SelfSubjectAccessReviews and dry-run
pods: generator.maint.recording.match_of). Several answers to one key come in recorded order, the last
repeating. A request nothing was recorded for fails the test (re-record with `make record`): at once, and
again at the test's teardown (tests/conftest.py calls `check_installed`), since the code under test may
swallow the AssertionError in its own `except Exception`. A test that makes one on purpose says so
(`fake.expect_unmatched`).

Leases (the run lock) are state, not replay: a lock test turns on the holder's pid, host and renewTime *now*,
which an answer recorded earlier cannot hold. The fake keeps Lease objects and answers POST/GET/PUT/DELETE as
the apiserver did while recording (lease.json): server fields on create, a new resourceVersion on each write,
409 AlreadyExists, 409 Conflict on a stale resourceVersion or delete precondition, 404 NotFound, each with the
recorded Status body (the lease name substituted).
"""

from __future__ import annotations

import copy
import io
import json
import re
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import urllib3
from urllib3.exceptions import MaxRetryError, NewConnectionError

from generator.maint.recording import match_of, split_url

RECORDED = Path(__file__).resolve().parents[1] / "unit" / "recorded"  # tests/unit/recorded
SERVER = "https://127.0.0.1:6443"  # never dialed: the fake answers before any socket
LEASES = re.compile(r"^/apis/coordination\.k8s\.io/v1/namespaces/([^/]+)/leases(?:/([^/]+))?$")
RECORDED_LEASE = "small.dockyard-run"


def recording(name: str) -> dict[str, Any]:
    return json.loads((RECORDED / f"{name}.json").read_text())


def _key(method: str, path: str, query: dict[str, str], match: Any) -> tuple[Any, ...]:
    return method, path, tuple(sorted(query.items())), json.dumps(match, sort_keys=True)


class _Named:
    """Stands for the connection in a NewConnectionError: prints as the recorded one did."""

    def __init__(self, text: str) -> None:
        self.text = text

    def __str__(self) -> str:
        return self.text


def _answers(name: str) -> dict[tuple[Any, ...], list[dict[str, Any]]]:
    """A scenario's recorded answers, by request (several to one request: in the order they were made)."""
    grouped: dict[tuple[Any, ...], list[dict[str, Any]]] = {}
    for ex in recording(name)["exchanges"]:
        grouped.setdefault(_key(ex["method"], ex["path"], ex.get("query") or {}, ex.get("match")), []).append(ex)
    return grouped


class FakeCluster:
    """Recorded answers of the named scenarios (later scenarios' answers override earlier ones)."""

    def __init__(self, *scenarios: str) -> None:
        self.answers: dict[tuple[Any, ...], list[dict[str, Any]]] = {}
        self.served: dict[tuple[Any, ...], int] = {}
        self.requests: list[tuple[str, str, dict[str, str]]] = []  # what the code asked, in order
        self.unmatched: list[str] = []  # requests nothing answers: checked again at the test's teardown
        self.expected_unmatched: list[str] = []  # those the test makes on purpose (expect_unmatched)
        self.timeouts: list[float | None] = []  # each request's total timeout (seconds), as urllib3 got it
        for name in scenarios:
            self.answers.update(_answers(name))
        self.leases: dict[tuple[str, str], dict[str, Any]] = {}
        self._version = 1000
        lease = {(ex["method"], ex["status"]): ex["body"] for ex in recording("lease")["exchanges"] if "status" in ex}
        self._lease_bodies = {"created": lease[("POST", 201)], "exists": lease[("POST", 409)],
                              "conflict": lease[("PUT", 409)], "precondition": lease[("DELETE", 409)],
                              "deleted": lease[("DELETE", 200)], "absent": lease[("GET", 404)]}

    # the PoolManager interface RESTClientObject uses ------------------------------------------------
    def request(self, method: str, url: str, body: Any = None, timeout: Any = None, **_: Any) -> urllib3.HTTPResponse:
        path, query = split_url(url)
        sent = json.loads(body) if isinstance(body, str | bytes) and body else None
        self.requests.append((method, path, query))
        self.timeouts.append(timeout.total if timeout is not None else None)
        m = LEASES.match(path)
        if m:
            try:
                return self._lease(method, m.group(1), m.group(2), sent)
            except AssertionError:  # a lease request the model does not answer: unmatched as well
                self.unmatched.append(f"{method} {path} {query}")
                raise
        key = _key(method, path, query, match_of(path, sent))
        answers = self.answers.get(key)
        if not answers:
            self.unmatched.append(f"{method} {path} {query}")
            raise AssertionError(f"nothing recorded for {method} {path} {query or ''} (re-record: make record)")
        n = self.served.get(key, 0)
        self.served[key] = n + 1
        ex = answers[min(n, len(answers) - 1)]
        if "error" in ex:
            where, _, message = ex["error"]["reason"].partition(": ")
            raise MaxRetryError(None, url, NewConnectionError(_Named(where), message))
        if "text" in ex:
            return self._response(ex["status"], ex["reason"], ex["text"].encode(), "text/plain; charset=utf-8")
        return self._response(ex["status"], ex["reason"], json.dumps(ex["body"]).encode())

    # the transport's interface (Transport.send) -----------------------------------------------------
    def send(self, method: str, path: str, query: list[tuple[str, str]], body: bytes | None,
             headers: dict[str, str], timeout: float) -> tuple[int, str, dict[str, str], bytes]:
        from urllib.parse import urlencode

        from generator.live.client.transport import Unreachable

        url = SERVER + path + ("?" + urlencode(query) if query else "")
        try:
            resp = self.request(method, url, body=body, timeout=urllib3.Timeout(total=timeout))
        except MaxRetryError as exc:
            m = re.search(r"\[Errno -?\d+\] ([^'\")]+)", str(exc.reason))
            raise Unreachable(m.group(1).strip() if m else str(exc.reason)) from None
        return resp.status, resp.reason or "", dict(resp.headers), resp.read()

    def answer_first(self, scenario: str) -> None:
        """The recorded answers of `scenario` come before this fake's own to the same requests: a cluster that
        answers each such request first as `scenario`'s did, then as this fake's scenarios did (the last
        repeating)."""
        for key, answers in _answers(scenario).items():
            self.answers[key] = answers + self.answers.get(key, [])

    def clear(self) -> None:
        pass

    def expect_unmatched(self, *requests: str) -> None:
        """These unmatched requests (as `unmatched` spells them) are the test's purpose: not a teardown failure."""
        self.expected_unmatched += requests

    @staticmethod
    def _response(status: int, reason: str, data: bytes, content_type: str = "application/json") -> Any:
        return urllib3.HTTPResponse(body=io.BytesIO(data), headers={"Content-Type": content_type}, status=status,
                                    reason=reason, preload_content=False)

    # leases ------------------------------------------------------------------------------------------
    def _status(self, which: str, name: str) -> Any:
        doc = json.loads(json.dumps(self._lease_bodies[which]).replace(RECORDED_LEASE, name))
        return self._response(doc["code"], {404: "Not Found", 409: "Conflict"}.get(doc["code"], "OK"),
                              json.dumps(doc).encode())

    def _bump(self) -> str:
        self._version += 1
        return str(self._version)

    def _lease(self, method: str, namespace: str, name: str | None, sent: Any) -> Any:
        if method == "POST":
            name = sent["metadata"]["name"]
            if (namespace, name) in self.leases:
                return self._status("exists", name)
            obj = copy.deepcopy(sent)
            template = self._lease_bodies["created"]["metadata"]
            obj["metadata"].update(namespace=namespace, uid=str(uuid.uuid4()), resourceVersion=self._bump(),
                                   creationTimestamp=datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"))
            added = set(template) - {"name", "labels", "annotations"}  # what the apiserver added when recording
            assert added <= set(obj["metadata"]), f"the apiserver adds {added - set(obj['metadata'])}: model them"
            self.leases[(namespace, name)] = obj
            return self._response(201, "Created", json.dumps(obj).encode())
        assert name, f"{method} of the lease collection is not modelled"
        current = self.leases.get((namespace, name))
        if current is None:
            return self._status("absent", name)
        if method == "GET":
            return self._response(200, "OK", json.dumps(current).encode())
        if method == "PUT":
            if sent["metadata"].get("resourceVersion") != current["metadata"]["resourceVersion"]:
                return self._status("conflict", name)
            obj = copy.deepcopy(sent)
            obj["metadata"] = {**current["metadata"], **obj["metadata"], "resourceVersion": self._bump()}
            self.leases[(namespace, name)] = obj
            return self._response(200, "OK", json.dumps(obj).encode())
        if method == "DELETE":
            wanted = ((sent or {}).get("preconditions") or {}).get("resourceVersion")
            if wanted and wanted != current["metadata"]["resourceVersion"]:
                return self._status("precondition", name)
            del self.leases[(namespace, name)]
            return self._response(200, "OK", json.dumps(self._lease_bodies["deleted"]).encode())
        raise AssertionError(f"{method} of a lease is not modelled")

    def lease(self, namespace: str, release: str) -> dict[str, Any] | None:
        return self.leases.get((namespace, f"{release}.dockyard-run"))

    def take_over(self, namespace: str, release: str, holder: str) -> None:
        """Another holder writes the lease (one step: a renewal in flight then gets 409 Conflict)."""
        key = (namespace, f"{release}.dockyard-run")
        old = self.leases[key]
        self.leases[key] = {**old, "metadata": {**old["metadata"], "resourceVersion": self._bump()},
                            "spec": {**old["spec"], "holderIdentity": holder}}


def write_kubeconfig(folder: Path, namespace: str | None = None) -> Path:
    """A kubeconfig for the fake: a token, no certificates (nothing is dialed)."""
    context: dict[str, Any] = {"cluster": "fake", "user": "fake"}
    if namespace:
        context["namespace"] = namespace
    path = folder / "fake.kubeconfig"
    path.write_text(json.dumps({
        "apiVersion": "v1", "kind": "Config", "current-context": "fake",
        "clusters": [{"name": "fake", "cluster": {"server": SERVER, "insecure-skip-tls-verify": True}}],
        "users": [{"name": "fake", "user": {"token": "not-a-token"}}],
        "contexts": [{"name": "fake", "context": context}]}))
    return path


INSTALLED: list[FakeCluster] = []  # the fakes of the running test, checked and forgotten at its teardown


def check_installed() -> None:
    """At a test's teardown (tests/conftest.py): fail on any request a fake of this test had no answer for
    (beyond those it expected), even when the code under test caught the AssertionError; forget the fakes."""
    fakes, INSTALLED[:] = list(INSTALLED), []
    missed = []
    for fake in fakes:
        expected = list(fake.expected_unmatched)
        for request in fake.unmatched:
            if request in expected:
                expected.remove(request)
            else:
                missed.append(request)
    assert not missed, (f"the recorded fake cluster had no answer for {len(missed)} request(s), whatever the "
                        f"code did with the error: {missed} (re-record: make record, or fake.expect_unmatched)")


def install(monkeypatch: Any, tmp_path: Path, *scenarios: str, namespace: str | None = None) -> FakeCluster:
    """Every kubernetes ApiClient made in the test talks to a FakeCluster of these scenarios; KUBECONFIG
    points at a kubeconfig for it (context namespace `namespace`). Its unmatched requests fail the test at
    teardown (check_installed)."""
    from kubernetes.client import rest

    fake = FakeCluster(*scenarios)
    INSTALLED.append(fake)
    original = rest.RESTClientObject.__init__

    def init(self: Any, configuration: Any) -> None:
        original(self, configuration)
        self.pool_manager = fake

    monkeypatch.setattr(rest.RESTClientObject, "__init__", init)
    from generator.live.client.transport import Transport

    monkeypatch.setattr(Transport, "send", lambda self, *a: fake.send(*a))
    monkeypatch.setenv("KUBECONFIG", str(write_kubeconfig(tmp_path, namespace)))
    return fake
