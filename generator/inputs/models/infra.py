"""The infra spec: where to run. Top-level keys infra, launch, kuberay, sandbox."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator, model_validator

from generator.inputs.models.common import (
    GpuSecuritySettings,
    Image,
    LimitRangeSettings,
    OptionalImage,
    PodResources,
    ResourceQuotaSettings,
    SecuritySettings,
    Toleration,
    TopologySpreadConstraint,
    backend_image_problem,
    present,
)
from generator.inputs.models.placement import KubeRayPlacement
from generator.inputs.models.types import (
    DNS1035_LABEL_RE,
    STRICT_TYPES,
    Cidr,
    Dns1123Label,
    Dns1123Subdomain,
    EnvName,
    FreeForm,
    KueueName,
    NodeSelector,
    Quantity,
    Strict,
    refuse_non_finite,
    refused,
)
from generator.inputs.rules import (
    duplicate_group,
    kuberay_overlay_problem,
    overlay_shape_problem,
    sandbox_pool_problem,
    toyaml_problem,
)

GROUPS = ("trainer", "inference")

def _ci(word: str) -> str:
    return "".join(f"[{c}{c.upper()}]" for c in word)


def _mentions(field: str, word: str) -> dict[str, Any]:
    return {"required": [field], "properties": {field: {"pattern": _ci(word)}}}


# JSON Schema twin of ImageOwner's check, so Helm refuses the same values: with backend B,
# the image must not name the other backend unless it also names B.
BACKEND_IMAGE_RULE: dict[str, Any] = {
    "allOf": [
        {
            "if": {"required": ["backend"], "properties": {"backend": {"const": b}}},
            "then": {
                "properties": {
                    "image": {
                        "not": {
                            "anyOf": [_mentions("repository", other), _mentions("tag", other)],
                            "allOf": [{"not": _mentions("repository", b)}, {"not": _mentions("tag", b)}],
                        }
                    }
                }
            },
        }
        for b, other in (("vllm", "sglang"), ("sglang", "vllm"))
    ]
}


class InfraBase(Strict):
    """Fields shared by the infra spec's `infra` block and the chart values' `infra` block."""

    model_config = ConfigDict(json_schema_extra=BACKEND_IMAGE_RULE)

    image: Image = Field(description="The ubuntu-swe image of the GPU pods (and, by default, the sandbox).")
    backend: Literal["vllm", "sglang"] = Field("vllm", description="Inference backend; must match the image build.")
    imagePullSecrets: list[Dns1123Subdomain] = Field([], description="Names of pull secrets for every managed pod.")
    priorityClassName: Dns1123Subdomain | None = Field(None,
                                                       description="PriorityClass of every managed pod (must exist).")
    security: GpuSecuritySettings = Field(GpuSecuritySettings(),
                                          description="Opt-in securityContext for the GPU fleets.")
    resourceQuota: ResourceQuotaSettings = Field(ResourceQuotaSettings(), description="Opt-in namespace ResourceQuota.")
    limitRange: LimitRangeSettings = Field(LimitRangeSettings(), description="Opt-in namespace LimitRange.")

    @field_validator("backend")
    @classmethod
    def _backend_matches_image(cls, backend: str, info: ValidationInfo) -> str:
        image = info.data.get("image")
        problem = image and backend_image_problem(backend, image)
        if problem:
            raise ValueError(problem)
        return backend


class InfraSettings(InfraBase):
    """The infra spec's `infra` block."""

    namespace: Dns1123Label = Field("default", description="Namespace the live path installs into.")


# Kueue's admission rules (its RayJob and RayCluster webhooks, v0.17.0), in the words the chart uses too
# (charts/dockyard/templates/_validate.tpl, dockyard.validate.kueue).
KUEUE_NO_ATTACH = ("an existing cluster cannot be queued: Kueue admits a RayJob with its own cluster or a "
                   "RayCluster, and refuses a queued RayJob on a clusterSelector")
KUEUE_SHUTDOWN = ("Kueue refuses a queued RayJob that keeps its cluster after the job ends (the cluster would "
                  "go on holding the queue's quota)")
KUEUE_AUTOSCALING = ("Kueue refuses in-tree autoscaling on a queued RayJob or RayCluster: it admits the gang "
                     "at its fixed size")
KUEUE_PRIORITY_ALONE = ("a WorkloadPriorityClass without launch.queue does nothing: Kueue reads it only on a "
                        "queued RayJob or RayCluster")
