"""A rendered ResourceQuota that cannot hold what the release asks for is refused at `values`/`check` time (exit 2)
with the quota's key and the asking keys, each with its line, and the numbers; one that exactly holds passes; the
rule's totals are the rendered pods' and claims' (summed here from `helm template`, independently of the rule)."""

from __future__ import annotations

import copy
import math

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from generator.cli import main
from generator.inputs.compose import composed
from generator.inputs.quota_rules import asked_total, judges, milli, rollout_surge
from generator.render.pod_templates import pod_templates
from tests.conftest import RECIPE, chart_values, deep_merge, render_values, write

# grpo_swe.yaml: trainer 2 × 8 GPUs, inference 1 × 8 GPUs.
INFRA = {
    "infra": {"namespace": "dockyard", "image": {"repository": "ghcr.io/dockyard-rl/ubuntu-swe", "tag": "2026.11-vllm"},
              "backend": "vllm", "storage": {"checkpoints": {"size": "1Ti", "storageClassName": "gold"},
                                             "logs": {"size": "100Gi"}}},
    "launch": {"mode": "rayjob"},
    "kuberay": {"head": {"cpu": "2", "memory": "8Gi"}, "worker": {"cpu": "16", "memory": "64Gi"}},
    "sandbox": {"replicas": 2, "resources": {"cpu": "1", "memory": "2Gi", "ephemeralStorage": "10Gi",
                                             "cpuLimit": "2", "memoryLimit": "4Gi"}},
}
# What that release asks for, worked out by hand: head 1, trainer 2, inference 1, submitter 1, sandbox 2 and the
# one a rollout adds beside them (maxSurge 25% of 2, rounded up), test 1. The logs claim mounts on every Ray pod, so
# each carries the log keeper (requests 10m/32Mi, limits 200m/64Mi).
EXACT = {
    "pods": "9",
    "persistentvolumeclaims": "2",
    "requests.storage": "1124Gi",
    "gold.storageclass.storage.k8s.io/requests.storage": "1Ti",
    "gold.storageclass.storage.k8s.io/persistentvolumeclaims": "1",
    "requests.nvidia.com/gpu": "24",
    "requests.cpu": "53640m",  # 2.01 + 3 × 16.01 + 0.5 + 3 × 1 + 0.1
    "cpu": "53640m",
    "limits.cpu": "57900m",  # 2.2 + 3 × 16.2 + 1 + 3 × 2 + 0.1
    "requests.memory": "211648Mi",  # 8Gi+32Mi + 3 × (64Gi+32Mi) + 512Mi + 3 × 2Gi + 64Mi
    "limits.memory": "218432Mi",  # 8Gi+64Mi + 3 × (64Gi+64Mi) + 1Gi + 3 × 4Gi + 64Mi
    "requests.ephemeral-storage": "30784Mi",  # 3 × 10Gi + 64Mi
}
# (quota key, one unit less, fragments naming the asking keys with their lines in grpo_swe.yaml / infra.yaml)
LESS = [
    ("pods", "8", ["sandbox.replicas at", "sandbox.rollingUpdate.maxSurge (default)", "cluster.trainer.nodes at",
                   "asks for 9"]),
    ("persistentvolumeclaims", "1", ["infra.storage.checkpoints.size at", "infra.storage.logs.size at"]),
    ("requests.storage", "1206885810175", ["infra.storage.checkpoints.size at", "asks for 1124Gi"]),
    ("gold.storageclass.storage.k8s.io/requests.storage", "1099511627775",
     ["infra.storage.checkpoints.storageClassName at", "asks for 1Ti"]),
    ("gold.storageclass.storage.k8s.io/persistentvolumeclaims", "0", ["infra.storage.checkpoints.size at"]),
    ("requests.nvidia.com/gpu", "23", ["cluster.trainer.gpusPerNode at", "cluster.inference.nodes at",
                                       "asks for 24"]),
    ("requests.cpu", "53639m", ["kuberay.worker.cpu at", "sandbox.resources.cpu at", "asks for 53640m"]),
    ("cpu", "53639m", ["kuberay.head.cpu at", "launch.watch.keepRayLogMiB (default)"]),
    ("limits.cpu", "57899m", ["sandbox.resources.cpuLimit at", "asks for 57900m"]),
    ("requests.memory", "221929013247", ["kuberay.worker.memory at", "asks for 211648Mi"]),
    ("limits.memory", "229042552831", ["sandbox.resources.memoryLimit at", "asks for 218432Mi"]),
    ("requests.ephemeral-storage", "32279363583", ["sandbox.resources.ephemeralStorage at"]),
]


