"""The table of pinned tools (generator/tool_table.toml), read and checked in one place.

Stdlib only and free of the package's other modules: hack/suite.py loads this file by its path before the
virtualenv exists, and hack/tools.sh runs it as a script (`python3 generator/tool_table.py shell`) to learn the
pins, each target's build function and cache entry, its default list and the `node` group.

    python3 generator/tool_table.py shell [TABLE]   the table as bash assignments (hack/tools.sh evaluates them)
    python3 generator/tool_table.py docs [--check]  write (or check) docs/versions.md's generated table
    python3 generator/tool_table.py matrix ENTRY    the minors `make test-matrix` runs of the cache entry ENTRY

$DOCKYARD_TOOLS_TABLE names another table (tests: a bumped pin, a row added), for every reader at once.
"""

from __future__ import annotations

import os
import re
import shlex
import sys

MIN_PYTHON = (3, 11)  # tomllib; pyproject.toml's requires-python


def python_problem(version: tuple[int, ...], executable: str) -> str | None:
    """One line saying this Python is too old for the table, or None. hack/suite.py and hack/tools.sh run this
    file with the machine's python3 before any virtualenv: a 3.10 would otherwise end in a traceback."""
    if tuple(version[:2]) >= MIN_PYTHON:
        return None
    found = ".".join(str(v) for v in version[:3])
    need = ".".join(str(v) for v in MIN_PYTHON)
    return (f"dockyard-k8s needs Python >= {need} (tomllib); found Python {found} ({executable}): "
            "put a newer python3 first on PATH")


if (_problem := python_problem(sys.version_info[:3], sys.executable)) is not None:
    print(_problem, file=sys.stderr)
    raise SystemExit(2)

import json  # noqa: E402  (after the check above: Python 3.11's tomllib is read lazily, in _document)
from pathlib import Path  # noqa: E402

TABLE = Path(__file__).with_name("tool_table.toml")
# The table parsed, with the text it was parsed from (written by `make schema`, checked fresh by its test): the
# CLI reads this instead of the TOML, since tomllib imports typing (~17 ms at every start); a twin whose text
# differs from tool_table.toml's is ignored and the TOML is parsed.
TWIN = TABLE.with_suffix(".json")
TABLE_ENV = "DOCKYARD_TOOLS_TABLE"
DOCS = Path(__file__).resolve().parent.parent / "docs" / "versions.md"
DOCS_BEGIN = "<!-- tools-table:begin (generated from generator/tool_table.toml by `make schema`; do not edit) -->"
DOCS_END = "<!-- tools-table:end -->"

# Who can wait for a tool: the parts of `make test` (hack/suite.py's Part names), then everyone else.
PARTS = ("real node", "real Ray", "real sandbox", "live", "offline")
USERS = (*PARTS, "lint", "check", "playground", "demo", "matrix")
GROUPS = ("node",)
_KEYS = {"pin", "build", "entry", "source", "debs", "group", "stream", "needed_by", "what"}
_NAME = re.compile(r"[a-z0-9][a-z0-9.-]*")  # a target, an entry: a word bash and a folder name take as is
_PIN = re.compile(r"[A-Z][A-Z0-9_]*_VERSION")  # hack/tools.sh's recipe key reads *_VERSION names from its functions
_VERSION = re.compile(r"[A-Za-z0-9][A-Za-z0-9.+-]*")
_BUILD = re.compile(r"build_[a-z0-9_]+")
_SOURCE = re.compile(r"[A-Za-z0-9_./*-]+")


class TableError(ValueError):
    """The table is malformed: the message names the file, the key and what was expected."""


class Tool:
    """One row: hack/tools.sh's target `name`, built by `build` into the cache entry `<entry>-<version>`. (A plain
    class: NamedTuple and dataclasses cost the CLI's start-up milliseconds.)"""

    __slots__ = ("name", "pin", "version", "build", "entry", "source", "debs", "group", "stream", "needed_by", "what")

    def __init__(self, name: str, pin: str, version: str, build: str, entry: str, source: tuple[str, ...] = (),
                 debs: bool = False, group: str = "", stream: int | None = None, needed_by: tuple[str, ...] = (),
                 what: str = "") -> None:
        self.name, self.pin, self.version, self.build, self.entry = name, pin, version, build, entry
        self.source, self.debs, self.group, self.stream = source, debs, group, stream
        self.needed_by, self.what = needed_by, what

    def _key(self) -> tuple:
        return tuple(getattr(self, f) for f in self.__slots__)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Tool) and self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def __repr__(self) -> str:
        return f"Tool({', '.join(f'{f}={getattr(self, f)!r}' for f in self.__slots__)})"

    @property
    def folder(self) -> str:
        """The cache entry's folder name."""
        return f"{self.entry}-{self.version}"


