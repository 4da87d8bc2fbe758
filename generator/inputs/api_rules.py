"""Rules of the Kubernetes API (its validation of Deployments, pods, HPAs, LimitRanges, ResourceQuotas and
object metadata, v1.36) that no JSON Schema keyword can say: sums, comparisons of quantities, pairs in a
list. Plain functions without pydantic: the models call them, and so do `generator.inputs.schema_check`'s
hooks, so the two cannot drift apart. Each returns None, or (key path inside what it was given, message,
expected) in the words of the other bad-input errors.

Helm's schema (values.schema.json) cannot hold these; `helm install` of values written by hand meets them
at the apiserver, and `check` names them (kube-validate).
"""

from __future__ import annotations

import re
from decimal import Decimal

from generator.inputs.rules import QUANTITY_RE

TYPE_CHECKING = False  # typing's import costs ~3 ms at start-up: for type checkers only
if TYPE_CHECKING:
    from typing import Any

Found = tuple  # (key path, message, expected)

LABEL_PREFIX_MAX = 253  # a qualified name's prefix is a DNS-1123 subdomain: at most 253 characters
ANNOTATIONS_MAX = 256 * 1024  # apimachinery's TotalAnnotationSizeLimitB: keys and values, in bytes
# A quantity's suffix as a factor (resource.Quantity: binary, decimal SI).
_FACTOR = {"Ki": Decimal(2**10), "Mi": Decimal(2**20), "Gi": Decimal(2**30), "Ti": Decimal(2**40),
           "Pi": Decimal(2**50), "Ei": Decimal(2**60), "n": Decimal("1e-9"), "u": Decimal("1e-6"),
           "m": Decimal("1e-3"), "": Decimal(1), "k": Decimal(10**3), "M": Decimal(10**6), "G": Decimal(10**9),
           "T": Decimal(10**12), "P": Decimal(10**15), "E": Decimal(10**18)}
# The quota resources that count objects (the API's integerResources): their hard limit is a whole number.
QUOTA_INTEGER = ("pods", "resourcequotas", "services", "replicationcontrollers", "secrets", "configmaps",
                 "persistentvolumeclaims", "services.nodeports", "services.loadbalancers")
RESOURCE_NAMES = (("cpu", "cpu"), ("memory", "memory"), ("ephemeralStorage", "ephemeral-storage"))


def label_prefix_problem(key: str) -> str | None:
    """Why the prefix (before '/') of a label or annotation key is too long, or None."""
    prefix, slash, _ = key.partition("/")
    if slash and len(prefix) > LABEL_PREFIX_MAX:
        return (f"the prefix of {key[:40]!r}… has {len(prefix)} characters; a key's prefix (before '/') is a "
                f"DNS-1123 subdomain of at most {LABEL_PREFIX_MAX}")
    return None


def quantity(value: Any) -> Decimal | None:
    """A Kubernetes quantity (a number, or a string such as 500m, 2Gi, 1e3) as a number; None if it is none."""
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, (int, float)):
        return Decimal(str(value))
    found = re.match(QUANTITY_RE, str(value))
    if not found:
        return None
    suffix = found.group(3) or ""
    try:
        number = Decimal(found.group(1))
        if len(suffix) > 1 and suffix[0] in "eE" and suffix[1] != "i":  # an exponent (E alone is exa, Ei exbi)
            return number.scaleb(int(suffix[1:]))
        return number * _FACTOR[suffix]
    except (ArithmeticError, ValueError, KeyError):  # decimal's errors are ArithmeticErrors
        return None


def annotations_problem(annotations: dict[str, Any] | None) -> Found | None:
    """Annotations over the API's total size (keys and values, UTF-8 bytes)."""
    size = sum(len(k.encode()) + len(str(v).encode()) for k, v in (annotations or {}).items())
    if size > ANNOTATIONS_MAX:
        return ((), (f"the annotations hold {size} bytes (keys and values); the API refuses more than "
                     f"{ANNOTATIONS_MAX} (256 KiB) on one object"),
                "annotations of at most 256 KiB in all (large data belongs in a ConfigMap or a volume)")
    return None


def resources_problem(resources: dict[str, Any]) -> Found | None:
    """A sandbox limit below its request (each *Limit defaults to its request): the API refuses a request
    above its limit."""
    for field, name in RESOURCE_NAMES:
        request, limit = resources.get(field), resources.get(f"{field}Limit")
        if limit is None or request is None:
            continue
        low, high = quantity(limit), quantity(request)
        if low is not None and high is not None and low < high:
            return ((f"{field}Limit",), (f"{field}Limit {limit} is below the {name} request {request}; the API "
                                         "refuses a request above its limit"),
                    f"{field}Limit of at least {request}, or a lower {field}")
    return None