SUSPEND_OWNED = ("the chart never renders suspend: Kueue suspends a queued RayJob or RayCluster and admits it "
                 "by clearing suspend, and a helm upgrade must not flip it")

# JSON Schema conditions: a queue (or priority class) is set when it is a string (values.yaml holds null).
_QUEUED: dict[str, Any] = {"required": ["queue"], "properties": {"queue": {"type": "string"}}}
_PRIORITY_SET: dict[str, Any] = {"required": ["priorityClass"], "properties": {"priorityClass": {"type": "string"}}}


class LaunchSettings(Strict):
    """How the GPU fleet is launched."""

    # JSON Schema twins of _attach_needs_cluster and _kueue_rules, so Helm refuses the same values.
    model_config = ConfigDict(
        json_schema_extra={"allOf": [
            {"if": {"properties": {"mode": {"const": "attach"}}, "required": ["mode"]},
             "then": {"required": ["clusterName"], "properties": {"clusterName": {"type": "string"}}}},
            {"if": _PRIORITY_SET, "then": _QUEUED},
            {"if": _QUEUED, "then": {"properties": {"mode": {"not": {"const": "attach"}}}}},
            {"if": {"required": ["queue"], "properties": {"queue": {"type": "string"}, "mode": {"const": "rayjob"}}},
             "then": {"properties": {"shutdownAfterJobFinishes": {"const": True}}}},
        ]}
    )

    mode: Literal["rayjob", "bringup", "attach"] = Field(
        "rayjob",
        description="`rayjob`: a RayJob with its own cluster; `bringup`: a bare RayCluster; `attach`: an existing "
                    "cluster, only the sandbox pool is rendered.",
    )
    clusterName: str | None = Field(None, pattern=DNS1035_LABEL_RE, max_length=53,
                                    description="attach mode: name of the existing RayCluster.")
    submissionMode: Literal["K8sJobMode", "HTTPMode"] = Field("K8sJobMode", description="How KubeRay submits the job.")
    shutdownAfterJobFinishes: bool = Field(True, description="Delete the RayJob's cluster when the job ends.")
    ttlSecondsAfterFinished: int = Field(3600, ge=0, description="Seconds to keep the cluster after the job ends.")
    activeDeadlineSeconds: int | None = Field(None, ge=1, description="Fail the RayJob after this many seconds.")
    backoffLimit: int = Field(0, ge=0, le=10, description="Retries of a failed RayJob.")
    configMountPath: str = Field("/etc/dockyard", pattern=r"^/",
                                 description="Where the recipe ConfigMap is mounted on the head.")
    queue: KueueName | None = Field(
        None,
        description="Kueue LocalQueue (in the namespace) to submit to: label `kueue.x-k8s.io/queue-name` on the "
                    "RayJob (rayjob) or RayCluster (bringup); Kueue then admits the whole gang or none of it.",
    )
    priorityClass: KueueName | None = Field(
        None,
        description="Kueue WorkloadPriorityClass of the queued job: label `kueue.x-k8s.io/priority-class`; needs "
                    "`queue`.",
    )

    @field_validator("clusterName")
    @classmethod
    def _attach_needs_cluster(cls, name: str | None, info: ValidationInfo) -> str | None:
        if info.data.get("mode") == "attach" and not name:
            raise ValueError("launch.mode attach needs launch.clusterName: the existing RayCluster to attach to")
        return name

    @model_validator(mode="after")
    def _kueue_rules(self) -> LaunchSettings:
        if self.priorityClass is not None and self.queue is None:
            raise refused(("priorityClass",), KUEUE_PRIORITY_ALONE,
                          "launch.queue: the LocalQueue to submit to, or no launch.priorityClass")
        if self.queue is None:
            return self
        if self.mode == "attach":
            raise refused(("queue",), KUEUE_NO_ATTACH,
                          "no launch.queue in attach mode, or launch.mode rayjob or bringup")
        if self.mode == "rayjob" and not self.shutdownAfterJobFinishes:
            raise refused(("shutdownAfterJobFinishes",), KUEUE_SHUTDOWN,
                          "launch.shutdownAfterJobFinishes: true (the default), or no launch.queue")
        return self


class WorkerGroupOverlay(BaseModel):
    """Free-form WorkerGroupSpec overlay, matched to a group by `groupName`."""

    model_config = ConfigDict(extra="allow", **STRICT_TYPES)

    groupName: Literal["trainer", "inference"] = Field(description="Which worker group this overlay applies to.")

    @model_validator(mode="after")
    def _finite(self) -> WorkerGroupOverlay:
        refuse_non_finite(self.model_extra)
        return self


