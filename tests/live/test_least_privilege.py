"""Least privilege on the playground, with a real namespace-scoped user: a
ServiceAccount bound to the built-in `admin` ClusterRole by a RoleBinding in one namespace, a token
from the TokenRequest API and a kubeconfig of its own whose context namespace is that namespace.

- `doctor` prints its whole table (never aborts on a 403), its RBAC row lists exactly the missing
  verb/resource pairs, rows that RBAC keeps from reading say so, and the exit code follows the rows;
- `run`, `status`, `history` and `uninstall` work in that namespace without -n;
- `status` on a namespace being deleted says so.
"""

from __future__ import annotations

import base64
import json
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml
from kubernetes import client
from live_helpers import INFRA, RECIPE, cli, infra_variant

pytestmark = pytest.mark.timeout(300)

SA = "alice"
CLUSTER_READS = {"list nodes", "list pods", "list deployments.apps", "get priorityclasses.scheduling.k8s.io",
                 "list secrets"}


@dataclass
class User:
    kubeconfig: Path
    namespace: str
    name: str  # the username the API server sees


@pytest.fixture
def ns_user(playground, k8s, namespace, tmp_path) -> User:
    core, rbac = client.CoreV1Api(k8s), client.RbacAuthorizationV1Api(k8s)
    core.create_namespaced_service_account(namespace, {"metadata": {"name": SA}})
    rbac.create_namespaced_role_binding(namespace, {
        "metadata": {"name": f"{SA}-admin"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "admin"},
        "subjects": [{"kind": "ServiceAccount", "name": SA, "namespace": namespace}]})
    token = core.create_namespaced_service_account_token(
        SA, namespace, {"spec": {"expirationSeconds": 3600}}).status.token
    admin = yaml.safe_load(Path(playground.kubeconfig).read_text())
    cluster = admin["clusters"][0]["cluster"]
    ca = cluster.get("certificate-authority-data") or base64.b64encode(
        Path(cluster["certificate-authority"]).read_bytes()).decode()
    path = tmp_path / f"{SA}.kubeconfig"
    path.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": SA,
        "clusters": [{"name": "playground",
                      "cluster": {"server": playground.server, "certificate-authority-data": ca}}],
        "users": [{"name": SA, "user": {"token": token}}],
        "contexts": [{"name": SA, "context": {"cluster": "playground", "user": SA, "namespace": namespace}}],
    }))
    return User(path, namespace, f"system:serviceaccount:{namespace}:{SA}")


def denied_by_the_server(k8s, user: User, pairs: list[tuple[str, str, str]]) -> set[str]:
    """The pairs the API server refuses this user in its namespace (SubjectAccessReview, asked as
    the cluster admin: an oracle independent of the user's own SelfSubjectAccessReviews)."""
    authz = client.AuthorizationV1Api(k8s)
    groups = ["system:serviceaccounts", f"system:serviceaccounts:{user.namespace}", "system:authenticated"]
    out = set()
    for group, resource, verb in pairs:
        res, _, sub = resource.partition("/")
        review = client.V1SubjectAccessReview(spec=client.V1SubjectAccessReviewSpec(
            user=user.name, groups=groups, resource_attributes=client.V1ResourceAttributes(
                group=group, resource=res, subresource=sub or None, verb=verb, namespace=user.namespace)))
        if not authz.create_subject_access_review(review).status.allowed:
            out.add(f"{verb} {resource}" + (f".{group}" if group else ""))
    return out


