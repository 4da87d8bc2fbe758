"""What a live verb installs: the recipe and infra composed into validated chart values."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass
class Plan:
    release: str
    namespace: str
    mode: str
    values: dict[str, Any]
    notes: list[str]
    cluster: Any = None  # the recipe's cluster (trainer/inference nodes × GPUs): the gang

    @property
    def priority_class(self) -> str | None:
        return (self.values.get("infra") or {}).get("priorityClassName")


def plan(recipe: str, infra: str, overrides: list[str], release: str | None, namespace: str | None,
         mode: str | None = None) -> Plan:
    """Validated values for the live path. ResourceQuota/LimitRange are never installed here."""
    from generator.inputs.compose import compose, load_inputs, values_dict
    from generator.inputs.mode_keys import reset_ignored
    from generator.inputs.version_rules import pre_running_note

    inputs = load_inputs(recipe, infra, overrides)
    notes = []
    if mode and mode != inputs.infra.launch.mode:  # the verb's own mode: what it ignores of the file's is left out
        inputs.infra.launch.mode = mode
        notes += reset_ignored(inputs.infra, mode)
    values = compose(inputs)
    vals = values_dict(values)
    note = pre_running_note(vals["launch"], vals["kuberay"]["version"])
    notes += [note] if note else []
    infra_block = vals.setdefault("infra", {})
    for key, kind in (("resourceQuota", "ResourceQuota"), ("limitRange", "LimitRange")):
        block = infra_block.get(key) or {}
        if block.get("enabled"):
            notes.append(f"note: infra.{key} is enabled, but the live path does not apply a {kind} "
                         f"(namespace-wide governance is cluster-admin territory); install it with "
                         f"`dockyard-k8s render {recipe} {infra} | kubectl apply -f -`")
            infra_block[key] = {"enabled": False}  # its keys would do nothing now, which the schema refuses
    return Plan(release or values.recipe.name, namespace or inputs.infra.infra.namespace,
                inputs.infra.launch.mode, vals, notes, inputs.recipe.cluster)
