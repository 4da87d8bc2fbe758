"""The plain block YAML that kubectl, kind, kubeadm and the playground write a kubeconfig in, read without PyYAML.

Importing PyYAML costs ~10 ms a process (its pure-Python reader compiles one large regular expression at import, even
when libyaml parses), a tenth of `status`. A kubeconfig as the tools write it is a small subset of YAML: block
mappings and sequences by indentation, a sequence's `- ` at its key's indentation or deeper, plain or quoted
one-line scalars, and `{}`/`[]`. `load` reads exactly that subset and raises Unsupported on anything else (an
anchor, a tag, a flow collection with items, a multi-line or block scalar, a comment after a value, a key that is
not a plain name, a tab, a duplicate key, a scalar PyYAML would resolve to a number or a date): the caller then
parses the text with PyYAML. So a document `load` returns, PyYAML's safe loader returns too, equal
(tests/unit/live/client/test_block_yaml.py checks both on generated documents and on every kubeconfig of the tests).
"""

from __future__ import annotations

import functools
import re

TYPE_CHECKING = False  # typing's import costs ~3 ms at start-up: for type checkers only
if TYPE_CHECKING:
    from typing import Any


class Unsupported(ValueError):
    """The text is outside the subset: parse it with PyYAML."""


# PyYAML's implicit resolution of a plain scalar (yaml/resolver.py, YAML 1.1), as far as the subset needs it:
# words that are booleans or null, and the first characters of the scalars it may resolve to anything else
BOOLS = dict.fromkeys(("yes", "Yes", "YES", "true", "True", "TRUE", "on", "On", "ON"), True)
BOOLS.update(dict.fromkeys(("no", "No", "NO", "false", "False", "FALSE", "off", "Off", "OFF"), False))
NULLS = ("null", "Null", "NULL", "~")
NUMERIC_START = set("-+.0123456789")  # an int, a float or a timestamp may start so (resolver.py's first characters)
INDICATORS = set("-?:,[]{}#&*!|>'\"%@`<=~")  # a plain scalar starting so is not plain, or is a merge/value/null
KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_.\-/]*")
# PyYAML's int, float and timestamp patterns (yaml/resolver.py), compiled only for a scalar that starts like one
_NUMERIC = (r"""[-+]?0b[0-1_]+|[-+]?0[0-7_]+|[-+]?(?:0|[1-9][0-9_]*)|[-+]?0x[0-9a-fA-F_]+"""
            r"""|[-+]?[1-9][0-9_]*(?::[0-5]?[0-9])+"""
            r"""|[-+]?(?:[0-9][0-9_]*)\.[0-9_]*(?:[eE][-+][0-9]+)?|\.[0-9][0-9_]*(?:[eE][-+][0-9]+)?"""
            r"""|[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+\.[0-9_]*|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN)"""
            r"""|[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]"""
            r"""|[0-9][0-9][0-9][0-9]-[0-9][0-9]?-[0-9][0-9]?(?:[Tt]|[ \t]+)[0-9][0-9]?:[0-9][0-9]:[0-9][0-9]"""
            r"""(?:\.[0-9]*)?(?:[ \t]*(?:Z|[-+][0-9][0-9]?(?::[0-9][0-9])?))?""")


@functools.cache
def _numeric() -> re.Pattern[str]:
    return re.compile(_NUMERIC)


def load(text: str) -> dict[str, Any]:
    """The mapping the document holds ({} for an empty one); Unsupported when it is outside the subset."""
    if "\t" in text or "\r" in text or "\\" in text or not text.isascii():
        raise Unsupported("tabs, carriage returns, escapes or non-ASCII text")
    lines: list[tuple[int, str]] = []
    for raw in text.split("\n"):
        body = raw.rstrip(" ")
        content = body.lstrip(" ")
        if not content or content.startswith("#"):
            continue  # a blank line, or a comment of its own
        if not content.isprintable():
            raise Unsupported("a control character")
        lines.append((len(body) - len(content), content))
    if not lines:
        return {}
    if lines[0][0] != 0 or _item(lines[0][1]) is not None or _key(lines[0][1]) is None:
        raise Unsupported("not a block mapping at the top")
    doc, end = _mapping(lines, 0, 0)
    if end != len(lines):
        raise Unsupported(f"line {end + 1} of the content is not where a key or an item can be")
    return doc


def _item(content: str) -> str | None:
    """What follows a sequence item's dash ('' for a lone dash), or None when the line is no item."""
    if content == "-":
        return ""
    if content.startswith("- "):
        return content[2:].lstrip(" ")
    return None


