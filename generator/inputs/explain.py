"""A pydantic ValidationError explained as Problems: file, line, key path, what was expected and a
close match, in the words of the other bad-input errors."""

from __future__ import annotations

import difflib
import math
import re
from functools import cache

from generator.errors import InputError, Problem
from generator.inputs.loader import key_path_text

TYPE_CHECKING = False  # typing's import costs ~3 ms at start-up: for type checkers only
if TYPE_CHECKING:
    from typing import Any

    from pydantic import BaseModel, ValidationError
    from pydantic_core import ErrorDetails

# pydantic and the models are imported only when a validation error is explained: compose imports
# this module, and its happy path (schema_check) must not pay for them.


@cache
def pattern_names() -> dict[str, str]:
    from generator.inputs.models import env, namespace, sandbox
    from generator.inputs.models import types as t

    return {
        t.ANNOTATION_KEY_RE: "an annotation key: a name of letters, digits, '-', '_', '.' (at most 63), after an "
                             "optional DNS prefix and '/', e.g. example.com/owner",
        namespace.QUOTA_NAME_RE: "a quota resource: cpu, memory, ephemeral-storage, requests.<one of those or "
                                 "storage>, limits.<one of those>, pods, services, secrets, configmaps, "
                                 "persistentvolumeclaims, …, or a prefixed name such as requests.nvidia.com/gpu or "
                                 "count/deployments.apps",
        env.CONFIG_KEY_RE: "a key of a Secret or ConfigMap: letters, digits, '-', '_', '.' (not '.' or '..', nor "
                           "beginning with '..')",
        env.FIELD_PATH_RE: "a pod field: metadata.name, metadata.namespace, metadata.uid, metadata.labels['<key>'], "
                           "metadata.annotations['<key>'], spec.nodeName, spec.serviceAccountName, status.hostIP(s) "
                           "or status.podIP(s)",
        env.RESOURCE_FIELD_RE: "limits.cpu, limits.memory, limits.ephemeral-storage or requests.cpu, requests.memory, "
                               "requests.ephemeral-storage (or a hugepages-<size> of either)",
        sandbox.PERCENT_RE: "a percentage such as 25%",
        t.QUANTITY_RE: "a Kubernetes quantity such as 1, 500m, 2Gi or 20Gi",
        t.DNS1035_LABEL_RE: "a DNS-1035 label: lower-case letters, digits and '-', starting with a letter",
        t.DNS1123_LABEL_RE: "a DNS-1123 label: lower-case letters, digits and '-'",
        t.DNS1123_SUBDOMAIN_RE: "a DNS-1123 name: lower-case letters, digits, '-' and '.'",
        t.CIDR_RE: "a CIDR block such as 10.0.0.0/8 or 2001:db8::/32",
        t.IMAGE_REPO_RE: "an image repository such as ghcr.io/org/ubuntu-swe",
        t.IMAGE_TAG_RE: "an image tag (letters, digits, '_', '.', '-')",
        t.DIGEST_RE: "a digest sha256:<64 hex digits>",
        t.LABEL_KEY_RE: "a label key: a name of letters, digits, '-', '_', '.' (at most 63), after an optional "
                        "DNS prefix and '/', e.g. nvidia.com/gpu.present",
        t.LABEL_VALUE_RE: "a label value: at most 63 letters, digits, '-', '_', '.', beginning and ending with a "
                          "letter or digit (or empty)",
        f"^$|{t.LABEL_KEY_RE}": "a taint key (a label key such as nvidia.com/gpu), or empty",
        "^/": "an absolute path",
    }


def _yaml_number(value: Any) -> str:
    if isinstance(value, float) and math.isnan(value):
        return ".nan"
    if isinstance(value, float) and math.isinf(value):
        return ".inf" if value > 0 else "-.inf"
    return repr(value)


def _looks_typed(text: str) -> bool:
    """Whether a string would be a number or boolean without its quotes."""
    import yaml

    try:
        return not isinstance(yaml.safe_load(text), str)
    except yaml.YAMLError:
        return False


def _field_model(model: type[BaseModel] | None, key: str) -> type[BaseModel] | None:
    if model is None:
        return None
    field = model.model_fields.get(key)
    if field is None:
        for f in model.model_fields.values():
            if f.alias == key:
                field = f
    if field is None:
        return None
    from generator.inputs.models import types as t

    return t.model_in(field.annotation)


def _keys_of(model: type[BaseModel] | None) -> list[str]:
    if model is None:
        return []
    return [f.alias or name for name, f in model.model_fields.items()]


def _data_path(data: Any, loc: tuple[Any, ...]) -> tuple[Any, ...]:
    """The prefix of a pydantic loc that indexes real data (drops union/validator tags)."""
    out: list[Any] = []
    node = data
    for part in loc:
        if isinstance(node, dict) and part in node:
            out.append(part)
            node = node[part]
        elif isinstance(node, list) and isinstance(part, int) and 0 <= part < len(node):
            out.append(part)
            node = node[part]
        else:
            if isinstance(node, dict) and isinstance(part, str) and not re.search(r"[\[\]-]", part):
                out.append(part)  # a missing or unknown key
            break
    return tuple(out)


