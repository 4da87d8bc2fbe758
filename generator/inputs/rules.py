"""Rules the models enforce that a JSON Schema keyword cannot say, as plain functions without pydantic:
the models call them, and so does `generator.inputs.schema_check` (the validator of the happy path), so the
two cannot drift apart."""

from __future__ import annotations

import ipaddress
import json
import math
import re

from generator.inputs.credentials import literal_problem, secret_ref_hint

TYPE_CHECKING = False  # typing's import costs ~3 ms at start-up: for type checkers only
if TYPE_CHECKING:
    from typing import Any

# Kubernetes resource.Quantity, e.g. 500m, 2Gi, 1.5, 10G, 1e3.
QUANTITY_RE = r"^([+]?[0-9]+(\.[0-9]*)?|[+]?\.[0-9]+)(([KMGTPE]i)|[numkMGTPE]|([eE][+-]?[0-9]+))?$"
CIDR_RE = (
    r"^(([0-9]{1,3}\.){3}[0-9]{1,3}/([0-9]|[1-2][0-9]|3[0-2])"
    r"|[0-9a-fA-F:.]*:[0-9a-fA-F:.]*/([0-9]|[1-9][0-9]|1[0-1][0-9]|12[0-8]))$"
)
MAX_RAYJOB_NAME = 47  # KubeRay's limits on the names the recipe's name becomes
MAX_RAYCLUSTER_NAME = 53
RAY_RESOURCE_PARAMS = ("num-cpus", "num-gpus", "memory", "resources")
# What Helm's toYaml drops (the whole object it is in) or mangles: the chart's dockyard.validate.badChars.
TOYAML_CHARS = "\x7f-\x9f\u2028\u2029\ufffe\uffff"  # the chart's dockyard.validate.badChars
TOYAML_BAD = re.compile(f"[{TOYAML_CHARS}]")
TOYAML_BAD_NAMES = "U+007F to U+009F, U+2028, U+2029, U+FFFE, U+FFFF"
RAY_RESOURCES_EXPECTED = "a JSON object of Ray resource name: number in a string, e.g. '{\"custom\": 2}'"

Where = tuple  # a key path inside a value: str keys, int list indices


def quantity_string_ok(value: str) -> bool:
    """A quantity written as a string (Python's `re.match`, as the model's validator has always used)."""
    return re.match(QUANTITY_RE, value) is not None


def cidr_problem(value: str) -> str | None:
    """Why a CIDR block (already matching CIDR_RE) is refused, or None."""
    try:
        net = ipaddress.ip_network(value, strict=False)
    except ValueError as exc:
        return f"{value!r} is not a CIDR block (expected e.g. 10.0.0.0/8): {exc}"
    if net.network_address != ipaddress.ip_interface(value).ip:
        return f"{value!r} has host bits set; did you mean {net.with_prefixlen}?"
    return None


def _holds(container: Any, key: str) -> bool:
    """`key in container` for what YAML can give; other values hold nothing."""
    return isinstance(container, (str, list, dict)) and key in container


def duplicate_group(names: list[Any]) -> str | None:
    """The first groupName given twice among the worker group overlays, or None."""
    seen: set[Any] = set()
    for name in names:
        if name in seen:
            return name
        seen.add(name)
    return None


def kuberay_overlay_problem(groups: list[tuple[str, dict[str, Any]]]) -> str | None:
    """Why KubeRay refuses a group of the RayClusterSpec overlay, or None: (name, group spec) pairs,
    the head's first."""
    for name, spec in groups:
        for key in ("rayStartParams", "resources"):
            if spec.get(key) is not None and not isinstance(spec[key], dict):
                return (f"{name}: {key} must be a mapping (ray start flag or resource name: value), "
                        f"got {spec[key]!r}")
        params = spec.get("rayStartParams") or {}
        if _holds(params, "labels"):
            return f"{name}: rayStartParams.labels is refused by KubeRay; use the group's `labels` field"
        clash = [k for k in RAY_RESOURCE_PARAMS if _holds(params, k)]
        if clash and spec.get("resources"):
            return (f"{name}: Ray resources set both in group-level `resources` and rayStartParams {clash}; "
                    "KubeRay refuses this, use only one")
        for key in ("replicas", "minReplicas", "maxReplicas"):
            if key in spec:
                return f"{name}: {key} comes from the recipe's cluster.<group>.nodes; remove it from the overlay"
    return None


