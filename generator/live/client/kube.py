"""Cluster access with the official kubernetes client: kubeconfig/context resolution, call counting,
and turning client failures into one line a user can act on."""

from __future__ import annotations

import functools
import threading
import time
from collections.abc import Callable

from generator.errors import CheckFailed, InputError, Problem
from generator.live.client.api_errors import SERVER_ATTR, api_status, is_object_404

TYPE_CHECKING = False  # typing's import costs ~3 ms at start-up: for type checkers only
if TYPE_CHECKING:
    from typing import Any

RAY_GROUP = "ray.io"
RAY_VERSION = "v1"  # the KubeRay API the chart renders
GPU = "nvidia.com/gpu"  # the extended resource GPU pods request
INSTANCE = "app.kubernetes.io/instance"
NAME_LABEL = "app.kubernetes.io/name=dockyard"


Argv = list[str]  # (`list` is a method name in Kube)
Objects = list[dict[str, "Any"]]  # API objects read as plain JSON (Kube.list; `list` is a method name there)

SA_WAIT = 30.0  # seconds a created namespace may take to get its `default` ServiceAccount
REQUEST_FLOOR = 2.0  # seconds a request may take past a verb's deadline (reading the end state)


def usage_error(message: str, where: str = "<command line>") -> InputError:
    return InputError([Problem(where, None, "", message)])


