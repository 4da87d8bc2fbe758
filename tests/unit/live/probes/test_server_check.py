"""probes/server_check.py (`check --server`): every rendered object is sent to the apiserver as a server-side
apply with dryRun=All, at the object's own path; a refusal is a ✗ line with the apiserver's message, a warning
header (PodSecurity on a Deployment) a ! line, and the `server dry-run` row counts both and names the server.
The apiserver here answers as the real one does (Status bodies, `Warning: 299 - "..."` headers)."""

from __future__ import annotations

import json

import yaml

from generator.live.probes.server_check import add_dry_run, dry_run, object_path
from generator.render.check import Checked

DEPLOYMENT = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "small-sandbox"}}
POLICY = {"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy", "metadata": {"name": "small-egress"}}
QUOTA = {"apiVersion": "v1", "kind": "ResourceQuota", "metadata": {"name": "small"}}
CLUSTER = {"apiVersion": "ray.io/v1", "kind": "RayCluster", "metadata": {"name": "small"}}
WARNING = ('299 - "would violate PodSecurity \\"restricted:latest\\": allowPrivilegeEscalation != false", '
           '299 - "spec.template: deprecated field"')


class Answer:
    def __init__(self, status, body, warning=None):
        self.status, self.body, self.warning = status, body, warning
        self.reason = "Unprocessable Entity" if status == 422 else "OK"

    def read(self):
        return self.body

    def getheader(self, name):
        return self.warning if name == "Warning" else None


class Api:
    """The client's ApiClient as server_check uses it: builds the request, then sends it."""

    def __init__(self, answers):
        self.answers, self.sent = answers, []

    def param_serialize(self, method, path, query_params, header_params, body, auth_settings):
        return method, (path, dict(query_params), header_params["Content-Type"]), header_params, body, None

    def call_api(self, method, url, header_params, body, _request_timeout):
        self.sent.append((method, url, json.loads(body)["kind"]))
        return self.answers[json.loads(body)["kind"]]


class Kube:
    server = "https://127.0.0.1:6443"

    def __init__(self, answers):
        self.api = Api(answers)


def test_each_object_goes_to_its_own_path():
    assert object_path(DEPLOYMENT, "rec") == "/apis/apps/v1/namespaces/rec/deployments/small-sandbox"
    assert object_path(POLICY, "rec") == "/apis/networking.k8s.io/v1/namespaces/rec/networkpolicies/small-egress"
    assert object_path(QUOTA, "rec") == "/api/v1/namespaces/rec/resourcequotas/small"
    assert object_path(CLUSTER, "rec") == "/apis/ray.io/v1/namespaces/rec/rayclusters/small"


def test_a_server_side_apply_with_dry_run_all_of_every_object():
    kube = Kube({"Deployment": Answer(200, b"{}"), "RayCluster": Answer(200, b"{}")})
    out = dry_run(kube, yaml.safe_dump_all([DEPLOYMENT, None, CLUSTER]), "rec")
    assert [(d.kind, d.accepted) for d in out] == [("Deployment", True), ("RayCluster", True)]
    method, (path, query, content_type), kind = kube.api.sent[0]
    assert (method, kind, content_type) == ("PATCH", "Deployment", "application/apply-patch+yaml")
    assert query == {"dryRun": "All", "fieldManager": "dockyard-k8s", "force": "true"}


def test_refusals_and_warnings_are_lines_and_the_row_counts_them():
    refusal = json.dumps({"kind": "Status", "message": 'RayCluster.ray.io "small" is invalid: spec.headGroupSpec: '
                                                      "Required value"}).encode()
    kube = Kube({"Deployment": Answer(201, b"{}", WARNING), "RayCluster": Answer(422, refusal)})
    found = Checked("check", [], [], False, yaml.safe_dump_all([DEPLOYMENT, CLUSTER]), "rec")
    add_dry_run(found, kube)
    assert found.lines == [
        ('  ! server warns on Deployment small-sandbox: would violate PodSecurity "restricted:latest": '
         "allowPrivilegeEscalation != false"),
        "  ! server warns on Deployment small-sandbox: spec.template: deprecated field",
        ('  ✗ server refused RayCluster small: RayCluster.ray.io "small" is invalid: spec.headGroupSpec: '
         "Required value"),
    ]
    detail = "1 accepted, 1 refused (dryRun=All, namespace rec, https://127.0.0.1:6443)"
    assert found.rows == [("✗", "server dry-run", detail)]
    assert found.failed


def test_an_answer_without_a_status_body_is_its_status_line():
    kube = Kube({"Deployment": Answer(422, b"<html>proxy</html>")})
    (refused,) = dry_run(kube, yaml.safe_dump(DEPLOYMENT), "rec")
    assert not refused.accepted and refused.message == "422 Unprocessable Entity"
