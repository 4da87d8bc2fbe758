"""Error translation (api_errors.describe_error, is_forbidden, cluster_errors, the CRD checks) on failures recorded
from the playground: a 403 of a namespace-scoped user, object and resource 404s, a 422, connection refused."""

from __future__ import annotations

import json

import pytest
from kubernetes.client.exceptions import ApiException
from urllib3.exceptions import MaxRetryError

from generator.cli import main
from generator.errors import CheckFailed
from generator.live.client.api_errors import (
    cluster_errors,
    describe_error,
    is_forbidden,
    status_message,
    unknown_fields,
)
from generator.live.client.kube import Kube, crd_missing
from generator.live.client.transport import Unreachable
from tests.support.fake_cluster import SERVER, install

ALICE = 'User "system:serviceaccount:rec:alice"'


def failure(call) -> BaseException:
    with pytest.raises(Exception) as exc:
        call()
    return exc.value


def test_forbidden_is_the_rbac_line(monkeypatch, tmp_path):
    install(monkeypatch, tmp_path, "forbidden", namespace="rec")
    exc = failure(lambda: Kube().request("GET", "/api/v1/nodes"))
    assert isinstance(exc, ApiException) and is_forbidden(exc)
    assert describe_error(exc, SERVER) == (
        f'the API server refused the request (403 Forbidden): nodes is forbidden: {ALICE} cannot list resource '
        '"nodes" in API group "" at the cluster scope')


def test_status_of_a_namespace_user_narrows_to_its_namespace_then_says_what_rbac_refused(monkeypatch, tmp_path, capsys):
    fake = install(monkeypatch, tmp_path, "forbidden", namespace="rec")
    assert main(["status"]) == 1
    err = capsys.readouterr().err
    # every namespace's secrets were refused (403), so the context's namespace was searched instead ...
    assert [r[1] for r in fake.requests[:2]] == ["/api/v1/secrets", "/api/v1/namespaces/rec/secrets"]
    # ... and the RayJob read was refused: one line, no traceback
    assert err == (f"error: the API server refused the request (403 Forbidden): rayjobs.ray.io is forbidden: {ALICE} "
                   'cannot list resource "rayjobs" in API group "ray.io" in the namespace "rec"\n')


def test_a_missing_object_is_none_and_a_missing_namespace_is_false(monkeypatch, tmp_path):
    install(monkeypatch, tmp_path, "errors")
    kube = Kube()
    assert kube.get_ray("rayjobs", "rec", "absent") is None
    assert kube.namespace_exists("absent") is False


def test_unprocessable_entity(monkeypatch, tmp_path):
    install(monkeypatch, tmp_path, "errors")
    exc = failure(lambda: Kube().request("POST", "/api/v1/namespaces", body={"metadata": {"name": "Not_A_Name"}}))
    assert exc.status == 422
    line = describe_error(exc)
    assert line.startswith('the API server answered 422 Unprocessable Entity: Namespace "Not_A_Name" is invalid: '
                           "metadata.name: Invalid value")


def test_connection_refused(monkeypatch, tmp_path):
    """The same line whichever way the request went: the standard library's transport (plain requests of a
    context with plain credentials) or the kubernetes client (the typed APIs)."""
    install(monkeypatch, tmp_path, "errors")
    plain = failure(lambda: Kube().request("GET", "/version"))
    assert isinstance(plain, Unreachable)
    typed = failure(lambda: Kube().git_version())
    assert isinstance(typed, MaxRetryError)
    for exc in (plain, typed):
        assert describe_error(exc, SERVER) == (f"cannot reach the Kubernetes API at {SERVER}: Connection refused "
                                               "(check --kubeconfig / --context, or start the playground)")

    @cluster_errors
    def verb() -> int:
        Kube().request("GET", "/version")
        return 0

    with pytest.raises(CheckFailed, match=r"^cannot reach the Kubernetes API at .*: Connection refused"):
        verb()


def test_crds_gone(monkeypatch, tmp_path, capsys):
    install(monkeypatch, tmp_path, "crd_missing")
    kube = Kube()
    assert {"rayjobs", "rayclusters"}.isdisjoint(kube.ray_resources())
    with pytest.raises(CheckFailed) as exc:
        kube.require_ray()
    assert str(exc.value) == crd_missing("rayjobs")
    for call in (lambda: kube.list_ray("rayjobs", "rec"), lambda: kube.get_ray("rayjobs", "rec", "small")):
        with pytest.raises(CheckFailed) as exc:
            call()
        assert str(exc.value) == crd_missing("rayjobs")
    assert main(["status", "small", "-n", "rec"]) == 1
    assert capsys.readouterr().err == f"error: {crd_missing('rayjobs')}\n"


def test_a_resource_404_is_told_apart_from_an_object_404(monkeypatch, tmp_path):
    """The recorded bodies decide: an unserved resource is answered in plain text, a missing object with a
    NotFound Status naming it."""
    install(monkeypatch, tmp_path, "crd_missing", "errors")
    exc = failure(lambda: Kube().request("GET", "/apis/ray.io/v1/namespaces/rec/rayjobs"))
    assert exc.status == 404 and exc.body.strip() == "404 page not found"
    assert describe_error(exc) == ("the API server does not serve this resource (404 page not found); "
                                   "is KubeRay installed?")
    exc = failure(lambda: Kube().request("GET", "/api/v1/namespaces/absent"))
    assert json.loads(exc.body)["details"]["name"] == "absent"
    assert describe_error(exc) == 'the API server answered 404 Not Found: namespaces "absent" not found'


def test_the_apiservers_unknown_fields_are_named():
    msg = ('RayJob.ray.io "doctor-x" is invalid: [strict decoding error: unknown field '
           '"spec.rayClusterSpec.authOptions", unknown field "spec.deletionStrategy"]')
    assert unknown_fields(msg) == ["spec.rayClusterSpec.authOptions", "spec.deletionStrategy"]
    assert unknown_fields('RayJob.ray.io "x" is invalid: spec.entrypoint: Required value') == []


def test_a_status_message_is_the_servers_words_else_the_reason():
    said = ApiException(status=400, reason="Bad Request")
    said.body = json.dumps({"kind": "Status", "message": 'unknown field "spec.x"'})
    assert status_message(said) == 'unknown field "spec.x"'
    for body in ("<html>proxy error</html>", "", None, "[1]"):
        plain = ApiException(status=502, reason="Bad Gateway")
        plain.body = body
        assert status_message(plain) == "Bad Gateway"