class RayClusterSpecOverlay(BaseModel):
    """Free-form RayClusterSpec overlay (node selectors, tolerations, resources, env, volumes, per-group)."""

    # JSON Schema twin of _kuberay_rules' suspend check, so Helm refuses the same values.
    model_config = ConfigDict(
        extra="allow", **STRICT_TYPES,
        json_schema_extra={"not": {"required": ["suspend"], "properties": {"suspend": {"not": {"type": "null"}}}}},
    )

    headGroupSpec: FreeForm = Field({}, description="Merged into the head group spec.")
    workerGroupSpecs: list[WorkerGroupOverlay] = Field(
        [], description="Merged into the worker group with the same groupName."
    )

    @field_validator("workerGroupSpecs")
    @classmethod
    def _unique_groups(cls, groups: list[WorkerGroupOverlay]) -> list[WorkerGroupOverlay]:
        twice = duplicate_group([g.groupName for g in groups])
        if twice is not None:
            raise ValueError(f"duplicate groupName {twice!r}: merge the two overlays into one entry")
        return groups

    @model_validator(mode="after")
    def _kuberay_rules(self) -> RayClusterSpecOverlay:
        refuse_non_finite(self.model_extra)
        if (self.model_extra or {}).get("suspend") is not None:
            raise refused(("suspend",), SUSPEND_OWNED,
                          "no kuberay.spec.suspend (Kueue, or kubectl, sets it on the object)")
        groups: list[tuple[str, dict[str, Any]]] = [("headGroupSpec", dict(self.headGroupSpec))]
        groups += [(g.groupName, g.model_dump()) for g in self.workerGroupSpecs]
        problem = kuberay_overlay_problem(groups)
        if problem:
            raise ValueError(problem)
        shapes: list[tuple[tuple[str | int, ...], str, dict[str, Any]]] = [
            (("headGroupSpec",), "head", dict(self.headGroupSpec))]
        shapes += [(("workerGroupSpecs", i), g.groupName, g.model_dump()) for i, g in enumerate(self.workerGroupSpecs)]
        for where, role, spec in shapes:
            found = overlay_shape_problem(role, spec)
            if found:
                raise refused(where + found[0], found[1], found[2])
        return self


class GpuPdbSettings(Strict):
    """Opt-in PodDisruptionBudget over the bringup RayCluster's pods."""

    enabled: bool = Field(False, description="Render a PDB for the RayCluster (bringup mode only).")
    minAvailable: int | None = Field(
        None, ge=0,
        description="Integer minAvailable (RayCluster has no scale subresource); defaults to all head and worker pods.",
    )


class KubeRaySettings(Strict):
    """The GPU RayCluster."""

    rayVersion: str = Field("2.52.0", pattern=r"^[0-9]+\.[0-9]+\.[0-9]+$", description="Ray version in the image.")
    head: PodResources = Field(PodResources(cpu="2", memory="8Gi"), description="Head pod cpu/memory.")
    worker: PodResources = Field(PodResources(cpu="8", memory="32Gi"), description="cpu/memory of each worker pod.")
    placement: KubeRayPlacement = Field(
        KubeRayPlacement(),
        description="nodeSelector, tolerations and affinity of the GPU fleets, the head and the submitter pod.")
    spec: RayClusterSpecOverlay = Field(RayClusterSpecOverlay(),
                                        description="Free-form RayClusterSpec overlay, merged before the invariants.")
    pdb: GpuPdbSettings = Field(GpuPdbSettings(), description="Opt-in GPU PodDisruptionBudget (bringup).")


class SandboxResources(Strict):
    """Requests are what the scheduler reserves; each *Limit defaults to its request."""

    cpu: Quantity = Field("1", description="CPU request per replica.")
    memory: Quantity = Field("2Gi", description="Memory request per replica.")
    ephemeralStorage: Quantity = Field("10Gi",
                                       description="ephemeral-storage request (guards against disk-pressure eviction).")
    cpuLimit: Quantity | None = Field(None, description="CPU limit; defaults to the request.")
    memoryLimit: Quantity | None = Field(None, description="Memory limit; defaults to the request.")
    ephemeralStorageLimit: Quantity | None = Field(None,
                                                   description="ephemeral-storage limit; defaults to the request.")


