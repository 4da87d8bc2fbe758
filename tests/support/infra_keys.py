"""The infra spec's keys, walked: every key path of the models, a sample value other than its default for each
(with the other keys it needs), and the chart's render of an infra spec (the real helm). The tables that walk every
key (tests/unit/inputs/test_mode_keys.py, test_switch_keys.py) build their infra specs from here."""

from __future__ import annotations

import json
import os
import subprocess
import typing
from typing import Any

from pydantic import BaseModel

from generator.inputs.models import ChartValues, InfraSpec
from generator.live.verbs.jobs import rayjob_body, target_cluster
from generator.pinned_tools import CHART_DIR, binary, versions
from tests.conftest import deep_merge

Path = tuple[str, ...]


def leaves(model: type[BaseModel], prefix: Path = ()) -> list[Path]:
    """The key paths of a model down to its leaves: a field holding a settings block (a model, not optional, not
    free-form) is walked into; any other field (a scalar, a list, a mapping, an optional block) is a leaf."""
    out: list[Path] = []
    for name, field in model.model_fields.items():
        key, kind = field.alias or name, field.annotation
        if isinstance(kind, type) and issubclass(kind, BaseModel) and kind.model_config.get("extra") != "allow":
            out += leaves(kind, prefix + (key,))
        else:
            out.append(prefix + (key,))
    return out


def field_of(model: type[BaseModel], path: Path) -> Any:
    for key in path[:-1]:
        model = next(f.annotation for n, f in model.model_fields.items() if (f.alias or n) == key)
    return next(f for n, f in model.model_fields.items() if (f.alias or n) == path[-1])


def auto_sample(field: Any) -> Any:
    """A value other than the default, for a boolean, a bounded integer or a choice; None for anything else."""
    default, kind = field.default, field.annotation
    high = next((m.le for m in field.metadata if getattr(m, "le", None) is not None), None)
    low = next((m.ge for m in field.metadata if getattr(m, "ge", None) is not None), 1)
    if isinstance(default, bool):
        return not default
    if kind is int and isinstance(default, int):
        return default + 1 if high is None or default + 1 <= high else default - 1
    if typing.get_origin(kind) is typing.Literal:
        return next(choice for choice in typing.get_args(kind) if choice != default)
    if default is None and int in typing.get_args(kind):
        return max(low, 1) + 7
    return None


TOL = [{"key": "example.com/t", "operator": "Exists", "effect": "NoSchedule"}]
NODE_AFF = {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
    {"matchExpressions": [{"key": "example.com/pool", "operator": "In", "values": ["a"]}]}]}}
POD_AFF = {"preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 1, "podAffinityTerm": {
    "topologyKey": "kubernetes.io/hostname", "labelSelector": {"matchLabels": {"app": "x"}}}}]}
SEL = {"example.com/pool": "a"}
GPU_SEC = {"infra.security.enabled": True}
HEAD, WORKER = {"kuberay.head": {"cpu": "2", "memory": "8Gi"}}, {"kuberay.worker": {"cpu": "8", "memory": "32Gi"}}
HPA = {"sandbox.autoscaling.enabled": True, "sandbox.autoscaling.targetCPUUtilizationPercentage": 70}

