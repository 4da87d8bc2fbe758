"""Which launch mode uses which key of the infra spec, in one table: a key the chosen `launch.mode` would ignore
is refused, never dropped silently.

Each entry names a key path (a leaf, or a block whose every key is used alike) and the modes that use it; a key
is decided by its longest listed prefix. "Used" means the mode's manifests (charts/dockyard) or the RayJob that
`job submit` creates on the mode's cluster (generator.live.verbs.jobs) change with it.
tests/unit/inputs/test_mode_keys.py walks every key of the models in every mode and proves each entry by rendering,
or its refusal.

Two checks, one table:

- the infra spec file (`file_problems`): a key the file's mode ignores is refused when it is written at all, even
  with its default value (a reader of the file would think it does something);
- the chart values (`values_problem`, and its JSON Schema twin `values_schema_rules` in values.schema.json, so
  Helm refuses the same): a value differing from its default, the only thing a values file can show.

The infra spec's own check is InfraSpec's (generator.inputs.models.infra), with its JSON Schema twin
`infra_schema_rules` in schema/infra.schema.json: an editor validating the file refuses what `file_problems` refuses.

A verb that imposes its own mode on the file (`cluster up`, `dev`: bringup; `smoke`: rayjob) resets the keys that
mode ignores to their defaults (`reset_ignored`), with a note, since the file was written for another mode.
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing's import costs ~3 ms at start-up: for type checkers only
if TYPE_CHECKING:
    from typing import Any

MODES = ("rayjob", "bringup", "attach")
_ALL = MODES
_GPU = ("rayjob", "bringup")  # the modes that render the GPU RayCluster
_JOB = ("rayjob",)

# key path -> (the modes that use it, what it sets). `job submit` creates a RayJob on the cluster of bringup or
# attach mode with the entrypoint, configMountPath, submissionMode and activeDeadlineSeconds (and, on a bringup
# cluster, the run watcher): those are used in every mode.
USED_BY: dict[str, tuple[tuple[str, ...], str]] = {
    "infra.namespace": (_ALL, "the namespace of the release"),
    "infra.image": (_ALL, "the GPU pods' image, and the sandbox's by default"),
    "infra.backend": (_ALL, "the inference backend"),
    "infra.imagePullSecrets": (_ALL, "pull secrets of every pod"),
    "infra.priorityClassName": (_ALL, "PriorityClass of every pod"),
    "infra.env": (_GPU, "env of the GPU pods"),
    "infra.envFrom": (_GPU, "env of the GPU pods"),
    "infra.security": (_GPU, "securityContext of the GPU pods"),
    "infra.resourceQuota": (_ALL, "the namespace's ResourceQuota"),
    "infra.limitRange": (_ALL, "the namespace's LimitRange"),
    "infra.storage": (_GPU, "volumes of the GPU pods"),
    "launch.mode": (_ALL, "the launch mode"),
    "launch.clusterName": (("attach",), "the existing RayCluster attach mode uses"),
    "launch.submissionMode": (_ALL, "how KubeRay submits the job"),
    "launch.shutdownAfterJobFinishes": (_JOB, "the chart's RayJob deletes its cluster"),
    "launch.ttlSecondsAfterFinished": (_JOB, "how long the chart's RayJob keeps its cluster"),
    "launch.activeDeadlineSeconds": (_ALL, "the job's deadline"),
    # KubeRay refuses backoffLimit on a job submitted to an existing cluster: `job submit` leaves it out.
    "launch.backoffLimit": (_JOB, "retries of the chart's RayJob"),
    "launch.preRunningDeadlineSeconds": (_JOB, "the start deadline of the chart's RayJob"),
    "launch.configMountPath": (_ALL, "where the recipe is mounted on the head"),
    "launch.queue": (_GPU, "the Kueue queue of the GPU fleet"),
    "launch.priorityClass": (_GPU, "the Kueue priority of the GPU fleet"),
    "launch.topology": (_GPU, "the GPU fleets' placement by topology"),
    "launch.watch": (_GPU, "the run watcher of the chart's jobs"),
    "kuberay.rayVersion": (_GPU, "the GPU RayCluster"),
    "kuberay.head": (_GPU, "the GPU RayCluster's head"),
    "kuberay.worker": (_GPU, "the GPU RayCluster's workers"),
    "kuberay.placement": (_GPU, "where the GPU RayCluster's pods land"),
    "kuberay.placement.submitter": (_JOB, "where the chart's RayJob submitter pod lands"),
    # attach: the ServiceAccounts the overlay names are bound to the sandbox claims (sandbox.backend agent-sandbox)
    "kuberay.spec": (_ALL, "the GPU RayCluster overlay"),
    "kuberay.pdb": (("bringup",), "the bringup RayCluster's PodDisruptionBudget"),
    "kuberay.network": (_GPU, "the GPU pods' fabric"),
    "sandbox": (_ALL, "the sandbox pool"),
}


def _parts(key: str) -> tuple[str, ...]:
    return tuple(key.split("."))


def entry_of(path: tuple[str | int, ...]) -> str | None:
    """The table entry that decides a key path: its longest listed prefix, or None."""
    for n in range(len(path), 0, -1):
        key = ".".join(str(p) for p in path[:n])
        if key in USED_BY:
            return key
    return None


def ignored(mode: str) -> list[str]:
    """The entries `mode` does not use, shortest first (a block before the keys inside it)."""
    return sorted((k for k, (modes, _) in USED_BY.items() if mode not in modes), key=lambda k: (k.count("."), k))


def _lookup(data: Any, parts: tuple[str, ...]) -> tuple[bool, Any]:
    for part in parts:
        if not isinstance(data, dict) or part not in data:
            return False, None
        data = data[part]
    return True, data


def _words(key: str, mode: str) -> tuple[str, str]:
    """(message, expected) for `key` set under `mode`."""
    modes, what = USED_BY[key]
    users = " or ".join(modes)
    message = f"launch.mode {mode} ignores {key} ({what}): only {users} mode uses it"
    return message, f"no {key} in {mode} mode, or launch.mode {users}"


def file_problems(data: dict[str, Any], mode: str) -> list[tuple[tuple[str, ...], str, str]]:
    """The keys written in an infra spec (`data`, as read) that its `mode` ignores: (key path, message,
    expected), a block once (not the keys inside it)."""
    out: list[tuple[tuple[str, ...], str, str]] = []
    for key in ignored(mode):
        parts = _parts(key)
        if any(parts[: len(done)] == done for done, _, _ in out):
            continue
        present, _ = _lookup(data, parts)
        if present:
            out.append((parts, *_words(key, mode)))
    return out


def infra_schema_rules() -> list[dict[str, Any]]:
    """The JSON Schema twin of `file_problems` for the infra spec as written (schema/infra.schema.json): under each
    mode, what it ignores is refused when present at all (a `false` schema: the file as written, not its defaults;
    generator.inputs.schema_check applies such a rule to what was given). No launch.mode is rayjob."""
    rules = []
    for mode in MODES:
        refused: list[tuple[str, ...]] = []
        for key in ignored(mode):
            parts = _parts(key)
            if not any(parts[: len(done)] == done for done in refused):
                refused.append(parts)
        chosen: dict[str, Any] = {"properties": {"mode": {"const": mode}}}
        if mode != "rayjob":  # written: an absent mode (or launch) is rayjob
            chosen = {"required": ["launch"], "properties": {"launch": {"required": ["mode"], **chosen}}}
        else:
            chosen = {"properties": {"launch": chosen}}
        rules.append({"if": chosen, "then": {"allOf": [_at(parts, False) for parts in refused]}})
    return rules


def values_problem(values: dict[str, Any], defaults: dict[str, Any]) -> tuple[tuple[str, ...], str, str] | None:
    """The first key of chart values (`values` and `defaults` both dumped alike) that differs from its default
    under a mode that ignores it: (key path, message, expected), or None."""
    mode = (values.get("launch") or {}).get("mode", "rayjob")
    for key in ignored(mode):
        parts = _parts(key)
        if _lookup(values, parts)[1] != _lookup(defaults, parts)[1]:
            return (parts, *_words(key, mode))
    return None


def keeps(default: Any) -> dict[str, Any]:
    """A schema holding a value to `default`, key by key inside a mapping (a key absent passes: a model's unset
    optional block, or one the values leave out)."""
    if isinstance(default, dict) and default:
        return {"properties": {k: keeps(v) for k, v in default.items()}}
    bare = _without_nones(default)
    if bare == default:
        return {"const": default}
    # a list of models: as values.yaml writes it (unset keys null, as Helm reads it), or as the generator's values
    # carry it (unset keys left out)
    return {"anyOf": [{"const": default}, {"const": bare}]}


def _without_nones(value: Any) -> Any:
    """A list's items without a model's unset keys (exclude_none)."""
    if isinstance(value, list):
        return [_without_nones(v) for v in value]
    if isinstance(value, dict):
        return {k: _without_nones(v) for k, v in value.items() if v is not None}
    return value


def _at(parts: tuple[str, ...], schema: Any) -> dict[str, Any]:
    for part in reversed(parts):
        schema = {"properties": {part: schema}}
    return schema


def values_schema_rules(defaults: dict[str, Any]) -> list[dict[str, Any]]:
    """The JSON Schema twin of `values_problem` for the chart values (`defaults`: their defaults, dumped with the
    Nones in, so that an unset optional key holds to null): under each mode, what it ignores keeps its default."""
    rules = []
    for mode in MODES:
        keep = []
        for key in ignored(mode):
            found, default = _lookup(defaults, _parts(key))
            if found:
                keep.append(_at(_parts(key), keeps(default)))
        rules.append({"if": {"properties": {"launch": {"properties": {"mode": {"const": mode}}}}},
                      "then": {"allOf": keep}})
    return rules


def reset_ignored(infra: Any, mode: str) -> list[str]:
    """Reset, on a validated InfraSpec (`infra`, changed in place), what `mode` ignores to its defaults: for a verb
    that imposes its mode on a file written for another. The keys that differed, as notes."""
    notes = []
    for key in ignored(mode):
        *path, last = _parts(key)
        parent = infra
        for part in path:
            parent = getattr(parent, part, None)
        if parent is None or last not in type(parent).model_fields:
            continue
        field = type(parent).model_fields[last]
        default = field.get_default(call_default_factory=True)
        if getattr(parent, last) != default:
            notes.append(f"note: {key} ({USED_BY[key][1]}) is left out: {mode} mode does not use it")
            setattr(parent, last, default.model_copy(deep=True) if hasattr(default, "model_copy") else default)
    return notes
