"""No YAML injection: every string of the values reaches the manifests as that exact string.

The string fields are found by walking values.schema.json (generated from the models), map keys of
free-form and string-keyed maps included. One rendering puts a plain sentinel in every field; each
example puts hostile strings (colons, newlines, braces, quotes, `{{ }}`, `#`, leading `-`/`*`/`&`,
unicode, …) in all of them at once, one `helm template` per example. Swapping each sentinel for its
hostile string in the sentinel rendering must give exactly the hostile rendering: every string at
its place, verbatim, and nothing else changed.
"""

from __future__ import annotations

import ipaddress
import json
import math
import re
import shlex
import subprocess
import tempfile
from functools import cache
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, Phase, assume, given, settings
from hypothesis import strategies as st

from generator.inputs.api_rules import quantity, quota_counts
from generator.inputs.credentials import reads_as_credential
from generator.inputs.models.types import CIDR_RE
from generator.inputs.quota_rules import judges
from generator.pinned_tools import CHART_DIR, binary, versions
from tests.conftest import chart_values
from tests.support.values_slots import (
    ENTRIES,
    FREE,
    NOT_RENDERED,
    ORDERED,
    SCHEMA,
    SENTINELS,
    SLOTS,
    Slot,
    valid,
    values_for,
)

# Hostile strings: YAML and template syntax, shell syntax, odd unicode, and arbitrary text.
FRAGMENTS = [
    ": ", ":", "\n", "\n  injected: true", "\n- x", "\r\n", "\t", " ", "{", "}", "[", "]", ",", "{{ .Values }}",
    "{{", "}}", "{{- fail \"x\" -}}", "'", '"', "\\", "#", " # c", "- ", "-", "* ", "*a", "&a ", "!", "!!binary ",
    "|", "|-\n", ">", "%", "@", "`", "---", "...", "?", "? ", "<<", "=", "~", "null", "true", "yes", "y", "0x1F",
    "1e3", "0o17", "1:20", "012", "é", "中文", "🚀", "\u2028", "\u0085", "\u00a0", "\ufeff", "$HOME", "$(id)",
    ";", "&&", "\x00", "\x1b", "\x7f", "\x9f",
]
any_text = st.one_of(
    st.lists(st.one_of(st.sampled_from(FRAGMENTS), st.text(max_size=3)), max_size=6).map("".join),
    st.text(max_size=16),
)
# Helm's toYaml cannot carry these: the chart refuses them (test_toyaml_breaking_characters_are_refused),
# except in the recipe's strings, which are only ever quoted.
TOYAML_BREAKING = re.compile("[\x7f-\x9f\u2028\u2029\ufffe\uffff]")
hostile_text = any_text.map(lambda s: TOYAML_BREAKING.sub("", s))


# Plain scalars YAML 1.1 or 1.2 would read as a bool, null, int or float.
TYPED_WORDS = ["y", "n", "yes", "no", "on", "off", "true", "false", "null", "nan", "inf", "012", "0o17", "0x1f",
               "1e3", "1E3", "+1", "1.", ".5", "+.5", "1_000", "1e-3", "123", "0", "1.0"]


def _cidr(ip: ipaddress.IPv4Address | ipaddress.IPv6Address, bits: int) -> str:
    return str(ipaddress.ip_network(f"{ip}/{min(bits, ip.max_prefixlen)}", strict=False))


def _strategy(slot: Slot) -> st.SearchStrategy[str]:
    schema = slot.schema
    pattern = schema.get("pattern")
    if pattern is None:
        text = any_text if slot.path.startswith("recipe.") else hostile_text
        # a field whose default is "" reads "" as unset (recipe.config: the default recipe)
        least = max(schema.get("minLength", 0), schema.get("default") == "")
        return text.filter(lambda s: len(s) >= least)
    if pattern == "^/":
        return hostile_text.map(lambda s: "/" + s)
    if pattern == CIDR_RE:
        return st.builds(_cidr, st.ip_addresses(), st.integers(0, 128))
    # Other patterns admit no YAML syntax, but words YAML reads as another type (if unquoted) or anything.
    bounded = {**schema, "maxLength": min(schema.get("maxLength", 80), 80)}
    words = [w for w in TYPED_WORDS if valid(w, bounded)]
    # not empty: an empty toleration key needs operator Exists, which values_for leaves at its default
    anything = st.from_regex(pattern).filter(lambda s: s and valid(s, bounded) and "sglang" not in s)
    if re.search(r"(extraEnv|\.env)\[\d+\]\.name$", slot.path):  # a credential's name takes no literal value
        anything = anything.filter(lambda s: not reads_as_credential(s))
    if slot.path == "kuberay.network.socketInterface":  # ^ drops GLOO_SOCKET_IFNAME, = is dropped from it (by design)
        anything = anything.filter(lambda s: not s.startswith(("^", "=")))
    if slot.path == "sandbox.rollingUpdate.maxSurge":  # a zero maxSurge with a zero maxUnavailable is refused
        anything = anything.filter(lambda s: s.strip("0") != "%")
    return st.one_of(st.sampled_from(words), st.sampled_from(words), anything) if words else anything


