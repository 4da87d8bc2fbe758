"""The chart's values walked from values.schema.json (generated from the models) with a string in every string
field, map keys of free-form and string-keyed maps included: the slots (Slot: path and schema), the values with a
chosen string in each (values_for, validated by the models like the generator's), the fields no manifest renders and
why (NOT_RENDERED), and a distinct sentinel valid for each field (SENTINELS). tests/chart/test_no_injection.py puts
hostile strings in them."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from generator.inputs.models import ChartValues
from generator.pinned_tools import CHART_DIR
from tests.conftest import deep_merge, without_ignored

SCHEMA = json.loads((CHART_DIR / "values.schema.json").read_text())
ENTRIES = 2  # items per list, entries per map

# Features switched on so that every field is rendered somewhere.
SWITCHES = {
    "infra": {"security": {"enabled": True, "readOnlyRootFilesystem": True},
              "resourceQuota": {"enabled": True}, "limitRange": {"enabled": True}},
    "launch": {"submissionMode": "K8sJobMode"},
    "kuberay": {"pdb": {"enabled": True}, "network": {"profile": "rdma"}},  # every fabric string renders under rdma
    "sandbox": {"security": {"readOnlyRootFilesystem": True}, "networkPolicy": {"allowEgress": False},
                "autoscaling": {"enabled": True, "targetCPUUtilizationPercentage": 70}},
}

# Fields the chart does not render in these settings, and why.
NOT_RENDERED = {
    "recipe.name": "objects are named after the release",
    "launch.clusterName": "attach mode only (and then only in NOTES.txt)",
    "infra.image.digest": "left unset, so that infra.image.tag is rendered",
    "sandbox.image.tag": "sandbox.image.digest is set and wins",
    # an EnvVar has value or valueFrom: entry 0 keeps value, entry 1 valueFrom (values_for drops the other)
    "sandbox.extraEnv[1].value": "entry 1 reads its value from valueFrom",
}
# A valueFrom takes one source: entry 1 reads a Secret's key (values_for drops the other sources).
ENV_SOURCE = "secretKeyRef"
# Quantities the API wants in order (generator.inputs.api_rules): each group's slots are drawn together, sorted.
ORDERED = [tuple(f"infra.limitRange.{side}.{name}" for side in ("min", "defaultRequest", "default", "max"))
           for name in ("cpu", "memory", "ephemeral-storage")]
ORDERED += [(f"sandbox.resources.{name}", f"sandbox.resources.{name}Limit")
            for name in ("cpu", "memory", "ephemeralStorage")]


@dataclass(frozen=True)
class Slot:
    """One string of the values: a field, a list item's field, or a map's key or value."""

    path: str
    schema: dict[str, Any]  # the string's JSON Schema (pattern, minLength, …)


def _resolve(node: dict[str, Any]) -> dict[str, Any]:
    while "$ref" in node:
        node = SCHEMA["definitions"][node["$ref"].rsplit("/", 1)[1]]
    return node


def _branch(node: dict[str, Any], want: Callable[[dict[str, Any]], bool]) -> dict[str, Any] | None:
    node = _resolve(node)
    if want(node):
        return node
    for sub in node.get("anyOf", []):
        found = _branch(sub, want)
        if found:
            return found
    return None


def _is_string(n: dict[str, Any]) -> bool:
    return n.get("type") == "string" and "enum" not in n and "const" not in n


def _is_object(n: dict[str, Any]) -> bool:
    return n.get("type") == "object" or "properties" in n


FREE = {"type": "string"}


def build(fill: Callable[[Slot], str], node: dict[str, Any] = SCHEMA, path: str = "") -> Any:
    """Values shaped by the schema with fill(slot) in every string; None where no string lives."""
    if string := _branch(node, _is_string):
        return fill(Slot(path, string))
    if obj := _branch(node, _is_object):
        out = {}
        for name, sub in obj.get("properties", {}).items():
            value = build(fill, sub, f"{path}.{name}".lstrip("."))
            if value is not None:
                out[name] = value
        extra = obj.get("additionalProperties")
        if extra:  # a map: free-form (True) or of one value schema
            for n in range(ENTRIES):  # keys of their own pattern (propertyNames: label keys) or free
                key = fill(Slot(f"{path}.<key{n}>", obj.get("propertyNames", FREE)))
                out[key] = build(fill, extra if isinstance(extra, dict) else FREE, f"{path}.<value{n}>")
        return out or None
    if arr := _branch(node, lambda n: n.get("type") == "array"):
        items = [build(fill, arr["items"], f"{path}[{n}]") for n in range(ENTRIES)]
        return items if items[0] is not None else None
    return None  # booleans, integers, enums: the chart's defaults


def _affinity(affinity: dict[str, Any]) -> None:
    """An Affinity made valid: node affinity requirements and pod selectors get an operator (In: any values),
    field requirements the one key and value the API allows, weights 1."""
    node = affinity["nodeAffinity"]
    preferred = node["preferredDuringSchedulingIgnoredDuringExecution"]
    for term in preferred:
        term["weight"] = 1
    for term in node["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"] + [
            t["preference"] for t in preferred]:
        for req in term["matchExpressions"]:
            req["operator"] = "In"
        for req in term["matchFields"]:
            req.update(key="metadata.name", operator="In", values=req["values"][:1])
    for pods in (affinity["podAffinity"], affinity["podAntiAffinity"]):  # selectors' operators In, weights 1
        preferred = pods["preferredDuringSchedulingIgnoredDuringExecution"]
        for weighted in preferred:
            weighted["weight"] = 1
        for term in pods["requiredDuringSchedulingIgnoredDuringExecution"] + [w["podAffinityTerm"] for w in preferred]:
            for selector in (term["labelSelector"], term["namespaceSelector"]):
                for req in selector["matchExpressions"]:
                    req["operator"] = "In"


def _placement(place: dict[str, Any]) -> None:
    """kuberay.placement made valid: inference takes gpu's (so both render), each affinity made valid."""
    del place["inference"]
    for own in place.values():
        _affinity(own["affinity"])


