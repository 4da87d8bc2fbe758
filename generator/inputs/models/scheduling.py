"""Pod scheduling building blocks, checked as the Kubernetes API checks them: tolerations, topology
spread constraints and their label selectors (the sandbox's and, for tolerations, the Ray pods')."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import ConfigDict, Field, model_validator

from generator.inputs.models.common import present
from generator.inputs.models.types import INT32_MAX, LABEL_VALUE_RE, LabelKey, Labels, LabelValue, Strict, TaintKey

# JSON Schema twin of Toleration._api_rules, so Helm refuses the same values.
TOLERATION_RULES: dict[str, Any] = {"allOf": [
    {"if": {"not": present("key", type="string", minLength=1)},
     "then": present("operator", const="Exists")},
    {"if": present("operator", const="Exists"),
     "then": {"not": present("value", type="string", minLength=1)}},
    {"if": present("tolerationSeconds", type="integer"),
     "then": present("effect", const="NoExecute")},
]}


class Toleration(Strict):
    """A pod toleration, checked as the Kubernetes API checks it."""

    model_config = ConfigDict(json_schema_extra=TOLERATION_RULES)

    key: TaintKey | None = Field(None, description="Taint key (a label key); empty with operator Exists matches all "
                                                   "taints.")
    operator: Literal["Exists", "Equal"] = Field("Equal", description="Exists or Equal.")
    value: str | None = Field(None, pattern=LABEL_VALUE_RE, max_length=63,
                              description="Taint value (a label value) for operator Equal; none with Exists.")
    effect: Literal["NoSchedule", "PreferNoSchedule", "NoExecute"] | None = Field(
        None, description="Taint effect; empty matches all."
    )
    tolerationSeconds: int | None = Field(None, ge=0, le=2**63 - 1,
                                          description="For effect NoExecute: how long the pod stays bound.")

    @model_validator(mode="after")
    def _api_rules(self) -> Toleration:
        if not self.key and self.operator != "Exists":
            raise ValueError("a toleration without a key must have operator Exists (it then tolerates every "
                             "taint): set key, or operator: Exists")
        if self.operator == "Exists" and self.value:
            raise ValueError(f"operator Exists takes no value (got {self.value!r}): drop value, or use "
                             "operator: Equal to match it")
        if self.tolerationSeconds is not None and self.effect != "NoExecute":
            raise ValueError("tolerationSeconds applies only to effect NoExecute (how long a pod stays on a node "
                             "after the taint appears): set effect: NoExecute, or drop tolerationSeconds")
        return self


# JSON Schema twin of LabelSelectorRequirement._api_rules, so Helm refuses the same values.
SELECTOR_RULES: dict[str, Any] = {"allOf": [
    {"if": present("operator", enum=["In", "NotIn"]), "then": present("values", type="array", minItems=1)},
    {"if": present("operator", enum=["Exists", "DoesNotExist"]),
     "then": {"not": present("values", type="array", minItems=1)}},
]}


class LabelSelectorRequirement(Strict):
    """A pod label requirement (Kubernetes LabelSelectorRequirement)."""

    model_config = ConfigDict(json_schema_extra=SELECTOR_RULES)

    key: LabelKey = Field(description="Pod label key.")
    operator: Literal["In", "NotIn", "Exists", "DoesNotExist"] = Field(description="In, NotIn, Exists or DoesNotExist.")
    values: list[LabelValue] | None = Field(
        None, description="In/NotIn: one or more label values; Exists/DoesNotExist: none.")

    @model_validator(mode="after")
    def _api_rules(self) -> LabelSelectorRequirement:
        if self.operator in ("In", "NotIn") and not self.values:
            raise ValueError(f"operator {self.operator} needs values: list the label values to match")
        if self.operator in ("Exists", "DoesNotExist") and self.values:
            raise ValueError(f"operator {self.operator} takes no values: drop values, or use operator In")
        return self


class LabelSelector(Strict):
    """Pods selected by label (Kubernetes LabelSelector): matchLabels and matchExpressions ANDed."""

    matchLabels: Labels | None = Field(None, description="Label key: value pairs the pods carry.")
    matchExpressions: list[LabelSelectorRequirement] | None = Field(None, description="Label requirements.")


# JSON Schema twin of TopologySpreadConstraint._min_domains, so Helm refuses the same values.
MIN_DOMAINS_RULE: dict[str, Any] = {
    "if": present("minDomains", type="integer"),
    "then": present("whenUnsatisfiable", const="DoNotSchedule"),
}


class TopologySpreadConstraint(Strict):
    """A pod topologySpreadConstraint; the labelSelector defaults to the sandbox pods."""

    model_config = ConfigDict(json_schema_extra=MIN_DOMAINS_RULE)

    maxSkew: int = Field(1, ge=1, le=INT32_MAX, description="Maximum permitted skew between topology domains.")
    topologyKey: LabelKey = Field(
        description="Node label key, e.g. kubernetes.io/hostname or topology.kubernetes.io/zone.")
    whenUnsatisfiable: Literal["DoNotSchedule", "ScheduleAnyway"] = Field(
        "ScheduleAnyway", description="What to do when the skew cannot be met."
    )
    labelSelector: LabelSelector | None = Field(None,
                                                description="Pods to count; defaults to this release's sandbox pods.")
    minDomains: int | None = Field(None, ge=1, le=INT32_MAX,
                                   description="Minimum number of eligible domains (with DoNotSchedule only).")

    @model_validator(mode="after")
    def _min_domains(self) -> TopologySpreadConstraint:
        if self.minDomains is not None and self.whenUnsatisfiable != "DoNotSchedule":
            raise ValueError(f"minDomains applies only with whenUnsatisfiable: DoNotSchedule (got "
                             f"{self.whenUnsatisfiable}): set whenUnsatisfiable: DoNotSchedule, or drop minDomains")
        return self
