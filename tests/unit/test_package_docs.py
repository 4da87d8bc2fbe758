"""Every package under generator/ says in its __init__.py's docstring what it is for and what it may import (a
sentence with "may import"; .importlinter's contracts, not this test, hold the imports to it), and the modules it
names exist.

A module is named in backquotes: `name` is a module or sub-package of that package, `generator.a.b` one anywhere in
the package, and `name.py` (backquoted or not) a file of that package, `generator/a/b.py` a file from the repository's
root. Anything else in backquotes (a command, a flag, a glob such as `*_rules`) is not a module name and not checked.
A module renamed or removed while a docstring still names it fails here."""

from __future__ import annotations

import ast
import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

MAY_IMPORT = re.compile(r"\bmay\s+import\b", re.I)
IDENTIFIER = re.compile(r"[a-z_][a-z0-9_]*")
DOTTED = re.compile(r"generator(\.[a-z_][a-z0-9_]*)+")
FILE = re.compile(r"(?<![\w/.-])((?:[a-z_][a-z0-9_]*/)*[a-z_][a-z0-9_]*\.py)\b")


def packages(root: Path = REPO) -> list[Path]:
    return sorted(p.parent for p in (root / "generator").rglob("__init__.py") if "_bundle" not in p.parts)


def _is_module(path: Path) -> bool:
    """path/ as a sub-package or path.py as a module."""
    return (path / "__init__.py").is_file() or path.with_suffix(".py").is_file()


def unknown_names(package: Path, doc: str, root: Path = REPO) -> list[str]:
    """The module names `doc` (package's docstring) mentions that are no module of the package."""
    gone = []
    for quoted in re.findall(r"`([^`]+)`", doc):
        if IDENTIFIER.fullmatch(quoted) and not _is_module(package / quoted):
            gone.append(quoted)
        elif DOTTED.fullmatch(quoted) and not _is_module(root.joinpath(*quoted.split("."))):
            gone.append(quoted)
    for file in FILE.findall(doc):
        if not (root / file if "/" in file else package / file).is_file():
            gone.append(file)
    return gone


def problems(root: Path = REPO) -> list[str]:
    out = []
    for package in packages(root):
        name = package.relative_to(root).as_posix()
        doc = ast.get_docstring(ast.parse((package / "__init__.py").read_text()))
        if not doc:
            out.append(f"{name}: no docstring in __init__.py (what the package is for, what it may import)")
            continue
        if not MAY_IMPORT.search(doc):
            out.append(f"{name}: no sentence on what it may import (\"may import ...\", as .importlinter holds it)")
        out += [f"{name}: names `{n}`, no module of the package" for n in unknown_names(package, doc, root)]
    return out


def test_every_package_says_what_it_is_for_and_may_import_and_names_only_its_modules():
    assert problems() == [], "\n".join(problems())


def test_the_check_on_examples(tmp_path):
    """The negative control: a package without a docstring, one without a "may import" sentence, and names of
    modules that do not exist (backquoted, dotted, as a file) are each reported; commands and globs are not."""
    files = {
        "generator/__init__.py": '"""The root. May import nothing: `errors`, `sub`, `generator.sub.a`."""',
        "generator/errors.py": "",
        "generator/sub/__init__.py": '"""Reads (`a`, `tools`), writes (output.py); `make x`, `*_rules`, '
                                     '`generator.sub.gone`, generator/sub/a.py and generator/sub/b.py."""',
        "generator/sub/a.py": "",
        "generator/bare/__init__.py": "X = 1\n",
    }
    for path, text in files.items():
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / path).write_text(text)
    assert problems(tmp_path) == [
        "generator/bare: no docstring in __init__.py (what the package is for, what it may import)",
        "generator/sub: no sentence on what it may import (\"may import ...\", as .importlinter holds it)",
        "generator/sub: names `tools`, no module of the package",
        "generator/sub: names `generator.sub.gone`, no module of the package",
        "generator/sub: names `output.py`, no module of the package",
        "generator/sub: names `generator/sub/b.py`, no module of the package",
    ]
