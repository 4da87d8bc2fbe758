"""`sandbox`: the GPU-free executors that run untrusted agent code: a pool (a Deployment, its Service, PDB and,
opt-in, an HPA) or agent-sandbox's per-claim sandboxes (a SandboxTemplate and SandboxWarmPool); a NetworkPolicy
under both."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, ConfigDict, Field, ValidationInfo, WithJsonSchema, field_validator, model_validator

from generator.inputs.api_rules import resources_problem, spread_problem
from generator.inputs.models.autoscaling import SandboxAutoscaling
from generator.inputs.models.common import OptionalImage
from generator.inputs.models.env import SANDBOX_CHART_ENV, SandboxEnvVar
from generator.inputs.models.placement import Affinity
from generator.inputs.models.scheduling import Toleration, TopologySpreadConstraint
from generator.inputs.models.security import SecuritySettings
from generator.inputs.models.types import (
    INT32_MAX,
    Annotations,
    Cidr,
    Dns1123Subdomain,
    Labels,
    NodeSelector,
    Quantity,
    Strict,
    refused,
)
from generator.inputs.rules import AGENT_SANDBOX_ONLY_KEYS, POOL_ONLY_KEYS, sandbox_pool_problem


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

    @model_validator(mode="after")
    def _limits_not_below_requests(self) -> SandboxResources:
        found = resources_problem(self.model_dump())
        if found:
            raise refused(*found)
        return self


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
    maxUnavailable: int = Field(1, ge=0, le=INT32_MAX, description="maxUnavailable replicas during voluntary "
                                                                  "disruption.")


# A rolling update's IntOrString as the API checks it (apps validation): a count, or a percentage of the
# replicas; maxSurge may be over 100%, maxUnavailable not (IsNotMoreThan100Percent).
PERCENT_RE = r"^[0-9]+%$"
PERCENT_100_RE = r"^0*(100|[0-9]?[0-9])%$"


def _int_or_percent(key: str, most: int | None) -> Callable[[int | str], int | str]:
    """The validator of a count or percentage; `most`: the largest percentage, if any."""
    def check(value: int | str) -> int | str:
        if isinstance(value, int):
            if not 0 <= value <= INT32_MAX:
                raise ValueError(f"{value} is out of range: a count from 0 to {INT32_MAX}")
        elif not re.fullmatch(r"[0-9]+%", value):
            raise ValueError(f"{value!r} is neither a count nor a percentage such as 25%")
        elif most is not None and int(value[:-1]) > most:
            raise ValueError(f"{value} is over {most}%: the API refuses a {key} of more than {most}% of the replicas")
        return value

    return check


def _int_or_percent_schema(pattern: str) -> dict[str, Any]:
    return {"anyOf": [{"type": "integer", "minimum": 0, "maximum": INT32_MAX}, {"type": "string", "pattern": pattern}]}


MaxSurge = Annotated[int | str, AfterValidator(_int_or_percent("maxSurge", None)),
                     WithJsonSchema(_int_or_percent_schema(PERCENT_RE))]
MaxUnavailable = Annotated[int | str, AfterValidator(_int_or_percent("maxUnavailable", 100)),
                           WithJsonSchema(_int_or_percent_schema(PERCENT_100_RE))]


class SandboxRollingUpdate(Strict):
    """The Deployment's RollingUpdate: new executors come up before old ones go (no capacity lost)."""

    # JSON Schema twin of the "not both zero" rule (rules.sandbox_pool_problem).
    model_config = ConfigDict(json_schema_extra={"not": {
        "required": ["maxSurge"],
        "properties": {key: {"anyOf": [{"const": 0}, {"type": "string", "pattern": "^0+%$"}]}
                       for key in ("maxSurge", "maxUnavailable")},
    }})

    maxSurge: MaxSurge = Field("25%", description="Extra pods during a rollout (a count or a percentage).")
    maxUnavailable: MaxUnavailable = Field(
        0, description="Pods a rollout may take out of service, a count or at most 100% (0: an old pod goes only "
                       "once a new one is ready).")


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
    "dockyard.dev/sandbox-backend",
)


def chart_label_problem(key: str) -> str | None:
    """Why sandbox.podLabels may not set `key`, or None (the chart's words too)."""
    if key not in SANDBOX_CHART_LABELS:
        return None
    reserved = ", ".join(sorted(SANDBOX_CHART_LABELS))
    return f'"{key}" is a label the chart sets itself on the executor pods ({reserved}); choose another key'


class SandboxWarmPool(Strict):
    """agent-sandbox's SandboxWarmPool (sandbox.backend agent-sandbox): `sandbox.replicas` ready sandboxes."""

    updateStrategy: Literal["Recreate", "OnReplenish"] = Field(
        "Recreate",
        description="When the template changes (a `run` with a new image or env): `Recreate` replaces the unclaimed "
                    "sandboxes at once, `OnReplenish` only as claims take them (claimed ones are never touched).")


def _keeps_defaults(keys: tuple[tuple[tuple[str | int, ...], Any], ...]) -> dict[str, Any]:
    """A JSON Schema that holds each key path of `keys` to its default (absent keys pass)."""
    schema: dict[str, Any] = {"properties": {}}
    for where, default in keys:
        node = schema
        for key in where[:-1]:
            node = node["properties"].setdefault(key, {"properties": {}})
        node["properties"][where[-1]] = {"const": default}
    return schema


