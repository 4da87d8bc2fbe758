"""Building blocks shared by the infra spec and the chart values."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import ConfigDict, Field, ValidationInfo, field_validator, model_validator

from generator.inputs.models.types import (
    DIGEST_RE,
    IMAGE_REPO_RE,
    IMAGE_TAG_RE,
    LABEL_KEY_MAX,
    LABEL_KEY_RE,
    LABEL_VALUE_RE,
    FreeForm,
    Quantity,
    Strict,
)

PullPolicy = Literal["Always", "IfNotPresent", "Never"]


class Image(Strict):
    """A container image reference."""

    repository: str = Field(pattern=IMAGE_REPO_RE, description="Image repository, e.g. ghcr.io/org/ubuntu-swe.")
    tag: str = Field("latest", pattern=IMAGE_TAG_RE, description="Image tag; ignored when `digest` is set.")
    digest: str | None = Field(None, pattern=DIGEST_RE,
                               description="Pin the image by digest (sha256:…); wins over `tag`.")
    pullPolicy: PullPolicy = Field("IfNotPresent", description="Kubernetes imagePullPolicy.")


class OptionalImage(Strict):
    """The sandbox's own image: setting any of repository, tag or digest makes it a reference of its own
    (repository defaults to `infra.image.repository`, tag to `latest`); setting none runs `infra.image` whole."""

    repository: str | None = Field(None, pattern=IMAGE_REPO_RE,
                                   description="Image repository; defaults to `infra.image.repository`.")
    tag: str | None = Field(
        None, pattern=IMAGE_TAG_RE,
        description="Image tag; `latest` when repository or digest is set without it, else `infra.image`'s reference "
                    "whole."
    )
    digest: str | None = Field(
        None, pattern=DIGEST_RE,
        description="Pin by digest (sha256:…); wins over the tag. Not inherited from `infra.image` once repository or "
                    "tag is set."
    )
    pullPolicy: PullPolicy | None = Field(None, description="imagePullPolicy; defaults to `infra.image.pullPolicy`.")


class SecuritySettings(Strict):
    """Container securityContext baseline."""

    # JSON Schema twin of _root_needs_no_nonroot, so Helm refuses the same values.
    model_config = ConfigDict(json_schema_extra={
        "if": {"anyOf": [{"properties": {"profile": {"const": "restricted"}}, "required": ["profile"]},
                         {"properties": {"runAsNonRoot": {"const": True}}, "required": ["runAsNonRoot"]}]},
        "then": {"properties": {"runAsUser": {"not": {"const": 0}}}},
    })

    enabled: bool = Field(True, description="Render the securityContext at all; `false` drops it.")
    profile: Literal["baseline", "restricted"] = Field(
        "baseline",
        description="`restricted` turns on runAsNonRoot, a non-root runAsUser and a read-only root filesystem "
        "(with a writable emptyDir work dir), on top of the baseline, so PodSecurity `restricted` admits the pod.",
    )
    allowPrivilegeEscalation: bool = Field(False, description="securityContext.allowPrivilegeEscalation.")
    dropCapabilities: list[str] = Field(["ALL"], description="Linux capabilities to drop.")
    seccompProfile: Literal["RuntimeDefault", "Unconfined"] = Field(
        "RuntimeDefault", description="Pod seccomp profile type."
    )
    runAsNonRoot: bool = Field(
        False, description="Opt-in: refuse to start as root (the executor image runs as root by default)."
    )
    runAsUser: int | None = Field(None, ge=0, description="UID to run as; `restricted` defaults it to 10001.")
    runAsGroup: int | None = Field(None, ge=0, description="GID to run as.")
    fsGroup: int | None = Field(None, ge=0, description="Pod fsGroup for mounted volumes.")
    readOnlyRootFilesystem: bool = Field(
        False, description="Opt-in: read-only root filesystem; a writable emptyDir is mounted at `workDir`."
    )
    workDir: str = Field("/workspace", pattern=r"^/",
                         description="Writable work dir (emptyDir) mounted when the root filesystem is read-only.")
    workDirSizeLimit: Quantity | None = Field(None, description="sizeLimit of the work-dir emptyDir.")

    @field_validator("runAsUser")
    @classmethod
    def _root_needs_no_nonroot(cls, uid: int | None, info: ValidationInfo) -> int | None:
        if uid == 0 and (info.data.get("profile") == "restricted" or info.data.get("runAsNonRoot")):
            raise ValueError("runAsUser 0 is root, which profile restricted / runAsNonRoot forbid (the kubelet "
                             "would refuse to start the pod): unset runAsUser (restricted runs as 10001) or pick a "
                             "non-zero UID")
        return uid


class GpuSecuritySettings(SecuritySettings):
    """The same baseline for GPU pods; off by default (unverified on the CUDA/NCCL stack)."""

    enabled: bool = Field(
        False, description="Apply the securityContext baseline to the Ray head and worker containers (opt-in)."
    )


def present(field: str, **schema: Any) -> dict[str, Any]:
    """JSON Schema: `field` is given and holds a value of this schema (None counts as not given)."""
    return {"required": [field], "properties": {field: schema}}


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


class PodResources(Strict):
    """cpu / memory requests of a Ray pod (GPUs come from the recipe)."""

    cpu: Quantity = Field(description="CPU request (and limit).")
    memory: Quantity = Field(description="Memory request (and limit).")


def backend_image_problem(backend: str, image: Image) -> str | None:
    """Why the image contradicts the backend, or None: an image naming the other backend only."""
    other = {"vllm": "sglang", "sglang": "vllm"}[backend]
    ref = f"{image.repository}:{image.tag}".lower()
    if other in ref and backend not in ref:
        return (f"backend is {backend!r} but the image {ref!r} is the {other} build; "
                f"set backend: {other} or use the {backend} image")
    return None
