"""The package's layers, by data flow: errors/tools <- inputs <- render <- live <- verbs (generator/live/verbs/
and live/cli.py), the playground apart (it may use the product's lower layers; the product never imports it),
the CLI, the maintainers' tools and the `__main__` entry points on top. Within live, verb modules import
library modules (generator/live/*.py) and never each other; library modules never import a verb module.
Every import counts: lazy ones inside functions, `if TYPE_CHECKING:` ones, and importlib.import_module calls."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "generator"
LIVE = PACKAGE / "live"
VERBS = LIVE / "verbs"


def _module(path: Path) -> str:
    return ".".join(path.relative_to(LIVE.parents[1]).with_suffix("").parts).removesuffix(".__init__")


def imported(path: Path) -> set[str]:
    """Every module `path` imports, at any depth (lazy imports inside functions too), as dotted names;
    `from package import name` counts as importing package.name as well. importlib.import_module(X) and
    __import__(X) count: a literal X as that module, an f-string as its literal prefix's package, any other
    X as every "generator..." string literal of the file (the names such a call can be handed)."""
    package = _module(path) if path.name == "__init__.py" else _module(path).rpartition(".")[0]
    tree = ast.parse(path.read_text(), str(path))
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                base = ".".join(parts[: len(parts) - node.level + 1] + ([base] if base else []))
            out.add(base)
            out.update(f"{base}.{a.name}" for a in node.names)
        elif isinstance(node, ast.Call) and _dynamic_import(node.func) and node.args:
            arg = node.args[0]
            if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                out.add(arg.value)
            elif isinstance(arg, ast.JoinedStr) and arg.values and isinstance(arg.values[0], ast.Constant):
                out.add(str(arg.values[0].value).rstrip("."))
            else:
                out.update(n.value for n in ast.walk(tree) if isinstance(n, ast.Constant) and isinstance(n.value, str)
                           and n.value.startswith("generator."))
    return out


def _dynamic_import(func: ast.expr) -> bool:
    return (isinstance(func, ast.Attribute) and func.attr == "import_module") or (
        isinstance(func, ast.Name) and func.id in ("import_module", "__import__"))


def _verb_modules() -> list[Path]:
    return sorted(p for p in VERBS.glob("*.py") if p.name != "__init__.py")


def _library_modules() -> list[Path]:
    return sorted(p for p in LIVE.rglob("*.py") if p.parent != VERBS and p != LIVE / "cli.py")  # cli.py: dispatch


def test_the_layers_exist():
    assert {p.stem for p in _verb_modules()} >= {"run", "status", "logs", "history", "rollback", "uninstall",
                                                  "cluster", "jobs", "dev", "doctor", "smoke"}
    assert {p.stem for p in _library_modules()} >= {"kube", "runner", "snapshot", "guard", "show", "plan", "resolve"}


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


def _imported_under(tmp_path, src) -> set[str]:
    """imported(src) for a source file in a package tree under tmp_path."""
    global LIVE
    saved, LIVE = LIVE, tmp_path / "generator" / "live"
    try:
        return imported(src)
    finally:
        LIVE = saved


def test_the_checker_sees_lazy_and_relative_imports(tmp_path):
    src = tmp_path / "generator" / "live" / "verbs" / "a.py"
    src.parent.mkdir(parents=True)
    src.write_text("def f():\n    from generator.live.verbs import b\n    from . import c\n    from .d import x\n")
    found = _imported_under(tmp_path, src)
    assert {"generator.live.verbs.b", "generator.live.verbs.c", "generator.live.verbs.d"} <= found


# The package's layers, bottom to top; a module may import its own layer's modules and those of the layers
# listed for it. `root` is generator/__init__.py (the exit codes; it imports nothing).
MAY_IMPORT = {
    "root": set(),
    "base": {"root"},  # errors.py and tools.py import nothing else of the package
    "inputs": {"root", "base"},
    "render": {"root", "base", "inputs"},
    "live": {"root", "base", "inputs", "render"},
    "verbs": {"root", "base", "inputs", "render", "live"},
    "playground": {"root", "base", "inputs", "render", "live"},  # apart: the product never imports it
    "top": {"root", "base", "inputs", "render", "live", "verbs", "playground"},
}


def layer(module: str) -> str:
    """The layer of a generator module (a name that is no module of the package is no layer's)."""
    parts = module.split(".")
    if parts == ["generator"]:
        return "root"
    first = parts[1]
    if parts[-1] == "__main__" or first in ("cli", "maint"):
        return "top"
    if first in ("errors", "tools"):
        return "base"
    if first == "live" and len(parts) > 2 and parts[2] in ("verbs", "cli"):
        return "verbs"
    if first in ("inputs", "render", "live", "playground"):
        return first
    raise AssertionError(f"{module}: a module in no layer of tests/unit/test_live_layers.py: give it one")


def _is_module(name: str) -> bool:
    path = PACKAGE.parent.joinpath(*name.split("."))
    return path.with_suffix(".py").is_file() or (path / "__init__.py").is_file()


def _package_modules() -> list[Path]:
    return sorted(PACKAGE.rglob("*.py"))


@pytest.mark.parametrize("path", _package_modules(), ids=lambda p: _module(p))
def test_a_module_imports_only_lower_layers(path):
    own = _module(path)
    mine = layer(own)
    allowed = MAY_IMPORT[mine] | {mine}
    hits = sorted(m for m in imported(path) if (m == "generator" or m.startswith("generator.")) and _is_module(m)
                  and layer(m) not in allowed)
    assert not hits, (f"{own} ({mine}) imports {hits} ({', '.join(sorted({layer(m) for m in hits}))}): against "
                      "the data flow errors/tools <- inputs <- render <- live <- verbs (playground apart, cli and "
                      "maint on top); move the code to the layer that owns it")


def test_every_layer_is_populated():
    found = {layer(_module(p)) for p in _package_modules()}
    assert found == set(MAY_IMPORT), found
    assert layer("generator.errors") == layer("generator.tools") == "base"
    assert layer("generator.live.cli") == layer("generator.live.verbs.run") == "verbs"
    assert layer("generator.playground.__main__") == "top" and layer("generator.playground.kubeapi") == "playground"


def test_the_checker_sees_dynamic_imports(tmp_path):
    src = tmp_path / "generator" / "x" / "a.py"
    src.parent.mkdir(parents=True)
    src.write_text("import importlib\n"
                   "def f(m):\n"
                   "    importlib.import_module('generator.one')\n"
                   "    importlib.import_module(f'generator.two.{m}')\n"
                   "    for name in ('generator.three', 'not.ours'):\n"
                   "        importlib.import_module(name)\n"
                   "    __import__('generator.four')\n")
    found = _imported_under(tmp_path, src)
    assert {"generator.one", "generator.two", "generator.three", "generator.four"} <= found
    assert "not.ours" not in found