class Table:
    """The pins and the rows (`tools`, in the file's order)."""

    __slots__ = ("pins", "tools")

    def __init__(self, pins: dict[str, str], tools: dict[str, Tool]) -> None:
        self.pins, self.tools = pins, tools

    def streams(self) -> list[list[str]]:
        """The build streams of `make tools` and `make test`, each in the file's order."""
        ids = sorted({t.stream for t in self.tools.values() if t.stream is not None})
        return [[t.name for t in self.tools.values() if t.stream == i] for i in ids]

    def needed_by(self, who: str) -> list[str]:
        """The targets `who` (a part of `make test`, `check`, `playground`, ...) waits for, in the file's order."""
        if who not in USERS:
            raise KeyError(f"{who!r} is none of the table's users ({', '.join(USERS)})")
        return [t.name for t in self.tools.values() if who in t.needed_by]

    def group(self, name: str) -> list[str]:
        return [t.name for t in self.tools.values() if t.group == name]

    def matrix(self, entry: str) -> list[str]:
        """The minors (1.4) of the rows `make test-matrix` waits for that build the cache entry `entry` (kuberay,
        kubernetes), oldest first: the Makefile loops over them and builds `<entry>-<minor>`."""
        minors = {".".join(t.version.lstrip("v").split(".")[:2]) for t in self.tools.values()
                  if t.entry == entry and "matrix" in t.needed_by}
        return sorted(minors, key=lambda m: tuple(int(p) if p.isdigit() else 0 for p in m.split(".")))

    def versions_of(self, entry: str) -> dict[str, str]:
        """Pin name -> version of every row that builds the cache entry `entry` (the default version first)."""
        return {t.pin: t.version for t in self.tools.values() if t.entry == entry}


def _fail(path: Path, where: str, problem: str) -> TableError:
    return TableError(f"{path}: {where}: {problem}")


def _tool(path: Path, name: str, row: object, pins: dict[str, str]) -> Tool:
    where = f"tools.{name}"
    if not isinstance(row, dict):
        raise _fail(path, where, "expected a table {pin = ..., build = ..., ...}")
    unknown = sorted(set(row) - _KEYS)
    if unknown:
        raise _fail(path, f"{where}.{unknown[0]}", f"unknown key; expected one of: {', '.join(sorted(_KEYS))}")
    for key in ("pin", "build"):
        if key not in row:
            raise _fail(path, where, f"`{key}` is missing")
    pin = row["pin"]
    if pin not in pins:
        raise _fail(path, f"{where}.pin", f"{pin!r} is not a name under [pins]")
    build, entry = row["build"], row.get("entry", name)
    if not isinstance(build, str) or not _BUILD.fullmatch(build):
        raise _fail(path, f"{where}.build", f"{build!r}: expected hack/tools.sh's function, build_<name>")
    if not isinstance(entry, str) or not _NAME.fullmatch(entry):
        raise _fail(path, f"{where}.entry", f"{entry!r}: expected a cache entry name ({_NAME.pattern})")
    source = row.get("source", [])
    if not isinstance(source, list) or not all(isinstance(s, str) and _SOURCE.fullmatch(s) for s in source):
        raise _fail(path, f"{where}.source", "expected a list of repository paths (globs allowed, no spaces)")
    stream = row.get("stream")
    if stream is not None and stream not in (1, 2):
        raise _fail(path, f"{where}.stream", f"{stream!r}: expected 1 or 2 (or no stream: built on request)")
    needed_by = row.get("needed_by", [])
    bad = [w for w in needed_by if w not in USERS] if isinstance(needed_by, list) else [needed_by]
    if bad:
        raise _fail(path, f"{where}.needed_by", f"{bad[0]!r}: expected some of: {', '.join(USERS)}")
    group = row.get("group", "")
    if group and group not in GROUPS:
        raise _fail(path, f"{where}.group", f"{group!r}: expected one of: {', '.join(GROUPS)}")
    debs, what = row.get("debs", False), row.get("what", "")
    if not isinstance(debs, bool) or not isinstance(what, str):
        raise _fail(path, where, "`debs` is true or false, `what` a string")
    return Tool(name, pin, pins[pin], build, entry, tuple(source), debs, group, stream, tuple(needed_by), what)


_loaded: dict[Path, Table] = {}


