"""Read YAML input files, keeping the line of every key, and apply KEY=VALUE overrides.

Every input is read once and its bytes kept (`generator.inputs.reading`, a FIFO, `/dev/stdin`, `<(…)` or `-`
can be read only once), within a size cap; parsing is bounded in nesting depth and in what aliases
expand to.
"""

from __future__ import annotations

import re
from pathlib import Path

import yaml
from yaml.events import AliasEvent, CollectionEndEvent, CollectionStartEvent, ScalarEvent

from generator.errors import InputError, Problem
from generator.inputs.credentials import override_problem
from generator.inputs.reading import display_name, read_input

TYPE_CHECKING = False  # typing's import costs ~3 ms at start-up: for type checkers only
if TYPE_CHECKING:
    from typing import Any

MAX_DEPTH = 100  # nested mappings/lists; Kubernetes overlays need about 15
MAX_ALIAS_NODES = 20_000  # values that aliases may add by repeating their anchors
MAX_NODES = 50_000  # values in all, aliases expanded (PyYAML in pure Python: ~50 µs a value)
MERGE_TAG = "tag:yaml.org,2002:merge"


class Document:
    """A parsed YAML mapping, the text it was read from and the line (1-based) of each key path."""

    def __init__(self, path: str, data: dict[str, Any], lines: dict[tuple[str | int, ...], int] | None = None,
                 overridden: set[tuple[str | int, ...]] | None = None, text: str = ""):
        self.path, self.data, self.text = path, data, text
        self.lines = {} if lines is None else lines
        self.overridden = set() if overridden is None else overridden

    def line_of(self, loc: tuple[str | int, ...]) -> int | None:
        """The line of the deepest known prefix of `loc`."""
        for n in range(len(loc), -1, -1):
            if loc[:n] in self.lines:
                return self.lines[loc[:n]]
        return None


def _decode(data: bytes, file: str) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        message = f"the file is not UTF-8 text: byte 0x{data[exc.start]:02x} cannot be decoded"
        raise InputError([Problem(file, line, "", message, "a YAML file saved as UTF-8")]) from None


# Parsing ------------------------------------------------------------------------------------------

class _BoundedLoader(yaml.SafeLoader):
    """SafeLoader that counts as the composer pulls events: nesting depth and values (both with
    aliases expanded), and the values aliases add; over a cap is refused before anything is built."""

    def __init__(self, text: str, file: str, max_depth: int = MAX_DEPTH):
        super().__init__(text)
        self.file, self.max_depth = file, max_depth
        self.frames: list[list[Any]] = []  # per open collection: [anchor, nodes at start, deepest depth inside]
        self.anchor_sizes: dict[str, tuple[int, int]] = {}  # anchor -> (nodes, height in collections)
        self.nodes = 0
        self.alias_nodes = 0

    def _refuse(self, event: Any, message: str, expected: str) -> InputError:
        return InputError([Problem(self.file, event.start_mark.line + 1, "", message, expected)])

    def _reach(self, depth: int, event: Any) -> None:
        if depth > self.max_depth:
            raise self._refuse(event, f"nested more than {self.max_depth} levels deep", "a flatter document")
        if self.frames and depth > self.frames[-1][2]:
            self.frames[-1][2] = depth

    def _count(self, event: Any, size: int) -> None:
        self.nodes += size
        if self.nodes > MAX_NODES:
            raise self._refuse(event, f"the document holds more than {MAX_NODES} values"
                               + (f" ({self.alias_nodes} of them repeated by aliases)" if self.alias_nodes else ""),
                               "a smaller document")

    def get_event(self) -> Any:
        event = super().get_event()
        if isinstance(event, CollectionStartEvent):
            self._count(event, 1)
            self._reach(len(self.frames) + 1, event)
            self.frames.append([event.anchor, self.nodes - 1, len(self.frames) + 1])
        elif isinstance(event, CollectionEndEvent):
            anchor, start, deepest = self.frames.pop()
            if anchor is not None:
                self.anchor_sizes[anchor] = (self.nodes - start, deepest - len(self.frames))
            if self.frames:
                self._reach(deepest, event)
        elif isinstance(event, ScalarEvent):
            self._count(event, 1)
            if event.anchor is not None:
                self.anchor_sizes[event.anchor] = (1, 0)
        elif isinstance(event, AliasEvent):
            if any(frame[0] == event.anchor for frame in self.frames):
                raise self._refuse(event, f"alias *{event.anchor} is used inside its own anchor &{event.anchor}",
                                   "an alias after the anchored node ends")
            if event.anchor in self.anchor_sizes:  # an undefined one is the composer's error
                size, height = self.anchor_sizes[event.anchor]
                self.alias_nodes += size
                if self.alias_nodes > MAX_ALIAS_NODES:
                    raise self._refuse(event, f"aliases expand to more than {MAX_ALIAS_NODES} nodes (an alias bomb?)",
                                       "anchors repeated a reasonable number of times")
                self._count(event, size)
                self._reach(len(self.frames) + height, event)
        return event