def _model_at(root: type[BaseModel], path: tuple[Any, ...]) -> type[BaseModel] | None:
    model: type[BaseModel] | None = root
    for part in path:
        if isinstance(part, int):
            continue
        model = _field_model(model, part)
    return model


def _describe(err: ErrorDetails, root: type[BaseModel], path: tuple[Any, ...]) -> tuple[str, str, str]:
    kind = err["type"]
    ctx = err.get("ctx") or {}
    given = err.get("input")
    if kind == "extra_forbidden":
        parent = _model_at(root, path[:-1])
        allowed = _keys_of(parent)
        key = str(path[-1]) if path else ""
        close = difflib.get_close_matches(key, allowed, n=1, cutoff=0.6)
        return f"unknown key {key!r}", "one of: " + ", ".join(allowed), close[0] if close else ""
    if kind == "missing":
        parent = _model_at(root, path[:-1])
        field = parent.model_fields.get(str(path[-1])) if parent else None
        return "required key is missing", (field.description if field else "") or "a value", ""
    if kind == "string_pattern_mismatch":
        name = pattern_names().get(ctx.get("pattern", ""), f"a string matching {ctx.get('pattern')}")
        return f"{given!r} is not valid", name, ""
    if kind == "literal_error":
        options = re.findall(r"'([^']*)'", str(ctx.get("expected", "")))
        close = difflib.get_close_matches(str(given), options, n=1, cutoff=0.5)
        return f"{given!r} is not allowed", "one of: " + ", ".join(options), close[0] if close else ""
    if kind in ("greater_than_equal", "greater_than", "less_than_equal", "less_than", "too_long", "too_short",
                "string_too_long", "string_too_short"):
        bound = err["msg"].replace("Input should be ", "").replace("String should ", "").replace("List should ", "")
        return f"{given!r} is out of range", bound, ""
    if kind == "refused":
        return ctx["message"], ctx.get("expected", ""), ""
    if kind == "value_error":
        msg = err["msg"].removeprefix("Value error, ")
        return msg, "", ""
    if kind == "invalid_key" or (err["loc"] and err["loc"][-1] == "[key]"):
        return (f"key {given!r} is not a string", ("a string key; YAML reads unquoted yes/no/on/off/null and numbers "
                 "as other types, so quote it (e.g. 'on':)"), "")
    if kind == "non_finite" or kind == "finite_number" or (isinstance(given, float) and not math.isfinite(given)):
        number = ctx["number"] if kind == "non_finite" else _yaml_number(given)
        return f"{number} is not a finite number", "a finite number (Helm and Kubernetes have no .inf or .nan)", ""
    if kind in ("int_type", "int_parsing", "bool_type", "bool_parsing", "string_type", "dict_type", "list_type",
                "model_type", "float_type", "int_from_float"):
        expected = err["msg"].replace("Input should be", "").strip()
        if isinstance(given, bool) and kind != "bool_type":
            return (f"wrong type: {given!r} is a boolean (YAML reads yes/no, on/off, true/false as booleans)",
                    expected, "")
        if isinstance(given, str) and kind in ("int_type", "float_type", "bool_type") and _looks_typed(given):
            return f"wrong type: {given!r} is a string", f"{expected} (write it without quotes)", ""
        return f"wrong type: {given!r}", expected, ""
    return err["msg"], "", ""


def from_validation(exc: ValidationError, root: type[BaseModel], docs: list[tuple[tuple[Any, ...], Any]],
                    prefix: tuple[Any, ...] = ()) -> InputError:
    """Turn a pydantic error into Problems. `docs` maps a loc prefix to the Document it came from."""
    problems: list[Problem] = []
    seen: set[tuple[Any, ...]] = set()
    for err in exc.errors(include_url=False):
        loc = tuple(err["loc"])
        doc_prefix, doc = next(((p, d) for p, d in docs if loc[: len(p)] == p), docs[0])
        rel = _data_path(doc.data, loc[len(doc_prefix):])
        rel += tuple((err.get("ctx") or {}).get("inside", ()))  # free-form data (non_finite, refused): the key in it
        if rel in seen:
            continue
        seen.add(rel)
        message, expected, suggestion = _describe(err, root, doc_prefix + rel)
        overridden = any(rel[: len(o)] == o for o in doc.overridden)
        file = "<command line>" if overridden else doc.path
        line = None if overridden else doc.line_of(rel)
        bad_key = err["type"] == "invalid_key" or loc[-1:] == ("[key]",)
        shown = rel[:-1] if bad_key else rel  # the message names the key itself
        path = key_path_text(tuple(prefix + shown))
        problems.append(Problem(file, line, path, message, expected, suggestion))
    problems.sort(key=lambda p: (p.file, p.line or 0))
    return InputError(problems)