def _key(content: str) -> tuple[str, str] | None:
    """(key, what follows `key:`) of a `key: value` or `key:` line, else None (not a key line: maybe a scalar)."""
    m = KEY.match(content)
    if m is None or content[m.end():m.end() + 1] != ":":
        return None
    rest = content[m.end() + 1:]
    if rest and rest[0] != " ":
        return None  # `http://...`: a colon inside a scalar
    key = m.group()
    if key in BOOLS or key in NULLS or key[0] in NUMERIC_START:
        raise Unsupported(f"key {key!r} is not a string to YAML")
    return key, rest.lstrip(" ")


def _mapping(lines: list[tuple[int, str]], i: int, indent: int,
             first: str | None = None) -> tuple[dict[str, Any], int]:
    """The mapping whose keys are at `indent` from line i (`first`: line i's content from the key on, when the key
    follows a sequence's dash); (mapping, the next line)."""
    out: dict[str, Any] = {}
    while i < len(lines):
        at, content = lines[i]
        if first is not None:
            content, first = first, None
        elif at != indent:
            break
        pair = _key(content)
        if pair is None:
            raise Unsupported(f"{content[:40]!r}: not a `key: value` line")
        key, rest = pair
        if key in out:
            raise Unsupported(f"key {key!r} twice")
        i += 1
        if rest:
            out[key] = _scalar(rest)
            continue
        # `key:` alone: a block below it (deeper, or a sequence at the key's own indentation), else null
        if i < len(lines) and (lines[i][0] > indent or (lines[i][0] == indent and _item(lines[i][1]) is not None)):
            out[key], i = _block(lines, i)
        else:
            out[key] = None
    if i < len(lines) and lines[i][0] > indent:
        raise Unsupported(f"{lines[i][1][:40]!r}: deeper than the mapping above it")
    return out, i


def _sequence(lines: list[tuple[int, str]], i: int, indent: int) -> tuple[list[Any], int]:
    out: list[Any] = []
    while i < len(lines) and lines[i][0] == indent and (rest := _item(lines[i][1])) is not None:
        content = lines[i][1]
        if not rest:  # a lone dash: the item is the block below it, else null
            i += 1
            if i < len(lines) and lines[i][0] > indent:
                value, i = _block(lines, i)
                out.append(value)
            else:
                out.append(None)
            continue
        if _item(rest) is not None:
            raise Unsupported("a sequence inside a sequence on one line")
        column = indent + len(content) - len(rest)  # where the item's content starts
        if _key(rest) is not None:  # `- key: ...`: a mapping whose keys are at that column
            value, i = _mapping(lines, i, column, first=rest)
            out.append(value)
        else:
            out.append(_scalar(rest))
            i += 1
            if i < len(lines) and lines[i][0] > indent:
                raise Unsupported(f"{lines[i][1][:40]!r}: a scalar item continued")
    if i < len(lines) and lines[i][0] > indent:
        raise Unsupported(f"{lines[i][1][:40]!r}: deeper than the sequence above it")
    return out, i


def _block(lines: list[tuple[int, str]], i: int) -> tuple[Any, int]:
    indent, content = lines[i]
    if _item(content) is not None:
        return _sequence(lines, i, indent)
    return _mapping(lines, i, indent)


def _scalar(text: str) -> Any:
    """A one-line value as PyYAML's safe loader reads it; Unsupported for anything it would read otherwise."""
    if text == "{}":
        return {}
    if text == "[]":
        return []
    if " #" in text:
        raise Unsupported("a comment after a value")
    head = text[0]
    if head == '"':
        inner = text[1:-1]
        if len(text) < 2 or text[-1] != '"' or '"' in inner:  # (a backslash never gets here)
            raise Unsupported("a double-quoted scalar this reader does not take")
        return inner
    if head == "'":
        inner = text[1:-1]
        if len(text) < 2 or text[-1] != "'" or "'" in inner.replace("''", ""):
            raise Unsupported("a single-quoted scalar this reader does not take")
        return inner.replace("''", "'")
    if ": " in text or text.endswith(":"):
        raise Unsupported("a colon that makes a key in a value")
    if text == "-" or text.startswith("- "):
        raise Unsupported("a sequence's dash where a value is")
    if text in BOOLS:
        return BOOLS[text]
    if text in NULLS:
        return None
    if head in NUMERIC_START:
        if _numeric().fullmatch(text):
            raise Unsupported(f"{text[:40]!r}: a number or a date to YAML")
        if text.startswith(("---", "...")):
            raise Unsupported(f"{text[:40]!r}: a document marker")
        return text  # `--region`, `.kube/config`, `470be6...`: a string
    if head in INDICATORS:
        raise Unsupported(f"{text[:40]!r}: starts with an indicator")
    return text
