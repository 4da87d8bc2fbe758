"""docs/live.md's module map is the one map of the package: every module under generator/ is listed there (a package
by its folder), and every module it lists exists. A module added, moved or removed without its line fails here."""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
DOC = REPO / "docs" / "live.md"


def listed(text: str) -> list[str]:
    """The paths in the first column of the module map's table (`generator/...py`, or `generator/.../` a package)."""
    section = text.split("### Module map", 1)[1].split("\n#", 1)[0]
    return re.findall(r"^\| `(generator/[^`]*)` \|", section, re.M)


def package_modules(root: Path) -> set[str]:
    """Every module of the package as the map names it: `x/y.py`, and `x/` for `x/__init__.py`."""
    out = set()
    for path in (root / "generator").rglob("*.py"):
        rel = path.relative_to(root).as_posix()
        out.add(rel.removesuffix("__init__.py") if path.name == "__init__.py" else rel)
    return out


def test_every_module_is_listed_once_and_every_listed_one_exists():
    names = listed(DOC.read_text())
    assert len(names) == len(set(names)), sorted({n for n in names if names.count(n) > 1})
    modules = package_modules(REPO)
    missing, gone = sorted(modules - set(names)), sorted(set(names) - modules)
    assert not missing, f"modules missing from docs/live.md's module map (add a line each): {missing}"
    assert not gone, f"docs/live.md's module map lists modules that do not exist: {gone}"


def test_the_check_sees_a_module_added_or_gone(tmp_path):
    (tmp_path / "generator" / "sub").mkdir(parents=True)
    for name in ("__init__.py", "a.py", "sub/__init__.py", "sub/b.py"):
        (tmp_path / "generator" / name).write_text("")
    doc = ("### Module map\n\n| module | what |\n| --- | --- |\n| `generator/` | x |\n| `generator/a.py` | x |\n"
           "| `generator/sub/` | x |\n| `generator/gone.py` | x |\n\n## Next\n| `generator/later.py` | x |\n")
    assert package_modules(tmp_path) - set(listed(doc)) == {"generator/sub/b.py"}
    assert set(listed(doc)) - package_modules(tmp_path) == {"generator/gone.py"}
