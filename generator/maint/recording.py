"""The recording format of `make record` (generator/maint/record_cluster.py) and tests/support/fake_cluster.py.

A recording pool stands in for the kubernetes client's urllib3 PoolManager and keeps each request (method, path,
query, and for same-path writes the body's `match` part) with its answer (status, reason, trimmed JSON body or
text; or the connection error). One file per scenario, one exchange a line; repeated exchanges kept once.
"""

from __future__ import annotations

import base64
import contextlib
import gzip
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlsplit

SSAR = "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews"


# Request keys ---------------------------------------------------------------------------------------

def split_url(url: str) -> tuple[str, dict[str, str]]:
    """(path, query) of a request URL."""
    parts = urlsplit(url)
    return parts.path, dict(parse_qsl(parts.query))


def match_of(path: str, body: Any) -> Any:
    """The part of a write's body that tells same-path requests apart (None: answers go in order)."""
    if not isinstance(body, dict):
        return None
    if path == SSAR:
        return (body.get("spec") or {}).get("resourceAttributes")
    if path.endswith("/pods"):
        return (body.get("metadata") or {}).get("generateName")
    return None


# Trimming ------------------------------------------------------------------------------------------

def _small_release(encoded: str) -> str:
    """A Helm record Secret's `release` value with only what the live code reads (chart metadata, info)."""
    raw = base64.b64decode(base64.b64decode(encoded))
    record = json.loads(gzip.decompress(raw) if raw[:2] == b"\x1f\x8b" else raw)
    keep = {k: record.get(k) for k in ("name", "namespace", "version", "info")}
    keep["chart"] = {"metadata": (record.get("chart") or {}).get("metadata")}
    packed = gzip.compress(json.dumps(keep).encode(), mtime=0)
    return base64.b64encode(base64.b64encode(packed)).decode()


# fields no test reads (containers' env, probes, volumes, ...; none the typed client requires), and tokens
DROP = frozenset({"managedFields", "token", "env", "envFrom", "volumeMounts", "volumes", "livenessProbe",
                  "readinessProbe", "startupProbe", "lifecycle", "command", "args", "terminationMessagePath",
                  "terminationMessagePolicy", "containerID", "tolerations", "podIPs", "hostIPs",
                  "dnsPolicy", "enableServiceLinks", "schedulerName", "preemptionPolicy", "allocatedResources",
                  "volumeMountStatus", "resolvedImage", "user"})


def trim(doc: Any) -> Any:
    """Drop what no test reads (DROP, last-applied annotations, Helm's chart files)."""
    if isinstance(doc, list):
        return [trim(d) for d in doc]
    if not isinstance(doc, dict):
        return doc
    out = {}
    for key, value in doc.items():
        if key in DROP:
            continue
        if key == "annotations" and isinstance(value, dict):
            value = {k: v for k, v in value.items() if "last-applied" not in k}
        out[key] = trim(value)
    meta = out.get("metadata") or {}
    if out.get("kind") == "Secret" or (meta.get("labels") or {}).get("owner") == "helm":
        data = out.get("data") or {}
        if "release" in data:
            data["release"] = _small_release(data["release"])
    return out


# Recording -----------------------------------------------------------------------------------------

class Tape:
    """The exchanges of one scenario."""

    def __init__(self) -> None:
        self.exchanges: list[dict[str, Any]] = []

    def add(self, method: str, url: str, body: Any, status: int | None, reason: str | None, data: bytes | None,
            error: BaseException | None = None) -> None:
        path, query = split_url(url)
        if query.get("watch"):
            return  # watch streams only wake waits early; no test replays them
        sent = json.loads(body) if isinstance(body, str | bytes) and body else None
        ex: dict[str, Any] = {"method": method, "path": path}
        if query:
            ex["query"] = query
        match = match_of(path, sent)
        if match is not None:
            ex["match"] = match
        if error is not None:
            reason_exc = getattr(error, "reason", None)
            ex["error"] = {"type": type(error).__name__, "reason_type": type(reason_exc).__name__,
                           "reason": str(reason_exc)}
            if isinstance(error, _Refused):
                ex["error"] = {"type": "MaxRetryError", "reason_type": "NewConnectionError", "reason": error.reason}
        else:
            ex["status"], ex["reason"] = status, reason
            try:
                ex["body"] = trim(json.loads(data)) if data else None
            except ValueError:
                ex["text"] = (data or b"").decode("utf-8", "replace")
        if ex not in self.exchanges:  # the fake repeats an answer: once is enough
            self.exchanges.append(ex)


