"""A reference client for sandbox.backend agent-sandbox, for a runtime to copy: claim a sandbox from the release's
warm pool, wait until the claim is bound, send the claimed executor a task, release the claim.

One file of the standard library only, so it runs in any image with Python 3 (the Ray pods' included) and can be
copied as it is: it needs no package of this repository. Inside a Ray pod of the release everything comes from
the environment the chart gives it: DOCKYARD_SANDBOX_WARM_POOL, DOCKYARD_SANDBOX_NAMESPACE, DOCKYARD_SANDBOX_PORT
(sandbox.injectUrls), the API server's address (KUBERNETES_SERVICE_HOST/PORT) and the pod's ServiceAccount token
and CA, which the chart's Role lets create, get, watch and delete SandboxClaims (charts/dockyard/templates/sandbox/
claims-rbac.yaml). It uses no more than that: the executor's address is the claim's own status
(status.sandbox.podIPs), so it never reads a Sandbox or a pod.

    from sandbox_client import Claims

    claims = Claims.from_env()                   # lease=3600: a claim nobody releases ends after an hour
    with claims.episode() as executor:           # claim, wait until bound; released on the way out
        answer = executor.submit({"command": "pytest -q"})

Why not the published client (PyPI k8s-agent-sandbox 1.0.8): its in-cluster mode reads the pod IP from the
Sandbox object (one more RBAC grant) and speaks agent-sandbox's own runtime API, not the executor's
POST /task/submit; it also brings kubernetes, requests, pydantic and prometheus-client into the runtime's image.
The claim protocol itself is small: what follows is all of it.

Run as a program it does one episode and prints its timings as JSON (the live tests and the bench use that):
    python3 sandbox_client.py '{"command": "echo hi"}'
"""

from __future__ import annotations

import contextlib
import datetime
import http.client
import json
import os
import ssl
import sys
import threading
import time
import urllib.error
import urllib.request

SA_DIR = "/var/run/secrets/kubernetes.io/serviceaccount"
CLAIMS = "/apis/extensions.agents.x-k8s.io/v1beta1/namespaces/{ns}/sandboxclaims"
# A claim ends at the latest this long after it is made, even when nobody releases it (a Ray worker killed
# mid-episode): the controller deletes the claim, its sandbox and pod at spec.lifecycle.shutdownTime.
LEASE = 3600.0
# Ready=False reasons of agent-sandbox's claim controller that waiting does not cure; after a grace (the release's
# pool may still be on its way) the wait ends with the controller's message instead of at its timeout.
REFUSED = ("WarmPoolNotFound", "TemplateNotFound", "InvalidMetadata", "EnvVarsInjectionRejected")
REFUSED_GRACE = 10.0
UTC = datetime.timezone.utc  # noqa: UP017  (datetime.UTC is Python 3.11+; a runtime's image may be older)


class ClaimError(RuntimeError):
    """A claim that could not be made, bound or released; the message says which and why."""