_AGENT_SANDBOX: dict[str, Any] = {"required": ["backend"], "properties": {"backend": {"const": "agent-sandbox"}}}


class Sandbox(Strict):
    """The GPU-free executors that run untrusted agent code."""

    # JSON Schema twin of rules.sandbox_backend_problem, so Helm refuses the same values.
    model_config = ConfigDict(json_schema_extra={"allOf": [
        {"if": _AGENT_SANDBOX, "then": _keeps_defaults(POOL_ONLY_KEYS)},
        {"if": {"not": _AGENT_SANDBOX}, "then": _keeps_defaults(AGENT_SANDBOX_ONLY_KEYS)},
    ]})

    backend: Literal["pool", "agent-sandbox"] = Field(
        "pool",
        description="`pool`: a Deployment of long-lived executors behind a Service (many episodes each); "
                    "`agent-sandbox`: a SandboxTemplate and SandboxWarmPool, one claimed sandbox per use "
                    "(docs/sandbox-pool.md).")
    replicas: int = Field(2, ge=0, le=10000,
                          description="Executor replicas (pool), or ready sandboxes in the warm pool (agent-sandbox); "
                                      "refused with autoscaling.enabled (the HPA sets them).")
    warmPool: SandboxWarmPool = Field(SandboxWarmPool(), description="The warm pool (backend agent-sandbox only).")
    image: OptionalImage = Field(OptionalImage(),
                                 description="Executor image; defaults to the infra image (the same ubuntu-swe build).")
    port: int = Field(9090, ge=1, le=65535, description="Executor port (POST /task/submit).")
    injectUrls: bool = Field(
        True, description="Tell every GPU pod where the executors are: DOCKYARD_SANDBOX_URLS (the pool's Service DNS), "
                          "or with agent-sandbox what a claim needs (DOCKYARD_SANDBOX_WARM_POOL and the rest, "
                          "docs/sandbox-pool.md).")
    resources: SandboxResources = Field(SandboxResources(), description="Requests and limits per replica.")
    security: SecuritySettings = Field(SecuritySettings(), description="securityContext baseline (on by default).")
    networkPolicy: NetworkPolicySettings = Field(NetworkPolicySettings(), description="The sandbox NetworkPolicy.")
    pdb: SandboxPdbSettings = Field(SandboxPdbSettings(), description="The sandbox PodDisruptionBudget.")
    autoscaling: SandboxAutoscaling = Field(SandboxAutoscaling(), description="Opt-in HorizontalPodAutoscaler.")
    rollingUpdate: SandboxRollingUpdate = Field(SandboxRollingUpdate(),
                                                description="The Deployment's rolling update (zero-downtime defaults).")
    # The chart leaves progressDeadlineSeconds to its default (600), which the API wants above minReadySeconds.
    minReadySeconds: int = Field(
        5, ge=0, le=599,
        description="Seconds a new executor stays ready before it counts as available (and an old one may go); "
                    "below the Deployment's progress deadline (600).")
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
    affinity: Affinity | None = Field(
        None,
        description="Kubernetes Affinity (node affinity checked, pod (anti-)affinity as given); unset or empty "
                    "prefers nodes without `nvidia.com/gpu.present`."
    )
    runtimeClassName: Dns1123Subdomain | None = Field(
        None, description="RuntimeClass, e.g. gvisor or kata, where the cluster has one."
    )
    extraEnv: list[SandboxEnvVar] = Field(
        [], description="More env of the executor container (Kubernetes EnvVar objects), after the chart's own; "
                        f"the names the chart sets ({', '.join(SANDBOX_CHART_ENV)}) are refused."
    )
    podLabels: Labels = Field(
        {},
        description="More labels of the executor pods; the chart's own keys are refused (its selector, Service "
                    "and tools match on them).",
        # JSON Schema twin of _not_the_charts_labels, so Helm refuses the same values.
        json_schema_extra={"not": {"anyOf": [{"required": [key]} for key in SANDBOX_CHART_LABELS]}},
    )
    podAnnotations: Annotations = Field({}, description="Annotations of the executor pods (at most 256 KiB).")

    @field_validator("podLabels")
    @classmethod
    def _not_the_charts_labels(cls, labels: dict[str, str]) -> dict[str, str]:
        for key in labels:
            problem = chart_label_problem(key)
            if problem:
                raise ValueError(problem)
        return labels

    @field_validator("topologySpreadConstraints")
    @classmethod
    def _no_repeated_spread(cls, constraints: list[TopologySpreadConstraint]) -> list[TopologySpreadConstraint]:
        found = spread_problem([c.model_dump() for c in constraints])
        if found:
            raise refused(*found)
        return constraints

    @model_validator(mode="after")
    def _pool_rules(self) -> Sandbox:
        found = sandbox_pool_problem(self.model_dump(include={
            "backend", "warmPool", "minReadySeconds", "autoscaling", "pdb", "rollingUpdate",
            "terminationGracePeriodSeconds", "preStopSleepSeconds"}))
        if found:
            raise refused(*found)
        return self
