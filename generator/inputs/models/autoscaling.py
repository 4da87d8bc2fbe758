"""`sandbox.autoscaling`: an autoscaling/v2 HorizontalPodAutoscaler over the executor Deployment, its
behavior checked as the API checks it (pkg/apis/autoscaling/validation)."""

from __future__ import annotations

from typing import Literal

from pydantic import ConfigDict, Field

from generator.inputs.models.common import present
from generator.inputs.models.types import INT32_MAX, Quantity, Strict

MAX_PERIOD_SECONDS = 1800  # the API's MaxPeriodSeconds of a scaling policy
MAX_STABILIZATION_SECONDS = 3600  # and its MaxStabilizationWindowSeconds


class HPAScalingPolicy(Strict):
    """One scaling policy: at most `value` pods (or percent of the current count) per `periodSeconds`."""

    type: Literal["Pods", "Percent"] = Field(description="Pods: a count; Percent: a percentage of the current pods.")
    value: int = Field(ge=1, le=INT32_MAX, description="The count or percentage (more than 0).")
    periodSeconds: int = Field(ge=1, le=MAX_PERIOD_SECONDS,
                               description=f"The window the policy holds over, 1 to {MAX_PERIOD_SECONDS} seconds.")


class HPAScalingRules(Strict):
    """The scale-up or scale-down rules; each key left unset takes the HPA's default."""

    stabilizationWindowSeconds: int | None = Field(
        None, ge=0, le=MAX_STABILIZATION_SECONDS,
        description=f"Seconds of past recommendations considered, 0 to {MAX_STABILIZATION_SECONDS}.")
    selectPolicy: Literal["Max", "Min", "Disabled"] | None = Field(
        None, description="Which policy wins (Max, Min), or Disabled: no scaling in this direction.")
    policies: list[HPAScalingPolicy] | None = Field(None, min_length=1,
                                                    description="At least one policy when set.")
    tolerance: Quantity | None = Field(
        None, description="Metric-ratio change ignored (e.g. 0.05), at least 0; Kubernetes 1.35+ (beta).")


class HPABehavior(Strict):
    """spec.behavior of the HPA."""

    scaleUp: HPAScalingRules | None = Field(None, description="How fast the pool grows.")
    scaleDown: HPAScalingRules | None = Field(None, description="How fast the pool shrinks.")


class SandboxAutoscaling(Strict):
    """An autoscaling/v2 HorizontalPodAutoscaler over the executor Deployment."""

    # JSON Schema twin of the "a target set" rule (rules.sandbox_pool_problem), so Helm refuses the same values.
    model_config = ConfigDict(json_schema_extra={
        "if": present("enabled", const=True),
        "then": {"anyOf": [present("targetCPUUtilizationPercentage", type="integer"),
                           present("targetMemoryUtilizationPercentage", type="integer")]},
    })

    enabled: bool = Field(
        False, description="Render an HPA; the Deployment then leaves `replicas` to it (sandbox.replicas is refused).")
    minReplicas: int = Field(2, ge=1, le=10000, description="Fewest replicas the HPA keeps (at least 1).")
    maxReplicas: int = Field(10, ge=1, le=10000, description="Most replicas the HPA adds; at least minReplicas.")
    targetCPUUtilizationPercentage: int | None = Field(
        None, ge=1, le=INT32_MAX,
        description="Average CPU use, in % of the CPU request, the HPA aims for (e.g. 70); enabled needs this or "
                    "the memory target.")
    targetMemoryUtilizationPercentage: int | None = Field(
        None, ge=1, le=INT32_MAX, description="Average memory use, in % of the memory request, the HPA aims for.")
    behavior: HPABehavior | None = Field(
        None, description="spec.behavior of the HPA: scaleUp / scaleDown policies and stabilization windows.")
