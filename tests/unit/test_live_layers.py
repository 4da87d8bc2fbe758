"""The live package's layers: verb modules (generator/live/verbs/) import library modules
(generator/live/*.py) and never each other; library modules never import a verb module."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

LIVE = Path(__file__).resolve().parents[2] / "generator" / "live"
VERBS = LIVE / "verbs"


def _module(path: Path) -> str:
    return ".".join(path.relative_to(LIVE.parents[1]).with_suffix("").parts).removesuffix(".__init__")


def imported(path: Path) -> set[str]:
    """Every module `path` imports, at any depth (lazy imports inside functions too), as dotted names;
    `from package import name` counts as importing package.name as well."""
    package = _module(path) if path.name == "__init__.py" else _module(path).rpartition(".")[0]
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                base = ".".join(parts[: len(parts) - node.level + 1] + ([base] if base else []))
            out.add(base)
            out.update(f"{base}.{a.name}" for a in node.names)
    return out


def _verb_modules() -> list[Path]:
    return sorted(p for p in VERBS.glob("*.py") if p.name != "__init__.py")


def _library_modules() -> list[Path]:
    return sorted(LIVE.glob("*.py"))


def test_the_layers_exist():
    assert {p.stem for p in _verb_modules()} >= {"run", "status", "logs", "history", "rollback", "uninstall",
                                                  "cluster", "jobs", "dev", "doctor", "smoke"}
    assert {p.stem for p in _library_modules()} >= {"kube", "release", "snapshot", "guard", "show", "plan", "resolve"}


@pytest.mark.parametrize("path", _verb_modules(), ids=lambda p: p.stem)
def test_a_verb_imports_no_other_verb(path):
    own = _module(path)
    verbs = {_module(p) for p in _verb_modules()} | {"generator.live.verbs"}
    hits = sorted(m for m in imported(path) if m != own and (m in verbs or m.startswith("generator.live.verbs.")))
    assert not hits, f"{own} imports verb module(s) {hits}: move what they share into a library module"


@pytest.mark.parametrize("path", _library_modules(), ids=lambda p: p.stem)
def test_a_library_module_imports_no_verb(path):
    hits = sorted(m for m in imported(path) if m == "generator.live.verbs" or m.startswith("generator.live.verbs."))
    assert not hits, f"{_module(path)} imports {hits}: library modules never depend on verbs"


def test_the_checker_sees_lazy_and_relative_imports(tmp_path):
    src = tmp_path / "generator" / "live" / "verbs" / "a.py"
    src.parent.mkdir(parents=True)
    src.write_text("def f():\n    from generator.live.verbs import b\n    from . import c\n    from .d import x\n")
    global LIVE
    saved, LIVE = LIVE, tmp_path / "generator" / "live"
    try:
        found = imported(src)
    finally:
        LIVE = saved
    assert {"generator.live.verbs.b", "generator.live.verbs.c", "generator.live.verbs.d"} <= found
