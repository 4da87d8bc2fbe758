"""The infra spec: where to run. Top-level keys infra, launch, kuberay, sandbox, each a model of its own
(launch.py, kuberay.py, sandbox.py); this module composes them and holds the `infra` block."""

from __future__ import annotations

from functools import cache
from typing import Any, Literal

from pydantic import (
    ConfigDict,
    Field,
    ModelWrapValidatorHandler,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)
from pydantic_core import InitErrorDetails

from generator.inputs.mode_keys import file_problems, infra_schema_rules
from generator.inputs.models.common import Image, backend_image_problem
from generator.inputs.models.env import SANDBOX_CHART_ENV, EnvFromSource, GpuEnvVar, SandboxEnvVar, chart_env_problem
from generator.inputs.models.kuberay import (
    KUEUE_AUTOSCALING_RULE,
    KubeRaySettings,
    RayClusterSpecOverlay,
    WorkerGroupOverlay,
    kueue_overlay_problem,
)
from generator.inputs.models.launch import LaunchSettings
from generator.inputs.models.namespace import LimitRangeSettings, ResourceQuotaSettings
from generator.inputs.models.network import RESTRICTED_FABRIC_RULE, restricted_fabric_problem
from generator.inputs.models.sandbox import SANDBOX_CHART_LABELS, Sandbox, chart_label_problem
from generator.inputs.models.security import GpuSecuritySettings
from generator.inputs.models.storage import StorageSettings
from generator.inputs.models.types import Dns1123Label, Dns1123Subdomain, Strict, refused
from generator.inputs.rules import toyaml_problem
from generator.inputs.storage_rules import LAYOUT, OFFLINE_ENV
from generator.inputs.switch_keys import problems as switch_problems
from generator.inputs.switch_keys import schema_rules as switch_rules
from generator.inputs.topology_rules import OVERLAY_RULE as TOPOLOGY_OVERLAY_RULE

# What importers read from here (the infra spec's parts live in the modules above).
__all__ = ["GROUPS", "KUEUE_AUTOSCALING_RULE", "SANDBOX_CHART_ENV", "SANDBOX_CHART_LABELS", "InfraBase",
           "InfraSettings", "InfraSpec", "KubeRaySettings", "LaunchSettings", "RayClusterSpecOverlay", "Sandbox",
           "SandboxEnvVar", "WorkerGroupOverlay", "chart_env_problem", "chart_label_problem", "kueue_overlay_problem"]

GROUPS = ("trainer", "inference")

def _ci(word: str) -> str:
    return "".join(f"[{c}{c.upper()}]" for c in word)


def _mentions(field: str, word: str) -> dict[str, Any]:
    return {"required": [field], "properties": {field: {"pattern": _ci(word)}}}


# JSON Schema twin of ImageOwner's check, so Helm refuses the same values: with backend B,
# the image must not name the other backend unless it also names B.
BACKEND_IMAGE_RULE: dict[str, Any] = {
    "allOf": [
        {
            "if": {"required": ["backend"], "properties": {"backend": {"const": b}}},
            "then": {
                "properties": {
                    "image": {
                        "not": {
                            "anyOf": [_mentions("repository", other), _mentions("tag", other)],
                            "allOf": [{"not": _mentions("repository", b)}, {"not": _mentions("tag", b)}],
                        }
                    }
                }
            },
        }
        for b, other in (("vllm", "sglang"), ("sglang", "vllm"))
    ]
}


def _volume_set(volume: str, offline: bool = False) -> dict[str, Any]:
    """A schema that holds when infra.storage.<volume> is given (and, with `offline`, its offline is true)."""
    inner: dict[str, Any] = {"type": "object"}
    if offline:
        inner |= {"required": ["offline"], "properties": {"offline": {"const": True}}}
    return {"required": ["storage"], "properties": {"storage": {"required": [volume], "properties": {volume: inner}}}}


def _env_names_not(names: list[str]) -> dict[str, Any]:
    return {"properties": {"env": {"items": {"properties": {"name": {"not": {"enum": names}}}}}}}


# JSON Schema twin of InfraBase._storage_env_is_the_charts: with a volume given, infra.env may not set the env
# that names it (nor, with the model cache offline, the offline switches).
STORAGE_ENV_RULE: list[dict[str, Any]] = [
    {"if": _volume_set(volume), "then": _env_names_not(list(spec["env"]))} for volume, spec in LAYOUT.items()
] + [{"if": _volume_set("modelCache", offline=True), "then": _env_names_not(list(OFFLINE_ENV))}]