def _values(tmp_path, capsys, hard: dict[str, str], infra: dict | None = None) -> tuple[int, str]:
    data = deep_merge(infra or INFRA, {"infra": {"resourceQuota": {"enabled": True, "hard": hard}}})
    code = main(["values", str(RECIPE), str(write(tmp_path, "infra.yaml", data))])
    return code, capsys.readouterr().err


def test_the_hand_worked_totals_are_the_rules(tmp_path):
    values = composed(RECIPE, write(tmp_path, "infra.yaml", INFRA)).values
    assert {key: asked_total(values, key) for key in EXACT} == {k: milli(v) for k, v in EXACT.items()}


def test_a_quota_that_exactly_holds_passes(tmp_path, capsys):
    code, err = _values(tmp_path, capsys, EXACT)
    assert code == 0, err


@pytest.mark.parametrize("key, less, fragments", LESS, ids=[c[0] for c in LESS])
def test_a_quota_one_unit_short_is_refused_with_both_keys(tmp_path, capsys, key, less, fragments):
    code, err = _values(tmp_path, capsys, {**EXACT, key: less})
    assert code == 2
    assert f"infra.yaml:{_line(tmp_path, key)}: infra.resourceQuota.hard.{key}: the quota holds {less}" in err, err
    for fragment in fragments:
        assert fragment in err, (fragment, err)
    assert err.count("error:") == 1  # only the short key


def _line(tmp_path, key: str) -> int:
    return next(i for i, t in enumerate((tmp_path / "infra.yaml").read_text().splitlines(), 1) if t.strip().startswith(
        (key + ":", f"'{key}':")))


def test_check_refuses_the_checkpoint_claim_past_the_quota(tmp_path, capsys):
    """The case that installed, then failed at the claim: a 100Gi storage quota beside a 1Ti checkpoint claim."""
    data = deep_merge(INFRA, {"infra": {"resourceQuota": {"enabled": True, "hard": {"requests.storage": "100Gi"}}}})
    path = write(tmp_path, "infra.yaml", data)
    code = main(["check", str(RECIPE), str(path)])
    err = capsys.readouterr().err
    assert code == 2
    quota_line = next(i for i, t in enumerate(path.read_text().splitlines(), 1) if "requests.storage" in t)
    size_line = next(i for i, t in enumerate(path.read_text().splitlines(), 1) if "size: 1Ti" in t)
    assert f"infra.yaml:{quota_line}: infra.resourceQuota.hard.requests.storage: the quota holds 100Gi" in err, err
    assert f"infra.storage.checkpoints.size at {path}:{size_line}" in err
    assert "asks for 1124Gi" in err


def test_a_quota_on_what_the_release_does_not_ask_is_not_judged(tmp_path, capsys):
    code, err = _values(tmp_path, capsys, {"services": "0", "requests.example.com/fpga": "0", "configmaps": "0"})
    assert code == 0, err


def test_a_disabled_quota_is_not_judged(tmp_path, capsys):
    """Its limits are refused as doing nothing (generator.inputs.switch_keys), not judged against the release."""
    data = deep_merge(INFRA, {"infra": {"resourceQuota": {"enabled": False, "hard": {"pods": "1"}}}})
    assert main(["values", str(RECIPE), str(write(tmp_path, "infra.yaml", data))]) == 2
    err = capsys.readouterr().err
    assert "infra.resourceQuota.hard does nothing with infra.resourceQuota.enabled false" in err
    assert "asks for" not in err
    data = deep_merge(INFRA, {"infra": {"resourceQuota": {"enabled": False, "hard": {}}}})
    assert main(["values", str(RECIPE), str(write(tmp_path, "infra.yaml", data))]) == 0


def test_attach_mode_asks_for_no_ray_pods_and_no_claims(tmp_path, capsys):
    infra = copy.deepcopy(deep_merge(INFRA, {"launch": {"mode": "attach", "clusterName": "shared"}}))
    del infra["infra"]["storage"], infra["kuberay"]  # attach mode refuses them: the GPU pods are not this release's
    code, err = _values(tmp_path, capsys, {"pods": "4", "requests.nvidia.com/gpu": "0", "persistentvolumeclaims": "0"},
                        infra)
    assert code == 0, err  # the sandbox 2, one more in a rollout, and the test pod
    code, err = _values(tmp_path, capsys, {"pods": "3"}, infra)
    assert code == 2 and "asks for 4" in err


