"""generator/errors.py holds the exception types and exit codes only: every layer imports it, so it
imports nothing of the package but the exit codes (the models' errors are explained in
generator.inputs.explain)."""

from __future__ import annotations

import ast

from generator.pinned_tools import REPO


def _imports(path):
    tree = ast.parse(path.read_text())
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            yield node.module or ""
        elif isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)


def test_errors_imports_nothing_of_the_package_but_its_exit_codes():
    ours = [m for m in _imports(REPO / "generator" / "errors.py") if m.split(".")[0] == "generator"]
    assert ours and set(ours) == {"generator"}, ours
    assert "pydantic" not in (REPO / "generator" / "errors.py").read_text()


def test_the_explanation_lives_in_inputs():
    from generator import errors
    from generator.inputs import explain

    assert not hasattr(errors, "from_validation") and callable(explain.from_validation)
