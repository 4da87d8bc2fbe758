"""Namespace governance the chart can render: a ResourceQuota and a LimitRange."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import AfterValidator, ConfigDict, Field, ValidationInfo, WithJsonSchema, field_validator, model_validator

from generator.inputs.api_rules import limit_range_problem, quota_problem
from generator.inputs.models.types import (
    LABEL_KEY_MAX,
    LABEL_NAME,
    QUANTITY_SCHEMA,
    Quantity,
    Strict,
    key_schema,
    prefix_fits,
    refused,
)

# A ResourceQuota's resource name as the API checks it (ValidateResourceQuotaResourceName): a standard quota
# resource or a huge-page one, else a qualified name with a prefix (requests.nvidia.com/gpu, count/pods).
QUOTA_STANDARD = ("cpu", "memory", "ephemeral-storage", "requests.cpu", "requests.memory", "requests.storage",
                  "requests.ephemeral-storage", "limits.cpu", "limits.memory", "limits.ephemeral-storage", "pods",
                  "resourcequotas", "services", "replicationcontrollers", "secrets", "persistentvolumeclaims",
                  "configmaps", "services.nodeports", "services.loadbalancers")
QUOTA_NAME_RE = ("^(" + "|".join(n.replace(".", r"\.") for n in QUOTA_STANDARD)
                 + r"|hugepages-[-A-Za-z0-9_.]{0,52}[A-Za-z0-9]|requests\.hugepages-[-A-Za-z0-9_.]{0,43}[A-Za-z0-9]"
                 + rf"|[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/{LABEL_NAME})$")
QuotaName = Annotated[str, Field(pattern=QUOTA_NAME_RE, max_length=LABEL_KEY_MAX), AfterValidator(prefix_fits),
                      WithJsonSchema(key_schema(QUOTA_NAME_RE))]
QuotaHard = Annotated[
    dict[QuotaName, Quantity],
    WithJsonSchema({"type": "object",
                    "propertyNames": {k: v for k, v in key_schema(QUOTA_NAME_RE).items() if k != "type"},
                    "additionalProperties": QUANTITY_SCHEMA}),
]


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
    hard: QuotaHard = Field(
        {},
        description="spec.hard: resource name to quantity, e.g. requests.cpu: 64, requests.nvidia.com/gpu: 32, "
                    "pods: 200 (what counts objects or devices takes a whole number).",
    )

    @field_validator("hard")
    @classmethod
    def _hard_when_enabled(cls, hard: dict[str, Any], info: ValidationInfo) -> dict[str, Any]:
        if info.data.get("enabled") and not hard:
            raise ValueError("resourceQuota is enabled but `hard` is empty: list the limits, e.g. requests.cpu: 64")
        return hard

    @field_validator("hard")
    @classmethod
    def _whole_counts(cls, hard: dict[str, Any]) -> dict[str, Any]:
        found = quota_problem(hard)
        if found:
            raise refused(*found)
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

    @model_validator(mode="after")
    def _in_order(self) -> LimitRangeSettings:
        found = limit_range_problem(self.model_dump(by_alias=True))
        if found:
            raise refused(*found)
        return self