def toyaml_problem(value: Any) -> tuple[Where, str, str] | None:
    """The first string or key inside `value` that Helm's toYaml drops or mangles, or a "<<" key
    (toYaml writes it unquoted: YAML's merge key): (its path inside `value`, message, expected).
    The chart refuses the same (dockyard.validate.toYamlSafe)."""
    mangled = "which Helm's toYaml drops or mangles (with the object it is in)"
    stack: list[tuple[Where, Any]] = [((), value)]
    while stack:
        where, node = stack.pop()
        if isinstance(node, dict):
            for key in node:
                bad = TOYAML_BAD.search(key) if isinstance(key, str) else None
                if key == "<<":
                    message = "the key '<<' is YAML's merge key, which Helm's toYaml writes unquoted: it would merge " \
                              "into or break the object"
                    return where + (key,), message, "another key name"
                if bad:  # the path stops at the mapping: the key is named in the message
                    return where, f"the key {key!r} holds U+{ord(bad[0]):04X}, {mangled}", \
                        f"a key without {TOYAML_BAD_NAMES}"
            stack.extend((where + (k,), v) for k, v in reversed(node.items()))
        elif isinstance(node, list):
            stack.extend((where + (i,), v) for i, v in reversed(list(enumerate(node))))
        elif isinstance(node, str):
            bad = TOYAML_BAD.search(node)
            if bad:
                return where, f"{node!r} holds U+{ord(bad[0]):04X}, {mangled}", f"a string without {TOYAML_BAD_NAMES}"
    return None


def _no_constant(name: str) -> None:
    raise ValueError(f"{name} is not JSON")


def ray_resources_problem(given: Any) -> str | None:
    """Why the chart (dockyard.ray.resourcesParam) or `ray start --resources` refuses a group's
    rayStartParams.resources, or None. Read as the chart reads it: outer quotes trimmed, \\" unescaped."""
    if not given:
        return None  # unset: the chart writes the fleet's resource alone
    if not isinstance(given, str):
        return f"{given!r} is not a JSON object in a string"
    try:
        parsed = json.loads(given.strip("\"'").replace('\\"', '"'), parse_constant=_no_constant)
    except (ValueError, RecursionError):
        parsed = None
    if not isinstance(parsed, dict):
        return f"{given!r} is not a JSON object"
    for name, number in parsed.items():
        if "'" in name:
            return f"the Ray resource name {name!r} holds a single quote (the chart writes the object single-quoted)"
        if isinstance(number, bool) or not isinstance(number, (int, float)):
            return f"the Ray resource {name!r} is {json.dumps(number)}, not a number"
        if not math.isfinite(float(number)) or number < 0:
            return f"the Ray resource {name!r} is {number}, not a number from 0 to 1.8e308"
    return None


def _containers_problem(containers: Any, main: str) -> tuple[Where, str, str] | None:
    if not isinstance(containers, list):
        return (), f"containers must be a list, got {containers!r}", "a list of containers"
    for i, c in enumerate(containers):
        if not isinstance(c, dict):
            return (i,), f"a container must be a mapping, got {c!r}", "a container such as {name: log, image: …}"
        name = c.get("name")
        if name is not None and not isinstance(name, str):
            return (i, "name"), f"a container name must be a string, got {name!r}", "a name such as log"
        for key in ("env", "volumeMounts"):
            items = c.get(key)
            if items is not None and not (isinstance(items, list) and all(isinstance(e, dict) for e in items)):
                return (i, key), f"{key} must be a list of mappings, got {items!r}", "a list such as [{name: …}]"
        for j, var in enumerate(c.get("env") or []):  # the overlay is no way around the credential rule
            problem = literal_problem(str(var.get("name")), var.get("value")) if "valueFrom" not in var else None
            if problem:
                return (i, "env", j, "value"), problem, secret_ref_hint(str(var.get("name")))
        if not name or name == main:  # merged into the Ray container, whose GPU counts the chart sets
            res = c.get("resources")
            if "resources" in c and not isinstance(res, dict):
                return (i, "resources"), f"resources must be a mapping, got {res!r}", "{limits: {…}, requests: {…}}"
            for key in ("limits", "requests"):
                if isinstance(res, dict) and key in res and not isinstance(res[key], dict):
                    return ((i, "resources", key), f"resources.{key} must be a mapping, got {res[key]!r}",
                            "quantities by resource name, e.g. {cpu: 4}")
    return None


def overlay_shape_problem(role: str, spec: dict[str, Any]) -> tuple[Where, str, str] | None:
    """What the chart's merge of one group overlay (ray/_group.tpl) cannot walk: (its path inside the
    group, message, expected), or None. `role` is head, trainer or inference."""
    problem = ray_resources_problem((spec.get("rayStartParams") or {}).get("resources")) if isinstance(
        spec.get("rayStartParams"), dict) and not spec.get("resources") else None
    if problem:
        return ("rayStartParams", "resources"), problem, RAY_RESOURCES_EXPECTED
    template = spec.get("template")
    if template is None:
        return None
    if not isinstance(template, dict):
        return ("template",), f"template must be a mapping (a pod template), got {template!r}", "{metadata: …, spec: …}"
    pod = template.get("spec")
    if pod is None:
        return None
    if not isinstance(pod, dict):
        return ("template", "spec"), f"template.spec must be a mapping (a pod spec), got {pod!r}", "a pod spec"
    for key in ("volumes", "imagePullSecrets", "tolerations"):
        if pod.get(key) is not None and not isinstance(pod[key], list):
            return ("template", "spec", key), f"{key} must be a list, got {pod[key]!r}", f"a list of {key}"
    if pod.get("containers") is not None:
        found = _containers_problem(pod["containers"], "ray-head" if role == "head" else "ray-worker")
        if found:
            return ("template", "spec", "containers", *found[0]), found[1], found[2]
    if pod.get("initContainers") is not None:
        found = _containers_problem(pod["initContainers"], "")
        if found:
            return ("template", "spec", "initContainers", *found[0]), found[1], found[2]
    return None


