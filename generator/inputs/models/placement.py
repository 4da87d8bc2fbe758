"""Where the Ray pods land: nodeSelector, tolerations and affinity of the GPU fleets, the head and the
RayJob's submitter pod (`kuberay.placement`), checked as the Kubernetes API checks them."""

from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import ConfigDict, Field, model_validator

from generator.inputs.api_rules import pod_affinity_term_problem
from generator.inputs.models.common import present
from generator.inputs.models.scheduling import LabelSelector, Toleration
from generator.inputs.models.types import Dns1123Label, LabelKey, NodeSelector, Strict

# The taint GPU node pools carry on GKE, AKS and EKS (and the GPU operator's docs): key nvidia.com/gpu.
GPU_TOLERATION = Toleration(key="nvidia.com/gpu", operator="Exists", effect="NoSchedule")
SET_OPERATORS = ("In", "NotIn")
INTEGER = r"^-?[0-9]+$"

# JSON Schema twin of NodeSelectorRequirement._api_rules, so Helm refuses the same values.
REQUIREMENT_RULES: dict[str, Any] = {"allOf": [
    {"if": present("operator", enum=list(SET_OPERATORS)),
     "then": present("values", type="array", minItems=1)},
    {"if": present("operator", enum=["Exists", "DoesNotExist"]),
     "then": {"not": present("values", type="array", minItems=1)}},
    {"if": present("operator", enum=["Gt", "Lt"]),
     "then": present("values", type="array", minItems=1, maxItems=1, items={"type": "string", "pattern": INTEGER})},
]}


class NodeSelectorRequirement(Strict):
    """A node label requirement (Kubernetes NodeSelectorRequirement)."""

    model_config = ConfigDict(json_schema_extra=REQUIREMENT_RULES)

    key: LabelKey = Field(description="Node label key.")
    operator: Literal["In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"] = Field(
        description="In, NotIn, Exists, DoesNotExist, Gt or Lt.")
    values: list[str] | None = Field(
        None, description="In/NotIn: one or more; Exists/DoesNotExist: none; Gt/Lt: one integer.")

    @model_validator(mode="after")
    def _api_rules(self) -> NodeSelectorRequirement:
        values = self.values or []
        if self.operator in SET_OPERATORS and not values:
            raise ValueError(f"operator {self.operator} needs values: list the label values to match")
        if self.operator in ("Exists", "DoesNotExist") and values:
            raise ValueError(f"operator {self.operator} takes no values: drop values, or use operator In")
        if self.operator in ("Gt", "Lt") and not (len(values) == 1 and _integer(values[0])):
            raise ValueError(f"operator {self.operator} takes exactly one value, an integer (got {values!r})")
        return self


def _integer(text: str) -> bool:
    return re.fullmatch(INTEGER.strip("^$"), text) is not None


class NodeFieldRequirement(Strict):
    """A node field requirement: only metadata.name, with In or NotIn and one name (as the API allows)."""

    key: Literal["metadata.name"] = Field(description="The node field: metadata.name.")
    operator: Literal["In", "NotIn"] = Field(description="In or NotIn.")
    values: list[str] = Field(min_length=1, max_length=1, description="One node name.")


class NodeSelectorTerm(Strict):
    """Requirements ANDed together (Kubernetes NodeSelectorTerm)."""

    matchExpressions: list[NodeSelectorRequirement] | None = Field(None, description="Node label requirements.")
    matchFields: list[NodeFieldRequirement] | None = Field(None, description="Node field requirements.")


class RequiredNodeSelector(Strict):
    """Terms ORed together: a node must match one."""

    nodeSelectorTerms: list[NodeSelectorTerm] = Field(min_length=1, description="At least one term.")


class PreferredSchedulingTerm(Strict):
    """A preferred term and its weight."""

    weight: int = Field(ge=1, le=100, description="1 to 100.")
    preference: NodeSelectorTerm = Field(description="The nodes preferred.")


class NodeAffinity(Strict):
    """Kubernetes NodeAffinity."""

    requiredDuringSchedulingIgnoredDuringExecution: RequiredNodeSelector | None = Field(
        None, description="Nodes the pod must land on.")
    preferredDuringSchedulingIgnoredDuringExecution: list[PreferredSchedulingTerm] | None = Field(
        None, description="Nodes the pod prefers.")