def _unasked(key: str) -> str:
    """A quota key the quota rule leaves alone: `key` itself, or else a huge page size named after it (a quantity
    like any other, which no pod of the release asks for)."""
    if not judges(key):
        return key
    return f"hugepages-{re.sub(r'[^A-Za-z0-9]+', '-', key).strip('-')[:50] or 'x'}"


def _property_names(node: Any) -> set[str]:
    if isinstance(node, dict):
        return set(node.get("properties", {})) | {n for v in node.values() for n in _property_names(v)}
    return {n for v in node for n in _property_names(v)} if isinstance(node, list) else set()


# Map keys that mean something: "<<", YAML's merge key, is refused (test_keys_yaml_would_merge_are_refused_by_path);
# the values' own field names and the RayClusterSpec keys the chart merges by name would change the
# structure (Hypothesis draws such words from the code under test).
MEANINGFUL_KEYS = {"<<", "template", "spec", "metadata", "containers", "volumes", "imagePullSecrets", "env",
                   "volumeMounts", "rayStartParams", "resources", "labels"} | _property_names(SCHEMA)


def _hostile(slots: list[Slot]) -> st.SearchStrategy[dict[str, str]]:
    """A string per slot; the keys of one map drawn together, distinct; an ORDERED group's quantities drawn
    together, in order."""
    parts: dict[str, st.SearchStrategy[Any]] = {}
    ordered = {path: (group, group.index(path)) for group in ORDERED for path in group}
    for slot in slots:
        owner, is_key, _ = slot.path.partition(".<key")
        if slot.path in ordered:
            group = ordered[slot.path][0]
            one = _strategy(slot).filter(lambda v: quantity(v) is not None)  # not 1e99999999: Decimal's range
            parts.setdefault(" ".join(group), st.lists(one, min_size=len(group), max_size=len(group))
                             .map(lambda drawn: sorted(drawn, key=quantity)))
        elif not is_key:
            parts[slot.path] = _strategy(slot)
        elif owner not in parts:
            keys = (hostile_text if slot.schema is FREE else _strategy(slot)).filter(lambda k: k not in MEANINGFUL_KEYS)
            if owner == "infra.resourceQuota.hard":  # what counts whole units would refuse a fractional quantity,
                # and a key the quota rule judges would refuse a drawn amount below what the release asks for: it
                # becomes a key of the same text the rule does not judge
                keys = keys.filter(lambda k: not quota_counts(k)).map(_unasked)
            parts[owner] = st.lists(keys, min_size=ENTRIES, max_size=ENTRIES, unique=True)

    def flatten(drawn: dict[str, Any]) -> dict[str, str]:
        out = {}
        for slot in slots:
            owner, is_key, n = slot.path.partition(".<key")
            if slot.path in ordered:
                group, place = ordered[slot.path]
                out[slot.path] = drawn[" ".join(group)][place]
            else:
                out[slot.path] = drawn[owner][int(n.rstrip(">"))] if is_key else drawn[slot.path]
        return out

    return st.fixed_dictionaries(parts).map(flatten)


# Free strings (no pattern, or only a leading /) are where YAML can be injected; the others take words
# YAML would read as another type. Drawn apart: all ~90 at once overrun Hypothesis' buffer (and ~25 s).
FREE_SLOTS = [slot for slot in SLOTS if slot.schema.get("pattern") in (None, "^/")]
GPU_POD_PREFIXES = ("infra.env", "infra.storage.")  # infra.env, infra.envFrom, infra.storage: drawn apart as well
# the sandbox's scheduling (its label keys and values, ~40): drawn apart too, or the filters of all the checked
# strings rarely pass at once
SCHEDULING = ("sandbox.topologySpreadConstraints", "sandbox.nodeSelector", "sandbox.tolerations", "sandbox.affinity")
# the namespace's quota and limit range (~30 quantities, each with its own filters): drawn apart as well
NAMESPACE_POLICY = ("infra.resourceQuota.", "infra.limitRange.")
CHECKED_SLOTS = [slot for slot in SLOTS if slot not in FREE_SLOTS
                 and not slot.path.startswith(("kuberay.placement.", *GPU_POD_PREFIXES, *SCHEDULING,
                                               *NAMESPACE_POLICY))]
