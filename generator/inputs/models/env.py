"""Env as Kubernetes EnvVar objects, their valueFrom checked as the API checks it (one source: a Secret's or
ConfigMap's key, a pod field, a resource of the container): `sandbox.extraEnv` (the executor container) and
`infra.env` (the Ray container of the head and both fleets), and `infra.envFrom` (whole Secrets or ConfigMaps).
A literal value under a name that reads as a credential is refused in both (generator/inputs/credentials.py)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import ConfigDict, Field, field_validator, model_validator

from generator.inputs.api_rules import divisor_problem
from generator.inputs.credentials import CREDENTIAL_LITERAL, CREDENTIAL_SHAPED, literal_problem, secret_ref_hint
from generator.inputs.fabric_rules import FABRIC_ENV
from generator.inputs.models.common import present
from generator.inputs.models.types import (
    ANNOTATION_KEY_RE,
    ENV_NAME_RE,
    LABEL_KEY_RE,
    Dns1123Subdomain,
    EnvName,
    Quantity,
    Strict,
    refused,
)

# A key of a Secret or ConfigMap (the API's IsConfigMapKey): letters, digits, '-', '_', '.', not '.' or '..'
# nor beginning with '..'.
CONFIG_KEY_RE = r"^\.?[-_a-zA-Z0-9][-._a-zA-Z0-9]*$"
# The pod fields an env var may read (the API's validEnvDownwardAPIFieldPathExpressions, and one label or
# annotation by key).
FIELD_PATH_RE = (r"^(metadata\.(name|namespace|uid)|spec\.(nodeName|serviceAccountName)|status\.(hostIPs?|podIPs?)"
                 rf"|metadata\.labels\['{LABEL_KEY_RE[1:-1]}'\]|metadata\.annotations\['{ANNOTATION_KEY_RE[1:-1]}'\])$")
RESOURCE_FIELD_RE = r"^(limits|requests)\.(cpu|memory|ephemeral-storage|hugepages-[-._a-zA-Z0-9]+)$"
SOURCES = ("secretKeyRef", "configMapKeyRef", "fieldRef", "resourceFieldRef")


class KeyRef(Strict):
    """One key of a Secret or ConfigMap in the namespace."""

    name: Dns1123Subdomain = Field(description="The Secret's or ConfigMap's name.")
    key: str = Field(pattern=CONFIG_KEY_RE, max_length=253, description="The key in it.")
    optional: bool | None = Field(None, description="Start the pod even when the key is missing.")


class FieldRef(Strict):
    """A field of the executor pod (Kubernetes ObjectFieldSelector)."""

    apiVersion: Literal["v1"] | None = Field(None, description="v1 (the default).")
    fieldPath: str = Field(pattern=FIELD_PATH_RE,
                           description="metadata.name, metadata.namespace, metadata.uid, metadata.labels['k'], "
                                       "metadata.annotations['k'], spec.nodeName, spec.serviceAccountName, "
                                       "status.hostIP(s), status.podIP(s).")


class ResourceFieldRef(Strict):
    """A resource request or limit of the container (Kubernetes ResourceFieldSelector)."""

    resource: str = Field(pattern=RESOURCE_FIELD_RE,
                          description="limits.cpu, limits.memory, limits.ephemeral-storage, requests.… the same.")
    containerName: str | None = Field(None, description="The container (the executor when unset).")
    divisor: Quantity | None = Field(None, description="The unit the value is written in (1 when unset): cpu 1m or "
                                                        "1; memory and storage 1, or 1 of k, M, G, …, Ki, Mi, Gi, ….")

    @model_validator(mode="after")
    def _divisor(self) -> ResourceFieldRef:
        found = divisor_problem(self.model_dump(exclude_none=True))
        if found:
            raise ValueError(f"{found[1]}: expected {found[2]}")
        return self


# JSON Schema twin of EnvVarSource._one_source, so Helm refuses the same values.
ONE_SOURCE: dict[str, Any] = {
    "anyOf": [present(s, type="object") for s in SOURCES],
    "not": {"anyOf": [{"allOf": [present(a, type="object"), present(b, type="object")]}
                      for i, a in enumerate(SOURCES) for b in SOURCES[i + 1:]]},
}


class EnvVarSource(Strict):
    """Where an env var's value comes from: exactly one source."""

    model_config = ConfigDict(json_schema_extra=ONE_SOURCE)

    secretKeyRef: KeyRef | None = Field(None, description="A key of a Secret.")
    configMapKeyRef: KeyRef | None = Field(None, description="A key of a ConfigMap.")
    fieldRef: FieldRef | None = Field(None, description="A field of the pod.")
    resourceFieldRef: ResourceFieldRef | None = Field(None, description="A resource of the container.")

    @model_validator(mode="after")
    def _one_source(self) -> EnvVarSource:
        given = [s for s in SOURCES if getattr(self, s) is not None]
        if len(given) != 1:
            raise ValueError(f"valueFrom takes exactly one source, got {len(given)}"
                             f"{': ' + ', '.join(given) if given else ''}; one of {', '.join(SOURCES)}")
        return self

# What the chart sets itself in the executor's env (charts/dockyard/templates/sandbox/_helpers.tpl):
# sandbox.extraEnv may not set these (a chart test keeps them equal to its renders).
SANDBOX_CHART_ENV = ("DOCKYARD_EXECUTOR_PORT", "DOCKYARD_WORK_DIR")


def chart_env_problem(name: str) -> str | None:
    """Why sandbox.extraEnv may not set `name`, or None (the chart's words too)."""
    if name not in SANDBOX_CHART_ENV:
        return None
    return (f"{name} is set by the chart itself (it sets {', '.join(SANDBOX_CHART_ENV)} from sandbox.port and "
            "sandbox.security.workDir); choose another name")


