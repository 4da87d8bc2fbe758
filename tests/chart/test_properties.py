"""Property tests: any valid infra renders, passes kubeconform -strict and keeps every invariant."""

from __future__ import annotations

import json

from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from generator.inputs import topology_rules
from generator.inputs.models import ChartValues
from generator.render import kubeconform
from tests.conftest import chart_values, render_values, without_ignored

quantity_cpu = st.sampled_from(["250m", "1", "2", 4, "1.5"])
quantity_mem = st.sampled_from(["512Mi", "2Gi", "8Gi", "1G"])
names = st.from_regex(r"[a-z][a-z0-9]{0,10}", fullmatch=True)

security = st.fixed_dictionaries({
    "enabled": st.booleans(),
    "profile": st.sampled_from(["baseline", "restricted"]),
    "runAsNonRoot": st.booleans(),
    "readOnlyRootFilesystem": st.booleans(),
})

groups = st.lists(st.sampled_from(["head", "trainer", "inference"]), min_size=1, max_size=3, unique=True)
volume = st.one_of(
    st.none(),
    st.fixed_dictionaries({"claimName": names, "mountOn": groups}),
    st.fixed_dictionaries({"size": st.sampled_from(["10Gi", "1Ti", 500]), "mountOn": groups},
                          optional={"storageClassName": names}),
)
storage = st.fixed_dictionaries({"checkpoints": volume, "modelCache": volume, "logs": volume})
# What an overlay tries against the storage invariants: its own volume of the chart's name, a mount at the
# chart's path, its own HF_HOME and DOCKYARD_CHECKPOINT_DIR.
STORAGE_OVERLAY = {"volumes": [{"name": "dockyard-checkpoints", "emptyDir": {}}],
                   "env": [{"name": "HF_HOME", "value": "/tmp/hf"}, {"name": "DOCKYARD_CHECKPOINT_DIR", "value": "/x"}],
                   "volumeMounts": [{"name": "scratch", "mountPath": "/dockyard/model-cache"}]}

# The fabric profiles, and what an overlay the models accept tries against them: a sidecar before the Ray
# container, IPC_LOCK dropped, the RDMA device at 0.
network = st.sampled_from([
    {"profile": "tcp"}, {"profile": "tcp", "socketInterface": "eth0"},
    {"profile": "rdma",
     "rdma": {"resourceName": "rdma/ib", "perPod": 4, "hca": "mlx5", "networks": ["ib-a", "x/ib-b"]}},
    {"profile": "efa", "socketInterface": "^lo", "efa": {"perPod": 32}},
    {"profile": "hostNetwork", "socketInterface": "eth0"},
])
FABRIC_ATTACK = [{"name": "log", "image": "fluent-bit"},
                 {"name": "ray-worker", "securityContext": {"capabilities": {"drop": ["IPC_LOCK"]}},
                  "resources": {"limits": {"rdma/ib": 0}, "requests": {"rdma/ib": 0}}}]

infra_over = st.fixed_dictionaries({
    "recipe": st.fixed_dictionaries({
        "cluster": st.fixed_dictionaries({
            "trainer": st.fixed_dictionaries({"nodes": st.integers(1, 64), "gpusPerNode": st.integers(1, 16)}),
            "inference": st.fixed_dictionaries({"nodes": st.integers(1, 64), "gpusPerNode": st.integers(1, 16)}),
        }),
    }),
    "infra": st.fixed_dictionaries({
        "priorityClassName": st.one_of(st.none(), names),
        "imagePullSecrets": st.lists(names, max_size=2, unique=True),
        "security": security,
        "storage": storage,
    }),
    "launch": st.fixed_dictionaries({"mode": st.sampled_from(["rayjob", "bringup", "attach"])}, optional={
        "topology": st.fixed_dictionaries({"level": st.sampled_from(["example.com/rack", "kubernetes.io/hostname"])},
                                          optional={"mode": st.sampled_from(["required", "preferred"]),
                                                    "groups": st.sampled_from(["each", "together"])})}),
    "kuberay": st.fixed_dictionaries({
        "pdb": st.fixed_dictionaries({"enabled": st.booleans()}),
        "network": network,
        "spec": st.fixed_dictionaries({
            "workerGroupSpecs": st.lists(st.fixed_dictionaries({
                "groupName": st.sampled_from(["trainer", "inference"]),
                # an overlay's own annotations, and (without launch.topology, the overlay's to set) Kueue's
                "template": st.fixed_dictionaries({"metadata": st.fixed_dictionaries({"annotations": st.sampled_from(
                    [{"team": "rl"}, {"team": "rl", topology_rules.PREFERRED: "example.com/block"}])}),
                                                   "spec": st.fixed_dictionaries({
                    "nodeSelector": st.dictionaries(names, names, max_size=2),
                    "containers": st.sampled_from([[{"name": "ray-worker",
                                                     "env": [{"name": "DOCKYARD_FLEET_ROLE", "value": "x"},
                                                             *STORAGE_OVERLAY["env"]],
                                                     "volumeMounts": STORAGE_OVERLAY["volumeMounts"]}],
                                                   FABRIC_ATTACK]),
                    "volumes": st.just(STORAGE_OVERLAY["volumes"] + [{"name": "scratch", "emptyDir": {}}]),
                })}),
            }), max_size=2, unique_by=lambda g: g["groupName"]),
        }),
    }),
    "sandbox": st.fixed_dictionaries({
        "replicas": st.integers(0, 1000),
        "injectUrls": st.booleans(),
        "port": st.integers(1024, 65535),
        "resources": st.fixed_dictionaries({"cpu": quantity_cpu, "memory": quantity_mem}),
        "security": security,
        "networkPolicy": st.one_of(
            st.fixed_dictionaries({"allowEgress": st.just(True), "blockCloudMetadata": st.booleans()}),
            st.fixed_dictionaries({"allowEgress": st.just(False), "allowedEgressCidrs": st.lists(
                st.sampled_from(["10.0.0.0/8", "192.0.2.0/24", "2001:db8::/32"]), max_size=3, unique=True)}),
        ),
        "pdb": st.fixed_dictionaries({"enabled": st.booleans()}),
    }),
})


