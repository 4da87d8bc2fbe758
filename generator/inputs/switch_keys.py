"""Which key of the infra spec does nothing because of another key, in one table: a key whose switch is off (a
block's `enabled: false`, `launch.submissionMode HTTPMode` for the submitter's placement, a tcp readiness probe for
its HTTP path, …) is refused when it differs from its default, never dropped silently.

generator.inputs.mode_keys is the same for the launch mode; this is for the keys beside it. Each entry names a key
path (a leaf, or a block whose every key is switched alike) and the cases that switch it off; a key is decided by
its longest listed prefix, so an entry with no case keeps a key of a switched block in use (the switch itself, or a
key the block's switch does not govern). "Does nothing" means the manifests (charts/dockyard) do not change with
it: tests/unit/inputs/test_switch_keys.py renders each entry both ways.

Only a value other than the default is refused (`problems`, on the infra spec and the chart values alike, and its
JSON Schema twin `schema_rules` in schema/infra.schema.json and values.schema.json): a block written with
`enabled: false` and its defaults in it says nothing wrong. A key the launch mode ignores is left to mode_keys (one
error, in its words).
"""

from __future__ import annotations

from generator.inputs.mode_keys import USED_BY, entry_of, keeps

TYPE_CHECKING = False  # typing's import costs ~3 ms at start-up: for type checkers only
if TYPE_CHECKING:
    from typing import Any

    # a switch: (its key path, its values that turn the key off, what turns the key on, in the file's words)
    Switch = tuple[str, tuple[Any, ...], str]
    # a case the key does nothing in: every switch off (one, or more that each would turn it on), and why
    Case = tuple[tuple[Switch, ...], str]


def _case(why: str, *switches: Switch) -> Case:
    return switches, why


def _off(key: str, why: str) -> Case:
    """The case of a boolean switch that is false."""
    return _case(why, (key, (False,), "true"))


_GPU_SEC = _off("infra.security.enabled", "the GPU pods get no securityContext")
_SANDBOX_SEC = _off("sandbox.security.enabled", "the executors get no securityContext")
_NO_WATCH = _off("launch.watch.enabled", "the entrypoint runs without the run watcher")
_NO_POLICY = _off("sandbox.networkPolicy.enabled", "no NetworkPolicy is rendered")


def _scratch(block: str) -> Case:
    """The work dir's emptyDir: mounted only over a read-only root filesystem (its own, or `restricted`'s)."""
    return _case("the work-dir emptyDir is mounted only over a read-only root filesystem",
                 (f"{block}.readOnlyRootFilesystem", (False,), "true"),
                 (f"{block}.profile", ("baseline",), "restricted"))


# key path -> the cases it does nothing in (the first that holds is reported); no case: in use whatever the switch
# of the block around it says.
SWITCHED: dict[str, tuple[Case, ...]] = {
    "kuberay.placement.submitter": (
        _case("KubeRay creates no submitter pod (the job goes to the head's dashboard)",
              ("launch.submissionMode", ("HTTPMode",), "K8sJobMode")),),
    "infra.security": (_GPU_SEC,),
    "infra.security.enabled": (),
    "infra.security.workDir": (_GPU_SEC, _scratch("infra.security")),
    "infra.security.workDirSizeLimit": (_GPU_SEC, _scratch("infra.security")),
    "infra.resourceQuota.hard": (_off("infra.resourceQuota.enabled", "no ResourceQuota is rendered"),),
    "infra.limitRange": (_off("infra.limitRange.enabled", "no LimitRange is rendered"),),
    "infra.limitRange.enabled": (),
    "launch.watch": (_NO_WATCH,),
    "launch.watch.enabled": (),
    "launch.watch.stallTimeoutSeconds": (),  # (with the watcher off, the model refuses it in its own words)
    "launch.watch.firstReportSeconds": (
        _NO_WATCH,
        _case("it is the stall guard's bound on the first report, and there is no stall guard",
              ("launch.watch.stallTimeoutSeconds", (None,), "a timeout in seconds")),),
    "launch.watch.keepRayLogMiB": (
        _NO_WATCH,
        _case("no Ray pod mounts a logs volume to keep them on", ("infra.storage.logs", (None,), "a volume"))),
    "kuberay.pdb.minAvailable": (_off("kuberay.pdb.enabled", "no PodDisruptionBudget is rendered"),),
    "sandbox.security": (_SANDBOX_SEC,),
    "sandbox.security.enabled": (),
    "sandbox.security.workDir": (),  # the executors are told it (env) whatever the securityContext
    "sandbox.security.workDirSizeLimit": (_SANDBOX_SEC, _scratch("sandbox.security")),
    "sandbox.networkPolicy": (_NO_POLICY,),
    "sandbox.networkPolicy.enabled": (),
    "sandbox.networkPolicy.blockCloudMetadata": (
        _NO_POLICY,
        _case("egress is closed already, but for DNS and allowedEgressCidrs",
              ("sandbox.networkPolicy.allowEgress", (False,), "true"))),
    "sandbox.pdb.maxUnavailable": (_off("sandbox.pdb.enabled", "no PodDisruptionBudget is rendered"),),
    "sandbox.replicas": (
        _case("the HorizontalPodAutoscaler sets the replicas, from autoscaling.minReplicas up",
              ("sandbox.autoscaling.enabled", (True,), "false")),),
    "sandbox.autoscaling": (_off("sandbox.autoscaling.enabled", "no HorizontalPodAutoscaler is rendered"),),
    "sandbox.autoscaling.enabled": (),
    "sandbox.readinessProbe.path": (
        _case("a tcp probe only connects to the port", ("sandbox.readinessProbe.type", ("tcp",), "http")),),
}


