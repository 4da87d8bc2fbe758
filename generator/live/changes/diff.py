"""Key paths where two JSON-like trees differ: the words of the training-loss guard."""

from __future__ import annotations

from typing import Any


def diff_paths(old: Any, new: Any, path: str = "", out: list[str] | None = None, limit: int = 8) -> list[str]:
    """Key paths where two JSON-like trees differ (worker groups are indexed by groupName)."""
    out = [] if out is None else out
    if len(out) >= limit:
        return out
    if isinstance(old, dict) and isinstance(new, dict):
        for k in sorted(set(old) | set(new)):
            diff_paths(old.get(k), new.get(k), f"{path}.{k}" if path else k, out, limit)
    elif isinstance(old, list) and isinstance(new, list) and old + new and all(
            isinstance(x, dict) and ("groupName" in x or "name" in x) for x in old + new):
        o = {x.get("groupName", x.get("name")): x for x in old}
        n = {x.get("groupName", x.get("name")): x for x in new}
        for k in sorted(set(o) | set(n)):
            diff_paths(o.get(k), n.get(k), f"{path}[{k}]", out, limit)
    elif old != new:
        if isinstance(old, (dict, list)) or isinstance(new, (dict, list)):
            out.append(path)
        else:
            out.append(f"{path}: {old!r} -> {new!r}")
    return out