class Executor:
    """The claimed sandbox's executor: POST /task/submit on its pod IP and the executor port."""

    def __init__(self, claim: str, url: str):
        self.claim, self.url = claim, url

    def submit(self, task: dict, timeout: float = 600.0) -> dict:
        req = urllib.request.Request(self.url + "/task/submit", data=json.dumps(task).encode(), method="POST",
                                     headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            return json.loads(resp.read())


class Claims:
    """SandboxClaims of one warm pool, made with the pod's ServiceAccount."""

    def __init__(self, warm_pool: str, namespace: str, port: int, server: str, token: str, ca_file: str | None,
                 lease: float = LEASE):
        self.warm_pool, self.namespace, self.port, self.lease = warm_pool, namespace, port, lease
        self.server, self.token = server.rstrip("/"), token
        self.tls = ssl.create_default_context(cafile=ca_file) if server.startswith("https") else None

    @classmethod
    def from_env(cls, env: dict[str, str] | None = None, sa_dir: str = SA_DIR, lease: float = LEASE) -> Claims:
        env = dict(os.environ if env is None else env)
        missing = [k for k in ("DOCKYARD_SANDBOX_WARM_POOL", "DOCKYARD_SANDBOX_NAMESPACE", "DOCKYARD_SANDBOX_PORT",
                               "KUBERNETES_SERVICE_HOST") if not env.get(k)]
        if missing:
            raise ClaimError(f"not set: {', '.join(missing)} (a Ray pod of a release with sandbox.backend "
                             "agent-sandbox and sandbox.injectUrls has them)")
        host, port = env["KUBERNETES_SERVICE_HOST"], env.get("KUBERNETES_SERVICE_PORT", "443")
        host = f"[{host}]" if ":" in host else host
        try:
            with open(os.path.join(sa_dir, "token")) as f:
                token = f.read().strip()
        except OSError as exc:
            raise ClaimError(f"no ServiceAccount token at {sa_dir} ({exc.strerror}): the pod must mount its "
                             "account's token to claim sandboxes") from None
        if not os.path.isfile(os.path.join(sa_dir, "ca.crt")):
            raise ClaimError(f"no cluster CA at {sa_dir}/ca.crt: the pod must mount its account's token")
        return cls(env["DOCKYARD_SANDBOX_WARM_POOL"], env["DOCKYARD_SANDBOX_NAMESPACE"],
                   int(env["DOCKYARD_SANDBOX_PORT"]), f"https://{host}:{port}", token,
                   os.path.join(sa_dir, "ca.crt"), lease)

    @contextlib.contextmanager
    def _open(self, method: str, path: str, body: dict | None = None, timeout: float = 30.0, what: str = ""):
        """The API server's response to one request; an HTTP error as a ClaimError with the server's message."""
        req = urllib.request.Request(self.server + path, method=method,
                                     data=None if body is None else json.dumps(body).encode(),
                                     headers={"Authorization": f"Bearer {self.token}", "Accept": "application/json",
                                              "Content-Type": "application/json"})
        try:
            resp = urllib.request.urlopen(req, timeout=timeout, context=self.tls)
        except urllib.error.HTTPError as exc:
            detail = exc.read().decode(errors="replace")
            try:
                detail = json.loads(detail).get("message", detail)
            except ValueError:
                pass
            where = path.split("?")[0] + (f" ({what})" if what else "")
            raise ClaimError(f"{method} {where}: HTTP {exc.code}: {detail}") from None
        with resp:
            yield resp

    def _call(self, method: str, path: str, body: dict | None = None) -> dict:
        with self._open(method, path, body) as resp:
            return json.loads(resp.read() or b"{}")

    def claim(self) -> str:
        """Create a SandboxClaim on the warm pool; its name (the API server picks it). The claim expires `lease`
        seconds from now (this machine's clock), whether or not it is released: policy Delete removes it, its
        sandbox and its pod then."""
        ends = datetime.datetime.now(UTC) + datetime.timedelta(seconds=self.lease)
        body = {"apiVersion": "extensions.agents.x-k8s.io/v1beta1", "kind": "SandboxClaim",
                "metadata": {"generateName": f"{self.warm_pool}-"},
                "spec": {"warmPoolRef": {"name": self.warm_pool},
                         "lifecycle": {"shutdownTime": ends.strftime("%Y-%m-%dT%H:%M:%SZ"),
                                       "shutdownPolicy": "Delete"}}}
        return self._call("POST", CLAIMS.format(ns=self.namespace), body)["metadata"]["name"]

    def _executor(self, claim: dict) -> tuple[Executor | None, str, bool]:
        """The claim's executor once it is Ready (bound to a sandbox whose pod is ready), else why not yet, and
        whether that reason is one waiting does not cure (the pool or template missing, the claim refused)."""
        st = claim.get("status") or {}
        ready = next((c for c in st.get("conditions") or [] if c.get("type") == "Ready"), None)
        ips = (st.get("sandbox") or {}).get("podIPs") or []
        if ready and ready.get("status") == "True" and ips:
            host = f"[{ips[0]}]" if ":" in ips[0] else ips[0]
            return Executor(claim["metadata"]["name"], f"http://{host}:{self.port}"), "", False
        if not ready:
            return None, "no Ready condition yet", False
        return None, f"{ready.get('reason')}: {ready.get('message', '')}", ready.get("reason") in REFUSED

    def wait_bound(self, name: str, timeout: float = 300.0) -> Executor:
        """Wait until the claim is Ready; its executor. One read, then a watch of this one claim from that read's
        resourceVersion (the Role's `watch`): the change is seen as the controller writes it, not at the next
        poll. A watch the server ends, or one too old to resume, is followed by a fresh read after a pause that
        grows. A reason waiting does not cure (REFUSED) still held after REFUSED_GRACE seconds ends the wait."""
        t0 = time.monotonic()
        deadline, path, pause = t0 + timeout, f"{CLAIMS.format(ns=self.namespace)}", 0.0
        while True:
            obj = self._call("GET", f"{path}/{name}")
            executor, last, refused = self._executor(obj)
            if executor:
                return executor
            if refused and time.monotonic() - t0 > REFUSED_GRACE:
                raise ClaimError(f"SandboxClaim {self.namespace}/{name} cannot be bound ({last})")
            left = deadline - time.monotonic()
            if left <= 0:
                raise ClaimError(f"SandboxClaim {self.namespace}/{name} not bound after {timeout:.0f}s ({last})")
            if pause:  # the last watch ended early: not a tight loop of reads against the API server
                time.sleep(min(pause, left))
            pause = min(max(0.2, pause * 2), 2.0)
            window = max(1, int(min(left, REFUSED_GRACE if refused else 60)))
            query = (f"?watch=1&fieldSelector=metadata.name%3D{name}&timeoutSeconds={window}"
                     f"&resourceVersion={obj['metadata']['resourceVersion']}")
            try:
                with self._open("GET", path + query, timeout=window + 5, what="watch") as stream:
                    for line in stream:
                        event = json.loads(line)
                        if event.get("type") == "DELETED":
                            raise ClaimError(f"SandboxClaim {self.namespace}/{name} was deleted while waiting "
                                             "for it to be bound (its lease ended, or something released it)")
                        if event.get("type") not in ("ADDED", "MODIFIED"):
                            break  # ERROR (the version expired, say): read again
                        executor, last, refused = self._executor(event["object"])
                        if executor:
                            return executor
                        pause = 0.0  # the watch is alive: the next read need not wait
            except (OSError, ValueError, http.client.HTTPException):  # a timed-out or cut stream: read again
                pass

    def release(self, name: str) -> None:
        """Delete the claim: its sandbox and pod go with it; the warm pool makes a new one."""
        try:
            self._call("DELETE", f"{CLAIMS.format(ns=self.namespace)}/{name}")
        except ClaimError as exc:
            if "HTTP 404" not in str(exc):
                raise

    @contextlib.contextmanager
    def episode(self, timeout: float = 300.0):
        """One claimed executor for the `with` block, released however the block ends."""
        name = self.claim()
        try:
            yield self.wait_bound(name, timeout)
        finally:
            self.release(name)


class Ahead:
    """Episodes one after another, each on a sandbox claimed and bound while the one before ran: a thread claims
    the next sandbox and waits until it is bound, and `take()` hands it over (no API call on the episode's path
    when it is ready by then) and starts on the one after. It holds one sandbox more than in use; `close()` (or the
    `with` block's end) releases the spare. Each claim keeps its lease, so a worker that dies leaves nothing past
    it.

        with Ahead(Claims.from_env()) as ahead:
            for task in tasks:
                name, executor = ahead.take()
                try:
                    executor.submit(task)
                finally:
                    ahead.claims.release(name)
    """

    def __init__(self, claims: Claims, timeout: float = 300.0):
        self.claims, self.timeout = claims, timeout
        self._next: tuple[threading.Thread, dict] | None = None
        self._start()

    def _start(self) -> None:
        box: dict = {}

        def claim_and_bind() -> None:
            try:
                box["name"] = self.claims.claim()
                box["executor"] = self.claims.wait_bound(box["name"], self.timeout)
            except BaseException as exc:  # handed to take() or close()
                box["error"] = exc

        thread = threading.Thread(target=claim_and_bind, name="sandbox-claim-ahead", daemon=True)
        thread.start()
        self._next = (thread, box)

    def take(self) -> tuple[str, Executor]:
        """The next claim and its executor, bound; the claim after it is started. A claim that failed to bind is
        released and its error raised (the one after is started all the same)."""
        if self._next is None:
            raise ClaimError("Ahead is closed")
        thread, box = self._next
        thread.join()
        self._start()
        if "error" in box:
            if "name" in box:
                self.claims.release(box["name"])
            raise box["error"]
        return box["name"], box["executor"]

    def close(self) -> None:
        """Release the spare (as soon as it has a name: it need not be bound)."""
        if self._next is None:
            return
        (thread, box), self._next = self._next, None
        while "name" not in box and thread.is_alive():
            thread.join(0.05)
        if "name" in box:
            self.claims.release(box["name"])

    def __enter__(self) -> Ahead:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def main(argv: list[str] | None = None) -> int:
    """One episode: claim, bound, the task given as JSON, release; the timings and the answer as JSON."""
    argv = sys.argv[1:] if argv is None else argv
    task = json.loads(argv[0]) if argv else {"command": "echo dockyard-sandbox"}
    claims = Claims.from_env()
    t0 = time.monotonic()
    name = claims.claim()
    try:
        executor = claims.wait_bound(name)
        bound = time.monotonic()
        answer = executor.submit(task)
        answered = time.monotonic()
    finally:
        claims.release(name)
    print(json.dumps({"claim": name, "executor": executor.url, "bound_s": round(bound - t0, 3),
                      "answered_s": round(answered - t0, 3), "answer": answer}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
