"""The import contracts (.importlinter, checked by `lint-imports` in the lint gate) for the imports lint-imports
cannot see: importlib.import_module("...") and __import__("...") calls, whose module is a string. grimp, the graph
import-linter reads, records import statements only (at module level, inside functions and under
`if TYPE_CHECKING:`), so a verb module loading another verb by name, or a library module loading a verb, would pass
the gate. Here every such call in the package becomes an edge of the same graph, and every contract of
.importlinter is checked on it: the rule is the gate's own, only the edges are added.

What a call can load: a literal names its module; an f-string its literal prefix's package, so every module under
it; any other argument every "generator..." string literal of the file (the names such a call can be handed)."""

from __future__ import annotations

import ast
import copy
from pathlib import Path

import grimp
import pytest
from importlinter import configuration
from importlinter.application.use_cases import read_user_options
from importlinter.contracts.acyclic_siblings import AcyclicSiblingsContract
from importlinter.contracts.forbidden import ForbiddenContract
from importlinter.contracts.independence import IndependenceContract
from importlinter.contracts.layers import LayersContract

configuration.configure()  # what the lint-imports command does first: the readers and timer contracts use

REPO = Path(__file__).resolve().parents[2]
PACKAGE = REPO / "generator"
CONTRACT_TYPES = {"layers": LayersContract, "independence": IndependenceContract, "forbidden": ForbiddenContract,
                  "acyclic_siblings": AcyclicSiblingsContract}


def module_name(path: Path, root: Path) -> str:
    return ".".join(path.relative_to(root).with_suffix("").parts).removesuffix(".__init__")


def _dynamic(func: ast.expr) -> bool:
    return (isinstance(func, ast.Attribute) and func.attr == "import_module") or (
        isinstance(func, ast.Name) and func.id in ("import_module", "__import__"))


def dynamic_imports(path: Path, modules: set[str]) -> list[tuple[str, int]]:
    """(module, line) for every module of `modules` a dynamic import call in the file can load."""
    tree = ast.parse(path.read_text(), str(path))
    literals = sorted({n.value for n in ast.walk(tree) if isinstance(n, ast.Constant) and isinstance(n.value, str)
                       and n.value.startswith("generator.")})
    out: list[tuple[str, int]] = []
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and _dynamic(node.func) and node.args):
            continue
        arg = node.args[0]
        if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
            names = [arg.value]
        elif isinstance(arg, ast.JoinedStr) and arg.values and isinstance(arg.values[0], ast.Constant):
            prefix = str(arg.values[0].value).rstrip(".")
            names = [m for m in modules if m.startswith(prefix + ".")]
        else:
            names = literals
        out += [(name, node.lineno) for name in names if name in modules]
    return out


def graph_with_dynamic_imports(root: Path, package: str) -> grimp.ImportGraph:
    graph = grimp.build_graph(package, include_external_packages=True)
    modules = {m for m in graph.modules if m == package or m.startswith(package + ".")}
    for path in sorted((root / package).rglob("*.py")):
        importer = module_name(path, root)
        for imported, line in dynamic_imports(path, modules):
            graph.add_import(importer=importer, imported=imported, line_number=line,
                             line_contents=f"(dynamic import of {imported})")
    return graph


def broken_contracts(graph: grimp.ImportGraph) -> list[str]:
    options = read_user_options(str(REPO / ".importlinter"))
    broken = []
    for contract_options in options.contracts_options:
        cls = CONTRACT_TYPES[contract_options["type"]]
        contract = cls(name=contract_options["name"], session_options=options.session_options,
                       contract_options=contract_options)
        if not contract.check(copy.deepcopy(graph), verbose=False).kept:  # contracts may change the graph
            broken.append(contract_options["name"])
    return broken


def test_dynamic_imports_keep_every_contract():
    graph = graph_with_dynamic_imports(REPO, "generator")
    # the CLI's verb dispatch is the one place the package loads modules by name today: it must be seen
    assert graph.direct_import_exists(importer="generator.live.cli", imported="generator.live.verbs.run")
    assert graph.direct_import_exists(importer="generator.cli", imported="generator.playground.cli")
    assert not broken_contracts(graph), "run `lint-imports`, then look for importlib.import_module calls"


@pytest.mark.parametrize(("importer", "imported", "contract"), [
    ("generator.live.verbs.status", "generator.live.verbs.run", "A verb module imports no other verb module"),
    ("generator.live.state.snapshot", "generator.live.verbs.status", "generator.live flows upward"),
    ("generator.render.check", "generator.playground.cli", "The package follows the data"),
    # the product and the playground are apart: neither imports the other (they share the lower layers)
    ("generator.playground.kueue", "generator.live.client.kube", "The package follows the data"),
    ("generator.live.client.kube", "generator.playground.state", "The package follows the data"),
])
def test_a_dynamic_import_against_the_flow_breaks_a_contract(importer, imported, contract):
    graph = grimp.build_graph("generator", include_external_packages=True)
    assert not broken_contracts(graph)
    graph.add_import(importer=importer, imported=imported, line_number=1, line_contents="(dynamic)")
    assert any(name.startswith(contract) for name in broken_contracts(graph))


@pytest.mark.parametrize(("importer", "imported"), [
    ("generator.live.state.pool", "generator.live.state.snapshot"),  # snapshot imports pool
    ("generator.playground.health", "generator.playground.lifecycle"),  # cluster imports health
])
def test_an_import_that_closes_a_cycle_breaks_the_no_cycles_contract_alone(importer, imported):
    graph = grimp.build_graph("generator", include_external_packages=True)
    assert graph.direct_import_exists(importer=imported, imported=importer)  # the edge back is there already
    assert not broken_contracts(graph)
    graph.add_import(importer=importer, imported=imported, line_number=1, line_contents="(dynamic)")
    assert [name[:15] for name in broken_contracts(graph)] == ["No import cycle"]


def test_the_finder_sees_every_form_of_dynamic_import(tmp_path):
    src = tmp_path / "generator" / "x" / "a.py"
    src.parent.mkdir(parents=True)
    src.write_text("import importlib\n"
                   "def f(m):\n"
                   "    importlib.import_module('generator.one')\n"
                   "    importlib.import_module(f'generator.two.{m}')\n"
                   "    for name in ('generator.three', 'not.ours'):\n"
                   "        importlib.import_module(name)\n"
                   "    __import__('generator.four')\n")
    modules = {"generator.one", "generator.two.a", "generator.two.b", "generator.three", "generator.four",
               "generator.five"}
    found = {name for name, _ in dynamic_imports(src, modules)}
    assert found == modules - {"generator.five"}