NAMESPACE_POLICY_SLOTS = [slot for slot in SLOTS if slot not in FREE_SLOTS and slot.path.startswith(NAMESPACE_POLICY)]
POD_AFFINITY = (".podAffinity.", ".podAntiAffinity.")  # ~100 strings per affinity: drawn apart from the rest
SCHEDULING_SLOTS = [slot for slot in SLOTS if slot not in FREE_SLOTS and slot.path.startswith(SCHEDULING)
                    and not any(a in slot.path for a in POD_AFFINITY)]
def _term_list(path: str) -> str:
    """The list of terms a pod affinity string is in: its path up to ...DuringExecution."""
    return path.split("DuringSchedulingIgnoredDuringExecution")[0]


POD_AFFINITY_SLOTS = [slot for slot in SLOTS if slot not in FREE_SLOTS and any(a in slot.path for a in POD_AFFINITY)]
GPU_POD_SLOTS = [slot for slot in SLOTS if slot not in FREE_SLOTS and slot.path.startswith(GPU_POD_PREFIXES)]
PLACEMENT_SLOTS = [slot for slot in SLOTS if slot not in FREE_SLOTS and slot.path.startswith("kuberay.placement.")
                   and not any(a in slot.path for a in POD_AFFINITY)]
# the GPU fleets' placement and the CPU pods' (head, submitter): ~40 each, drawn apart (all ~80 filters at once rarely
# pass together)
GPU_PLACEMENT = ("kuberay.placement.gpu.", "kuberay.placement.trainer.", "kuberay.placement.inference.")


# Characters Helm's YAML parser refuses raw (or reads as a line break): written as \\u escapes. Others,
# those beyond the BMP above all (Helm cannot read JSON's surrogate-pair escapes), are written raw.
_ESCAPE = re.compile("[\x7f-\x9f\u2028\u2029\ufeff\ufffe\uffff]")


def _helm_template(values: dict[str, Any]) -> str:
    text = _ESCAPE.sub(lambda m: f"\\u{ord(m.group()):04x}", json.dumps(values, ensure_ascii=False))
    with tempfile.NamedTemporaryFile("w", suffix=".json", encoding="utf-8") as f:
        f.write(text)
        f.flush()
        done = subprocess.run([binary("helm"), "template", "grpo-swe", str(CHART_DIR), "--namespace", "dockyard",
                               "--values", f.name, "--kube-version", versions()["KUBERNETES_VERSION"]],
                              capture_output=True, text=True, encoding="utf-8")
    assert done.returncode == 0, done.stderr
    return done.stdout


class _GoLikeLoader(getattr(yaml, "CSafeLoader", yaml.SafeLoader)):
    """Reads plain scalars as Go's YAML (Helm's, the apiserver's) does, where PyYAML differs: a
    plain `=` or `<<` value is a string (PyYAML fails on YAML 1.1's value and merge tags; `<<` keys
    are refused by the chart), and so is a number too large for a float (PyYAML: inf)."""

    def construct_yaml_float(self, node):
        value = super().construct_yaml_float(node)
        if math.isinf(value) and "inf" not in node.value.lower():
            return node.value
        return value


_GoLikeLoader.add_constructor("tag:yaml.org,2002:float", _GoLikeLoader.construct_yaml_float)
_GoLikeLoader.yaml_implicit_resolvers = {
    first: [(tag, regexp) for tag, regexp in resolvers
            if tag not in ("tag:yaml.org,2002:value", "tag:yaml.org,2002:merge")]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}


def _objects(values: dict[str, Any]) -> list[dict[str, Any]]:
    """The rendered objects; the RayJob entrypoint as its recipe command plus the argv the shell reads (the run
    watcher's own command, `python3 <mount>/run_watch.py … -- '<entrypoint>'`, read by the shell and unwrapped)."""
    docs = [d for d in yaml.load_all(_helm_template(values), Loader=_GoLikeLoader) if d]
    command = values["recipe"]["entrypoint"]
    for doc in docs:
        if doc["kind"] == "RayJob":
            entry = doc["spec"]["entrypoint"]
            if (values.get("launch") or {}).get("watch", {}).get("enabled", True):
                outer = shlex.split(entry)
                mount = values["launch"]["configMountPath"]
                assert outer[:2] == ["python3", f"{mount}/run_watch.py"] and outer[-2] == "--", entry
                entry = outer[-1]
            assert entry.startswith(command + " "), entry
            doc["spec"]["entrypoint"] = [command, *shlex.split(entry[len(command):])]
    return docs


