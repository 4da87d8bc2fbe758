"""`sandbox.extraEnv`: env of the executor container, as Kubernetes EnvVar objects."""

from __future__ import annotations

from pydantic import ConfigDict, Field, field_validator, model_validator

from generator.inputs.models.types import EnvName, FreeForm, Strict

# What the chart sets itself in the executor's env (charts/dockyard/templates/sandbox/_helpers.tpl):
# sandbox.extraEnv may not set these (a chart test keeps them equal to its renders).
SANDBOX_CHART_ENV = ("DOCKYARD_EXECUTOR_PORT", "DOCKYARD_WORK_DIR")


def chart_env_problem(name: str) -> str | None:
    """Why sandbox.extraEnv may not set `name`, or None (the chart's words too)."""
    if name not in SANDBOX_CHART_ENV:
        return None
    return (f"{name} is set by the chart itself (it sets {', '.join(SANDBOX_CHART_ENV)} from sandbox.port and "
            "sandbox.security.workDir); choose another name")


class SandboxEnvVar(Strict):
    """A Kubernetes EnvVar of the executor container."""

    # JSON Schema twin of _value_or_value_from, so Helm refuses the same values.
    model_config = ConfigDict(json_schema_extra={"not": {"required": ["value", "valueFrom"]}})

    name: EnvName = Field(
        description=f"Variable name; not one the chart sets ({', '.join(SANDBOX_CHART_ENV)}).",
        # JSON Schema twin of _not_the_charts, so Helm refuses the same values.
        json_schema_extra={"not": {"enum": list(SANDBOX_CHART_ENV)}},
    )
    value: str | None = Field(None, description="The value.")
    valueFrom: FreeForm | None = Field(
        None, description="Instead of value: a Kubernetes EnvVarSource (secretKeyRef, configMapKeyRef, fieldRef, …)."
    )

    @field_validator("name")
    @classmethod
    def _not_the_charts(cls, name: str) -> str:
        problem = chart_env_problem(name)
        if problem:
            raise ValueError(problem)
        return name

    @model_validator(mode="after")
    def _value_or_value_from(self) -> SandboxEnvVar:
        if self.value is not None and self.valueFrom is not None:
            raise ValueError(f"{self.name} has both value and valueFrom; Kubernetes takes one: keep value for a "
                             "literal, or valueFrom to read it from a Secret, ConfigMap or field")
        return self
