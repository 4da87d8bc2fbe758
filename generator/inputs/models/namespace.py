"""Namespace governance the chart can render: a ResourceQuota and a LimitRange."""

from __future__ import annotations

from typing import Any

from pydantic import ConfigDict, Field, ValidationInfo, field_validator

from generator.inputs.models.types import Quantity, Strict


class ContainerQuantities(Strict):
    """cpu / memory / ephemeral-storage quantities for a LimitRange item."""

    cpu: Quantity | None = Field(None, description="CPU.")
    memory: Quantity | None = Field(None, description="Memory.")
    ephemeralStorage: Quantity | None = Field(None, alias="ephemeral-storage", description="Ephemeral storage.")


class ResourceQuotaSettings(Strict):
    """Opt-in namespace ResourceQuota (rendered; not applied by the live path)."""

    # JSON Schema twin of _hard_when_enabled, so Helm refuses the same values.
    model_config = ConfigDict(json_schema_extra={
        "if": {"properties": {"enabled": {"const": True}}, "required": ["enabled"]},
        "then": {"properties": {"hard": {"minProperties": 1}}},
    })

    enabled: bool = Field(False, description="Render a ResourceQuota for the namespace.")
    hard: dict[str, Quantity] = Field(
        {},
        description="spec.hard: resource name to quantity, e.g. requests.cpu: 64, requests.nvidia.com/gpu: 32, "
                    "pods: 200.",
    )

    @field_validator("hard")
    @classmethod
    def _hard_when_enabled(cls, hard: dict[str, Any], info: ValidationInfo) -> dict[str, Any]:
        if info.data.get("enabled") and not hard:
            raise ValueError("resourceQuota is enabled but `hard` is empty: list the limits, e.g. requests.cpu: 64")
        return hard


class LimitRangeSettings(Strict):
    """Opt-in namespace LimitRange for containers."""

    enabled: bool = Field(False, description="Render a LimitRange for the namespace.")
    default: ContainerQuantities = Field(ContainerQuantities(),
                                         description="Default limits for containers that set none.")
    defaultRequest: ContainerQuantities = Field(ContainerQuantities(),
                                                description="Default requests for containers that set none.")
    max: ContainerQuantities = Field(ContainerQuantities(), description="Maximum per container.")
    min: ContainerQuantities = Field(ContainerQuantities(), description="Minimum per container.")