def _swap(node: Any, pattern: re.Pattern[str], to: dict[str, str]) -> Any:
    if isinstance(node, str):
        return pattern.sub(lambda m: to[m.group(0)], node)
    if isinstance(node, list):
        return [_swap(v, pattern, to) for v in node]
    if isinstance(node, dict):
        return {_swap(k, pattern, to): _swap(v, pattern, to) for k, v in node.items()}
    return node


@cache
def _sentinel_objects(mode: str) -> str:
    return json.dumps(_objects(values_for(lambda slot: SENTINELS[slot.path], mode)))


def test_every_string_field_is_found_and_rendered():
    # The walk finds the fields injections once went through (a topology key, a work dir, a quota key, ...) ...
    paths = {slot.path for slot in SLOTS}
    assert {"sandbox.topologySpreadConstraints[0].topologyKey", "sandbox.security.workDir",
            "infra.resourceQuota.hard.<key0>",
            "launch.configMountPath", "sandbox.nodeSelector.<key1>", "kuberay.spec.headGroupSpec.<key0>"} <= paths
    # ... and each one's sentinel shows up in the manifests, but for the few the chart does not use.
    for mode in ("rayjob", "bringup"):
        text = _sentinel_objects(mode)
        unrendered = {slot.path for slot in SLOTS if SENTINELS[slot.path] not in text}
        no_rayjob = {"recipe.entrypoint"} | {p for p in SENTINELS if p.startswith("kuberay.placement.submitter.")}
        expected = set(NOT_RENDERED) | (no_rayjob if mode == "bringup" else set())  # no RayJob, no submitter
        assert unrendered == expected, mode


def _check(strings: dict[str, str], mode: str) -> None:
    """Render with `strings` in their slots (sentinels elsewhere): the sentinel rendering, each sentinel
    swapped for its string, must be exactly what helm renders."""
    networks = [strings.get(f"kuberay.network.rdma.networks[{n}]") for n in (0, 1)]
    assume(networks[0] is None or networks[0] != networks[1])  # a network named twice is refused, by design
    for path, key in strings.items():  # a label key in both a term's matchLabelKeys and mismatchLabelKeys: the same
        if ".matchLabelKeys[" in path:
            term = path.split(".matchLabelKeys[")[0]
            assume(key not in {v for p, v in strings.items() if p.startswith(term + ".mismatchLabelKeys[")})
    values = values_for(lambda slot: strings.get(slot.path, SENTINELS[slot.path]), mode)
    to = {SENTINELS[path]: value for path, value in strings.items()}
    pattern = re.compile("|".join(re.escape(s) for s in sorted(to, key=len, reverse=True)))
    expected = _swap(json.loads(_sentinel_objects(mode)), pattern, to)
    assert _objects(values) == expected


# Each example is one helm call (~0.1 s) with every string of its kind at once. No shrinking (minutes);
# derandomized for reproducible CI by the profile (tests/conftest.py; `make test-random` is not).
EXAMPLES = settings(deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
                    phases=[Phase.explicit, Phase.reuse, Phase.generate])


@settings(EXAMPLES, max_examples=40)
@given(strings=_hostile(FREE_SLOTS), mode=st.sampled_from(["rayjob", "bringup"]))
def test_hostile_strings_come_back_verbatim_and_change_nothing_else(strings, mode):
    _check(strings, mode)


@settings(EXAMPLES, max_examples=15)
@given(strings=_hostile(CHECKED_SLOTS), mode=st.sampled_from(["rayjob", "bringup"]))
def test_pattern_checked_strings_come_back_verbatim(strings, mode):
    _check(strings, mode)


@settings(EXAMPLES, max_examples=15)
@given(strings=_hostile(NAMESPACE_POLICY_SLOTS), mode=st.sampled_from(["rayjob", "bringup"]))
def test_quota_and_limit_range_strings_come_back_verbatim(strings, mode):
    """infra.resourceQuota's keys and quantities and infra.limitRange's (drawn apart from the others)."""
    _check(strings, mode)


@settings(EXAMPLES, max_examples=15)
@given(strings=_hostile(GPU_POD_SLOTS), mode=st.sampled_from(["rayjob", "bringup"]))
def test_gpu_pod_env_and_storage_strings_come_back_verbatim(strings, mode):
    """infra.env, infra.envFrom and infra.storage's pattern-checked strings (drawn apart from the others)."""
    _check(strings, mode)


