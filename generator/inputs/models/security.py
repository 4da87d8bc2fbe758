"""securityContext settings: the sandbox's baseline (on by default) and the GPU fleets' (opt-in)."""

from __future__ import annotations

from typing import Literal

from pydantic import ConfigDict, Field, ValidationInfo, field_validator

from generator.inputs.models.types import INT32_MAX, Quantity, Strict

SCRATCH_TMP = "/tmp"  # the chart's scratch emptyDir beside the work dir (dockyard.scratchMounts)


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
    # The API takes a UID or GID from 0 to 2^31-1 (IsValidUserID, IsValidGroupID).
    runAsUser: int | None = Field(None, ge=0, le=INT32_MAX,
                                  description="UID to run as; `restricted` defaults it to 10001.")
    runAsGroup: int | None = Field(None, ge=0, le=INT32_MAX, description="GID to run as.")
    fsGroup: int | None = Field(None, ge=0, le=INT32_MAX, description="Pod fsGroup for mounted volumes.")
    readOnlyRootFilesystem: bool = Field(
        False, description="Opt-in: read-only root filesystem; a writable emptyDir is mounted at `workDir`."
    )
    workDir: str = Field(
        "/workspace", pattern=r"^/",
        description="Writable work dir (emptyDir) mounted when the root filesystem is read-only; not /tmp (the "
                    "chart mounts an emptyDir there too, and the API refuses a mount path twice).",
        # JSON Schema twin of _not_tmp, so Helm refuses the same values.
        json_schema_extra={"not": {"const": SCRATCH_TMP}})
    workDirSizeLimit: Quantity | None = Field(None, description="sizeLimit of the work-dir emptyDir.")

    @field_validator("workDir")
    @classmethod
    def _not_tmp(cls, path: str) -> str:
        if path == SCRATCH_TMP:
            raise ValueError(f"workDir {SCRATCH_TMP} is the chart's own scratch mount (an emptyDir at /tmp beside the "
                             "work dir); the API refuses a mount path twice: choose another path, e.g. /workspace")
        return path

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