class InfraBase(Strict):
    """Fields shared by the infra spec's `infra` block and the chart values' `infra` block."""

    model_config = ConfigDict(json_schema_extra={"allOf": BACKEND_IMAGE_RULE["allOf"] + STORAGE_ENV_RULE})

    image: Image = Field(description="The ubuntu-swe image of the GPU pods (and, by default, the sandbox).")
    backend: Literal["vllm", "sglang"] = Field("vllm", description="Inference backend; must match the image build.")
    imagePullSecrets: list[Dns1123Subdomain] = Field([], description="Names of pull secrets for every managed pod.")
    priorityClassName: Dns1123Subdomain | None = Field(None,
                                                       description="PriorityClass of every managed pod (must exist).")
    env: list[GpuEnvVar] = Field(
        [], description="Env of the Ray container of the head and both fleets, applied after kuberay.spec (an "
                        "overlay's variable of the same name is replaced); a credential from a Secret: "
                        "valueFrom.secretKeyRef.")
    envFrom: list[EnvFromSource] = Field(
        [], description="Secrets or ConfigMaps whose every key is an env var of the Ray container of the head and both "
                        "fleets (after the overlay's envFrom).")
    security: GpuSecuritySettings = Field(GpuSecuritySettings(),
                                          description="Opt-in securityContext for the GPU fleets.")
    resourceQuota: ResourceQuotaSettings = Field(ResourceQuotaSettings(), description="Opt-in namespace ResourceQuota.")
    limitRange: LimitRangeSettings = Field(LimitRangeSettings(), description="Opt-in namespace LimitRange.")
    storage: StorageSettings = Field(StorageSettings(), description="Volumes the GPU pods mount: checkpoints, "
                                     "a model cache, logs (docs/storage.md).")

    @model_validator(mode="after")
    def _storage_env_is_the_charts(self) -> InfraBase:
        """The env naming a volume is the chart's (it points at the mount): infra.env may not set it too."""
        owned: dict[str, str] = {}
        for volume, spec in LAYOUT.items():
            given = getattr(self.storage, volume)
            if given is not None:
                owned |= dict.fromkeys(spec["env"], f"infra.storage.{volume}")
                if volume == "modelCache" and given.offline:
                    owned |= dict.fromkeys(OFFLINE_ENV, "infra.storage.modelCache.offline")
        for i, var in enumerate(self.env):
            if var.name in owned:
                raise refused(("env", i, "name"), f"{var.name} is set by the chart for {owned[var.name]} (it names the "
                              "volume's mount)", "another name, or no infra.storage volume")
        return self

    @field_validator("backend")
    @classmethod
    def _backend_matches_image(cls, backend: str, info: ValidationInfo) -> str:
        image = info.data.get("image")
        problem = image and backend_image_problem(backend, image)
        if problem:
            raise ValueError(problem)
        return backend


class InfraSettings(InfraBase):
    """The infra spec's `infra` block."""

    namespace: Dns1123Label = Field("default", description="Namespace the live path installs into.")


def _spec_rules(schema: dict[str, Any]) -> None:
    """InfraSpec's JSON Schema rules across its blocks (written when the schema is)."""
    schema["allOf"] = [
        KUEUE_AUTOSCALING_RULE,
        RESTRICTED_FABRIC_RULE,
        TOPOLOGY_OVERLAY_RULE,
        *infra_schema_rules(),  # twin of _what_is_ignored's mode keys, on the file as written
        *switch_rules(_defaults()),  # and of its switched keys
    ]


class InfraSpec(Strict):
    """The infra spec file."""

    model_config = Strict.model_config | ConfigDict(json_schema_extra=_spec_rules)

    infra: InfraSettings = Field(description="Image, backend, namespace and cluster-wide settings.")
    launch: LaunchSettings = Field(LaunchSettings(), description="How the GPU fleet is launched.")
    kuberay: KubeRaySettings = Field(KubeRaySettings(), description="The GPU RayCluster.")
    sandbox: Sandbox = Field(Sandbox(), description="The sandbox executor pool.")

    @field_validator("infra", "launch", "kuberay", "sandbox", mode="before")
    @classmethod
    def _toyaml_safe(cls, value: Any) -> Any:
        """What Helm's toYaml would drop or mangle, refused as the chart refuses it (dockyard.validate.toYamlSafe)."""
        found = toyaml_problem(value)
        if found:
            raise refused(*found)
        return value

    @model_validator(mode="wrap")
    @classmethod
    def _what_is_ignored(cls, data: Any, handler: ModelWrapValidatorHandler[InfraSpec]) -> InfraSpec:
        """A key the file's launch.mode ignores, written at all (generator.inputs.mode_keys.file_problems), and
        one another key switches off, set to other than its default (generator.inputs.switch_keys): each one
        refused, at once."""
        spec = handler(data)
        mode = spec.launch.mode
        found = file_problems(data, mode) + switch_problems(spec.model_dump(mode="json", by_alias=True), _defaults(),
                                                            mode)
        if found:
            raise ValidationError.from_exception_data(cls.__name__, [
                InitErrorDetails(type=refused(where, message, expected), loc=(), input=data)
                for where, message, expected in found])
        return spec

    @model_validator(mode="after")
    def _kueue_overlay(self) -> InfraSpec:
        problem = kueue_overlay_problem(self.launch, self.kuberay) or restricted_fabric_problem(
            self.infra.security, self.kuberay.network)
        if problem:
            raise problem
        return self


@cache
def _defaults() -> dict[str, Any]:
    """The infra spec's defaults, dumped as switch_keys compares them (Nones in); infra.image has none (a stand-in
    here: no switch governs it)."""
    infra = InfraSettings.model_construct(image=Image(repository="ghcr.io/dockyard-rl/ubuntu-swe"))
    return InfraSpec.model_construct(infra=infra).model_dump(mode="json", by_alias=True)