def _line(exc: yaml.YAMLError, text: str) -> int | None:
    mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
    if mark is not None:
        return mark.line + 1
    position = getattr(exc, "position", None)  # a ReaderError: an unacceptable character
    return text[:position].count("\n") + 1 if isinstance(position, int) else None


def _yaml_problem(exc: yaml.YAMLError, text: str, file: str) -> Problem:
    if isinstance(exc, yaml.reader.ReaderError):
        char = exc.character if isinstance(exc.character, int) else ord(exc.character)
        message = f"malformed YAML: character {chr(char)!r} (U+{char:04X}) is not allowed in YAML"
    elif isinstance(exc, yaml.composer.ComposerError) and exc.context and exc.context_mark:
        message = f"malformed YAML: {exc.context} (line {exc.context_mark.line + 1}), {exc.problem}"
    elif isinstance(exc, yaml.MarkedYAMLError):
        message = f"malformed YAML: {exc.problem or exc.context or exc}"
    else:
        message = f"malformed YAML: {exc}"
    return Problem(file, _line(exc, text), "", message, "valid YAML")


_SURROGATE = re.compile("[\ud800-\udfff]")


def _whole_characters(text: str) -> str:
    """`"\\ud83d\\ude80"` (JSON's escape of U+1F680, which PyYAML reads as two halves) as the one
    character; a lone half raises UnicodeDecodeError (UTF-8 cannot carry it: Helm could not be given it)."""
    return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le")


