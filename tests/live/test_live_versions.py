"""The versions users run, on the session playground: `doctor` reads the server's
version (/version) and says whether it is in the supported range, and sends the rendered RayJob/RayCluster
to the installed KubeRay CRDs as a dry-run create with fieldValidation=Strict: a field they lack is ✗ with
the field named (a misspelt kuberay.spec key here; a v1.6 field on v1.4 CRDs in `make test-matrix`). `run` asks the
served RayJob before Helm runs and leaves out a default it lacks (KubeRay v1.4's RayJob CRD put in place here)."""

from __future__ import annotations

import os

import pytest
from live_helpers import INFRA, RECIPE, cli, doctor_rows, infra_variant
from live_helpers import kube as kube_of
from session_env import wait_for

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


RAYJOB_CRD = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/rayjobs.ray.io"


def _served_deadline(kube, namespace: str) -> object:
    (job,) = kube.list_ray("rayjobs", namespace)
    return job["spec"].get("preRunningDeadlineSeconds", "absent")


def test_run_fits_the_default_deadline_to_the_served_rayjob(playground, make_namespace, capsys, tmp_path):
    """`run` asks the served RayJob before Helm runs. With the session's CRD (the pinned KubeRay's): the default
    deadline is installed, no note. With KubeRay v1.4's RayJob CRD put in its place (replaced in place for this
    test, and put back: the live part's tests run one after another, none beside this one): the default is left
    out with a note, and a deadline the infra spec sets is refused by name before Helm runs."""
    import yaml

    from generator.inputs.version_rules import DEFAULT_KUBERAY_MINOR, WITHOUT_PRE_RUNNING
    from generator.live.changes.served_fields import FIELD, served_rayjob_knows
    from generator.pinned_tools import KUBERAY_PINS, cache_dir

    kc, admin = playground.kubeconfig, kube_of(playground)
    # `make test-matrix`: the session's CRD is already an older KubeRay's
    older = os.environ.get(PLAYGROUND_KUBERAY_ENV, DEFAULT_KUBERAY_MINOR) in WITHOUT_PRE_RUNNING
    if not older:
        first = make_namespace()
        rc, out, err = cli(capsys, "run", RECIPE, INFRA, "-n", first, "--kubeconfig", kc, "--timeout", 120)
        assert rc == 0 and "preRunningDeadlineSeconds" not in err, err
        assert _served_deadline(admin, first) == 3600
    pinned = admin.request("GET", RAYJOB_CRD)
    old = yaml.safe_load((cache_dir() / f"kuberay-crds-{versions()[KUBERAY_PINS['1.4']]}" /
                          "ray.io_rayjobs.yaml").read_text())
    namespace = make_namespace()
    try:
        if not older:
            old["metadata"]["resourceVersion"] = pinned["metadata"]["resourceVersion"]
            admin.request("PUT", RAYJOB_CRD, body=old)
            wait_for(lambda: served_rayjob_knows(admin, namespace, FIELD) is False, 120,
                     "the API server to decode RayJobs with KubeRay v1.4's CRD")
        explicit = infra_variant(tmp_path, "deadline.yaml",
                                 lambda d: d.setdefault("launch", {}).update(preRunningDeadlineSeconds=900))
        rc, out, err = cli(capsys, "run", RECIPE, explicit, "-n", namespace, "--kubeconfig", kc, "--timeout", 120)
        assert rc == 1 and "launch.preRunningDeadlineSeconds: the installed KubeRay's RayJob lacks it" in err, err
        assert admin.list_ray("rayjobs", namespace) == []  # refused before Helm ran
        rc, out, err = cli(capsys, "run", RECIPE, INFRA, "-n", namespace, "--kubeconfig", kc, "--timeout", 120)
        assert rc == 0, err
        assert "note: the installed KubeRay's RayJob has no preRunningDeadlineSeconds" in err, err
        assert _served_deadline(admin, namespace) == "absent"
    finally:
        if not older:
            current = admin.request("GET", RAYJOB_CRD)
            pinned["metadata"] = {**pinned["metadata"], "resourceVersion": current["metadata"]["resourceVersion"]}
            admin.request("PUT", RAYJOB_CRD, body=pinned)
            wait_for(lambda: served_rayjob_knows(admin, namespace, FIELD), 120,
                     "the API server to decode RayJobs with the pinned CRD again")
