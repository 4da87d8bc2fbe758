"""The versions users run, on the session playground: `doctor` reads the server's
version (/version) and says whether it is in the supported range, and sends the rendered RayJob/RayCluster
to the installed KubeRay CRDs as a dry-run create with fieldValidation=Strict: a field they lack is ✗ with
the field named (a misspelt kuberay.spec key here; a v1.6 field on v1.4 CRDs in `make test-matrix`)."""

from __future__ import annotations

import os

import pytest
from live_helpers import INFRA, RECIPE, cli, doctor_rows, infra_variant

from generator.pinned_tools import (
    PLAYGROUND_KUBERAY_ENV,
    PLAYGROUND_KUBERNETES_ENV,
    kube_range,
    kuberay_pin,
    playground_kubernetes,
    versions,
)

pytestmark = pytest.mark.timeout(240)


def test_doctor_names_the_server_version_and_the_crds_accept_the_render(playground, namespace, capsys, tmp_path):
    older = os.environ.get(PLAYGROUND_KUBERAY_ENV, "1.6") != "1.6"  # `make test-matrix`: v1.4/v1.5 lack the deadline
    if older:  # the deadline set in the infra spec: named; only the default: left out, with a note
        explicit = infra_variant(tmp_path, "deadline.yaml",
                                 lambda d: d.setdefault("launch", {}).update(preRunningDeadlineSeconds=900))
        rc, out, err = cli(capsys, "doctor", RECIPE, explicit, "-n", namespace, "--kubeconfig", playground.kubeconfig)
        row = doctor_rows(out)["KubeRay CRDs accept"]
        assert row.startswith("✗ ") and "launch.preRunningDeadlineSeconds" in row and "v1.6" in row, out
    rc, out, err = cli(capsys, "doctor", RECIPE, INFRA, "-n", namespace, "--kubeconfig", playground.kubeconfig)
    rows = doctor_rows(out)
    assert ("the default start deadline" in rows["KubeRay CRDs accept"]) is older, out
    assert rows["Kubernetes version"].startswith("✓ "), out
    assert f"(supported {kube_range()})" in rows["Kubernetes version"]
    assert playground_kubernetes() in rows["Kubernetes version"]  # v1.33.13 under make test-matrix
    assert rows["KubeRay CRDs accept"].startswith("✓ "), out
    assert "fieldValidation=Strict" in rows["KubeRay CRDs accept"]


def test_doctor_refuses_a_field_the_installed_crds_lack(playground, namespace, capsys, tmp_path):
    wanted = os.environ.get(PLAYGROUND_KUBERAY_ENV, "")
    if wanted and wanted != "1.6":  # `make test-matrix`: a real v1.6 field on the older CRDs
        def change(d):
            d.setdefault("kuberay", {}).setdefault("spec", {})["authOptions"] = {"mode": "token"}
        field = "authOptions"
    else:  # the pinned v1.6 CRDs: a misspelt key of the overlay
        def change(d):
            d.setdefault("kuberay", {}).setdefault("spec", {})["enableInTreeAutoscalar"] = True
        field = "enableInTreeAutoscalar"
    bad = infra_variant(tmp_path, "bad.yaml", change)
    rc, out, err = cli(capsys, "doctor", RECIPE, bad, "-n", namespace, "--kubeconfig", playground.kubeconfig)
    row = doctor_rows(out)["KubeRay CRDs accept"]
    assert rc == 1 and row.startswith("✗ "), out + err
    assert field in row and "unknown field" in row and "kuberay.spec" in row, row
    assert "Traceback" not in err


def test_the_playground_runs_the_chosen_kuberay(playground):
    """`$DOCKYARD_PLAYGROUND_KUBERAY` (make test-matrix) picks the operator and its CRDs: RayClusterSpec
    .authOptions is in v1.6's CRD only."""
    from kubernetes import client

    wanted = os.environ.get(PLAYGROUND_KUBERAY_ENV, "")
    pinned = kuberay_pin(wanted) if wanted else versions()["KUBERAY_VERSION"]
    ext = client.ApiextensionsV1Api(playground.api_client())
    crd = ext.read_custom_resource_definition("rayclusters.ray.io")
    spec = next(v for v in crd.spec.versions if v.name == "v1").schema.open_apiv3_schema.properties["spec"]
    assert ("authOptions" in spec.properties) == (pinned >= "v1.6"), (pinned, sorted(spec.properties))


def test_the_playground_runs_the_chosen_kubernetes(playground):
    """`$DOCKYARD_PLAYGROUND_KUBERNETES` (make test-matrix) picks the control plane: the server's /version and
    kwok's nodes are that pin's, so the matrix cannot silently run on the newest minor."""
    from kubernetes import client

    wanted = playground_kubernetes()
    assert (os.environ.get(PLAYGROUND_KUBERNETES_ENV) or versions()["KUBERNETES_VERSION"]) in wanted  # 1.33 -> v1.33.13
    api = playground.api_client()
    assert client.VersionApi(api).get_code().git_version == wanted
    kubelets = {n.status.node_info.kubelet_version for n in client.CoreV1Api(api).list_node().items}
    assert kubelets == {wanted}, kubelets
