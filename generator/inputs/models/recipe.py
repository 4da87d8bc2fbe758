"""The recipe: what to train. The launcher reads a few keys and ships the whole file."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from generator.inputs.models.types import DNS1035_LABEL_RE, STRICT_TYPES, Strict
from generator.inputs.rules import MAX_RAYCLUSTER_NAME


class GroupShape(Strict):
    """Size of one GPU worker group."""

    nodes: int = Field(1, ge=1, le=1024, description="Worker pods (one per GPU node) in this group.")
    gpusPerNode: int = Field(8, ge=1, le=16, description="nvidia.com/gpu requested by each worker pod.")


class ClusterShape(Strict):
    """The two co-resident worker groups of the GPU RayCluster."""

    trainer: GroupShape = Field(GroupShape(), description="The `trainer` worker group.")
    inference: GroupShape = Field(GroupShape(), description="The `inference` worker group.")


class Recipe(BaseModel):
    """A dockyard_rl training recipe. Keys other than these are opaque to the launcher and shipped as is."""

    model_config = ConfigDict(extra="allow", validate_default=True, **STRICT_TYPES)

    name: str = Field(
        pattern=DNS1035_LABEL_RE,
        max_length=MAX_RAYCLUSTER_NAME,
        description="DNS-1035 label; the release, RayJob (≤47 chars) and RayCluster (≤53) names derive from it.",
    )
    entrypoint: str = Field(min_length=1, description="Command the Ray job runs, e.g. `python -m dockyard_rl.train`.")
    cluster: ClusterShape = Field(ClusterShape(), description="GPU worker group sizes.")
    env: dict[str, Any] = Field(
        {},
        description="Runtime environment config; `env.code.sandbox_urls` is overridden when the sandbox URLs are "
                    "injected."
    )