def values_for(fill: Callable[[Slot], str], mode: str) -> dict[str, Any]:
    """The chart values with fill() in every string, validated by the models like the generator's."""
    doc = deep_merge(build(fill), SWITCHES)
    doc["launch"]["mode"] = mode
    del doc["infra"]["image"]["digest"]
    for group, name in zip(doc["kuberay"]["spec"]["workerGroupSpecs"], ("trainer", "inference"), strict=True):
        group["groupName"] = name
    for envs in (doc["sandbox"]["extraEnv"], doc["infra"]["env"]):
        for n, env in enumerate(envs):
            del env["valueFrom" if n == 0 else "value"]
            if n:
                env["valueFrom"] = {ENV_SOURCE: env["valueFrom"][ENV_SOURCE]}
    for n, source in enumerate(doc["infra"]["envFrom"]):  # one source each: entry 0 a Secret, entry 1 a ConfigMap
        del source["configMapRef" if n == 0 else "secretRef"]
    _placement(doc["kuberay"]["placement"])
    _affinity(doc["sandbox"]["affinity"])
    for n, spread in enumerate(doc["sandbox"]["topologySpreadConstraints"]):
        spread["whenUnsatisfiable"] = ("ScheduleAnyway", "DoNotSchedule")[n % 2]  # two with one key: not the same pair
        for req in spread["labelSelector"]["matchExpressions"]:
            req["operator"] = "In"
    storage = doc["infra"]["storage"]  # a volume is a claim or a size: one of each kind renders every field
    for key in STORAGE_CLAIMED:
        for field in ("size", "storageClassName"):
            del storage[key][field]
    del storage["modelCache"]["claimName"]
    without_ignored(doc, mode)  # e.g. launch.clusterName, kuberay.pdb under rayjob: refused there
    return ChartValues.model_validate(doc).model_dump(mode="json", by_alias=True, exclude_none=True)