class PodAffinityTerm(Strict):
    """Kubernetes PodAffinityTerm: the pods (by labels, in namespaces) whose topology domain counts."""

    labelSelector: LabelSelector | None = Field(None, description="The pods that count.")
    namespaceSelector: LabelSelector | None = Field(None, description="The namespaces whose pods count.")
    namespaces: list[Dns1123Label] | None = Field(None, description="Namespaces whose pods count (else the pod's).")
    topologyKey: LabelKey = Field(description="The node label whose value is the domain (e.g. kubernetes.io/hostname).")
    matchLabelKeys: list[LabelKey] | None = Field(None, description="The incoming pod's label keys added as In.")
    mismatchLabelKeys: list[LabelKey] | None = Field(None, description="The incoming pod's label keys added as NotIn.")

    @model_validator(mode="after")
    def _api_rules(self) -> PodAffinityTerm:
        found = pod_affinity_term_problem(self.model_dump(exclude_none=True))
        if found:
            raise ValueError(f"{found[1]}: expected {found[2]}")
        return self


class WeightedPodAffinityTerm(Strict):
    """A preferred pod affinity term and its weight."""

    weight: int = Field(ge=1, le=100, description="1 to 100.")
    podAffinityTerm: PodAffinityTerm = Field(description="The term.")


class PodAffinity(Strict):
    """Kubernetes PodAffinity or PodAntiAffinity."""

    requiredDuringSchedulingIgnoredDuringExecution: list[PodAffinityTerm] | None = Field(
        None, description="Terms every placement must meet.")
    preferredDuringSchedulingIgnoredDuringExecution: list[WeightedPodAffinityTerm] | None = Field(
        None, description="Terms preferred, by weight.")


class Affinity(Strict):
    """Kubernetes Affinity: node affinity and pod (anti-)affinity, checked as the API checks them."""

    nodeAffinity: NodeAffinity | None = Field(None, description="Node affinity.")
    podAffinity: PodAffinity | None = Field(None, description="Kubernetes PodAffinity.")
    podAntiAffinity: PodAffinity | None = Field(None, description="Kubernetes PodAntiAffinity.")


class Placement(Strict):
    """nodeSelector, tolerations and affinity of one kind of pod."""

    nodeSelector: NodeSelector = Field({}, description="Node labels the pods must run on.")
    tolerations: list[Toleration] = Field([], description="Taints the pods tolerate.")
    affinity: Affinity = Field(
        Affinity(), description="Kubernetes Affinity; empty prefers nodes without `nvidia.com/gpu.present`.")


class GpuPlacement(Placement):
    """The GPU fleets' shared placement: they tolerate the GPU pools' taint by default."""

    tolerations: list[Toleration] = Field(
        [GPU_TOLERATION],
        description="Taints the GPU pods tolerate; the default is the GPU pools' `nvidia.com/gpu` "
                    "(Exists, NoSchedule). Setting this replaces it: list it too where the pool carries it.")
    affinity: Affinity = Field(Affinity(), description="Kubernetes Affinity of the GPU pods.")


class FleetPlacement(Strict):
    """One GPU fleet's placement: each key set here replaces `kuberay.placement.gpu`'s."""

    nodeSelector: NodeSelector | None = Field(None, description="Replaces gpu.nodeSelector for this fleet.")
    tolerations: list[Toleration] | None = Field(None, description="Replaces gpu.tolerations for this fleet.")
    affinity: Affinity | None = Field(None, description="Replaces gpu.affinity for this fleet.")


class KubeRayPlacement(Strict):
    """Where the Ray pods land. The `kuberay.spec` overlay still wins where it sets the same keys:
    its nodeSelector keys and affinity merged over these, its tolerations added after them."""

    gpu: GpuPlacement = Field(GpuPlacement(), description="Both GPU fleets (trainer and inference).")
    trainer: FleetPlacement = Field(FleetPlacement(), description="The trainer fleet: keys set replace gpu's.")
    inference: FleetPlacement = Field(FleetPlacement(), description="The inference fleet: keys set replace gpu's.")
    head: Placement = Field(
        Placement(), description="The Ray head: CPU nodes by default (no GPU toleration, prefers non-GPU nodes).")
    submitter: Placement = Field(
        Placement(), description="The RayJob's submitter pod (K8sJobMode): CPU nodes by default, as the head.")
