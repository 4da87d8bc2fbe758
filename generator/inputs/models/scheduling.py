"""Pod scheduling building blocks, checked as the Kubernetes API checks them: tolerations and topology
spread constraints (the sandbox's and, for tolerations, the Ray pods')."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import ConfigDict, Field, model_validator

from generator.inputs.models.common import present
from generator.inputs.models.types import LABEL_KEY_MAX, LABEL_KEY_RE, LABEL_VALUE_RE, FreeForm, Strict

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

    key: str | None = Field(None, pattern=f"^$|{LABEL_KEY_RE}", max_length=LABEL_KEY_MAX,
                            description="Taint key (a label key); empty with operator Exists matches all taints.")
    operator: Literal["Exists", "Equal"] = Field("Equal", description="Exists or Equal.")
    value: str | None = Field(None, pattern=LABEL_VALUE_RE, max_length=63,
                              description="Taint value (a label value) for operator Equal; none with Exists.")
    effect: Literal["NoSchedule", "PreferNoSchedule", "NoExecute"] | None = Field(
        None, description="Taint effect; empty matches all."
    )
    tolerationSeconds: int | None = Field(None, ge=0,
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


class TopologySpreadConstraint(Strict):
    """A pod topologySpreadConstraint; the labelSelector defaults to the sandbox pods."""

    maxSkew: int = Field(1, ge=1, description="Maximum permitted skew between topology domains.")
    topologyKey: str = Field(description="Node label key, e.g. kubernetes.io/hostname or topology.kubernetes.io/zone.")
    whenUnsatisfiable: Literal["DoNotSchedule", "ScheduleAnyway"] = Field(
        "ScheduleAnyway", description="What to do when the skew cannot be met."
    )
    labelSelector: FreeForm | None = Field(None, description="Pods to count; defaults to this release's sandbox pods.")
    minDomains: int | None = Field(None, ge=1, description="Minimum number of eligible domains.")
