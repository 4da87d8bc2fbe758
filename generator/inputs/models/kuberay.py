"""`kuberay`: the GPU RayCluster (its pods' resources and placement, the free-form spec overlay, the
bringup PDB), and Kueue's rule on the overlay of a queued job."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from generator import tool_table
from generator.inputs.fabric_rules import fabric_overlay_problem
from generator.inputs.models.common import PodResources
from generator.inputs.models.launch import KUEUE_AUTOSCALING, QUEUED, LaunchSettings
from generator.inputs.models.network import NetworkSettings
from generator.inputs.models.placement import KubeRayPlacement
from generator.inputs.models.types import INT32_MAX, STRICT_TYPES, FreeForm, Strict, refuse_non_finite, refused
from generator.inputs.rules import duplicate_group, kuberay_overlay_problem, overlay_shape_problem
from generator.inputs.topology_rules import overlay_problem as topology_overlay_problem

# The Ray version the chart's pods run by default: the one the playground's Ray image is built with (the table of
# tools' RAY_VERSION, read from the committed table, never $DOCKYARD_TOOLS_TABLE's: it is the chart's default).
RAY_VERSION = tool_table.load(tool_table.TABLE).pins["RAY_VERSION"]

SUSPEND_OWNED = ("the chart never renders suspend: Kueue suspends a queued RayJob or RayCluster and admits it "
                 "by clearing suspend, and a helm upgrade must not flip it")


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
            found = overlay_shape_problem(role, spec) or (fabric_overlay_problem(spec) if role != "head" else None)
            if found:
                raise refused(where + found[0], found[1], found[2])
        return self


class GpuPdbSettings(Strict):
    """Opt-in PodDisruptionBudget over the bringup RayCluster's pods."""

    enabled: bool = Field(False, description="Render a PDB for the RayCluster (bringup mode only).")
    minAvailable: int | None = Field(
        None, ge=0, le=INT32_MAX,
        description="Integer minAvailable (RayCluster has no scale subresource); defaults to all head and worker pods.",
    )


class KubeRaySettings(Strict):
    """The GPU RayCluster."""

    rayVersion: str = Field(RAY_VERSION, pattern=r"^[0-9]+\.[0-9]+\.[0-9]+$", description="Ray version in the image.")
    head: PodResources = Field(PodResources(cpu="2", memory="8Gi"), description="Head pod cpu/memory.")
    worker: PodResources = Field(PodResources(cpu="8", memory="32Gi"), description="cpu/memory of each worker pod.")
    placement: KubeRayPlacement = Field(
        KubeRayPlacement(),
        description="nodeSelector, tolerations and affinity of the GPU fleets, the head and the submitter pod.")
    spec: RayClusterSpecOverlay = Field(RayClusterSpecOverlay(),
                                        description="Free-form RayClusterSpec overlay, merged before the invariants.")
    pdb: GpuPdbSettings = Field(GpuPdbSettings(), description="Opt-in GPU PodDisruptionBudget (bringup).")
    network: NetworkSettings = Field(NetworkSettings(), description="The fabric of the trainer and inference pods "
                                     "(NCCL weight sync): tcp, rdma, efa or hostNetwork, the same in both groups.")


# JSON Schema twin of kueue_overlay_problem (on InfraSpec and ChartValues), so Helm refuses the same values.
KUEUE_AUTOSCALING_RULE: dict[str, Any] = {
    "if": {"required": ["launch"], "properties": {"launch": QUEUED}},
    "then": {"properties": {"kuberay": {"properties": {"spec": {"properties": {
        "enableInTreeAutoscaling": {"not": {"const": True}}}}}}}},
}


def kueue_overlay_problem(launch: LaunchSettings, kuberay: KubeRaySettings) -> Exception | None:
    """Kueue's rules on the kuberay.spec overlay of a queued job (no autoscaling; the placed fleets' pod-set
    annotations left to launch.topology), or None."""
    topology = launch.topology.model_dump() if launch.topology is not None else None
    owned = topology_overlay_problem(topology, [g.model_dump() for g in kuberay.spec.workerGroupSpecs],
                                     dict(kuberay.spec.headGroupSpec))
    if owned:
        return refused(("kuberay", "spec") + owned[0], owned[1], owned[2])
    if launch.queue is not None and (kuberay.spec.model_extra or {}).get("enableInTreeAutoscaling") is True:
        return refused(("kuberay", "spec", "enableInTreeAutoscaling"), KUEUE_AUTOSCALING,
                       "false (or unset), or no launch.queue")
    return None