class NetworkPolicySettings(Strict):
    """Ingress only to the executor port from in-namespace pods; egress open unless locked down."""

    model_config = ConfigDict(
        json_schema_extra={
            "if": {"properties": {"allowEgress": {"const": True}}},
            "then": {"properties": {"allowedEgressCidrs": {"maxItems": 0}}},
        }
    )

    enabled: bool = Field(True, description="Render the sandbox NetworkPolicy.")
    allowEgress: bool = Field(
        True,
        description="Leave egress open (the executor clones repos); `false` allows only DNS and allowedEgressCidrs."
    )
    allowedEgressCidrs: list[Cidr] = Field([], description="With allowEgress false: CIDR blocks egress may reach.")
    blockCloudMetadata: bool = Field(
        True,
        description="With allowEgress: block the cloud metadata endpoint (169.254.169.254/32, fd00:ec2::254/128); "
                    "`false` allows it.",
    )

    @field_validator("allowedEgressCidrs")
    @classmethod
    def _cidrs_need_lockdown(cls, cidrs: list[str], info: ValidationInfo) -> list[str]:
        if info.data.get("allowEgress") and cidrs:
            raise ValueError("allowedEgressCidrs only applies with allowEgress: false (egress is otherwise open)")
        return cidrs


class SandboxPdbSettings(Strict):
    """Sandbox PodDisruptionBudget."""

    enabled: bool = Field(True, description="Render the sandbox PDB.")
    maxUnavailable: int = Field(1, ge=0, description="maxUnavailable replicas during voluntary disruption.")


class SandboxAutoscaling(Strict):
    """An autoscaling/v2 HorizontalPodAutoscaler over the executor Deployment."""

    # JSON Schema twin of the "a target set" rule (rules.sandbox_pool_problem), so Helm refuses the same values.
    model_config = ConfigDict(json_schema_extra={
        "if": present("enabled", const=True),
        "then": {"anyOf": [present("targetCPUUtilizationPercentage", type="integer"),
                           present("targetMemoryUtilizationPercentage", type="integer")]},
    })

    enabled: bool = Field(
        False, description="Render an HPA; the Deployment then leaves `replicas` to it (sandbox.replicas is ignored).")
    minReplicas: int = Field(2, ge=1, le=10000, description="Fewest replicas the HPA keeps (at least 1).")
    maxReplicas: int = Field(10, ge=1, le=10000, description="Most replicas the HPA adds; at least minReplicas.")
    targetCPUUtilizationPercentage: int | None = Field(
        None, ge=1, description="Average CPU use, in % of the CPU request, the HPA aims for (e.g. 70); enabled "
                                "needs this or the memory target.")
    targetMemoryUtilizationPercentage: int | None = Field(
        None, ge=1, description="Average memory use, in % of the memory request, the HPA aims for.")
    behavior: FreeForm = Field(
        {}, description="spec.behavior of the HPA (scaleUp / scaleDown policies and stabilization windows), as given.")


IntOrPercent = Annotated[int, Field(ge=0)] | Annotated[str, Field(pattern=r"^[0-9]+%$")]


class SandboxRollingUpdate(Strict):
    """The Deployment's RollingUpdate: new executors come up before old ones go (no capacity lost)."""

    # JSON Schema twin of the "not both zero" rule (rules.sandbox_pool_problem).
    model_config = ConfigDict(json_schema_extra={"not": {
        "required": ["maxSurge"],
        "properties": {key: {"anyOf": [{"const": 0}, {"type": "string", "pattern": "^0+%$"}]}
                       for key in ("maxSurge", "maxUnavailable")},
    }})

    maxSurge: IntOrPercent = Field("25%", description="Extra pods during a rollout (a count or a percentage).")
    maxUnavailable: IntOrPercent = Field(
        0, description="Pods a rollout may take out of service (0: an old pod goes only once a new one is ready).")


class SandboxReadinessProbe(Strict):
    """When an executor gets traffic: HTTP on its health path (fails while it drains), or a TCP connect."""

    type: Literal["http", "tcp"] = Field(
        "http", description="`http`: GET `path` must answer 2xx/3xx; `tcp`: the port accepting is enough.")
    path: str = Field("/health", pattern=r"^/", max_length=1024, description="Health path of the http probe.")
    periodSeconds: int = Field(5, ge=1, le=3600, description="Seconds between probes.")
    failureThreshold: int = Field(2, ge=1, le=100, description="Failed probes in a row before the pod is not ready.")