STORAGE_CLAIMED = ("checkpoints", "logs")  # infra.storage volumes rendered as an existing claim; modelCache is created
NOT_RENDERED.update({f"infra.storage.{key}.{field}": "an existing claim: the chart creates none"
                     for key in STORAGE_CLAIMED for field in ("size", "storageClassName")})
NOT_RENDERED.update({"infra.storage.modelCache.claimName": "a claim the chart creates (size) is rendered instead",
                     "infra.storage.modelCache.fill.image.tag": "infra.storage.modelCache.fill.image.digest is set "
                                                                "and wins"})
SLOTS: list[Slot] = []
build(lambda slot: SLOTS.append(slot) or "x")
NOT_RENDERED.update({slot.path: "kuberay.placement.inference is dropped: inference renders gpu's"
                     for slot in SLOTS if slot.path.startswith("kuberay.placement.inference.")})
NOT_RENDERED.update({slot.path: "a node field requirement takes one value (the API's rule)"
                     for slot in SLOTS if re.search(r"\.matchFields\[\d\]\.values\[[1-9]\]$", slot.path)})
NOT_RENDERED["infra.env[1].value"] = "entry 1 reads its value from valueFrom"
for _envs in ("sandbox.extraEnv", "infra.env"):
    NOT_RENDERED.update({slot.path: "entry 0 has a literal value" for slot in SLOTS
                         if slot.path.startswith(f"{_envs}[0].valueFrom.")})
    NOT_RENDERED.update({slot.path: f"a valueFrom takes one source: entry 1 reads its {ENV_SOURCE}" for slot in SLOTS
                         if slot.path.startswith(f"{_envs}[1].valueFrom.")
                         and not slot.path.startswith(f"{_envs}[1].valueFrom.{ENV_SOURCE}.")})
NOT_RENDERED.update({slot.path: "an envFrom entry takes one source: entry 0 a Secret, entry 1 a ConfigMap"
                     for slot in SLOTS if slot.path.startswith(("infra.envFrom[0].configMapRef.",
                                                                "infra.envFrom[1].secretRef."))})


# Sentinels: distinct, of equal length (none inside another), each valid for its field.
def _sentinel(n: int, slot: Slot) -> str:
    token = f"zq{n:03d}x"
    # the quantities of an ORDERED group rank by their place in it (min < defaultRequest < default < max)
    rank = next((1 + group.index(slot.path) for group in ORDERED if slot.path in group), 1)
    # (a quota resource before the CIDR, which is a prefixed name the quota would count in whole units)
    candidates = [token, "/" + token, f"requests.{token}/q", "sha256:" + f"{n:04x}" * 16,
                  f"10.{100 + n // 100}.{100 + n % 100}.0/24", f"9.{100 + n}.7", f"{rank}{n:03d}7m", f"{1000 + n}%",
                  f"0{n % 100:02d}%", f"metadata.labels['{token}']", f"limits.hugepages-{token}"]
    return next(c for c in candidates if valid(c, slot.schema))


def valid(value: str, schema: dict[str, Any]) -> bool:
    pattern = schema.get("pattern")
    # JSON Schema (Go, pydantic) reads `$` as the end of the text, Python's `re` also before a final newline.
    return (len(value) >= schema.get("minLength", 0) and len(value) <= schema.get("maxLength", 10**6)
            and (pattern is None or re.search(pattern.replace("$", r"\Z"), value) is not None)
            and not _refused_by_not(value, schema.get("not")))


def _refused_by_not(value: str, nots: dict[str, Any] | None) -> bool:
    """Whether a field's `not` (patterns and enums, alone or in an anyOf) refuses `value`."""
    if not nots:
        return False
    if "anyOf" in nots:
        return any(_refused_by_not(value, sub) for sub in nots["anyOf"])
    return (value in nots.get("enum", ()) or ("pattern" in nots and re.search(nots["pattern"], value) is not None))


SENTINELS = {slot.path: _sentinel(n, slot) for n, slot in enumerate(SLOTS)}
