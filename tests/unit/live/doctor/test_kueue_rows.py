"""doctor's Kueue rows (generator/live/doctor/kueue_rows.py; the gang and quota in generator/live/kueue/)
without a cluster: the gang Kueue counts (pod sets of the rendered RayJob/RayCluster), a ClusterQueue's
namespaceSelector, the quota arithmetic with flavors and cohorts. The Kueue objects are the API server's own answers on
`playground up --kueue` (Kueue v0.17.0), the playground's queues and tests/unit/data/kueue_applied.yaml
applied on top, read back into tests/unit/data/kueue_objects.json."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from types import SimpleNamespace

import pytest
import yaml

from generator.live.client import pod_requests
from generator.live.client.selectors import selector_matches
from generator.live.doctor import kueue_rows as kr
from generator.live.doctor.rows import FAIL, OK, WARN, Namespace
from generator.live.kueue import gang as kueue_gang
from generator.live.kueue import quota
from generator.live.kueue.api import API, QUEUE_LABEL

REPO = Path(__file__).resolve().parents[4]
RECIPE = REPO / "values-examples" / "grpo_swe.yaml"
KUEUE_INFRA = REPO / "values-examples" / "grpo_swe_kueue.infra.yaml"
OBJECTS = json.loads((Path(__file__).parents[2] / "data" / "kueue_objects.json").read_text())
CQ, LQ, FLAVORS = OBJECTS["clusterqueues"], OBJECTS["localqueues"], OBJECTS["resourceflavors"]
ONE_TRAINER = ["cluster.trainer.nodes=1"]  # 16 GPUs: the playground ClusterQueue's whole GPU quota


def docs(overrides=(), infra=KUEUE_INFRA, mode=None, change=None, tmp_path=None):
    from generator.live.changes.plan import plan
    from generator.render.helm import template

    if change:
        data = yaml.safe_load(infra.read_text())
        change(data)
        infra = tmp_path / "infra.yaml"
        infra.write_text(yaml.safe_dump(data))
    p = plan(str(RECIPE), str(infra), list(overrides), None, None, mode=mode)
    return p.values, [d for d in yaml.safe_load_all(template(p.values, p.release, p.namespace)) if d]


def gang(overrides=(), **kw):
    _, rendered = docs(overrides, **kw)
    return kueue_gang.pod_sets(kueue_gang.queued_object(rendered))


def namespace(name):
    obj = OBJECTS["namespaces"][name]
    return Namespace(name, True, SimpleNamespace(metadata=SimpleNamespace(labels=obj["metadata"]["labels"])))


# the gang ------------------------------------------------------------------------------------------------

def test_the_gang_is_head_each_worker_group_and_the_k8sjobmode_submitter():
    sets = gang()
    assert [(ps.name, ps.count) for ps in sets] == [("head", 1), ("trainer", 2), ("inference", 1), ("submitter", 1)]
    per = {ps.name: ps.per_pod for ps in sets}
    assert per["trainer"] == {"cpu": 16.0, "memory": 64 * 2**30, "nvidia.com/gpu": 8.0}
    assert per["head"] == {"cpu": 2.0, "memory": 8 * 2**30}
    assert per["submitter"] == {"cpu": 0.5, "memory": 512 * 2**20}  # the chart's submitterPodTemplate's requests
    assert kueue_gang.gang_needs(sets) == {"cpu": 50.5, "memory": (8 + 3 * 64) * 2**30 + 512 * 2**20,
                                           "nvidia.com/gpu": 24.0}


def test_httpmode_has_no_submitter_pod_set_and_bringup_queues_the_raycluster(tmp_path):
    def http(d):
        d["launch"]["submissionMode"] = "HTTPMode"

    assert [ps.name for ps in gang(change=http, tmp_path=tmp_path)] == ["head", "trainer", "inference"]
    _, rendered = docs(mode="bringup")
    obj = kueue_gang.queued_object(rendered)
    assert obj["kind"] == "RayCluster" and obj["metadata"]["labels"][QUEUE_LABEL] == "training"
    assert [ps.name for ps in kueue_gang.pod_sets(obj)] == ["head", "trainer", "inference"]


def test_no_queue_no_rows_and_no_request():
    from generator.live.changes.plan import plan

    p = plan(str(RECIPE), str(REPO / "values-examples" / "grpo_swe.infra.yaml"), [], None, None)
    assert kr.doctor_rows(None, p.values, [], Namespace("dockyard", True)) == []  # type: ignore[arg-type]


def test_pod_requests_count_limits_init_containers_sidecars_and_overhead():
    spec = {
        "containers": [{"resources": {"limits": {"cpu": "2", "memory": "1Gi"}}},  # limits where no request
                       {"resources": {"requests": {"cpu": "500m"}, "limits": {"cpu": "1", "nvidia.com/gpu": "1"}}}],
        "initContainers": [
            {"restartPolicy": "Always", "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}}},  # a sidecar
            {"resources": {"requests": {"cpu": "4", "memory": "128Mi"}}},  # runs beside the sidecar: 4.1 cpu peak
        ],
        "overhead": {"cpu": "250m"},
    }
    got = pod_requests.pod_requests(spec)  # the scheduler's count, which doctor and Kueue share
    assert got == pytest.approx({"cpu": 4.1 + 0.25, "memory": 2**30 + 64 * 2**20, "nvidia.com/gpu": 1.0})


def test_worker_replicas_times_num_of_hosts():
    obj = {"kind": "RayCluster", "spec": {"headGroupSpec": {"template": {"spec": {"containers": []}}},
                                          "workerGroupSpecs": [{"groupName": "tpu", "replicas": 2, "numOfHosts": 4,
                                                                "template": {"spec": {"containers": []}}},
                                                               {"groupName": "one", "template": {"spec": {}}}]}}
    assert [(ps.name, ps.count) for ps in kueue_gang.pod_sets(obj)] == [("head", 1), ("tpu", 8), ("one", 1)]


# namespaceSelector ---------------------------------------------------------------------------------------

def test_namespace_selector_on_the_captured_queues():
    dockyard = OBJECTS["namespaces"]["dockyard"]["metadata"]["labels"]
    kd1 = OBJECTS["namespaces"]["kd1"]["metadata"]["labels"]  # team=ml
    everyone = CQ["playground"]["spec"]["namespaceSelector"]
    team_rl = CQ["kd-small"]["spec"]["namespaceSelector"]  # team In (rl)
    assert everyone == {} and selector_matches(everyone, dockyard) and selector_matches(everyone, kd1)
    assert not selector_matches(team_rl, kd1) and selector_matches(team_rl, {**kd1, "team": "rl"})
    assert not selector_matches(None, dockyard)  # null: no namespace (Kueue's default)
    row = kr.namespace_selector_row(CQ["kd-small"], namespace("kd1"))
    assert row.mark == FAIL and "team In (rl) does not match namespace kd1" in row.detail and "team=ml" in row.detail
    assert kr.namespace_selector_row(CQ["playground"], namespace("kd1")).mark == OK


@pytest.mark.parametrize(("selector", "labels", "matches"), [
    ({"matchLabels": {"a": "1"}}, {"a": "1", "b": "2"}, True),
    ({"matchLabels": {"a": "1"}}, {"a": "2"}, False),
    ({"matchExpressions": [{"key": "a", "operator": "NotIn", "values": ["1"]}]}, {}, True),  # absent: not in
    ({"matchExpressions": [{"key": "a", "operator": "Exists"}]}, {}, False),
    ({"matchExpressions": [{"key": "a", "operator": "DoesNotExist"}]}, {"b": "1"}, True),
    ({"matchLabels": {"a": "1"}, "matchExpressions": [{"key": "b", "operator": "In", "values": ["x"]}]},
     {"a": "1", "b": "y"}, False),
])
def test_label_selector_operators(selector, labels, matches):
    assert selector_matches(selector, labels) is matches


# LocalQueue / ClusterQueue conditions ---------------------------------------------------------------------

def test_active_conditions_of_the_captured_queues():
    assert kr._active(LQ["dockyard/training"]) == (True, "Ready: Can submit new workloads to localQueue")
    assert kr._active(LQ["kd1/orphan"])[0] is False and "ClusterQueueDoesNotExist" in kr._active(LQ["kd1/orphan"])[1]
    assert kr._active(LQ["kd1/stopped"])[0] is False
    active, why = kr._active(CQ["kd-held"])
    assert active is False and "nosuch-flavor" in why
    assert kr._active({"status": {}}) == (None, "")  # Kueue has not looked at it (controller down)


# quota ------------------------------------------------------------------------------------------------------

def test_the_example_gang_does_not_fit_the_playground_queue_by_8_gpus():
    row = kr.gang_row(CQ["playground"], gang(), FLAVORS)
    assert row.mark == FAIL, row
    assert ("5 pods (head 1, trainer 2, inference 1, submitter 1) never fit ClusterQueue playground's nominal quota "
            "(no cohort to borrow from): nvidia.com/gpu: the gang needs 24, the quota is 16, 8 short") == row.detail
    assert "nominalQuota" in row.remedy and "cluster.trainer/inference" in row.remedy


def test_one_trainer_fits_the_playground_queue_exactly():
    row = kr.gang_row(CQ["playground"], gang(ONE_TRAINER), FLAVORS)
    assert row.mark == OK, row
    assert "cpu 34.5 of 192, memory 136.5Gi of 1.5Ti, nvidia.com/gpu 16 of 16" in row.detail


def test_reserved_quota_is_said_but_still_fits():
    cq = copy.deepcopy(CQ["playground"])
    for r in cq["status"]["flavorsReservation"][0]["resources"]:
        if r["name"] == "nvidia.com/gpu":
            r["total"] = "8"
    row = kr.gang_row(cq, gang(ONE_TRAINER), FLAVORS)
    assert row.mark == OK and "reserved now by admitted workloads: nvidia.com/gpu 8 (it queues" in row.detail


def test_a_resource_no_resource_group_covers():
    cq = CQ["kd-nogpu"]
    row = kr.coverage_row("kd-nogpu", quota.resource_groups(cq), gang())
    assert row.mark == FAIL
    assert "covers cpu, memory; the gang also requests nvidia.com/gpu (by trainer, inference)" in row.detail
    assert kr.coverage_row("playground", quota.resource_groups(CQ["playground"]), gang()).mark == OK


def test_pods_counted_when_the_queue_covers_them():
    cq = copy.deepcopy(CQ["playground"])
    group = cq["spec"]["resourceGroups"][0]
    group["coveredResources"].append("pods")
    group["flavors"][0]["resources"].append({"name": "pods", "nominalQuota": "3"})
    row = kr.gang_row(cq, gang(ONE_TRAINER), FLAVORS)
    assert row.mark == FAIL and "pods: the gang needs 4, the quota is 3, 1 short" in row.detail


def borrowing(name):
    cq = CQ[name]
    return quota.Borrowing(quota.cohort_of(cq), quota.lendable(cq, list(CQ.values())))


def test_borrowing_limit_caps_what_the_cohort_lends():
    # kd-small: nominal 8 GPUs, borrowingLimit 4; kd-borrow of the same cohort lends 16
    assert borrowing("kd-small").lendable[("default-flavor", "nvidia.com/gpu")] == 16
    row = kr.gang_row(CQ["kd-small"], gang(ONE_TRAINER), FLAVORS, borrowing("kd-small"))
    assert row.mark == FAIL
    assert ("nvidia.com/gpu: the gang needs 16, the quota is nominal 8 + 4 borrowable in cohort kd-cohort, 4 short"
            in row.detail)


def test_fits_only_by_borrowing_is_a_warning_with_the_numbers():
    row = kr.gang_row(CQ["kd-borrow"], gang(), FLAVORS, borrowing("kd-borrow"))  # 24 GPUs: 16 + 8 lent by kd-small
    assert row.mark == WARN, row
    assert "nvidia.com/gpu: needs 24, 8 over the quota of nominal 16 + 8 borrowable in cohort kd-cohort" in row.detail
    assert kr.gang_row(CQ["kd-borrow"], gang(ONE_TRAINER), FLAVORS, borrowing("kd-borrow")).mark == OK


def test_a_cohort_with_no_lender_never_fits_as_kueue_says():
    # Kueue's own words for this queue: "... > maximum capacity (8)"
    row = kr.gang_row(CQ["kd-lonely"], gang(ONE_TRAINER), FLAVORS, borrowing("kd-lonely"))
    assert row.mark == FAIL
    assert "the quota is nominal 8 + 0 borrowable in cohort kd-lonely-cohort, 8 short" in row.detail


def test_unknown_lending_without_a_borrowing_limit_is_a_warning():
    unknown = quota.Borrowing("kd-cohort", None, "forbidden: cannot list clusterqueues.kueue.x-k8s.io")
    row = kr.gang_row(CQ["kd-borrow"], gang(), FLAVORS, unknown)
    assert row.mark == WARN and "whether the cohort lends that much is unknown (forbidden" in row.detail
    # with a borrowing limit the bound is known even so: 8 + 4 < 24
    assert kr.gang_row(CQ["kd-small"], gang(), FLAVORS, quota.Borrowing("kd-cohort", None, "x")).mark == FAIL


def test_a_flavor_whose_taint_the_workers_do_not_tolerate(tmp_path):
    row = kr.gang_row(CQ["kd-flavors"], gang(), FLAVORS)
    assert row.mark == FAIL
    assert ("no flavor takes pod set trainer (trainer does not tolerate gpu-a100's taint pool=a100:NoSchedule)"
            in row.detail)

    def a100(d):  # the tolerations and the node label of the flavor: the workers take it
        gpu = d["kuberay"]["placement"]["gpu"]
        gpu["tolerations"].append({"key": "pool", "operator": "Exists", "effect": "NoSchedule"})
        gpu["nodeSelector"]["nvidia.com/gpu.product"] = "A100"

    assert kr.gang_row(CQ["kd-flavors"], gang(change=a100, tmp_path=tmp_path), FLAVORS).mark == OK

    def h100(d):
        a100(d)
        d["kuberay"]["placement"]["gpu"]["nodeSelector"]["nvidia.com/gpu.product"] = "H100"

    row = kr.gang_row(CQ["kd-flavors"], gang(change=h100, tmp_path=tmp_path), FLAVORS)
    assert row.mark == FAIL and "does not match gpu-a100's nodeLabels" in row.detail


def test_the_first_flavor_with_room_is_taken_per_pod_set():
    # two GPU flavors of 8 each: trainer (8) takes the first, inference (8) the second; 3 × 8 never fit
    cq = copy.deepcopy(CQ["playground"])
    g = cq["spec"]["resourceGroups"][0]
    second = copy.deepcopy(g["flavors"][0])
    second["name"] = "spare"
    for f in (g["flavors"][0], second):
        for r in f["resources"]:
            if r["name"] == "nvidia.com/gpu":
                r["nominalQuota"] = "8"
    g["flavors"].append(second)
    flavors = {**FLAVORS, "spare": {"spec": {}}}
    assert kr.gang_row(cq, gang(ONE_TRAINER), flavors).mark == OK
    row = kr.gang_row(cq, gang(), flavors)
    assert row.mark == FAIL and "nvidia.com/gpu: the gang needs 24, the quota is 16, 8 short" in row.detail


# what cannot be read -------------------------------------------------------------------------------------

def test_unreadable_flavors_never_make_the_gang_row_pass():
    row = kr.gang_row(CQ["playground"], gang(ONE_TRAINER), None)  # the flavors answered 403
    assert row.mark == WARN and row.missing == ["get resourceflavors.kueue.x-k8s.io"], row
    assert row.detail.startswith(
        "forbidden: cannot get resourceflavors.kueue.x-k8s.io at cluster scope: flavor match unknown; counted as if "
        "the gang matched every flavor: 4 pods (head 1, trainer 1, inference 1, submitter 1) fit ClusterQueue ")
    assert "resourceflavors.kueue.x-k8s.io" in row.remedy
    # a taint the workers do not tolerate is unknown, so is the refusal: a warning, not ✗
    assert kr.gang_row(CQ["kd-flavors"], gang(), None).mark == WARN
    # more than the whole quota never fits, whichever flavors the gang matches: still ✗ with the numbers
    row = kr.gang_row(CQ["playground"], gang(), None)
    assert row.mark == FAIL and row.detail.endswith("nvidia.com/gpu: the gang needs 24, the quota is 16, 8 short")


class Served:
    """The discovery documents a cluster serves under /apis/kueue.x-k8s.io, and a 403 for every ResourceFlavor."""

    def __init__(self, versions):
        self.versions, self.asked = versions, []

    def request(self, method, path):
        from kubernetes.client.exceptions import ApiException

        self.asked.append(path)
        version = path.split("/")[3]
        if "/resourceflavors/" in path:
            raise ApiException(status=403, reason="Forbidden")
        if path.count("/") == 3 and version in self.versions:
            return {"resources": [{"name": n} for n in kr.NEEDED]}
        exc = ApiException(status=404, reason="Not Found")
        exc.body = "404 page not found"
        raise exc


def test_a_kueue_serving_only_v1beta1_is_refused():
    old = Served({"v1beta1"})
    row, version = kr.crds_row(old)  # type: ignore[arg-type]
    assert version is None and row.mark == FAIL, row
    assert row.detail == ("the cluster serves kueue.x-k8s.io/v1beta1 but not v1beta2: Kueue older than v0.15 serves "
                          "only v1beta1; the launcher reads v1beta2")
    assert old.asked == ["/apis/kueue.x-k8s.io/v1beta2", "/apis/kueue.x-k8s.io/v1beta1"]
    row, version = kr.crds_row(Served(set()))  # type: ignore[arg-type]
    assert version is None and row.mark == FAIL and "Kueue is not installed" in row.detail
    current = Served({"v1beta2", "v1beta1"})
    assert kr.crds_row(current)[1] == "v1beta2" and current.asked == ["/apis/kueue.x-k8s.io/v1beta2"]  # type: ignore[arg-type]


def test_flavors_that_answer_403_are_unknown():
    assert kr.flavors_of(Served({"v1beta2"}), API, CQ["kd-flavors"]) is None  # type: ignore[arg-type]