class EnvVar(Strict):
    """A Kubernetes EnvVar: a literal value or a valueFrom; never a literal under a credential's name."""

    # JSON Schema twins of _value_or_value_from and _no_credential_literal, so Helm refuses the same values.
    model_config = ConfigDict(json_schema_extra={"allOf": [{"not": {"required": ["value", "valueFrom"]}},
                                                           {"not": CREDENTIAL_LITERAL},
                                                           {"not": CREDENTIAL_SHAPED}]})

    name: EnvName = Field(description="Variable name.")
    value: str | None = Field(None, description="The value; not under a name that reads as a credential (*TOKEN*, "
                                                 "*PASSWORD*, *SECRET*, *_KEY), nor shaped like a well-known token "
                                                 "(hf_…, ghp_…, AKIA…, a PEM private key): those take "
                                                 "valueFrom.secretKeyRef.")
    valueFrom: EnvVarSource | None = Field(
        None, description="Instead of value: a Kubernetes EnvVarSource (secretKeyRef, configMapKeyRef, fieldRef or "
                          "resourceFieldRef)."
    )

    @model_validator(mode="after")
    def _value_or_value_from(self) -> EnvVar:
        if self.value is not None and self.valueFrom is not None:
            raise ValueError(f"{self.name} has both value and valueFrom; Kubernetes takes one: keep value for a "
                             "literal, or valueFrom to read it from a Secret, ConfigMap or field")
        return self

    @model_validator(mode="after")
    def _no_credential_literal(self) -> EnvVar:
        problem = literal_problem(self.name, self.value)
        if problem:
            raise refused(("value",), problem, secret_ref_hint(self.name))
        return self


class SandboxEnvVar(EnvVar):
    """A Kubernetes EnvVar of the executor container."""

    name: EnvName = Field(
        description=f"Variable name; not one the chart sets ({', '.join(SANDBOX_CHART_ENV)}).",
        # JSON Schema twin of _not_the_charts, so Helm refuses the same values.
        json_schema_extra={"not": {"enum": list(SANDBOX_CHART_ENV)}},
    )

    @field_validator("name")
    @classmethod
    def _not_the_charts(cls, name: str) -> str:
        problem = chart_env_problem(name)
        if problem:
            raise ValueError(problem)
        return name


# What the chart sets itself in every container of a GPU group, after infra.env (charts/dockyard/templates/ray/
# _group.tpl, dockyard.ray.invariantEnv): infra.env may not set these.
GPU_CHART_ENV = ("RAY_ENABLE_UV_RUN_RUNTIME_ENV", "DOCKYARD_FLEET_ROLE", "DOCKYARD_SANDBOX_URLS",
                 # sandbox.backend agent-sandbox's (charts/dockyard/templates/sandbox/_helpers.tpl, gpuEnv)
                 "DOCKYARD_SANDBOX_WARM_POOL", "DOCKYARD_SANDBOX_TEMPLATE", "DOCKYARD_SANDBOX_NAMESPACE",
                 "DOCKYARD_SANDBOX_PORT")


class GpuEnvVar(EnvVar):
    """A Kubernetes EnvVar of the Ray container of the head and both fleets."""

    name: EnvName = Field(
        description=f"Variable name; not one the chart sets ({', '.join(GPU_CHART_ENV)}) nor one of the fabric's "
                    f"({', '.join(FABRIC_ENV)}: kuberay.network).",
        # JSON Schema twin of _not_the_charts, so Helm refuses the same values.
        json_schema_extra={"not": {"enum": list(GPU_CHART_ENV + FABRIC_ENV)}},
    )

    @field_validator("name")
    @classmethod
    def _not_the_charts(cls, name: str) -> str:
        if name in GPU_CHART_ENV:
            raise ValueError(f"{name} is set by the chart itself in every GPU pod ({', '.join(GPU_CHART_ENV)}); "
                             "choose another name")
        if name in FABRIC_ENV:
            raise ValueError(f"{name} is the fabric's, the same in both worker groups: say it in kuberay.network "
                             "(socketInterface, rdma.hca, profile efa)")
        return name


class EnvFromRef(Strict):
    """A Secret or ConfigMap in the namespace, every key of it an env var."""

    name: Dns1123Subdomain = Field(description="The Secret's or ConfigMap's name.")
    optional: bool | None = Field(None, description="Start the pod even when it is missing.")


# JSON Schema twin of EnvFromSource._one_source.
ENV_FROM_SOURCES = ("secretRef", "configMapRef")
ONE_ENV_FROM: dict[str, Any] = {
    "anyOf": [present(s, type="object") for s in ENV_FROM_SOURCES],
    "not": {"allOf": [present(s, type="object") for s in ENV_FROM_SOURCES]},
}


class EnvFromSource(Strict):
    """A Kubernetes EnvFromSource: every key of one Secret or ConfigMap as an env var of the Ray container."""

    model_config = ConfigDict(json_schema_extra=ONE_ENV_FROM)

    prefix: str | None = Field(None, pattern=ENV_NAME_RE, description="Prepended to every key's name.")
    secretRef: EnvFromRef | None = Field(None, description="A Secret.")
    configMapRef: EnvFromRef | None = Field(None, description="A ConfigMap.")

    @model_validator(mode="after")
    def _one_source(self) -> EnvFromSource:
        given = [s for s in ENV_FROM_SOURCES if getattr(self, s) is not None]
        if len(given) != 1:
            raise ValueError(f"an envFrom entry takes exactly one of secretRef, configMapRef, got {len(given)}")
        return self