# What the chart sets itself on the executor pods (charts/dockyard/templates/sandbox/_helpers.tpl):
# sandbox.extraEnv and sandbox.podLabels may not set these (a chart test keeps them equal to its renders).
SANDBOX_CHART_ENV = ("DOCKYARD_EXECUTOR_PORT", "DOCKYARD_WORK_DIR")
SANDBOX_CHART_LABELS = (
    "helm.sh/chart", "app.kubernetes.io/name", "app.kubernetes.io/instance", "app.kubernetes.io/version",
    "app.kubernetes.io/managed-by", "app.kubernetes.io/part-of", "app.kubernetes.io/component", "dockyard.dev/fleet",
)


def chart_env_problem(name: str) -> str | None:
    """Why sandbox.extraEnv may not set `name`, or None (the chart's words too)."""
    if name not in SANDBOX_CHART_ENV:
        return None
    return (f"{name} is set by the chart itself (it sets {', '.join(SANDBOX_CHART_ENV)} from sandbox.port and "
            "sandbox.security.workDir); choose another name")


def chart_label_problem(key: str) -> str | None:
    """Why sandbox.podLabels may not set `key`, or None (the chart's words too)."""
    if key not in SANDBOX_CHART_LABELS:
        return None
    reserved = ", ".join(sorted(SANDBOX_CHART_LABELS))
    return f'"{key}" is a label the chart sets itself on the executor pods ({reserved}); choose another key'


class SandboxEnvVar(Strict):
    """A Kubernetes EnvVar of the executor container."""

    # JSON Schema twin of _value_or_value_from, so Helm refuses the same values.
    model_config = ConfigDict(json_schema_extra={"not": {"required": ["value", "valueFrom"]}})

    name: EnvName = Field(
        description=f"Variable name; not one the chart sets ({', '.join(SANDBOX_CHART_ENV)}).",
        # JSON Schema twin of _not_the_charts, so Helm refuses the same values.
        json_schema_extra={"not": {"enum": list(SANDBOX_CHART_ENV)}},
    )
    value: str | None = Field(None, description="The value.")
    valueFrom: FreeForm | None = Field(
        None, description="Instead of value: a Kubernetes EnvVarSource (secretKeyRef, configMapKeyRef, fieldRef, …)."
    )

    @field_validator("name")
    @classmethod
    def _not_the_charts(cls, name: str) -> str:
        problem = chart_env_problem(name)
        if problem:
            raise ValueError(problem)
        return name

    @model_validator(mode="after")
    def _value_or_value_from(self) -> SandboxEnvVar:
        if self.value is not None and self.valueFrom is not None:
            raise ValueError(f"{self.name} has both value and valueFrom; Kubernetes takes one: keep value for a "
                             "literal, or valueFrom to read it from a Secret, ConfigMap or field")
        return self