# Each example runs helm and kubeconform (~0.3 s): no shrinking, which would take minutes; a fixed
# seed (the derandomized profile, tests/conftest.py) keeps CI reproducible; `make test-random` explores others.
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow],
          phases=[Phase.explicit, Phase.reuse, Phase.generate])
@given(over=infra_over)
def test_any_valid_values_render_validate_and_keep_invariants(over):
    launch, cluster = over["launch"], over["recipe"]["cluster"]
    if launch["mode"] == "attach":
        launch["clusterName"] = "shared"
        launch.pop("topology", None)
    topology = launch.get("topology")
    if topology:
        launch["queue"] = "training"
        if topology_rules.together_problem(topology, cluster):
            cluster["inference"]["nodes"] = 1
        for group in over["kuberay"]["spec"]["workerGroupSpecs"]:  # refused beside launch.topology
            group["template"]["metadata"]["annotations"].pop(topology_rules.PREFERRED, None)
    gpu_security = over["infra"]["security"]
    if gpu_security["enabled"] and gpu_security["profile"] == "restricted":  # refused with rdma and hostNetwork
        over["kuberay"]["network"] = {"profile": "efa", "efa": {"perPod": 1}}
    for block in (gpu_security, over["sandbox"]["security"]):  # a switched-off block's keys are refused
        if not block["enabled"]:  # (generator.inputs.switch_keys)
            block.clear()
            block["enabled"] = False
    without_ignored(over, launch["mode"])  # refused in that mode
    values = chart_values(**over)
    ChartValues.model_validate(values)
    out = render_values(values)
    results = kubeconform.validate(out.text)
    assert results and all(r.status == "valid" for r in results), [r for r in results if r.status != "valid"]
    mode = over["launch"]["mode"]
    if mode == "attach":
        assert not out.all("RayJob") and not out.all("RayCluster")
        return
    for role, group in out.groups().items():
        for c in group["template"]["spec"]["containers"]:
            env = {e["name"]: e.get("value") for e in c["env"]}
            assert env["RAY_ENABLE_UV_RUN_RUNTIME_ENV"] == "0"
            assert env["DOCKYARD_FLEET_ROLE"] == role
            assert ("DOCKYARD_SANDBOX_URLS" in env) is over["sandbox"]["injectUrls"]
        _storage_pinned(over["infra"]["storage"], role, group["template"]["spec"], out)
        params = group["rayStartParams"]["resources"]
        assert f"dockyard_fleet_{role}" in json.loads(params.strip("'\"` "))  # as KubeRay parses it
        if role != "head":
            shape = over["recipe"]["cluster"][role]
            assert group["replicas"] == shape["nodes"]
            limits = group["template"]["spec"]["containers"][0]["resources"]["limits"]
            assert limits["nvidia.com/gpu"] == shape["gpusPerNode"]
    _fabric_pinned(over["kuberay"]["network"], out.groups())
    _topology_pinned(topology, over["kuberay"]["spec"]["workerGroupSpecs"], out.groups())
    assert out.one("Deployment")["spec"]["replicas"] == over["sandbox"]["replicas"]