def grant(k8s, user: User, pairs: list[str]) -> None:
    """What a cluster admin does with doctor's list: a Role with exactly these pairs, bound to the user."""
    rules = []
    for pair in pairs:
        verb, rest = pair.split(" ", 1)
        resource, _, group = rest.partition(".")
        rules.append({"apiGroups": [group], "resources": [resource], "verbs": [verb]})
    rbac = client.RbacAuthorizationV1Api(k8s)
    rbac.create_namespaced_role(user.namespace, {"metadata": {"name": f"{SA}-extra"}, "rules": rules})
    rbac.create_namespaced_role_binding(user.namespace, {
        "metadata": {"name": f"{SA}-extra"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": f"{SA}-extra"},
        "subjects": [{"kind": "ServiceAccount", "name": SA, "namespace": user.namespace}]})


def doctor(capsys, user: User, *extra) -> tuple[int, str, str]:
    return cli(capsys, "doctor", RECIPE, INFRA, "-n", user.namespace, "--kubeconfig", user.kubeconfig, *extra)


def rows_of(out: str) -> dict[str, dict]:
    return {r["check"]: r for r in json.loads(out)["checks"]}


def test_doctor_prints_every_row_and_names_exactly_the_missing_permissions(playground, k8s, ns_user, capsys):
    from generator.live.doctor.access import RBAC

    rc, out, err = doctor(capsys, ns_user)
    assert "Traceback" not in err and err == "", err
    for line in ("! GPU capacity: trainer", "! GPU capacity: gang", "! sandbox pool fits", "! KubeRay operator"):
        assert any(printed.startswith(line) for printed in out.splitlines()), out
    assert "forbidden: cannot list nodes at cluster scope: GPU capacity unknown" in out
    assert "forbidden: cannot list deployments at cluster scope" in out

    rc_json, out_json, _ = doctor(capsys, ns_user, "-o", "json")
    rows = rows_of(out_json)
    failed = [r for r in rows.values() if r["mark"] == "✗"]
    assert rc_json == rc == (1 if failed else 0)
    table = out.splitlines()
    assert all(any(printed.startswith(f"{r['mark']} {r['check']} ") for printed in table)
               for r in rows.values()), out  # every row
    assert table[-1] == (f"{len(failed)} blocking problem(s)" if failed else "ready to run")
    # the namespace verbs: exactly what the server refuses this user, every one listed
    pairs = [(g, r, v) for g, r, verbs in RBAC for v in verbs]
    expected = denied_by_the_server(k8s, ns_user, pairs)
    assert "create rayjobs.ray.io" in expected and "get secrets" not in expected  # the built-in admin role
    assert set(rows["RBAC"]["missing"]) == expected
    assert rows["RBAC"]["mark"] == "✗" and rc == 1
    for pair in expected:
        verb, resource = pair.split(" ", 1)
        assert resource in rows["RBAC"]["detail"] and verb in rows["RBAC"]["detail"]
    # the cluster-scope reads: all refused (a RoleBinding cannot grant them), each with what it means
    assert set(rows["RBAC: cluster scope"]["missing"]) == CLUSTER_READS and rows["RBAC: cluster scope"]["mark"] == "!"
    assert "cannot list nodes at cluster scope: GPU and CPU capacity unknown" in rows["RBAC: cluster scope"]["detail"]

    # a cluster admin grants exactly the listed pairs: nothing is missing any more, nothing blocks
    grant(k8s, ns_user, rows["RBAC"]["missing"])
    rc, out, err = doctor(capsys, ns_user, "-o", "json")
    rows = rows_of(out)
    assert rows["RBAC"]["mark"] == "✓" and rows["RBAC"]["missing"] == [], rows["RBAC"]
    assert rows["PodSecurity admission"]["mark"] == "✓", rows["PodSecurity admission"]
    assert not [r for r in rows.values() if r["mark"] == "✗"] and rc == 0, rows
    assert rows["GPU capacity: trainer"]["mark"] == "!"  # still unknown: nodes stay unreadable


def test_run_status_history_uninstall_without_namespace(playground, k8s, ns_user, capsys):
    from generator.live.doctor.access import RBAC

    pairs = [(g, r, v) for g, r, verbs in RBAC for v in verbs]
    grant(k8s, ns_user, sorted(denied_by_the_server(k8s, ns_user, pairs)))
    kc = ns_user.kubeconfig
    try:
        rc, out, err = cli(capsys, "run", RECIPE, INFRA, "-n", ns_user.namespace, "--kubeconfig", kc,
                           "--timeout", 120, "-q")
        assert rc == 0, out + err

        rc, out, err = cli(capsys, "status", "--kubeconfig", kc)
        assert rc == 0, err
        assert f"release    small  namespace {ns_user.namespace}  revision 1  deployed" in out
        rc, out, err = cli(capsys, "status", "small", "--kubeconfig", kc, "-o", "json")
        assert rc == 0 and json.loads(out)["namespace"] == ns_user.namespace, err

        rc, out, err = cli(capsys, "status", "elsewhere", "--kubeconfig", kc)
        assert rc == 1 and "Traceback" not in err
        assert (f"release elsewhere not found in namespace {ns_user.namespace} "
                "(listing other namespaces is forbidden for you: pass -n)") in err

        rc, out, err = cli(capsys, "history", "--kubeconfig", kc, "-o", "json")
        assert rc == 0, err
        assert [r["status"] for r in json.loads(out)] == ["deployed"]
        rc, out, err = cli(capsys, "history", "small", "--kubeconfig", kc)
        assert rc == 0 and "deployed" in out, err

        rc, out, err = cli(capsys, "uninstall", "--kubeconfig", kc, "--timeout", 90)
        assert rc == 0, err
        assert f"release small uninstalled from {ns_user.namespace}: nothing left" in out
        rc, out, err = cli(capsys, "status", "--kubeconfig", kc)
        assert rc == 1 and (f"no dockyard release found in namespace {ns_user.namespace} "
                            "(listing other namespaces is forbidden for you: pass -n)") in err
    finally:
        cli(capsys, "uninstall", "small", "-n", ns_user.namespace, "--kubeconfig", playground.kubeconfig,
            "--timeout", 60)


def test_status_says_the_namespace_is_being_deleted(playground, k8s, namespace, capsys, tmp_path, wait):
    core = client.CoreV1Api(k8s)
    kc = playground.kubeconfig
    def to_attach(d):
        d["launch"].update(mode="attach", clusterName="elsewhere")
        d.pop("kuberay")  # the GPU RayCluster's keys: attach mode refuses them

    attach = infra_variant(tmp_path, "attach.yaml", to_attach)
    rc, out, err = cli(capsys, "run", RECIPE, attach, "-n", namespace, "--kubeconfig", kc, "--timeout", 120, "-q")
    assert rc == 0, out + err
    rc, out, _ = cli(capsys, "status", "small", "-n", namespace, "--kubeconfig", kc)
    assert rc == 0 and "being deleted" not in out

    # a finalizer on the release record keeps it (and so the namespace) while everything else goes
    secret = next(s for s in core.list_namespaced_secret(namespace, label_selector="owner=helm,name=small").items)
    core.patch_namespaced_secret(secret.metadata.name, namespace,
                                 {"metadata": {"finalizers": ["dockyard.test/hold"]}})
    try:
        core.delete_namespace(namespace)
        wait(lambda: core.read_namespace(namespace).status.phase == "Terminating", 30, f"{namespace} Terminating")
        wait(lambda: any(c.type == "NamespaceFinalizersRemaining" and c.status == "True"
                         for c in core.read_namespace(namespace).status.conditions or []),
             30, "the controller's conditions")

        rc, out, err = cli(capsys, "status", "small", "-n", namespace, "--kubeconfig", kc)
        assert rc == 0, err
        assert f"namespace  {namespace} is being deleted (since " in out
        assert "nothing new can be created in it" in out
        assert "dockyard.test/hold" in out  # what holds the deletion up, from the namespace's conditions
        rc, out, err = cli(capsys, "status", "-n", namespace, "--kubeconfig", kc, "-o", "json")
        assert rc == 0 and json.loads(out)["namespace_deleting"].startswith("being deleted (since "), err

        rc, out, err = cli(capsys, "status", "other", "-n", namespace, "--kubeconfig", kc)
        assert rc == 1 and (f"release other not found in namespace {namespace}; "
                            f"namespace {namespace} is being deleted") in err

        rc, out, err = cli(capsys, "doctor", RECIPE, attach, "-n", namespace, "--kubeconfig", kc)
        assert rc == 1 and f"✗ namespace                {namespace} is being deleted (since " in out, out + err
        assert f"! PodSecurity admission    namespace {namespace} is being deleted: nothing can be created in it" in out
    finally:
        core.patch_namespaced_secret(secret.metadata.name, namespace, {"metadata": {"finalizers": None}})
        wait(lambda: namespace not in {n.metadata.name for n in core.list_namespace().items}, 60, f"{namespace} gone")