# The sandbox pool's cross-field rules (autoscaling bounds, rollout, shutdown): the models (Sandbox),
# schema_check's hook and the chart (dockyard.validate.sandboxPool) refuse the same values with the same words.

def _zero(value: Any) -> bool:
    """A rolling-update IntOrString that means none: 0, or a percentage of zero."""
    if isinstance(value, str):
        return re.fullmatch(r"0+%", value) is not None
    return value == 0 and not isinstance(value, bool)


# The keys only one backend reads, with their defaults: under the other backend such a key must keep its default
# (a changed value would mean nothing there). The model's JSON Schema twin and the chart's
# dockyard.validate.sandboxBackend are written from these.
POOL_ONLY_KEYS: tuple[tuple[Where, Any], ...] = (
    (("autoscaling", "enabled"), False), (("rollingUpdate", "maxSurge"), "25%"),
    (("rollingUpdate", "maxUnavailable"), 0), (("minReadySeconds",), 5), (("pdb", "enabled"), True),
    (("pdb", "maxUnavailable"), 1),
)
AGENT_SANDBOX_ONLY_KEYS: tuple[tuple[Where, Any], ...] = ((("warmPool", "updateStrategy"), "Recreate"),)


def sandbox_backend_problem(sandbox: dict[str, Any]) -> tuple[Where, str, str] | None:
    """Why a key of one sandbox backend is set under the other (`sandbox.backend`): (key path inside `sandbox`,
    message, expected), or None. `sandbox` as dumped: defaults in."""
    backend = sandbox.get("backend", "pool")
    other = "pool" if backend == "agent-sandbox" else "agent-sandbox"
    for where, default in POOL_ONLY_KEYS if backend == "agent-sandbox" else AGENT_SANDBOX_ONLY_KEYS:
        value: Any = sandbox
        for key in where:
            value = value.get(key, default) if isinstance(value, dict) else default
        if value != default or type(value) is not type(default):
            shown = json.dumps(default)
            message = (f"{'.'.join(map(str, where))} is a setting of the {other} backend, which means nothing with "
                       f"backend {backend}")
            return (where, message, f"{shown} (its default), or backend {other}")
    return None


def sandbox_pool_problem(sandbox: dict[str, Any]) -> tuple[Where, str, str] | None:
    """Why the sandbox pool's backend keys, autoscaling, PDB, rolling update or shutdown settings contradict each
    other: (key path inside `sandbox`, message, expected), or None. `sandbox` as dumped: defaults in, None is
    unset."""
    backend_found = sandbox_backend_problem(sandbox)
    if backend_found:
        return backend_found
    hpa = sandbox.get("autoscaling") or {}
    on, low, high = hpa.get("enabled", False), hpa.get("minReplicas", 2), hpa.get("maxReplicas", 10)
    pdb = sandbox.get("pdb") or {}
    roll = sandbox.get("rollingUpdate") or {}
    grace, pause = sandbox.get("terminationGracePeriodSeconds", 300), sandbox.get("preStopSleepSeconds", 5)
    found: tuple[Where, str, str] | None = None
    if low > high:
        found = (("autoscaling", "maxReplicas"), f"minReplicas {low} is more than maxReplicas {high}",
                 f"maxReplicas of at least {low}, or a lower minReplicas")
    elif on and all(hpa.get(t) is None for t in ("targetCPUUtilizationPercentage",
                                                    "targetMemoryUtilizationPercentage")):
        found = (("autoscaling",), "autoscaling is enabled but sets no target, so the HPA has no metric to act on",
                 "targetCPUUtilizationPercentage (e.g. 70) or targetMemoryUtilizationPercentage")
    elif on and pdb.get("enabled", True) and pdb.get("maxUnavailable", 1) >= low:
        mu = pdb.get("maxUnavailable", 1)
        fix = f"autoscaling.minReplicas of at least {mu + 1}"
        if low >= 2:
            fix = f"pdb.maxUnavailable from 1 to {low - 1}, or {fix}"
        found = (("pdb", "maxUnavailable"),
                 (f"maxUnavailable {mu} lets a drain evict every executor at the HPA's minimum "
                  f"(autoscaling.minReplicas {low})"), f"{fix} (a maxUnavailable of 0 would block every node drain)")
    elif _zero(roll.get("maxSurge", "25%")) and _zero(roll.get("maxUnavailable", 0)):
        found = (("rollingUpdate",), "maxSurge and maxUnavailable are both zero, a rollout Kubernetes refuses",
                 "maxSurge of at least 1 (maxUnavailable 0 keeps every replica serving)")
    elif pause >= grace:
        found = (("preStopSleepSeconds",),
                 (f"preStopSleepSeconds {pause} leaves no time of terminationGracePeriodSeconds {grace} to finish "
                 "the tasks in flight"),
                 f"preStopSleepSeconds below {grace}, or a longer terminationGracePeriodSeconds")
    return found
