"""The chart's values: the recipe's launcher keys plus the infra spec (less the namespace)."""

from __future__ import annotations

from functools import cache
from typing import Any, cast

from pydantic import ConfigDict, Field, field_validator, model_validator

from generator.inputs.mode_keys import values_problem, values_schema_rules
from generator.inputs.models.common import Image
from generator.inputs.models.infra import (
    KUEUE_AUTOSCALING_RULE,
    InfraBase,
    KubeRaySettings,
    LaunchSettings,
    Sandbox,
    kueue_overlay_problem,
)
from generator.inputs.models.network import RESTRICTED_FABRIC_RULE, restricted_fabric_problem
from generator.inputs.models.recipe import ClusterShape
from generator.inputs.models.types import DNS1035_LABEL_RE, Strict, refused
from generator.inputs.quota_rules import quota_problems
from generator.inputs.rules import MAX_RAYCLUSTER_NAME, MAX_RAYJOB_NAME
from generator.inputs.storage_rules import gang_problems
from generator.inputs.switch_keys import problems as switch_problems
from generator.inputs.switch_keys import schema_rules as switch_rules
from generator.inputs.topology_rules import OVERLAY_RULE, TOGETHER_RULE, together_problem
from generator.inputs.version_rules import (
    DEFAULT_KUBERAY_MINOR,
    KUBERAY_MINORS,
    PRE_RUNNING_RULE,
    pre_running_problem,
)

DEFAULT_IMAGE = Image(repository="ghcr.io/dockyard-rl/ubuntu-swe", tag="vllm")


class RecipeValues(Strict):
    """What the chart needs from the recipe."""

    name: str = Field(
        "", pattern=f"^$|{DNS1035_LABEL_RE}", max_length=MAX_RAYCLUSTER_NAME,
        description="Recipe name; object names use the release name.",
    )
    entrypoint: str = Field("python -m dockyard_rl.train", min_length=1, description="Command the Ray job runs.")
    cluster: ClusterShape = Field(ClusterShape(), description="Worker group sizes.")
    config: str = Field("", description="The whole recipe YAML, shipped in a ConfigMap mounted on the Ray head.")
    probe: str = Field(
        "", description="`dockyard-k8s smoke`'s probe (Python), shipped beside the recipe as probe.py when set."
    )


class InfraValues(InfraBase):
    """The chart's `infra` block."""

    image: Image = Field(DEFAULT_IMAGE,
                         description="The ubuntu-swe image of the GPU pods (and, by default, the sandbox).")


class KubeRayValues(KubeRaySettings):
    """The chart's `kuberay` block: the infra spec's, and the KubeRay version the objects are for."""

    version: str = Field(
        DEFAULT_KUBERAY_MINOR, json_schema_extra=cast(Any, {"enum": KUBERAY_MINORS}),
        description="The KubeRay minor of the cluster (its CRDs): a default whose field that KubeRay lacks is left "
                    "out. The generator sets it from `check --kuberay-version`; `run`, `smoke` and `doctor` from the "
                    "served CRDs.",
    )

    @field_validator("version")
    @classmethod
    def _supported(cls, version: str) -> str:
        if version not in KUBERAY_MINORS:
            raise ValueError(f"KubeRay {version!r} is not one of the supported minors {', '.join(KUBERAY_MINORS)}")
        return version


def _chart_rules(schema: dict[str, Any]) -> None:
    """ChartValues' JSON Schema rules across its blocks (written when the schema is, from the defaults)."""
    schema["allOf"] = [
        {"if": {"properties": {"launch": {"properties": {"mode": {"const": "rayjob"}}}}},
         "then": {"properties": {"recipe": {"properties": {"name": {"maxLength": MAX_RAYJOB_NAME}}}}}},
        KUEUE_AUTOSCALING_RULE,
        RESTRICTED_FABRIC_RULE,
        OVERLAY_RULE,
        TOGETHER_RULE,
        PRE_RUNNING_RULE,
        *values_schema_rules(_defaults()),  # twin of mode_keys.values_problem: what the mode ignores keeps its default
        *switch_rules(_defaults()),  # twin of switch_keys.problems: what a switch turns off keeps its default
    ]


class ChartValues(Strict):
    """Values of charts/dockyard."""

    model_config = Strict.model_config | ConfigDict(json_schema_extra=_chart_rules)

    recipe: RecipeValues = Field(RecipeValues(), description="Launcher keys of the recipe, and the recipe itself.")
    infra: InfraValues = Field(InfraValues(), description="Image, backend and cluster-wide settings.")
    launch: LaunchSettings = Field(LaunchSettings(), description="How the GPU fleet is launched.")
    kuberay: KubeRayValues = Field(KubeRayValues(), description="The GPU RayCluster.")
    sandbox: Sandbox = Field(Sandbox(), description="The sandbox executor pool.")

    @model_validator(mode="after")
    def _name_fits_kuberay(self) -> ChartValues:
        dumped = self.model_dump(mode="json", by_alias=True)
        ignored = values_problem(dumped, _defaults())
        if ignored:
            raise refused(*ignored)
        for switched in switch_problems(dumped, _defaults(), self.launch.mode):
            raise refused(*switched)
        newer = pre_running_problem(self.launch.preRunningDeadlineSeconds, self.kuberay.version)
        if newer:
            raise refused(("launch", "preRunningDeadlineSeconds"), *newer)
        if self.launch.mode == "rayjob" and len(self.recipe.name) > MAX_RAYJOB_NAME:
            raise ValueError(
                f"recipe name {self.recipe.name!r} has {len(self.recipe.name)} characters; "
                f"KubeRay allows at most {MAX_RAYJOB_NAME} for a RayJob"
            )
        problem = kueue_overlay_problem(self.launch, self.kuberay) or restricted_fabric_problem(
            self.infra.security, self.kuberay.network)
        if problem:
            raise problem
        topology = self.launch.topology.model_dump() if self.launch.topology is not None else None
        together = together_problem(topology, self.recipe.cluster.model_dump())
        if together:
            raise refused(("launch", "topology", "groups"), *together)
        for key, message, expected in gang_problems(self.infra.storage.model_dump(), self.recipe.cluster.model_dump()):
            raise refused(("infra", "storage", key, "accessModes"), message, expected)
        if self.infra.resourceQuota.enabled:
            plain = self.model_dump(mode="json", by_alias=True, exclude_none=True)
            for path, message, expected in quota_problems(plain):
                raise refused(path, message, expected)
        return self


@cache
def _defaults() -> dict[str, Any]:
    """The chart values' defaults, dumped as `values_problem` compares them (Nones in)."""
    return ChartValues.model_construct().model_dump(mode="json", by_alias=True)