def test_the_model_refuses_it_too():
    """ChartValues (what `values.schema.json` and the fast path stand beside) refuses the same contradiction."""
    with pytest.raises(ValidationError, match="the quota holds 1 but the release asks for 8") as caught:
        chart_values(infra={"resourceQuota": {"enabled": True, "hard": {"pods": "1"}}})
    assert _refused_at(caught.value) == ("infra", "resourceQuota", "hard", "pods")


def _refused_at(exc: ValidationError) -> tuple:
    (error,) = exc.errors()
    return error["ctx"]["inside"]


# The property: the exact totals pass and one unit less of any of them is refused. --------------------------------

UNIT = {"cpu": "1m", "memory": "1", "storage": "1", "count": "1"}
KIND = {"pods": "count", "requests.nvidia.com/gpu": "count", "persistentvolumeclaims": "count",
        "requests.cpu": "cpu", "limits.cpu": "cpu", "requests.memory": "memory", "limits.memory": "memory",
        "requests.storage": "storage"}


@settings(max_examples=40, suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(trainer=st.integers(1, 8), inference=st.integers(1, 4), gpus=st.integers(1, 8), replicas=st.integers(0, 50),
       worker_cpu=st.integers(1, 64000), sandbox_mem=st.integers(1, 4096), size=st.integers(1, 4096),
       short=st.sampled_from(sorted(KIND)), submission=st.sampled_from(["K8sJobMode", "HTTPMode"]))
def test_the_exact_total_passes_and_one_unit_less_is_refused(trainer, inference, gpus, replicas, worker_cpu,
                                                             sandbox_mem, size, short, submission):
    over = {"recipe": {"cluster": {"trainer": {"nodes": trainer, "gpusPerNode": gpus},
                                   "inference": {"nodes": inference, "gpusPerNode": gpus}}},
            "launch": {"submissionMode": submission},
            "kuberay": {"head": {"cpu": "2", "memory": "8Gi"}, "worker": {"cpu": f"{worker_cpu}m", "memory": "64Gi"}},
            "sandbox": {"replicas": replicas, "resources": {"cpu": "1", "memory": f"{sandbox_mem}Mi"}},
            "infra": {"storage": {"checkpoints": {"size": f"{size}Gi"}}}}
    submitter = submission == "K8sJobMode"
    workers = trainer + inference
    pool = replicas + math.ceil(replicas / 4)  # and the pods a rollout adds: maxSurge 25%, rounded up
    # By hand, from the inputs (no log keeper: no logs volume).
    exact = {
        "pods": 1 + workers + submitter + pool + 1,
        "requests.nvidia.com/gpu": workers * gpus,
        "persistentvolumeclaims": 1,
        "requests.cpu": f"{2000 + workers * worker_cpu + 500 * submitter + pool * 1000 + 100}m",
        "limits.cpu": f"{2000 + workers * worker_cpu + 1000 * submitter + pool * 1000 + 100}m",
        "requests.memory": 8 * 2**30 + workers * 64 * 2**30 + submitter * 512 * 2**20 + pool * sandbox_mem * 2**20
        + 64 * 2**20,
        "limits.memory": 8 * 2**30 + workers * 64 * 2**30 + submitter * 2**30 + pool * sandbox_mem * 2**20
        + 64 * 2**20,
        "requests.storage": size * 2**30,
    }
    hard = {k: str(v) for k, v in exact.items()}
    chart_values(**deep_merge(over, {"infra": {"resourceQuota": {"enabled": True, "hard": hard}}}))
    less = milli(hard[short]) - milli(UNIT[KIND[short]])
    hard[short] = f"{less}m" if less % 1000 else str(less // 1000)
    with pytest.raises(ValidationError) as caught:
        chart_values(**deep_merge(over, {"infra": {"resourceQuota": {"enabled": True, "hard": hard}}}))
    assert _refused_at(caught.value) == ("infra", "resourceQuota", "hard", short)


# Against the chart: the rendered pods and claims, summed here. ---------------------------------------------------

def _side(container: dict, side: str) -> dict[str, int]:
    return {k: milli(v) for k, v in ((container.get("resources") or {}).get(side) or {}).items()}


def _plus(a: dict[str, int], b: dict[str, int]) -> dict[str, int]:
    return {k: a.get(k, 0) + b.get(k, 0) for k in set(a) | set(b)}


def _pod_total(spec: dict, side: str) -> dict[str, int]:
    total: dict[str, int] = {}
    for c in spec["containers"]:
        total = _plus(total, _side(c, side))
    started: dict[str, int] = {}
    peaks = []
    for c in spec.get("initContainers") or []:
        if c.get("restartPolicy") == "Always":
            started = _plus(started, _side(c, side))
        else:
            peaks.append(_plus(started, _side(c, side)))
    total = _plus(total, started)
    for peak in peaks:
        total = {k: max(total.get(k, 0), peak.get(k, 0)) for k in set(total) | set(peak)}
    return total


def _rendered_totals(values: dict) -> dict[str, int]:
    rendered = render_values(values)
    counts = {"head": 1, "submitter": 1, "test": 1}
    for role, group in rendered.groups().items():
        counts[role] = group.get("replicas", 1)
    for d in rendered.all("Deployment"):  # at its peak: the HPA's most, and a rollout's extra pods beside them
        hpa = rendered.all("HorizontalPodAutoscaler")
        n = hpa[0]["spec"]["maxReplicas"] if hpa else d["spec"]["replicas"]
        surge = d["spec"]["strategy"]["rollingUpdate"]["maxSurge"]
        counts["sandbox"] = n + (math.ceil(int(surge[:-1]) * n / 100) if isinstance(surge, str) else surge)
    for d in rendered.all("SandboxWarmPool"):
        counts["sandbox"] = d["spec"]["replicas"]
    out: dict[str, int] = {"pods": 0}
    for role, tpl in pod_templates(rendered.docs).items():
        n = counts[role]
        out["pods"] += 1000 * n
        for side in ("requests", "limits"):
            for k, v in _pod_total(tpl["spec"], side).items():
                out[f"{side}.{k}"] = out.get(f"{side}.{k}", 0) + n * v
    claims = rendered.all("PersistentVolumeClaim")
    out["persistentvolumeclaims"] = 1000 * len(claims)
    out["requests.storage"] = sum(milli(c["spec"]["resources"]["requests"]["storage"]) for c in claims)
    return out


SHAPES = {
    "example": {},
    "overlay, fill, efa": {
        "infra": {"storage": {"modelCache": {"size": "200Gi", "mountOn": ["head", "trainer"],
                                             "fill": {"command": ["huggingface-cli", "download", "x"]}}}},
        "kuberay": {"network": {"profile": "efa", "efa": {"perPod": 4}}, "spec": {
            "headGroupSpec": {"template": {"spec": {"initContainers": [
                {"name": "wait", "image": "busybox",
                 "resources": {"requests": {"cpu": "6"}, "limits": {"cpu": "6"}}}]}}},
            "workerGroupSpecs": [{"groupName": "inference", "template": {"spec": {"containers": [
                {"name": "ray-worker", "resources": {"limits": {"memory": "100Gi"}}},
                {"name": "proxy", "image": "envoy", "resources": {"requests": {"cpu": "250m", "memory": "128Mi"},
                                                                  "limits": {"cpu": "500m", "memory": "256Mi"}}},
            ]}}}]}},
    },
    "bringup, agent-sandbox": {"launch": {"mode": "bringup"}, "sandbox": {"backend": "agent-sandbox"}},
    "HTTPMode, autoscaled pool": {"launch": {"submissionMode": "HTTPMode"},
                                  "sandbox": {"autoscaling": {"enabled": True, "minReplicas": 3, "maxReplicas": 9,
                                                              "targetCPUUtilizationPercentage": 70}}},
}


@pytest.mark.parametrize("over", SHAPES.values(), ids=list(SHAPES))
def test_the_rules_totals_are_the_rendered_pods_and_claims(tmp_path, over):
    path = write(tmp_path, "infra.yaml", deep_merge(INFRA, over))
    values = composed(RECIPE, path).values
    rendered = _rendered_totals(values)
    keys = [k for k in rendered if k.startswith(("requests.", "limits.")) or k in ("pods", "persistentvolumeclaims")]
    assert {k: asked_total(values, k) for k in keys} == {k: rendered[k] for k in keys}
    assert "requests.nvidia.com/gpu" in keys and "limits.cpu" in keys and "requests.storage" in keys


@pytest.mark.parametrize(("key", "judged"), [
    ("pods", True), ("count/pods", True), ("requests.cpu", True), ("limits.memory", True), ("cpu", True),
    ("requests.nvidia.com/gpu", True), ("requests.storage", True), ("persistentvolumeclaims", True),
    ("fast.storageclass.storage.k8s.io/requests.storage", True),
    ("fast.storageclass.storage.k8s.io/persistentvolumeclaims", True),
    ("fast.storageclass.storage.k8s.io/limits.cpu", False), ("services.loadbalancers", False),
    ("count/configmaps", False), ("secrets", False),
])
def test_which_keys_the_rule_judges(key, judged):
    """The keys the rule compares with the release are those its totals answer; every other key the API alone sees."""
    assert judges(key) is judged
    values = chart_values()
    assert (asked_total(values, key) is not None) is judged


def test_a_quantity_past_a_floats_range_is_beyond_any_other():
    """The API takes `1e400`: as a quota it holds any release, as a request no finite quota holds it (no overflow)."""
    assert milli("1e400") > milli("9E18") > milli("1.1") == 1100
    assert milli("1e400") == milli("1e500")


def test_a_group_of_several_hosts_counts_each_host():
    """KubeRay makes replicas × numOfHosts pods of a group: the overlay's numOfHosts multiplies the trainer's pods and
    their GPUs (the chart pins replicas to the recipe's nodes and keeps numOfHosts)."""
    plain = chart_values()
    hosts = chart_values(kuberay={"spec": {"workerGroupSpecs": [{"groupName": "trainer", "numOfHosts": 2}]}})
    trainer = plain["recipe"]["cluster"]["trainer"]
    assert asked_total(hosts, "pods") - asked_total(plain, "pods") == 1000 * trainer["nodes"]
    more_gpus = asked_total(hosts, "requests.nvidia.com/gpu") - asked_total(plain, "requests.nvidia.com/gpu")
    assert more_gpus == 1000 * trainer["nodes"] * trainer["gpusPerNode"]


def test_the_pool_counts_at_its_peak_the_hpas_most_and_a_rollouts_surge(tmp_path, capsys):
    """A quota that holds the pool as installed but not at the HPA's maxReplicas caps the HPA unseen, and one
    without room for a rollout's extra pods stalls every upgrade: both refused, naming the key; maxSurge 0 (with a
    maxUnavailable to roll by) needs no room."""
    scaled = deep_merge(INFRA, {"sandbox": {"autoscaling": {"enabled": True, "minReplicas": 2, "maxReplicas": 6,
                                                            "targetCPUUtilizationPercentage": 70}}})
    scaled["sandbox"].pop("replicas")
    others = 6  # head, trainer 2, inference, submitter, test
    code, err = _values(tmp_path, capsys, {"pods": str(others + 6 + 2)}, scaled)  # 25% of 6, rounded up: 2
    assert code == 0, err
    code, err = _values(tmp_path, capsys, {"pods": str(others + 6 + 1)}, scaled)
    assert code == 2 and "sandbox 6 (sandbox.autoscaling.maxReplicas at" in err, err
    assert "sandbox rollout surge 2 (sandbox.rollingUpdate.maxSurge (default))" in err
    no_surge = deep_merge(INFRA, {"sandbox": {"rollingUpdate": {"maxSurge": 0, "maxUnavailable": 1}}})
    code, err = _values(tmp_path, capsys, {"pods": str(others + 2)}, no_surge)
    assert code == 0, err
    counted = deep_merge(INFRA, {"sandbox": {"replicas": 5, "rollingUpdate": {"maxSurge": 3}}})
    code, err = _values(tmp_path, capsys, {"pods": str(others + 5 + 2)}, counted)
    assert code == 2 and "sandbox rollout surge 3 (sandbox.rollingUpdate.maxSurge at" in err, err


@pytest.mark.parametrize(("surge", "replicas", "pods"), [("25%", 1, 1), ("25%", 4, 1), ("25%", 5, 2), ("100%", 3, 3),
                                                         ("0%", 9, 0), (2, 9, 2), ("150%", 2, 3)])
def test_a_rollouts_surge_rounds_a_percentage_up(surge, replicas, pods):
    assert rollout_surge(surge, replicas) == pods