# key path -> (a value other than the default, the other keys it needs). The context may hold the key itself:
# then the baseline render has the context's value, the other one the sample's. A key without a row here takes
# auto_sample's value (a boolean flipped, an integer moved, another choice) with no context.
SAMPLES: dict[str, tuple[Any, dict[str, Any]]] = {
    "infra.namespace": ("other", {}),
    "infra.image.repository": ("example.com/other-vllm", {}),
    "infra.image.tag": ("v2", {}),
    "infra.image.digest": ("sha256:" + "a" * 64, {}),
    "infra.imagePullSecrets": (["regcred"], {}),
    "infra.priorityClassName": ("high", {}),
    "infra.env": ([{"name": "FOO", "value": "bar"}], {}),
    "infra.envFrom": ([{"configMapRef": {"name": "cm"}}], {}),
    "infra.security.dropCapabilities": (["NET_RAW"], GPU_SEC),
    "infra.security.workDir": ("/work2", {**GPU_SEC, "infra.security.readOnlyRootFilesystem": True}),
    "infra.security.workDirSizeLimit": ("1Gi", {**GPU_SEC, "infra.security.readOnlyRootFilesystem": True}),
    # (quotas that hold the release: a smaller one is refused by the quota rule)
    "infra.resourceQuota.enabled": (True, {"infra.resourceQuota.hard": {"pods": "50"}}),
    "infra.resourceQuota.hard": ({"pods": "100"}, {"infra.resourceQuota.enabled": True,
                                                   "infra.resourceQuota.hard": {"pods": "50"}}),
    "infra.storage.checkpoints": ({"size": "1Ti"}, {}),
    "infra.storage.modelCache": ({"size": "1Ti"}, {}),
    "infra.storage.logs": ({"size": "1Ti"}, {}),
    "launch.clusterName": ("other", {}),
    "launch.configMountPath": ("/etc/other", {}),
    "launch.queue": ("q", {}),
    "launch.priorityClass": ("high", {"launch.queue": "q"}),
    "launch.topology": ({"level": "example.com/rack"}, {"launch.queue": "q"}),
    "launch.watch.firstReportSeconds": (900, {"launch.watch.stallTimeoutSeconds": 600}),
    "launch.watch.keepRayLogMiB": (32, {"infra.storage.logs": {"size": "1Ti"}}),
    "kuberay.rayVersion": ("2.50.0", {}),
    "kuberay.head.cpu": ("3", HEAD), "kuberay.head.memory": ("9Gi", HEAD),
    "kuberay.worker.cpu": ("9", WORKER), "kuberay.worker.memory": ("33Gi", WORKER),
    # the ServiceAccount the overlay names: with agent-sandbox, bound to the sandbox claims in every mode
    "kuberay.spec": ({"headGroupSpec": {"template": {"spec": {"serviceAccountName": "existing"}}}},
                     {"sandbox.backend": "agent-sandbox"}),
    "kuberay.pdb.minAvailable": (1, {"kuberay.pdb.enabled": True}),
    "kuberay.network.socketInterface": ("eth1", {}),
    "kuberay.network.profile": ("hostNetwork", {}),
    "kuberay.network.rdma": ({"resourceName": "rdma/b"}, {"kuberay.network.profile": "rdma",
                                                          "kuberay.network.rdma": {"resourceName": "rdma/a"}}),
    "kuberay.network.efa": ({"perPod": 2}, {"kuberay.network.profile": "efa", "kuberay.network.efa": {"perPod": 1}}),
    "sandbox.warmPool.updateStrategy": ("OnReplenish", {"sandbox.backend": "agent-sandbox"}),
    "sandbox.image.repository": ("example.com/sandbox", {}),
    "sandbox.image.tag": ("v2", {}),
    "sandbox.image.digest": ("sha256:" + "b" * 64, {}),
    "sandbox.image.pullPolicy": ("Always", {}),
    "sandbox.resources.cpu": ("2", {}), "sandbox.resources.memory": ("3Gi", {}),
    "sandbox.resources.ephemeralStorage": ("11Gi", {}),
    "sandbox.resources.cpuLimit": ("4", {}), "sandbox.resources.memoryLimit": ("8Gi", {}),
    "sandbox.resources.ephemeralStorageLimit": ("20Gi", {}),
    "sandbox.security.dropCapabilities": (["NET_RAW"], {}),
    "sandbox.security.workDir": ("/work2", {}),
    "sandbox.security.workDirSizeLimit": ("1Gi", {"sandbox.security.readOnlyRootFilesystem": True}),
    "sandbox.networkPolicy.allowedEgressCidrs": (["10.0.0.0/8"], {"sandbox.networkPolicy.allowEgress": False}),
    "sandbox.autoscaling.enabled": (True, {"sandbox.autoscaling.targetCPUUtilizationPercentage": 70}),
    "sandbox.autoscaling.minReplicas": (3, HPA),
    "sandbox.autoscaling.maxReplicas": (11, HPA),
    "sandbox.autoscaling.targetCPUUtilizationPercentage": (80, HPA),
    "sandbox.autoscaling.targetMemoryUtilizationPercentage": (80, HPA),
    "sandbox.autoscaling.behavior": ({"scaleUp": {"stabilizationWindowSeconds": 30}}, HPA),
    "sandbox.rollingUpdate.maxSurge": (1, {}),
    "sandbox.rollingUpdate.maxUnavailable": (1, {}),
    "sandbox.readinessProbe.path": ("/ready", {}),
    "sandbox.topologySpreadConstraints": ([{"topologyKey": "kubernetes.io/hostname"}], {}),
    "sandbox.nodeSelector": (SEL, {}),
    "sandbox.tolerations": (TOL, {}),
    "sandbox.affinity": ({"nodeAffinity": NODE_AFF}, {}),
    "sandbox.runtimeClassName": ("gvisor", {}),
    "sandbox.extraEnv": ([{"name": "FOO", "value": "bar"}], {}),
    "sandbox.podLabels": ({"example.com/l": "v"}, {}),
    "sandbox.podAnnotations": ({"example.com/a": "v"}, {}),
}
for _role in ("gpu", "head", "submitter", "trainer", "inference"):
    _at = f"kuberay.placement.{_role}"
    SAMPLES |= {f"{_at}.nodeSelector": (SEL, {}), f"{_at}.tolerations": (TOL, {}),
                f"{_at}.affinity": ({"nodeAffinity": NODE_AFF}, {}), f"{_at}.affinity.nodeAffinity": (NODE_AFF, {}),
                f"{_at}.affinity.podAffinity": (POD_AFF, {}), f"{_at}.affinity.podAntiAffinity": (POD_AFF, {})}