TAPE: Tape | None = None


class RecordingPool:
    """Stands in for a RESTClientObject's urllib3 PoolManager: passes every request on, keeps the answer."""

    def __init__(self, real: Any) -> None:
        self.real = real

    def request(self, method: str, url: str, **kw: Any) -> Any:
        try:
            resp = self.real.request(method, url, **kw)
        except Exception as exc:
            if TAPE is not None:
                TAPE.add(method, url, kw.get("body"), None, None, None, exc)
            raise
        if TAPE is not None and not split_url(url)[1].get("watch"):
            data = resp.data  # read it now; later reads get the same bytes (cached by urllib3)
            TAPE.add(method, url, kw.get("body"), resp.status, resp.reason, data)
        return resp

    def __getattr__(self, name: str) -> Any:
        return getattr(self.real, name)


class _Refused:
    """A transport failure in the words a urllib3 connection failure is recorded in (`<where>: <message>`), so the
    fake replays it on either seam (tests/support/fake_cluster.py)."""

    def __init__(self, exc: Any) -> None:
        errno = f"[Errno {exc.errno}] " if exc.errno is not None else ""
        self.reason = f"transport: Failed to establish a new connection: {errno}{exc.detail}"


def install() -> None:
    """Every request from now on records: each ApiClient's through RecordingPool, and the standard library's
    transport (generator/live/client/transport.py: the plain requests of a context with plain credentials) through
    a wrapper of Transport.send."""
    from urllib.parse import urlencode

    from kubernetes.client import rest

    from generator.live.client.transport import Transport, Unreachable

    original = rest.RESTClientObject.__init__

    def init(self: Any, configuration: Any) -> None:
        original(self, configuration)
        self.pool_manager = RecordingPool(self.pool_manager)

    rest.RESTClientObject.__init__ = init  # type: ignore[method-assign]
    send = Transport.send

    def recorded(self: Transport, method: str, path: str, query: list[tuple[str, str]], body: bytes | None,
                 headers: dict[str, str], timeout: float) -> tuple[int, str, dict[str, str], bytes]:
        url = path + ("?" + urlencode(query) if query else "")
        try:
            answer = send(self, method, path, query, body, headers, timeout)
        except Unreachable as exc:
            if TAPE is not None:
                TAPE.add(method, url, body, None, None, None, _Refused(exc))  # type: ignore[arg-type]
            raise
        if TAPE is not None:
            TAPE.add(method, url, body, answer[0], answer[1], answer[3])
        return answer

    Transport.send = recorded  # type: ignore[method-assign]


@contextlib.contextmanager
def scenario(out: Path, name: str, note: str) -> Iterator[Tape]:
    """Record the requests made in the block to out/<name>.json."""
    global TAPE
    TAPE = Tape()
    try:
        yield TAPE
    finally:
        tape, TAPE = TAPE, None
    head = {"scenario": name, "note": note, "recorded_by": "make record (generator/maint/record_cluster.py)"}
    lines = [json.dumps(ex, ensure_ascii=False) for ex in tape.exchanges]  # one exchange a line
    text = json.dumps(head, ensure_ascii=False)[:-1] + ', "exchanges": [\n' + ",\n".join(lines) + "\n]}\n"
    out.mkdir(parents=True, exist_ok=True)
    (out / f"{name}.json").write_text(text)
    print(f"  {name}.json: {len(tape.exchanges)} exchanges", flush=True)
