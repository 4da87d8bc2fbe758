"""Read YAML input files, keeping the line of every key, and apply KEY=VALUE overrides."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from generator.errors import InputError, Problem


@dataclass
class Document:
    """A parsed YAML mapping and the line (1-based) of each key path."""

    path: str
    data: dict[str, Any]
    lines: dict[tuple[str | int, ...], int] = field(default_factory=dict)
    overridden: set[tuple[str, ...]] = field(default_factory=set)

    def line_of(self, loc: tuple[str | int, ...]) -> int | None:
        """The line of the deepest known prefix of `loc`."""
        for n in range(len(loc), -1, -1):
            if loc[:n] in self.lines:
                return self.lines[loc[:n]]
        return None


def _index(node: yaml.Node, path: tuple[str | int, ...], lines: dict, file: str) -> Any:
    """Build Python data from a composed node, recording lines and refusing duplicate keys."""
    lines[path] = node.start_mark.line + 1
    if isinstance(node, yaml.MappingNode):
        out: dict[Any, Any] = {}
        for key_node, value_node in node.value:
            key = _scalar(key_node)
            if key in out:
                raise InputError([Problem(file, key_node.start_mark.line + 1, ".".join(map(str, path + (key,))),
                                          f"duplicate key {key!r}", "each key once per mapping")])
            lines[path + (key,)] = key_node.start_mark.line + 1
            out[key] = _index(value_node, path + (key,), lines, file)
        return out
    if isinstance(node, yaml.SequenceNode):
        return [_index(item, path + (i,), lines, file) for i, item in enumerate(node.value)]
    return _scalar(node)


def _scalar(node: yaml.Node) -> Any:
    loader = yaml.SafeLoader("")
    try:
        return loader.construct_object(node, deep=True)
    finally:
        loader.dispose()


def load(path: str | Path) -> Document:
    """Load one YAML mapping; bad YAML raises InputError with the line."""
    file = str(path)
    try:
        text = Path(path).read_text()
    except OSError as exc:
        raise InputError([Problem(file, None, "", f"cannot read the file: {exc.strerror}", "a readable YAML file")]) from None
    try:
        node = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark else None
        raise InputError([Problem(file, line, "", f"malformed YAML: {exc.problem or exc}", "valid YAML")]) from None
    lines: dict[tuple[str | int, ...], int] = {}
    data = _index(node, (), lines, file) if node is not None else {}
    if not isinstance(data, dict):
        raise InputError([Problem(file, 1, "", f"the file holds a {type(data).__name__}, not a mapping", "a YAML mapping of keys")])
    return Document(file, data, lines)


def apply_overrides(doc: Document, overrides: list[str]) -> None:
    """Apply `dotted.key=yaml-value` overrides to the document in place."""
    for item in overrides:
        key, sep, raw = item.partition("=")
        if not sep or not key or any(not part for part in key.split(".")):
            raise InputError([Problem("<command line>", None, key or item, f"bad override {item!r}",
                                      "KEY=VALUE with a dotted key path, e.g. cluster.trainer.nodes=4")])
        try:
            value = yaml.safe_load(raw) if raw != "" else ""
        except yaml.YAMLError as exc:
            raise InputError([Problem("<command line>", None, key, f"value is not YAML: {exc}", "a YAML scalar, list or mapping")]) from None
        parts = key.split(".")
        node = doc.data
        for i, part in enumerate(parts[:-1]):
            child = node.get(part)
            if child is None:
                child = node[part] = {}
            if not isinstance(child, dict):
                raise InputError([Problem("<command line>", None, ".".join(parts[: i + 1]),
                                          f"cannot set {key}: {'.'.join(parts[: i + 1])} is a {type(child).__name__}, not a mapping",
                                          "a key path through mappings")])
            node = child
        node[parts[-1]] = value
        doc.overridden.add(tuple(parts))