class _Builder:
    """Python data from composed nodes, recording lines, refusing duplicate and non-scalar keys and
    tagged collections, applying `<<` merge keys: explicit keys win; a key that two merged mappings
    set differently must be explicit (readers disagree on which wins)."""

    def __init__(self, loader: yaml.SafeLoader, file: str, lines: dict[tuple[Any, ...], int]):
        self.loader, self.file, self.lines = loader, file, lines

    def problem(self, node: yaml.Node, path: tuple[Any, ...], message: str, expected: str = "") -> InputError:
        where = _where(tuple(path))
        return InputError([Problem(self.file, node.start_mark.line + 1, where, message, expected)])

    def build(self, node: yaml.Node, path: tuple[Any, ...]) -> Any:
        self.lines[path] = node.start_mark.line + 1
        if isinstance(node, yaml.MappingNode):
            self.plain(node, path, "tag:yaml.org,2002:map")
            return self.mapping(node, path)
        if isinstance(node, yaml.SequenceNode):
            self.plain(node, path, "tag:yaml.org,2002:seq")
            return [self.build(item, path + (i,)) for i, item in enumerate(node.value)]
        return self.scalar(node, path)

    def scalar(self, node: yaml.Node, path: tuple[Any, ...]) -> Any:
        try:
            value = self.loader.construct_object(node, deep=True)
            return _whole_characters(value) if isinstance(value, str) and _SURROGATE.search(value) else value
        except UnicodeDecodeError as exc:  # from _whole_characters
            char = f"U+{int.from_bytes(exc.object[exc.start:exc.start + 2], 'little'):04X}"
            raise self.problem(node, path, f"the value holds {char}, half of a UTF-16 surrogate pair (a \\u escape "
                                           "without its other half), which is not a character",
                               "whole characters: raw in UTF-8, or escaped as \\U0001F680") from None
        except yaml.MarkedYAMLError as exc:
            raise self.problem(node, path, f"cannot read the value: {exc.problem or exc}",
                               "a plain YAML value") from None
        except Exception as exc:
            raise self.problem(node, path, f"cannot read the value {node.value!r} as {node.tag}: {exc}",
                               "a plain YAML value") from None

    def plain(self, node: yaml.Node, path: tuple[Any, ...], tag: str) -> None:
        """Collections carry no tag but their own: `!!python/…`, `!!set`, `!!omap` and custom tags are refused."""
        if node.tag != tag:
            raise self.problem(node, path, f"cannot read the value: the tag {node.tag!r} is not supported",
                               "a plain YAML mapping or list, without a tag")

    def key(self, node: yaml.Node, path: tuple[Any, ...]) -> Any:
        if not isinstance(node, yaml.ScalarNode):
            raise self.problem(node, path, "a mapping key must be a plain value, not a list or mapping",
                               "a key such as name:")
        return self.scalar(node, path)

    def mapping(self, node: yaml.MappingNode, path: tuple[Any, ...]) -> dict[Any, Any]:
        out: dict[Any, Any] = {}
        merged: dict[Any, Any] = {}
        merged_lines: dict[tuple[Any, ...], int] = {}
        clashes: dict[Any, yaml.Node] = {}
        merges = 0
        for key_node, value_node in node.value:
            if key_node.tag == MERGE_TAG:
                merges += 1
                if merges > 1:
                    raise self.problem(key_node, path + ("<<",), "duplicate key '<<'",
                                       "one merge key; list several mappings: <<: [*a, *b]")
                merged = self.merge(value_node, path, merged_lines, clashes)
                continue
            key = self.key(key_node, path)
            if key in out:
                raise self.problem(key_node, path + (key,), f"duplicate key {key!r}", "each key once per mapping")
            self.lines[path + (key,)] = key_node.start_mark.line + 1
            out[key] = self.build(value_node, path + (key,))
        if not merged:
            return out
        for key, source in clashes.items():
            if key not in out:
                raise self.problem(source, path + (key,),
                                   f"{key!r} is set differently by two merged mappings, and YAML readers "
                                   "disagree on which wins (the spec: the first; PyYAML: not always)",
                                   f"set {key} explicitly next to the '<<' key")
        for loc, line in merged_lines.items():
            if loc[len(path)] not in out:
                self.lines.setdefault(loc, line)
        return {**{k: v for k, v in merged.items() if k not in out}, **out}

    def merge(self, node: yaml.Node, path: tuple[Any, ...], lines: dict[tuple[Any, ...], int],
              clashes: dict[Any, yaml.Node]) -> dict[Any, Any]:
        """The mapping(s) a `<<` key merges in; their lines go to `lines`, to keep only the keys used;
        keys that two of them set differently go to `clashes`."""
        sources = node.value if isinstance(node, yaml.SequenceNode) else [node]
        out: dict[Any, Any] = {}
        for source in sources:
            if not isinstance(source, yaml.MappingNode):
                raise self.problem(source, path + ("<<",), "a merge key '<<' takes a mapping or a list of mappings",
                                   "<<: *anchor or <<: [*a, *b]")
            saved, self.lines = self.lines, {}
            try:
                part = self.mapping(source, path)
                for loc, line in self.lines.items():
                    if len(loc) > len(path) and loc[len(path)] not in out:
                        lines[loc] = line
            finally:
                self.lines = saved
            for k, v in part.items():
                if k not in out:
                    out[k] = v
                elif out[k] != v:
                    clashes.setdefault(k, source)
        return out


def parse(text: str, file: str, max_depth: int = MAX_DEPTH) -> tuple[Any, dict[tuple[Any, ...], int]]:
    """YAML text -> (data or None when empty, line of each key path); every failure is an InputError."""
    lines: dict[tuple[Any, ...], int] = {}
    loader = None
    try:
        loader = _BoundedLoader(text, file, max_depth)  # refuses unprintable characters at once
        node = loader.get_single_node()
        data = _Builder(loader, file, lines).build(node, ()) if node is not None else None
    except InputError:
        raise
    except yaml.YAMLError as exc:
        raise InputError([_yaml_problem(exc, text, file)]) from None
    except RecursionError:  # the bounds above keep well clear of it; a last resort
        raise InputError([Problem(file, None, "", "the document is nested too deeply to read",
                                  "a flatter document")]) from None
    finally:
        if loader is not None:
            loader.dispose()
    return data, lines


def load(path: str | Path) -> Document:
    """Load one YAML mapping; bad input raises InputError with the line."""
    file = display_name(path)
    text = _decode(read_input(path), file)
    data, lines = parse(text, file)
    data = {} if data is None else data
    if not isinstance(data, dict):
        raise InputError([Problem(file, 1, "", f"the file holds a {type(data).__name__}, not a mapping",
                                  "a YAML mapping of keys")])
    return Document(file, data, lines, text=text)


# Overrides ----------------------------------------------------------------------------------------

OVERRIDE_GRAMMAR = "KEY=VALUE: a dotted key path, [N] for a list item (e.g. cluster.trainer.nodes=4, policy.tags[0]=x)"
_SEGMENT = re.compile(r"([^.\[\]]+)((?:\[[0-9]+\])*)")
_INDEX = re.compile(r"\[([0-9]+)\]")