@settings(EXAMPLES, max_examples=15)
@given(strings=_hostile(SCHEDULING_SLOTS), mode=st.sampled_from(["rayjob", "bringup"]))
def test_sandbox_scheduling_strings_come_back_verbatim(strings, mode):
    """The sandbox's spread constraints, node selector, tolerations and affinity (drawn apart from the others)."""
    _check(strings, mode)


@settings(EXAMPLES, max_examples=10)
@given(strings=st.sampled_from(sorted({_term_list(s.path) for s in POD_AFFINITY_SLOTS})).flatmap(
    lambda terms: _hostile([s for s in POD_AFFINITY_SLOTS if _term_list(s.path) == terms])),
    mode=st.sampled_from(["rayjob", "bringup"]))
def test_pod_affinity_strings_come_back_verbatim(strings, mode):
    """The pod (anti-)affinity terms' label keys, values, namespaces and topology keys, one list of terms at a
    time (required or preferred, of one pod kind's affinity or anti-affinity), drawn apart from the others."""
    _check(strings, mode)


@settings(EXAMPLES, max_examples=15)
@given(strings=_hostile([s for s in PLACEMENT_SLOTS if s.path.startswith(GPU_PLACEMENT)]),
       mode=st.sampled_from(["rayjob", "bringup"]))
def test_placement_label_keys_and_values_come_back_verbatim(strings, mode):
    """kuberay.placement's label keys and values of the GPU fleets (drawn apart from the other checked strings)."""
    _check(strings, mode)


@settings(EXAMPLES, max_examples=15)
@given(strings=_hostile([s for s in PLACEMENT_SLOTS if not s.path.startswith(GPU_PLACEMENT)]),
       mode=st.sampled_from(["rayjob", "bringup"]))
def test_cpu_pod_placement_label_keys_and_values_come_back_verbatim(strings, mode):
    """kuberay.placement's label keys and values of the head and the submitter."""
    _check(strings, mode)


@pytest.mark.parametrize("char", ["\x7f", "\x85", "\x9f", "\u2028", "\u2029", "\ufffe"])
def test_strings_helm_toyaml_cannot_carry_are_refused_by_path(char):
    """Helm's toYaml dropped the whole map (or head group) for these, or broke the manifest (nodeSelector,
    where it was seen, now takes label keys and values only: podAnnotations carries any string)."""
    for over, where in (({"sandbox": {"podAnnotations": {"disk": f"ssd{char}"}}}, "sandbox.podAnnotations.disk: "),
                        ({"kuberay": {"spec": {"headGroupSpec": {f"x{char}": "y"}}}},
                         "kuberay.spec.headGroupSpec: the key")):
        values = chart_values(**over)
        with pytest.raises(AssertionError, match="helm") as refused:
            _helm_template(values)
        assert where in str(refused.value) and "U+007F to U+009F" in str(refused.value)


def test_keys_yaml_would_merge_are_refused_by_path():
    """Helm's toYaml writes a "<<" key unquoted: a map under it was merged into its parent, silently."""
    for over, where in (({"kuberay": {"spec": {"workerGroupSpecs": [{"groupName": "trainer", "<<": "x"}]}}},
                         "kuberay.spec.workerGroupSpecs[0]: "),
                        ({"kuberay": {"spec": {"headGroupSpec": {"<<": {"serviceType": "NodePort"}}}}},
                         "kuberay.spec.headGroupSpec: ")):
        with pytest.raises(AssertionError, match="merge key") as refused:
            _helm_template(chart_values(**over))
        assert where + 'the key "<<"' in str(refused.value)


def test_recipe_strings_carry_any_character():
    """The recipe's strings are only quoted, never through toYaml: every character comes back."""
    odd = "".join(chr(c) for c in (*range(0x20), 0x7f, 0x85, 0x9f, 0x2028, 0x2029, 0xfeff, 0xfffe, 0xffff, 0x1f680))
    values = chart_values(recipe={"config": f"name: x # {odd}\n", "entrypoint": f"python -m x # {odd}"})
    objects = _objects(values)
    config = next(d for d in objects if d["kind"] == "ConfigMap")["data"]["recipe.yaml"]
    job = next(d for d in objects if d["kind"] == "RayJob")
    assert config == f"name: x # {odd}\n"
    assert job["spec"]["entrypoint"][0] == f"python -m x # {odd}"