for _kind in ("default", "defaultRequest", "max", "min"):
    for _name, _value in (("cpu", "1"), ("memory", "1Gi"), ("ephemeral-storage", "1Gi")):
        SAMPLES[f"infra.limitRange.{_kind}.{_name}"] = (_value, {"infra.limitRange.enabled": True})
for _name in ("profile", "allowPrivilegeEscalation", "seccompProfile", "runAsNonRoot", "runAsUser", "runAsGroup",
              "fsGroup", "readOnlyRootFilesystem"):
    SAMPLES[f"infra.security.{_name}"] = (None, GPU_SEC)  # auto_sample's value, with the GPU securityContext on

# Keys that render nothing in any mode: each is a check on other keys (test_a_key_that_renders_nothing_is_a_check).
CHECKS = {"infra.backend": "declares the build of infra.image"}

# The keys of each mode's own: the baseline of a mode.
MODE_CONTEXT = {"rayjob": {}, "bringup": {}, "attach": {"launch.clusterName": "shared"}}
INFRA_IMAGE = {"infra.image": {"repository": "ghcr.io/dockyard-rl/ubuntu-swe", "tag": "2026.11"}}


def nested(flat: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in flat.items():
        node: Any = value
        for part in reversed(key.split(".")):
            node = {part: node}
        out = deep_merge(out, node)
    return out


def sample(key: str) -> tuple[Any, dict[str, Any]]:
    value, context = SAMPLES.get(key, (None, {}))
    if value is None:
        value = auto_sample(field_of(InfraSpec, tuple(key.split("."))))
    assert value is not None, f"no sample value for {key}: add a row to SAMPLES"
    return value, context


def chart_values(infra: dict[str, Any]) -> dict[str, Any]:
    """The chart values of an infra spec (as compose makes them, without a file), checked by the models."""
    spec = deep_merge({"infra": {"namespace": "dockyard"}}, infra)
    namespace = spec["infra"].pop("namespace")
    values = {"recipe": {"name": "grpo-swe"}, **spec}
    return {"namespace": namespace,
            "values": ChartValues.model_validate(values).model_dump(mode="json", by_alias=True, exclude_none=True)}


FAST_GO = {"GOGC": "off", "GOMEMLIMIT": "128MiB"}  # a short render: no garbage collection (as generator.render.helm)


REFUSED = "the chart refuses: "


def rendered(case: dict[str, Any]) -> str:
    """The chart's manifests (helm template; the values are the models', so the schema is not checked again) and
    the RayJob `job submit` creates on the mode's cluster (with the run watcher on a bringup cluster's head)."""
    values = case["values"]
    done = subprocess.run(
        [binary("helm"), "template", "grpo-swe", str(CHART_DIR), "--namespace", case["namespace"], "--values", "-",
         "--kube-version", versions()["KUBERNETES_VERSION"], "--skip-schema-validation"],
        input=json.dumps(values), capture_output=True, text=True, env={**os.environ, **FAST_GO})
    if done.returncode:
        return REFUSED + done.stderr
    mode = values["launch"]["mode"]
    job = rayjob_body("job", target_cluster(values, mode), values, watcher=mode == "bringup")
    return done.stdout + json.dumps(job, sort_keys=True)


def infra_leaves() -> list[str]:
    return [".".join(p) for p in leaves(InfraSpec)]


def switched_off(flat: dict[str, Any], mode: str) -> set[str]:
    """The keys of a flat infra spec that another of its keys switches off (generator.inputs.switch_keys refuses
    them there)."""
    from generator.inputs.switch_keys import problems

    defaults = ChartValues.model_construct().model_dump(mode="json", by_alias=True)
    found = [p for p, _, _ in problems(deep_merge(defaults, nested(flat)), defaults, mode)]
    return {k for k in flat if any(p[: len(k.split("."))] == tuple(k.split(".")) or tuple(k.split("."))[: len(p)] == p
                                   for p in found)}