def key_path_text(path: tuple[Any, ...]) -> str:
    """("a", "b", 0, "c") -> `a.b[0].c`: how every error names a key path."""
    return "".join(f"[{p}]" if isinstance(p, int) else ("." if i else "") + str(p) for i, p in enumerate(path))


_where = key_path_text


def _key_path(key: str) -> tuple[str | int, ...] | None:
    """`a.b[0].c` -> ("a", "b", 0, "c"); None when it is not of the grammar."""
    out: list[str | int] = []
    for segment in key.split("."):
        match = _SEGMENT.fullmatch(segment)
        if match is None:
            return None
        out.append(match[1])
        out.extend(int(n) for n in _INDEX.findall(match[2]))
    return tuple(out)


def _bad(key: str, message: str, expected: str, suggestion: str = "") -> InputError:
    return InputError([Problem("<command line>", None, key, message, expected, suggestion)])


def _set(data: dict[str, Any], path: tuple[str | int, ...], value: Any, item: str) -> None:
    """Set `value` at `path`: a missing (or null) mapping key on the way becomes a mapping; a list
    index must name an item that exists."""
    node: Any = data
    for i, part in enumerate(path):
        where, last = _where(path[: i + 1]), i == len(path) - 1
        if isinstance(part, int):
            if not isinstance(node, list):
                raise _bad(where, f"cannot set {_where(path)}: {_where(path[:i])} is a {type(node).__name__}, "
                                  "not a list", "[N] only after a key that holds a list")
            if part >= len(node):
                raise _bad(where, f"index {part} is out of range: {_where(path[:i])} has {len(node)} item"
                                  + ("" if len(node) == 1 else "s"),
                           {0: "an existing item (the list is empty)", 1: "index 0"}.get(
                               len(node), f"an index from 0 to {len(node) - 1}"),
                           f"{_where(path[:i])}=[...] to set the whole list")
        elif isinstance(node, list):
            fix = item.replace(f"{_where(path[:i])}.{part}", f"{_where(path[:i])}[{part}]", 1)
            raise _bad(where, f"cannot set {_where(path)}: {_where(path[:i])} is a list, and a list item "
                              "is written [N]", "a key path with [N] for a list item",
                       fix if part.isdigit() else "")
        elif not isinstance(node, dict):
            raise _bad(_where(path[:i]), f"cannot set {_where(path)}: {_where(path[:i])} is a "
                                         f"{type(node).__name__}, not a mapping", "a key path through mappings")
        if last:
            node[part] = value
        else:
            child = node[part] if isinstance(part, int) else node.get(part)
            if child is None and isinstance(path[i + 1], int):
                raise _bad(where, f"cannot set {_where(path)}: {where} is not set, and [N] sets an item of an "
                                  "existing list", "a key that holds a list", f"{where}=[...] to set the whole list")
            if child is None:
                child = node[part] = {}
            node = child


def apply_overrides(doc: Document, overrides: list[str]) -> None:
    """Apply `KEY=VALUE` overrides to the document in place (see OVERRIDE_GRAMMAR): the key a dotted
    path of mapping keys, `[N]` after a key for an item of its list; the value YAML."""
    for item in overrides:
        key, sep, raw = item.partition("=")
        path = _key_path(key) if sep and key else None
        if path is None:
            raise _bad(key or item, f"bad override {item!r}", OVERRIDE_GRAMMAR)
        if len(path) >= MAX_DEPTH:
            raise _bad(key[:60] + "…", f"the key path has {len(path)} parts", f"at most {MAX_DEPTH - 1}")
        try:
            value = parse(raw, "<command line>", MAX_DEPTH - len(path))[0] if raw != "" else ""
        except InputError as exc:
            inner = exc.problems[0]
            expected = "a YAML scalar, list or mapping" if inner.expected == "valid YAML" else inner.expected
            raise _bad(key, f"value is not YAML: {inner.message.removeprefix('malformed YAML: ')}", expected) from None
        credential = override_problem(path, value)
        if credential:
            name, why = credential
            words = [p for p in path if isinstance(p, str)]
            env = "_".join(words[-2:] if len(words) > 1 else words).upper().replace("-", "_")
            raise _bad(key, why, "no credential on the command line: the GPU pods read it from a Secret as an "
                                 f"environment variable ({env})",
                       f"infra.env: [{{name: {env}, valueFrom: {{secretKeyRef: {{name: <secret>, key: {env}}}}}}}] "
                       "in the infra spec")
        _set(doc.data, path, value, item)
        doc.overridden.add(path)