def load(path: Path | None = None) -> Table:
    """The table at `path` (default: $DOCKYARD_TOOLS_TABLE, else the one beside this file), read once per path."""
    path = Path(path or os.environ.get(TABLE_ENV) or TABLE)
    if path in _loaded:
        return _loaded[path]
    doc = _document(path)
    unknown = sorted(set(doc) - {"pins", "tools"})
    if unknown:
        raise _fail(path, unknown[0], "unknown section; expected [pins] and [tools]")
    pins = doc.get("pins", {})
    for name, version in pins.items():
        if not _PIN.fullmatch(name):
            raise _fail(path, f"pins.{name}", f"expected a name like HELM_VERSION ({_PIN.pattern})")
        if not isinstance(version, str) or not _VERSION.fullmatch(version):
            raise _fail(path, f"pins.{name}", f"{version!r}: expected a version ({_VERSION.pattern})")
    tools = {}
    for name, row in doc.get("tools", {}).items():
        if not _NAME.fullmatch(name):
            raise _fail(path, f"tools.{name}", f"expected a target name ({_NAME.pattern})")
        tools[name] = _tool(path, name, row, pins)
    unused = sorted(set(pins) - {t.pin for t in tools.values()})
    if unused:
        raise _fail(path, f"pins.{unused[0]}", "no tool reads this pin")
    _loaded[path] = table = Table(pins, tools)
    return table


def _document(path: Path) -> dict:
    """The TOML document at `path`: from its JSON twin when that was made from this very text."""
    try:
        text = path.read_text()
    except OSError as exc:
        raise TableError(f"{path}: {exc}") from None
    twin = path.with_suffix(".json")
    if twin.exists():
        try:
            made = json.loads(twin.read_text())
        except (OSError, ValueError):
            made = None
        if isinstance(made, dict) and made.get("source") == text:
            return made["document"]
    import tomllib

    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise TableError(f"{path}: {exc}") from None


def twin(path: Path = TABLE) -> str:
    """The JSON twin of the table at `path` (`make schema` writes it beside the TOML)."""
    import tomllib

    text = path.read_text()
    return json.dumps({"source": text, "document": tomllib.loads(text)}, indent=1) + "\n"


def shell(table: Table) -> str:
    """The table as bash: each pin a variable, each column an associative array keyed by target, the default
    list (every row with a stream) and each group's list. Every value is quoted (and was checked by load)."""
    q = shlex.quote
    lines = [f"{pin}={q(version)}" for pin, version in table.pins.items()]
    columns = {"tool_pin": lambda t: t.pin, "tool_build": lambda t: t.build, "tool_entry": lambda t: t.entry,
               "tool_source": lambda t: " ".join(t.source), "tool_debs": lambda t: "1" if t.debs else ""}
    for var, get in columns.items():
        lines.append(f"declare -A {var}=(" + " ".join(f"[{q(n)}]={q(get(t))}" for n, t in table.tools.items()) + ")")
    lines.append("default_tools=(" + " ".join(q(n) for stream in table.streams() for n in stream) + ")")
    for group in GROUPS:
        lines.append(f"{group}_tools=(" + " ".join(q(n) for n in table.group(group)) + ")")
    return "\n".join(lines) + "\n"


def markdown(table: Table) -> str:
    """The table for readers (docs/versions.md)."""
    rows = ["| tool (`hack/tools.sh` target) | version | pin | cache entry | built by | stream | needed by | what |",
            "| --- | --- | --- | --- | --- | --- | --- | --- |"]
    for t in table.tools.values():
        stream = t.stream or "on request"
        rows.append(f"| `{t.name}` | {t.version} | `{t.pin}` | `{t.folder}/` | `{t.build}` | {stream} "
                    f"| {', '.join(t.needed_by)} | {t.what} |")
    return "\n".join(rows)


def between_markers(text: str, begin: str, end: str, block: str) -> str | None:
    """`text` with what lies between the markers `begin` and `end` replaced by `block` (on lines of its own);
    None when the markers are not both there, in that order. Every generated block of the docs goes in this way."""
    start = text.find(begin)
    stop = text.find(end, start + len(begin)) if start >= 0 else -1
    if stop < 0:
        return None
    return f"{text[: start + len(begin)]}\n{block}\n{text[stop:]}"


def docs_text(current: str, table: Table) -> str:
    """`current` (docs/versions.md) with the block between the markers replaced by the table."""
    out = between_markers(current, DOCS_BEGIN, DOCS_END, markdown(table))
    if out is None:
        raise TableError(f"{DOCS}: the markers {DOCS_BEGIN!r} and {DOCS_END!r} are missing")
    return out


def main(argv: list[str]) -> int:
    try:
        if argv[1:2] == ["shell"] and len(argv) <= 3:
            sys.stdout.write(shell(load(Path(argv[2]) if len(argv) == 3 else None)))
            return 0
        if argv[1:2] == ["matrix"] and len(argv) == 3:
            print(" ".join(load().matrix(argv[2])))
            return 0
        if argv[1:2] == ["docs"] and argv[2:] in ([], ["--check"]):
            current = DOCS.read_text()
            wanted = docs_text(current, load())
            if argv[2:] == ["--check"]:
                if current != wanted:
                    print(f"{DOCS}: the tools table is stale; run `make schema`", file=sys.stderr)
                    return 1
            elif current != wanted:
                DOCS.write_text(wanted)
            return 0
    except TableError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print((__doc__ or "").strip().split("\n\n")[-1], file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
