"""Zero is a value: an integer set to 0 is rendered, not dropped as "unset". And integers stay
integers: Helm reads values' numbers as floats, which printed as 1.00068e+09 before."""

from __future__ import annotations

import pytest

from tests.conftest import chart_values, render_values

IDS = ("runAsUser", "runAsGroup", "fsGroup")
ROLES = ("sandbox", "test", "head", "trainer", "inference", "submitter")


def _contexts(out, role):
    spec = out.pod_specs()[role]
    return spec["securityContext"], spec["containers"][0]["securityContext"]


@pytest.mark.parametrize("profile", ["baseline", "restricted"])
@pytest.mark.parametrize("uid", [0, 1000680000])
def test_ids_render_as_set_zero_included(profile, uid):
    # root under restricted is refused (tests/chart/test_helm_schema.py): there the UID is non-zero, the GIDs zero
    user = 1000680000 if profile == "restricted" and uid == 0 else uid
    ids = {"runAsUser": user, "runAsGroup": uid, "fsGroup": uid}
    sec = {"profile": profile, **ids}
    out = render_values(chart_values(sandbox={"security": sec}, infra={"security": {"enabled": True, **sec}}))
    for role in ROLES:
        pod, container = _contexts(out, role)
        assert {k: pod.get(k) for k in IDS} == ids, role
        ids_of_container = {k: container.get(k) for k in ("runAsUser", "runAsGroup")}
        assert ids_of_container == {"runAsUser": user, "runAsGroup": uid}, role
        assert all(type(pod[k]) is int for k in IDS), role


def test_unset_ids_stay_unset_and_restricted_fills_uid_and_fsgroup(render):
    base = _contexts(render(), "sandbox")
    assert not any(k in ctx for ctx in base for k in IDS)
    pod, container = _contexts(render(sandbox={"security": {"profile": "restricted"}}), "sandbox")
    assert (pod["runAsUser"], pod["fsGroup"], container["runAsUser"]) == (10001, 10001, 10001)
    assert "runAsGroup" not in pod and "runAsGroup" not in container


def test_other_zeros_and_large_integers(render):
    out = render(
        sandbox={"replicas": 0, "pdb": {"maxUnavailable": 0}, "port": 65535,
                 # a zero limit is rendered as 0, not the request (its request 0 too: the API wants request <= limit)
                 "resources": {"cpu": 0, "cpuLimit": 0, "memoryLimit": 4_000_000_000},
                 "security": {"readOnlyRootFilesystem": True, "workDirSizeLimit": 10_000_000_000},
                 "topologySpreadConstraints": [{"topologyKey": "zone", "maxSkew": 1_000_000, "minDomains": 1_000_000,
                                                    "whenUnsatisfiable": "DoNotSchedule"}]},
        launch={"ttlSecondsAfterFinished": 0, "activeDeadlineSeconds": 2_592_000, "backoffLimit": 0},
        infra={"limitRange": {"enabled": True, "min": {"cpu": 0}, "max": {"memory": 64_000_000_000}},
               "resourceQuota": {"enabled": True, "hard": {"services.loadbalancers": 0,  # none made: a zero that holds
                                                           "requests.memory": 2_000_000_000_000}}},
    )
    dep = out.one("Deployment")["spec"]
    assert dep["replicas"] == 0
    assert out.all("PodDisruptionBudget")[0]["spec"]["maxUnavailable"] == 0
    pod = dep["template"]["spec"]
    limits = pod["containers"][0]["resources"]["limits"]
    assert (limits["cpu"], limits["memory"]) == ("0", "4000000000")
    assert {"name": "workdir", "emptyDir": {"sizeLimit": "10000000000"}} in pod["volumes"]
    spread = pod["topologySpreadConstraints"][0]
    assert (spread["maxSkew"], spread["minDomains"]) == (1_000_000, 1_000_000)
    job = out.one("RayJob")["spec"]
    assert (job["ttlSecondsAfterFinished"], job["activeDeadlineSeconds"], job["backoffLimit"]) == (0, 2_592_000, 0)
    limit = out.one("LimitRange")["spec"]["limits"][0]
    assert (limit["min"], limit["max"]) == ({"cpu": "0"}, {"memory": "64000000000"})
    hard = out.one("ResourceQuota")["spec"]["hard"]
    assert hard == {"services.loadbalancers": "0", "requests.memory": "2000000000000"}


def test_gpu_pdb_min_available_zero():
    out = render_values(chart_values(launch={"mode": "bringup"}, kuberay={"pdb": {"enabled": True, "minAvailable": 0}}))
    gpu = [p for p in out.all("PodDisruptionBudget") if p["metadata"]["name"].endswith("-gpu")]
    assert gpu[0]["spec"]["minAvailable"] == 0
