"""`sandbox`: the GPU-free pool of executors that run untrusted agent code (a Deployment, its Service,
NetworkPolicy, PDB and, opt-in, an HPA)."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import ConfigDict, Field, ValidationInfo, field_validator, model_validator

from generator.inputs.models.autoscaling import SandboxAutoscaling
from generator.inputs.models.common import OptionalImage
from generator.inputs.models.env import SANDBOX_CHART_ENV, SandboxEnvVar
from generator.inputs.models.scheduling import Toleration, TopologySpreadConstraint
from generator.inputs.models.security import SecuritySettings
from generator.inputs.models.types import Cidr, Dns1123Subdomain, FreeForm, NodeSelector, Quantity, Strict, refused
from generator.inputs.rules import sandbox_pool_problem


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
# sandbox.podLabels may not set these (a chart test keeps them equal to its renders).
SANDBOX_CHART_LABELS = (
    "helm.sh/chart", "app.kubernetes.io/name", "app.kubernetes.io/instance", "app.kubernetes.io/version",
    "app.kubernetes.io/managed-by", "app.kubernetes.io/part-of", "app.kubernetes.io/component", "dockyard.dev/fleet",
)


def chart_label_problem(key: str) -> str | None:
    """Why sandbox.podLabels may not set `key`, or None (the chart's words too)."""
    if key not in SANDBOX_CHART_LABELS:
        return None
    reserved = ", ".join(sorted(SANDBOX_CHART_LABELS))
    return f'"{key}" is a label the chart sets itself on the executor pods ({reserved}); choose another key'


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
