"""`sandbox.autoscaling`: an autoscaling/v2 HorizontalPodAutoscaler over the executor Deployment."""

from __future__ import annotations

from pydantic import ConfigDict, Field

from generator.inputs.models.common import present
from generator.inputs.models.types import FreeForm, Strict


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
