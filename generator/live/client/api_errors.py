"""The API server's failures as a user reads them: an answer's HTTP status (api_status, is_forbidden, a missing
object told from an unserved resource), its Status message and the fields a strict decoding refused
(status_message, unknown_fields), one line for any client failure (describe_error, naming the server the failed
request went to: server_of), and the verbs' wrapper that turns them into exit 1 (cluster_errors)."""

from __future__ import annotations

import functools
import re
import sys
from collections.abc import Callable

from generator.errors import CheckFailed, InputError

TYPE_CHECKING = False  # typing's import costs ~3 ms at start-up: for type checkers only
if TYPE_CHECKING:
    from typing import Any


def api_status(exc: BaseException) -> int | None:
    """The HTTP status of an API answer that was not 2xx (the client's ApiException, whichever way the request
    went), None for any other failure. Without the client imported no such answer came: it is not imported."""
    errors = sys.modules.get("kubernetes.client.exceptions")
    if errors is not None and isinstance(exc, errors.ApiException):
        return int(exc.status) if exc.status is not None else None
    return None


def is_forbidden(exc: BaseException) -> bool:
    """An API answer 403: RBAC (or an admission plugin) refused the request."""
    return api_status(exc) == 403


def is_object_404(exc: Any) -> bool:
    """A 404 for a missing object (NotFound Status body), not a resource type the server lacks."""
    import json

    try:
        body = json.loads(exc.body or "{}")
    except ValueError:
        return False
    details = body.get("details") or {}
    return body.get("reason") == "NotFound" and bool(details.get("name"))


def status_message(exc: Any) -> str:
    """The message of an API answer's Status body (the apiserver's own words), else its reason."""
    import json

    try:
        body = json.loads(exc.body or "")
    except (TypeError, ValueError):
        return str(exc.reason)
    return str(body.get("message", exc.reason)) if isinstance(body, dict) else str(exc.reason)


def unknown_fields(message: str) -> list[str]:
    """The field paths of the API server's strict decoding error (`unknown field "spec.x"`, a create or update
    with fieldValidation=Strict)."""
    return re.findall(r'unknown field "([^"]+)"', message)


def describe_error(exc: BaseException, server: str | None = None) -> str | None:
    """One line for a client failure a user can act on; None when it is not a cluster failure."""
    import json

    from generator.live.client.transport import Unreachable

    where = f" at {server}" if server else ""
    if isinstance(exc, Unreachable):
        return (f"cannot reach the Kubernetes API{where}: {exc.detail} "
                "(check --kubeconfig / --context, or start the playground)")
    if "kubernetes.client.exceptions" not in sys.modules:
        return None  # neither the client's answers nor its urllib3 failures: it never ran
    from kubernetes.client.exceptions import ApiException
    from urllib3.exceptions import HTTPError as Urllib3Error
    from urllib3.exceptions import MaxRetryError

    if isinstance(exc, MaxRetryError):
        reason = exc.reason
        text = str(reason)
        m = re.search(r"\[Errno -?\d+\] ([^'\")]+)", text)
        detail = m.group(1).strip() if m else type(reason).__name__
        return (f"cannot reach the Kubernetes API{where}: {detail} "
                "(check --kubeconfig / --context, or start the playground)")
    if isinstance(exc, Urllib3Error):
        return f"cannot reach the Kubernetes API{where}: {exc}"
    if isinstance(exc, ApiException):
        try:
            body = json.loads(exc.body or "{}")
            message = body.get("message") or exc.reason
        except ValueError:
            message = (exc.body or exc.reason or "").strip()
        if exc.status == 404 and not is_object_404(exc):
            # an unserved path answers plain text "404 page not found": no need to say 404 twice
            said = message if message.startswith("404") else f"404 {message}"
            return f"the API server does not serve this resource ({said}); is KubeRay installed?"
        if exc.status in (401, 403):
            return f"the API server refused the request ({exc.status} {exc.reason}): {message}"
        return f"the API server answered {exc.status} {exc.reason}: {message}"
    return None


SERVER_ATTR = "dockyard_kube_server"


def server_of(exc: BaseException) -> str | None:
    """The API server a failed request of a Kube went to (each Kube marks its own requests' failures),
    None for any other failure."""
    server = getattr(exc, SERVER_ATTR, None)
    return server if isinstance(server, str) else None


def cluster_errors(handler: Callable[..., int]) -> Callable[..., int]:
    """Turn expected client failures into CheckFailed (exit 1, one line, no traceback)."""

    @functools.wraps(handler)
    def wrapped(*a: Any, **kw: Any) -> int:
        try:
            return handler(*a, **kw)
        except (CheckFailed, InputError, KeyboardInterrupt):
            raise
        except Exception as exc:
            line = describe_error(exc, server_of(exc))
            if line is None:
                raise
            raise CheckFailed(line) from None

    return wrapped

