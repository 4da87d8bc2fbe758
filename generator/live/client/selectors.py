"""Which nodes a pod may land on, as the scheduler decides it (TaintToleration, NodeAffinity), and what a
label selector matches (metav1.LabelSelector): pure functions of the objects, no request."""

from __future__ import annotations

TYPE_CHECKING = False  # typing's import costs ~3 ms at start-up: for type checkers only
if TYPE_CHECKING:
    from typing import Any

HARD_EFFECTS = ("NoSchedule", "NoExecute")  # PreferNoSchedule only steers


def tolerates(toleration: dict[str, Any], taint: dict[str, Any]) -> bool:
    """The scheduler's ToleratesTaint: effect (empty: all), key (empty with Exists: all), then value."""
    effect = toleration.get("effect") or ""
    if effect and effect != taint.get("effect"):
        return False
    key = toleration.get("key") or ""
    if key and key != taint.get("key"):
        return False
    if (toleration.get("operator") or "Equal") == "Exists":
        return True
    return bool(key) and (toleration.get("value") or "") == (taint.get("value") or "")


def untolerated(spec: dict[str, Any], taints: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The node's NoSchedule/NoExecute taints that the pod spec does not tolerate."""
    tols = spec.get("tolerations") or []
    return [t for t in taints if t.get("effect") in HARD_EFFECTS and not any(tolerates(x, t) for x in tols)]


def requirement(req: dict[str, Any], labels: dict[str, str]) -> bool:
    op, values, have = req.get("operator"), req.get("values") or [], labels.get(req.get("key", ""))
    if op == "In":
        return have in values
    if op == "NotIn":
        return have not in values
    if op == "Exists":
        return have is not None
    if op == "DoesNotExist":
        return have is None
    if op in ("Gt", "Lt") and have is not None and values:
        try:
            a, b = int(have), int(values[0])
        except ValueError:
            return False
        return a > b if op == "Gt" else a < b
    return False


def _term(term: dict[str, Any], name: str, labels: dict[str, str]) -> bool:
    exprs, fields = term.get("matchExpressions") or [], term.get("matchFields") or []
    if not exprs and not fields:
        return False  # an empty term matches no node
    names = {"metadata.name": name}
    return all(requirement(e, labels) for e in exprs) and all(requirement(f, names) for f in fields)


def selects(spec: dict[str, Any], name: str, labels: dict[str, str]) -> bool:
    """Whether the pod spec's nodeSelector and required node affinity match the node."""
    if any(labels.get(k) != v for k, v in (spec.get("nodeSelector") or {}).items()):
        return False
    required = (((spec.get("affinity") or {}).get("nodeAffinity") or {})
                .get("requiredDuringSchedulingIgnoredDuringExecution") or {})
    terms = required.get("nodeSelectorTerms")
    return terms is None or any(_term(t, name, labels) for t in terms)


def taint_text(taint: dict[str, Any]) -> str:
    value = taint.get("value")
    return f"{taint.get('key')}{'=' + value if value else ''}:{taint.get('effect')}"


def selector_matches(selector: dict[str, Any] | None, labels: dict[str, str]) -> bool:
    """metav1.LabelSelectorAsSelector(selector).Matches(labels): null matches nothing, {} everything."""
    if selector is None:
        return False
    if any(labels.get(k) != v for k, v in (selector.get("matchLabels") or {}).items()):
        return False
    return all(requirement(e, labels) for e in selector.get("matchExpressions") or [])


def selector_text(selector: dict[str, Any] | None) -> str:
    if selector is None:
        return "null (no namespace)"
    parts = [f"{k}={v}" for k, v in (selector.get("matchLabels") or {}).items()]
    for e in selector.get("matchExpressions") or []:
        vals = e.get("values") or []
        parts.append(f"{e.get('key')} {e.get('operator')}" + (f" ({', '.join(vals)})" if vals else ""))
    return ", ".join(parts) or "{} (every namespace)"
