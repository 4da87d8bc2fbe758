"""doctor's access rows (generator/live/doctor/access.py: API server, namespace, release, RBAC) on answers recorded from
the playground: the cluster admin, ServiceAccount alice (built-in admin role in namespace rec only: no ray.io verbs, no
cluster-scope reads), an unreachable server. The same recordings hold the capacity, admission and KubeRay rows' answers:
tests/unit/live/doctor/test_capacity.py, tests/unit/live/doctor/test_admission.py and
tests/unit/live/doctor/test_kuberay.py share its constants (tests/support/doctor.py)."""

from __future__ import annotations

from generator.live.client.kube import Kube
from generator.live.doctor import access, admission, kuberay
from generator.live.doctor.rows import FAIL, OK, WARN, read_namespace
from generator.pinned_tools import versions
from tests.support.doctor import NS, RELEASE, templates
from tests.support.fake_cluster import SERVER, install

NEEDED = sum(len(verbs) for _, _, verbs in access.RBAC)


def test_admin_rows(admin):
    # recorded from the pinned control plane (`make record`)
    assert access.api_server_row(admin).detail == f"{SERVER} Kubernetes {versions()['KUBERNETES_VERSION']}"
    ns = read_namespace(admin, NS)
    assert access.namespace_row(ns).detail == f"{NS} exists"
    release = access.release_row(admin, RELEASE, NS)
    assert (release.mark, release.detail) == (OK, "small revision 1 (deployed) is this chart's: `run` upgrades it")
    rbac = access.rbac_rows(admin, NS)
    assert [(r.mark, r.detail, r.missing) for r in rbac] == [
        (OK, f"{NEEDED}/{NEEDED} verbs allowed in {NS}", []),
        (OK, f"all {len(access.CLUSTER_READS)} cluster-scope reads allowed", [])]
    assert kuberay.kuberay_crds_row(admin).detail == "ray.io/v1 serves rayclusters, rayjobs"
    operator = kuberay.kuberay_operator_row(admin)  # the playground runs KubeRay as a process
    assert operator.mark == WARN and operator.detail.startswith("no in-cluster operator Deployment found")
    security = admission.pod_security_row(admin, ns, templates(), drop_priority_class=True)
    assert (security.mark, security.detail) == (OK, ("enforce=cluster default: admits all 5 pod templates "
                                                     "(server-side dry run)"))


def test_namespace_user_rbac_rows_name_exactly_what_is_missing(alice):
    rbac, cluster = access.rbac_rows(alice, NS)
    ray = [f"{v} {r}.ray.io" for r in ("rayjobs", "rayclusters") for v in ("get", "list", "create", "patch", "delete")]
    assert (rbac.mark, rbac.missing) == (FAIL, ray)
    assert rbac.detail.startswith(f"{NEEDED - 10}/{NEEDED} verbs allowed in {NS}; denied: rayjobs.ray.io (get, list, "
                                  "create, patch, delete); rayclusters.ray.io")
    assert cluster.mark == WARN and set(cluster.missing) == {
        "list nodes", "list pods", "list deployments.apps", "get priorityclasses.scheduling.k8s.io", "list secrets"}
    assert "cannot list nodes at cluster scope: GPU and CPU capacity unknown" in cluster.detail


def test_unreachable_api_server_row(monkeypatch, tmp_path):
    install(monkeypatch, tmp_path, "errors")
    row = access.api_server_row(Kube())
    assert (row.mark, row.detail) == (FAIL, (f"cannot reach the Kubernetes API at {SERVER}: Connection refused "
                                             "(check --kubeconfig / --context, or start the playground)"))