class Kube:
    """One ApiClient for one kubeconfig/context; `calls` counts API requests (status is bounded)."""

    def __init__(self, kubeconfig: str | None = None, context: str | None = None):
        from generator.live.client import kubeconfig as kc
        from generator.live.client.transport import Transport

        self.source = kc.source(kubeconfig)  # the files, merged as kubectl merges them; helm gets the same
        self.kubeconfig = self.source.files[0] if self.source.explicit else None  # helm's --kubeconfig
        self._doc = doc = kc.merged(self.source)
        self._where = where = f"kubeconfig {self.source.describe()}"
        names = [c.get("name") for c in doc["contexts"]]
        self.context = context or doc.get("current-context")
        if not self.context:
            raise usage_error(f"{where}: no current-context: pass --context (one of: {', '.join(names) or 'none'})")
        if self.context not in names:
            raise usage_error(f"{where}: no context {self.context} (it has: {', '.join(names) or 'none'})")
        chosen = next(c for c in doc["contexts"] if c.get("name") == self.context)
        self.context_namespace = (chosen.get("context") or {}).get("namespace")
        self.calls = 0
        self._git_version: str | None = None
        self.request_timeout = 30.0  # seconds, per request
        self.deadline: float | None = None  # time.monotonic() past which a request gets REQUEST_FLOOR seconds
        self.watches = 0  # watch streams opened (not in `calls`: a snapshot's count stays exact)
        self._api: Any = None
        self._api_lock = threading.Lock()
        # Plain credentials go through the standard library's HTTPS (transport.py); the rest, and the typed APIs
        # of the less frequent verbs, through the kubernetes client, built on first use.
        try:
            self.transport = Transport.for_context(doc, self.context)
        except (OSError, ValueError) as exc:
            raise usage_error(f"{where}: context {self.context}: {exc}") from None
        self.server = self.api.configuration.host if self.transport is None else self.transport.server

    @property
    def api(self) -> Any:
        """The kubernetes client's ApiClient for this context (its import costs ~0.26 s: built on first use, once,
        whichever thread asks first: a wait's watch threads may)."""
        with self._api_lock:
            if self._api is None:
                self._api = self._build_api()
            return self._api

    def _build_api(self) -> Any:
        from kubernetes import client, config
        from kubernetes.config.config_exception import ConfigException

        cfg = client.Configuration()
        try:
            config.load_kube_config_from_dict(self._doc, context=self.context, client_configuration=cfg,
                                              persist_config=False)
        except ConfigException as exc:
            raise usage_error(f"{self._where}: {exc}") from None
        cfg.retries = 0
        api = client.ApiClient(cfg)
        original = api.call_api

        @functools.wraps(original)
        def counted(*a: Any, **kw: Any) -> Any:
            self.calls += 1
            kw.setdefault("_request_timeout", self._timeout())
            try:
                return original(*a, **kw)
            except Exception as exc:
                setattr(exc, SERVER_ATTR, self.server)  # for cluster_errors' line (server_of)
                raise

        api.call_api = counted  # type: ignore[method-assign]
        self._call_uncounted: Callable[..., Any] = original
        return api

    def _timeout(self) -> float:
        limit = self.request_timeout
        if self.deadline is not None:
            limit = min(limit, max(REQUEST_FLOOR, self.deadline - time.monotonic()))
        return limit

    # plain JSON requests -------------------------------------------------------------------------
    # The hot paths (status, run --wait) send plain requests and read the answer as plain JSON: through the
    # standard library's HTTPS (transport.py) for plain credentials, else through the client's ApiClient (its
    # auth plugins, proxies). The typed API modules and their model classes (V1Pod, ...: pydantic models and
    # validators in kubernetes 37) cost ~0.5-1 s of import and validation per process, and the client's
    # package alone ~0.26 s: neither is needed there.
    def request(self, method: str, path: str, query: dict[str, Any] | None = None, body: Any = None,
                content_type: str | None = None) -> Any:
        """One API request; the decoded JSON answer. ApiException (as the typed APIs raise) on non-2xx."""
        import json

        data = self._send(method, path, query, body, content_type, "application/json")
        return json.loads(data) if data else {}

    def get_text(self, path: str, query: dict[str, Any] | None = None) -> str:
        """One GET whose answer is text, not JSON (a file through a service proxy); ApiException on non-2xx."""
        return self._send("GET", path, query, None, None, "*/*").decode("utf-8", "replace")

    def get_answer(self, path: str, query: dict[str, Any] | None = None) -> tuple[int, str]:
        """One GET whose status is data, not an error: (HTTP status, text). For a read that may well not be there
        yet (the head's progress file through its dashboard), answered without building an exception."""
        status, _reason, _headers, data = self._exchange("GET", path, query, None, None, "*/*")
        return status, data.decode("utf-8", "replace")

    def _send(self, method: str, path: str, query: dict[str, Any] | None, body: Any, content_type: str | None,
              accept: str) -> bytes:
        status, reason, headers, data = self._exchange(method, path, query, body, content_type, accept)
        if not 200 <= status <= 299:
            # the client's own error type (imported on this path only, whichever way the request went), as its
            # typed APIs raise it
            from kubernetes.client.exceptions import ApiException

            error = ApiException(status=status, reason=reason)
            error.body = data.decode("utf-8", "replace")
            error.headers = headers
            setattr(error, SERVER_ATTR, self.server)
            raise error
        return data

    def _exchange(self, method: str, path: str, query: dict[str, Any] | None, body: Any, content_type: str | None,
                  accept: str) -> tuple[int, str, dict[str, str], bytes]:
        """One request, counted: (status, reason, headers, body), whatever the status. Through the standard
        library's transport for plain credentials, else the kubernetes client's ApiClient."""
        import json

        headers = {"Accept": accept}
        if body is not None:
            headers["Content-Type"] = content_type or "application/json"
        params = [(k, str(v).lower() if isinstance(v, bool) else str(v)) for k, v in (query or {}).items()
                  if v is not None]
        if self.transport is None:
            serialized = self.api.param_serialize(method=method, resource_path=path, header_params=headers, body=body,
                                                  auth_settings=["BearerToken"], query_params=params)
            resp = self.api.call_api(*serialized)
            resp.read()
            return resp.status, resp.reason or "", dict(resp.getheaders() or {}), resp.data or b""
        from generator.live.client.transport import Unreachable

        self.calls += 1
        data = None
        if body is not None:
            data = body if isinstance(body, bytes) else json.dumps(body).encode()
        try:
            return self.transport.send(method, path, params, data, headers, self._timeout())
        except Unreachable as exc:
            setattr(exc, SERVER_ATTR, self.server)
            raise

    def list(self, path: str, label_selector: str | None = None, field_selector: str | None = None) -> Objects:
        """The items of a list call, as dicts."""
        return self.request("GET", path, {"labelSelector": label_selector, "fieldSelector": field_selector})["items"]

    def watch(self, path: str, on_event: Callable[[], None], stop: Any, label_selector: str | None = None) -> None:
        """Call on_event() for every watch event on a list path until `stop` (a threading.Event) is set;
        the watch is re-opened when the server ends it. Best effort (for waking a wait early): a
        failure backs off for a second and retries."""
        query = [("watch", "1"), ("timeoutSeconds", "20")]
        if label_selector:
            query.append(("labelSelector", label_selector))
        while not stop.is_set():
            try:
                params = self.api.param_serialize(method="GET", resource_path=path, query_params=query,
                                                  header_params={"Accept": "application/json"},
                                                  auth_settings=["BearerToken"])
                self.watches += 1
                resp = self._call_uncounted(*params, _request_timeout=30)
                try:
                    if resp.status != 200:
                        stop.wait(1.0)
                        continue
                    for _ in resp.response.stream(None, decode_content=False):  # one chunk per event
                        if stop.is_set():
                            break
                        on_event()
                finally:
                    resp.response.release_conn()
            except InputError:
                return  # the client cannot be built for this kubeconfig: no watch (the wait still polls)
            except Exception:
                stop.wait(1.0)

    # typed API groups (the less frequent verbs) ----------------------------------------------------
    @functools.cached_property
    def core(self):
        from kubernetes import client
        return client.CoreV1Api(self.api)

    @functools.cached_property
    def apps(self):
        from kubernetes import client
        return client.AppsV1Api(self.api)

    @functools.cached_property
    def custom(self):
        from kubernetes import client
        return client.CustomObjectsApi(self.api)

    def close(self) -> None:
        if self.transport is not None:
            self.transport.close()
        if self._api is not None:
            self._api.close()

    # helpers ------------------------------------------------------------------------------------
    def list_ray(self, plural: str, namespace: str, selector: str | None = None) -> Objects:
        try:
            path = f"/apis/{RAY_GROUP}/{RAY_VERSION}/namespaces/{namespace}/{plural}"
            return self.list(path, label_selector=selector)
        except Exception as exc:
            if api_status(exc) == 404:
                raise CheckFailed(crd_missing(plural)) from None
            raise

    def get_ray(self, plural: str, namespace: str, name: str) -> dict[str, Any] | None:
        try:
            return self.request("GET", f"/apis/{RAY_GROUP}/{RAY_VERSION}/namespaces/{namespace}/{plural}/{name}")
        except Exception as exc:
            if api_status(exc) == 404 and is_object_404(exc):
                return None
            if api_status(exc) == 404:
                raise CheckFailed(crd_missing(plural)) from None
            raise

    def ray_resources(self) -> set[str]:
        """The resources the cluster serves under ray.io/<version> (empty when the group is not served)."""
        from kubernetes.client.exceptions import ApiException

        try:
            doc = self.request("GET", f"/apis/{RAY_GROUP}/{RAY_VERSION}")
        except ApiException as exc:
            if exc.status == 404:
                return set()
            raise
        return {r["name"] for r in doc.get("resources") or []}

    def require_ray(self, plurals: tuple[str, ...] = ("rayjobs", "rayclusters")) -> None:
        """CheckFailed (one line) unless the cluster serves ray.io/<version> with these resources."""
        served = self.ray_resources()
        missing = [p for p in plurals if p not in served]
        if missing:
            raise CheckFailed(crd_missing(missing[0]))

    def require_priority_class(self, name: str | None) -> None:
        from kubernetes.client.exceptions import ApiException

        if not name:
            return
        try:
            self.request("GET", f"/apis/scheduling.k8s.io/v1/priorityclasses/{name}")
        except ApiException as exc:
            if exc.status == 404:
                raise CheckFailed(f"PriorityClass {name} does not exist in the cluster (infra.priorityClassName): "
                                  "create it, or remove infra.priorityClassName") from None
            raise

    def git_version(self) -> str:
        """The server's /version gitVersion, read once per client (doctor's rows share it)."""
        if self._git_version is None:
            from kubernetes import client

            self._git_version = client.VersionApi(self.api).get_code().git_version
        return self._git_version

    def target(self) -> str:
        """The cluster a verb acts on, for its first progress line."""
        return f"context {self.context} at {self.server}"

    def tool_args(self) -> tuple[Argv, dict[str, str]]:
        """(kubectl's flags, the environment of kubectl and helm) that give them this client's view: the same
        kubeconfig files, merged the same way, and this context (release.Helm passes the context itself)."""
        from generator.live.client import kubeconfig as kc

        flags = (["--kubeconfig", self.kubeconfig] if self.kubeconfig else []) + ["--context", str(self.context)]
        return flags, kc.helm_env(self.source)

    def namespace_exists(self, name: str) -> bool:
        try:
            self.request("GET", f"/api/v1/namespaces/{name}")
            return True
        except Exception as exc:
            if api_status(exc) == 404:
                return False
            raise

    def namespace_deletion(self, name: str) -> str | None:
        """'being deleted (since T): ...' when a namespace is (phase Terminating / deletionTimestamp set),
        with what still holds it up; None when it is not, does not exist, or cannot be read."""
        return self.namespace_state(name)[1]

    def namespace_state(self, name: str) -> tuple[bool | None, str | None]:
        """(whether the namespace exists — None when it cannot be read —, why it is being deleted or None),
        from one read."""
        try:
            doc = self.request("GET", f"/api/v1/namespaces/{name}")
        except Exception as exc:
            if api_status(exc) in (403, 404):
                return (False if api_status(exc) == 404 else None), None
            raise
        since = doc["metadata"].get("deletionTimestamp")
        status = doc.get("status") or {}
        if not since and status.get("phase") != "Terminating":
            return True, None
        # the namespace controller's conditions say what still holds the deletion up
        held = [c.get("message") for c in status.get("conditions") or []
                if c.get("status") == "True" and c.get("message")]
        return True, ("being deleted" + (f" (since {since})" if since else "")
                      + ": its objects are going away and nothing new can be created in it"
                      + (f"; {'; '.join(held)}" if held else ""))

    def ensure_namespace(self, name: str) -> bool:
        """Create the namespace (and wait for its default ServiceAccount); True when created."""
        from kubernetes.client.exceptions import ApiException

        if self.namespace_exists(name):
            return False
        try:
            self.request("POST", "/api/v1/namespaces",
                         body={"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
        except ApiException as exc:
            if exc.status != 409:
                raise
        limit = SA_WAIT if self.deadline is None else min(SA_WAIT, max(1.0, self.deadline - time.monotonic()))
        deadline = time.monotonic() + limit
        while True:
            try:
                self.request("GET", f"/api/v1/namespaces/{name}/serviceaccounts/default")
                return True
            except ApiException as exc:
                if exc.status != 404:
                    raise
            if time.monotonic() >= deadline:
                raise CheckFailed(f"namespace {name} was created, but its `default` ServiceAccount did not appear "
                                  f"within {limit:.0f}s, and no pod is admitted without it: is the cluster's "
                                  "kube-controller-manager running?")
            time.sleep(0.2)


def crd_missing(plural: str) -> str:
    return (f"the cluster does not serve {plural}.{RAY_GROUP}/{RAY_VERSION}: the KubeRay CRDs are not installed "
            "(install the KubeRay operator's CRDs, e.g. its Helm chart kuberay-operator)")
