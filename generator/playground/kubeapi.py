"""A few raw calls to the playground's apiserver (stdlib only; keeps `up`/`status` fast to start).

Connections go straight to 127.0.0.1 (no proxy is ever consulted) and verify the playground CA.
"""

from __future__ import annotations

import http.client
import json
import ssl
from typing import Any
from urllib.parse import urlsplit


class ApiError(RuntimeError):
    def __init__(self, status: int, body: str):
        super().__init__(f"HTTP {status}: {body[:500]}")
        self.status = status
        self.body = body


def tls_context(ca_file: str) -> ssl.SSLContext:
    ctx = ssl.create_default_context(cafile=ca_file)
    ctx.check_hostname = True
    return ctx


def get_raw(url: str, ca_file: str | None = None, token: str | None = None, timeout: float = 3.0) -> tuple[int, bytes]:
    """GET `url` (http or https on loopback); returns (status, body). Raises OSError on no answer."""
    parts = urlsplit(url)
    if parts.hostname not in ("127.0.0.1", "localhost"):
        raise ValueError(f"refusing a non-loopback address: {url}")
    if parts.scheme == "https":
        ctx = tls_context(ca_file) if ca_file else ssl._create_unverified_context()
        conn: http.client.HTTPConnection = http.client.HTTPSConnection(
            parts.hostname, parts.port, timeout=timeout, context=ctx
        )
    else:
        conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=timeout)
    try:
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        path = parts.path or "/"
        if parts.query:
            path += "?" + parts.query
        conn.request("GET", path, headers=headers)
        resp = conn.getresponse()
        return resp.status, resp.read()
    finally:
        conn.close()


class Api:
    def __init__(self, server: str, token: str, ca_file: str, timeout: float = 30.0):
        parts = urlsplit(server)
        if parts.hostname != "127.0.0.1":
            raise ValueError(f"the playground apiserver must be on 127.0.0.1, not {server}")
        self.host, self.port = parts.hostname, parts.port
        self.token = token
        self.ctx = tls_context(ca_file)
        self.timeout = timeout

    def request(self, method: str, path: str, body: object | None = None,
                content_type: str = "application/json", timeout: float | None = None) -> tuple[int, object]:
        conn = http.client.HTTPSConnection(self.host, self.port, timeout=timeout or self.timeout, context=self.ctx)
        try:
            headers = {"Authorization": f"Bearer {self.token}", "Accept": "application/json"}
            data = None
            if body is not None:
                data = body if isinstance(body, (bytes, str)) else json.dumps(body)
                if isinstance(data, str):
                    data = data.encode()
                headers["Content-Type"] = content_type
            conn.request(method, path, body=data, headers=headers)
            resp = conn.getresponse()
            raw = resp.read()
        finally:
            conn.close()
        try:
            parsed: object = json.loads(raw) if raw else None
        except ValueError:
            parsed = raw.decode(errors="replace")
        return resp.status, parsed

    def get(self, path: str, timeout: float | None = None) -> Any:
        status, body = self.request("GET", path, timeout=timeout)
        if status != 200:
            raise ApiError(status, json.dumps(body) if not isinstance(body, str) else body)
        return body

    def create(self, path: str, obj: dict[str, Any]) -> bool:
        """POST; True if created, False if it already existed."""
        status, body = self.request("POST", path, obj)
        if status in (200, 201, 202):
            return True
        if status == 409:
            return False
        raise ApiError(status, json.dumps(body) if not isinstance(body, str) else body)

    def apply(self, path: str, obj: object, manager: str = "dockyard-playground") -> Any:
        """Server-side apply (force) of one object at `path` (the object's own URL)."""
        status, body = self.request(
            "PATCH", f"{path}?fieldManager={manager}&force=true", obj,
            content_type="application/apply-patch+yaml", timeout=120,
        )
        if status not in (200, 201):
            raise ApiError(status, json.dumps(body) if not isinstance(body, str) else body)
        return body