class Sandbox(Strict):
    """The GPU-free pool of executors that run untrusted agent code."""

    replicas: int = Field(2, ge=0, le=10000,
                          description="Executor replicas; ignored when autoscaling.enabled (the HPA sets them).")
    image: OptionalImage = Field(OptionalImage(),
                                 description="Executor image; defaults to the infra image (the same ubuntu-swe build).")
    port: int = Field(9090, ge=1, le=65535, description="Executor port (POST /task/submit).")
    injectUrls: bool = Field(True, description="Inject DOCKYARD_SANDBOX_URLS (the Service DNS) into every GPU pod.")
    resources: SandboxResources = Field(SandboxResources(), description="Requests and limits per replica.")
    security: SecuritySettings = Field(SecuritySettings(), description="securityContext baseline (on by default).")
    networkPolicy: NetworkPolicySettings = Field(NetworkPolicySettings(), description="The sandbox NetworkPolicy.")
    pdb: SandboxPdbSettings = Field(SandboxPdbSettings(), description="The sandbox PodDisruptionBudget.")
    autoscaling: SandboxAutoscaling = Field(SandboxAutoscaling(), description="Opt-in HorizontalPodAutoscaler.")
    rollingUpdate: SandboxRollingUpdate = Field(SandboxRollingUpdate(),
                                                description="The Deployment's rolling update (zero-downtime defaults).")
    minReadySeconds: int = Field(
        5, ge=0, le=3600,
        description="Seconds a new executor stays ready before it counts as available (and an old one may go).")
    terminationGracePeriodSeconds: int = Field(
        300, ge=1, le=86400,
        description="Seconds an executor has, after the preStop pause, to finish its in-flight tasks before "
                    "SIGKILL; fits tasks of up to ~5 minutes (docs/sandbox-pool.md).")
    preStopSleepSeconds: int = Field(
        5, ge=0, le=3600,
        description="preStop `sleep` before SIGTERM, so the endpoint leaves the Service first (0: no pause).")
    readinessProbe: SandboxReadinessProbe = Field(SandboxReadinessProbe(),
                                                  description="The executor's readiness probe.")
    topologySpreadConstraints: list[TopologySpreadConstraint] = Field(
        [], description="Spread the replicas over nodes or zones."
    )
    nodeSelector: NodeSelector = Field({}, description="Node labels the executors must run on.")
    tolerations: list[Toleration] = Field([], description="Tolerations of the executors.")
    affinity: FreeForm = Field(
        {},
        description="Pod affinity / anti-affinity (Kubernetes Affinity); empty prefers nodes without "
                    "`nvidia.com/gpu.present`."
    )
    runtimeClassName: Dns1123Subdomain | None = Field(
        None, description="RuntimeClass, e.g. gvisor or kata, where the cluster has one."
    )
    extraEnv: list[SandboxEnvVar] = Field(
        [], description="More env of the executor container (Kubernetes EnvVar objects), after the chart's own; "
                        f"the names the chart sets ({', '.join(SANDBOX_CHART_ENV)}) are refused."
    )
    podLabels: dict[str, str] = Field(
        {},
        description="More labels of the executor pods; the chart's own keys are refused (its selector, Service "
                    "and tools match on them).",
        # JSON Schema twin of _not_the_charts_labels, so Helm refuses the same values.
        json_schema_extra={"not": {"anyOf": [{"required": [key]} for key in SANDBOX_CHART_LABELS]}},
    )
    podAnnotations: dict[str, str] = Field({}, description="Annotations of the executor pods.")

    @field_validator("podLabels")
    @classmethod
    def _not_the_charts_labels(cls, labels: dict[str, str]) -> dict[str, str]:
        for key in labels:
            problem = chart_label_problem(key)
            if problem:
                raise ValueError(problem)
        return labels

    @model_validator(mode="after")
    def _pool_rules(self) -> Sandbox:
        found = sandbox_pool_problem(self.model_dump(include={
            "autoscaling", "pdb", "rollingUpdate", "terminationGracePeriodSeconds", "preStopSleepSeconds"}))
        if found:
            raise refused(*found)
        return self


# JSON Schema twin of kueue_overlay_problem (on InfraSpec and ChartValues), so Helm refuses the same values.
KUEUE_AUTOSCALING_RULE: dict[str, Any] = {
    "if": {"required": ["launch"], "properties": {"launch": _QUEUED}},
    "then": {"properties": {"kuberay": {"properties": {"spec": {"properties": {
        "enableInTreeAutoscaling": {"not": {"const": True}}}}}}}},
}


def kueue_overlay_problem(launch: LaunchSettings, kuberay: KubeRaySettings) -> Exception | None:
    """Kueue's rule on the kuberay.spec overlay of a queued job, or None."""
    if launch.queue is not None and (kuberay.spec.model_extra or {}).get("enableInTreeAutoscaling") is True:
        return refused(("kuberay", "spec", "enableInTreeAutoscaling"), KUEUE_AUTOSCALING,
                       "false (or unset), or no launch.queue")
    return None


class InfraSpec(Strict):
    """The infra spec file."""

    model_config = Strict.model_config | {"json_schema_extra": KUEUE_AUTOSCALING_RULE}

    infra: InfraSettings = Field(description="Image, backend, namespace and cluster-wide settings.")
    launch: LaunchSettings = Field(LaunchSettings(), description="How the GPU fleet is launched.")
    kuberay: KubeRaySettings = Field(KubeRaySettings(), description="The GPU RayCluster.")
    sandbox: Sandbox = Field(Sandbox(), description="The sandbox executor pool.")

    @field_validator("infra", "launch", "kuberay", "sandbox", mode="before")
    @classmethod
    def _toyaml_safe(cls, value: Any) -> Any:
        """What Helm's toYaml would drop or mangle, refused as the chart refuses it (dockyard.validate.toYamlSafe)."""
        found = toyaml_problem(value)
        if found:
            raise refused(*found)
        return value

    @model_validator(mode="after")
    def _kueue_overlay(self) -> InfraSpec:
        problem = kueue_overlay_problem(self.launch, self.kuberay)
        if problem:
            raise problem
        return self