def _topology_pinned(topology, overlays, groups):
    """launch.topology's annotations on exactly the trainer and inference templates; without it, the overlay's
    Kueue annotations as given; every other annotation of the overlay kept."""
    given = {g["groupName"]: g["template"]["metadata"]["annotations"] for g in overlays}
    for role, group in groups.items():
        annotations = group["template"].get("metadata", {}).get("annotations", {})
        kueue = {k: v for k, v in annotations.items() if k.startswith(topology_rules.PODSET_PREFIX)}
        own = given.get(role, {}) if role != "head" else {}
        if topology and role != "head":
            assert kueue == topology_rules.pod_annotations(topology), (role, annotations)
        else:
            assert kueue == {k: v for k, v in own.items() if k.startswith(topology_rules.PODSET_PREFIX)}, role
        assert all(annotations.get(k) == v for k, v in own.items() if not k.startswith(topology_rules.PODSET_PREFIX))


def _fabric_pinned(network, groups):
    """The trainer and inference pods carry the same fabric whatever the overlay did: the Ray container first,
    the profile's device, IPC_LOCK under rdma, hostNetwork under hostNetwork only; the head none of it."""
    profile = network["profile"]
    device = {"rdma": network.get("rdma", {}).get("resourceName"), "efa": "vpc.amazonaws.com/efa"}.get(profile)

    def fabric(group):
        spec = group["template"]["spec"]
        ray = spec["containers"][0]
        caps = (ray.get("securityContext") or {}).get("capabilities") or {}
        return {"first": ray["name"], "ipc_lock": "IPC_LOCK" in (caps.get("add") or []),
                "ipc_dropped": profile == "rdma" and "IPC_LOCK" in (caps.get("drop") or []),
                "device": [ray["resources"][side].get(device) for side in ("requests", "limits")],
                "env": [(e["name"], e.get("value")) for e in ray["env"]
                        if e["name"].startswith(("NCCL_", "GLOO_", "FI_"))],
                "host": spec.get("hostNetwork", False),
                "networks": group["template"].get("metadata", {}).get("annotations", {}).get(
                    "k8s.v1.cni.cncf.io/networks")}

    trainer, inference, head = fabric(groups["trainer"]), fabric(groups["inference"]), fabric(groups["head"])
    assert trainer == inference
    assert trainer["first"] == "ray-worker" and trainer["host"] is (profile == "hostNetwork")
    assert trainer["ipc_lock"] is (profile == "rdma") and not trainer["ipc_dropped"]
    assert trainer["device"] == ([network[profile]["perPod"]] * 2 if device else [None, None])
    assert bool(trainer["networks"]) is (profile == "rdma")
    assert (bool(trainer["env"]) or profile == "tcp") and head["env"] == []
    assert (head["ipc_lock"], head["host"], head["networks"]) == (False, False, None)


LAYOUT = {"checkpoints": ("dockyard-checkpoints", "/dockyard/checkpoints", "checkpoints", ["DOCKYARD_CHECKPOINT_DIR"]),
          "modelCache": ("dockyard-model-cache", "/dockyard/model-cache", "model-cache",
                         ["DOCKYARD_MODEL_CACHE_DIR", "HF_HOME"]),
          "logs": ("dockyard-logs", "/dockyard/logs", "logs", ["DOCKYARD_LOG_DIR"])}


def _storage_pinned(storage, role, spec, out):
    """Each volume of infra.storage is mounted at its path, from its claim, and named by its env in the Ray
    container of the groups in its mountOn, whatever the overlay did; and nowhere else."""
    ray = spec["containers"][0]
    mounts = {m["mountPath"]: m["name"] for m in ray.get("volumeMounts", [])}
    volumes = {v["name"]: v for v in spec.get("volumes", [])}
    env = [(e["name"], e.get("value")) for e in ray["env"]]
    claims = {c["metadata"]["name"] for c in out.all("PersistentVolumeClaim")}
    for key, (name, path, suffix, env_names) in LAYOUT.items():
        vol = storage[key]
        if vol is None or role not in vol["mountOn"]:
            assert name not in mounts.values()
            continue
        claim = vol.get("claimName") or f"grpo-swe-{suffix}"
        assert mounts[path] == name
        assert volumes[name] == {"name": name, "persistentVolumeClaim": {"claimName": claim}}
        assert ("claimName" in vol) is (claim not in claims)
        for env_name in env_names:
            assert [v for n, v in env if n == env_name] == [path]