def _parts(key: str) -> tuple[str, ...]:
    return tuple(key.split("."))


def _decider(path: tuple[str, ...]) -> str | None:
    """The entry that decides a key path: its longest listed prefix, or None."""
    for n in range(len(path), 0, -1):
        key = ".".join(path[:n])
        if key in SWITCHED:
            return key
    return None


def _get(data: Any, parts: tuple[str, ...]) -> Any:
    for part in parts:
        data = data.get(part) if isinstance(data, dict) else None
    return data


def _show(value: Any) -> str:
    if value is None:
        return "unset"
    if isinstance(value, bool):
        return str(value).lower()
    return str(value)


def _holds(case: Case, values: dict[str, Any]) -> bool:
    return all(_same_any(_get(values, _parts(key)), off) for key, off, _ in case[0])


def _same_any(value: Any, choices: tuple[Any, ...]) -> bool:
    return any(type(value) is type(c) and value == c for c in choices)


def words(key: str, case: Case, values: dict[str, Any]) -> tuple[str, str]:
    """(message, expected) for `key` set where `case` holds (`values` as dumped)."""
    switches, why = case
    given = " and ".join(f"{k} {_show(_get(values, _parts(k)))}" for k, _, _ in switches)
    turn_on = " or ".join(f"{k}: {on}" for k, _, on in switches)
    return f"{key} does nothing with {given}: {why}; drop it, or {turn_on}", f"no {key}, or {turn_on}"


def _differing(values: Any, defaults: Any, path: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    """The key paths where `values` differs from `defaults`, down into the models' blocks (a non-empty mapping of
    defaults), a free-form mapping or a list whole."""
    if isinstance(defaults, dict) and defaults and isinstance(values, dict):
        return [p for key in values for p in _differing(values[key], defaults.get(key), path + (key,))]
    return [path] if values != defaults else []


def problems(values: dict[str, Any], defaults: dict[str, Any], mode: str) -> list[tuple[tuple[str, ...], str, str]]:
    """The keys of `values` (an infra spec or chart values, dumped with the Nones in; `defaults` dumped alike) that
    differ from their default where a switch turns them off: (key path, message, expected), in the order given."""
    out = []
    for block in ("infra", "launch", "kuberay", "sandbox"):
        for path in _differing(values.get(block), defaults.get(block), (block,)):
            entry = _decider(path)
            mode_entry = entry_of(path)
            if entry is None or (mode_entry is not None and mode not in USED_BY[mode_entry][0]):
                continue  # not switched, or a key the mode ignores (mode_keys names it)
            case = next((c for c in SWITCHED[entry] if _holds(c, values)), None)
            if case is not None:
                out.append((path, *words(".".join(path), case, values)))
    return out


def _when(key: str, off: tuple[Any, ...], default: Any) -> dict[str, Any]:
    """A JSON Schema that holds when the switch `key` is one of `off` (absent: its default)."""
    node: dict[str, Any] = {"enum": list(off)}
    required = not _same_any(default, off)
    for part in reversed(_parts(key)):
        node = {"properties": {part: node}, **({"required": [part]} if required else {})}
    return node


def _keeps(default: Any, path: tuple[str, ...]) -> dict[str, Any]:
    """A schema holding the key at `path` (default `default`) to its default, but for the keys inside it that a
    longer entry decides (each has its own rule)."""
    if isinstance(default, dict) and default:
        props = {k: _keeps(v, path + (k,)) for k, v in default.items() if _decider(path + (k,)) == _decider(path)}
        return {"properties": props}
    return keeps(default)


def schema_rules(defaults: dict[str, Any]) -> list[dict[str, Any]]:
    """The JSON Schema twin of `problems` (`defaults` dumped with the Nones in): for each case of each entry, where
    its switches are off, the entry keeps its default."""
    rules = []
    for key, cases in SWITCHED.items():
        parts = _parts(key)
        keep = _keeps(_get(defaults, parts), parts)
        for node in reversed(parts):
            keep = {"properties": {node: keep}}
        for switches, _ in cases:
            when = [_when(k, off, _get(defaults, _parts(k))) for k, off, _ in switches]
            rules.append({"if": when[0] if len(when) == 1 else {"allOf": when}, "then": keep})
    return rules