# LimitRange orderings, in the API's order: (the side named, the lower one, the higher one).
_LIMIT_ORDER = (("min", "min", "max"), ("defaultRequest", "min", "defaultRequest"),
                ("defaultRequest", "defaultRequest", "max"), ("defaultRequest", "defaultRequest", "default"),
                ("default", "min", "default"), ("default", "default", "max"))


def limit_range_problem(limit_range: dict[str, Any]) -> Found | None:
    """A LimitRange whose min, defaultRequest, default and max are out of order for one resource (the API
    wants min ≤ defaultRequest ≤ default ≤ max, each where set)."""
    for _, name in RESOURCE_NAMES:
        for named, lower, higher in _LIMIT_ORDER:
            low, high = (limit_range.get(side) or {} for side in (lower, higher))
            a, b = quantity(low.get(name)), quantity(high.get(name))
            if a is not None and b is not None and a > b:
                return ((named, name), (f"{lower} {low[name]} is above {higher} {high[name]} for {name}; the API "
                                        "wants min ≤ defaultRequest ≤ default ≤ max"),
                        f"a {named}.{name} in order with the others")
    return None


def quota_counts(name: str) -> bool:
    """Whether a quota resource counts whole units (the API's IsIntegerResourceName): objects, or an
    extended resource (a prefixed name outside kubernetes.io that is not a requests. quota name)."""
    extended = "/" in name and "kubernetes.io/" not in name and not name.startswith("requests.")
    return name in QUOTA_INTEGER or extended


def quota_problem(hard: dict[str, Any] | None) -> Found | None:
    """A ResourceQuota limit on a resource that counts (objects, extended resources such as nvidia.com/gpu)
    that is not a whole number."""
    for name, value in (hard or {}).items():
        if not quota_counts(name):
            continue
        number = quantity(value)
        if number is not None and number != number.to_integral_value():
            return ((name,), f"{name} counts whole units: {value} is not a whole number",
                    "a whole number such as 8 (or a quantity such as 1k)")
    return None


def spread_problem(constraints: list[dict[str, Any]] | None) -> Found | None:
    """Two topology spread constraints with the same topologyKey and whenUnsatisfiable (the API refuses the
    repeat)."""
    seen: dict[tuple[Any, Any], int] = {}
    for i, c in enumerate(constraints or []):
        pair = (c.get("topologyKey"), c.get("whenUnsatisfiable", "ScheduleAnyway"))
        if pair in seen:
            return ((i,), (f"constraint {i} repeats constraint {seen[pair]}'s topologyKey {pair[0]!r} and "
                           f"whenUnsatisfiable {pair[1]}; the API refuses the pair twice"),
                    "one constraint per topologyKey and whenUnsatisfiable (merge them)")
        seen[pair] = i
    return None


# The divisors the API takes for a resourceFieldRef (validateContainerResourceDivisor), compared as quantities:
# cpu 1m or 1; memory, ephemeral storage and hugepages a power of 1000 or 1024 from 1 to exa/exbi.
_CPU_DIVISORS = {Decimal("0.001"), Decimal(1)}
_BYTE_DIVISORS = {Decimal(1)} | {_FACTOR[s] for s in ("k", "M", "G", "T", "P", "E", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei")}


def divisor_problem(ref: dict[str, Any]) -> Found | None:
    """Why a resourceFieldRef's divisor is one the API refuses for its resource, or None."""
    divisor = ref.get("divisor")
    if divisor is None:
        return None
    value, resource = quantity(divisor), str(ref.get("resource") or "")
    if resource.endswith(".cpu"):
        if value not in _CPU_DIVISORS:
            return ("divisor", f"divisor {divisor!r} is not one the API takes for {resource}", "1m or 1")
    elif value not in _BYTE_DIVISORS:
        return ("divisor", f"divisor {divisor!r} is not one the API takes for {resource}",
                "1, or 1 of k, M, G, T, P, E, Ki, Mi, Gi, Ti, Pi, Ei (e.g. 1Mi)")
    return None


def pod_affinity_term_problem(term: dict[str, Any]) -> Found | None:
    """Why a PodAffinityTerm's matchLabelKeys / mismatchLabelKeys are ones the API refuses, or None."""
    match, mismatch = term.get("matchLabelKeys") or [], term.get("mismatchLabelKeys") or []
    both = sorted(set(match) & set(mismatch))
    if both:
        return ("matchLabelKeys", f"{both} in both matchLabelKeys and mismatchLabelKeys", "each key in one of them")
    if (match or mismatch) and term.get("labelSelector") is None:
        return ("labelSelector", "matchLabelKeys and mismatchLabelKeys need a labelSelector", "a labelSelector")
    return None
