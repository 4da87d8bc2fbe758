"""Every relative link in the README, docs/ and the chart's README reaches a file of the repository, and every
`#anchor` a heading of that file, named as GitHub names it: a renamed heading or a moved file fails here, not in a
reader's browser. Links to other sites are not dialled."""

from __future__ import annotations

import re
from pathlib import Path

from generator.pinned_tools import REPO

LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
FENCE = "```"


def slug(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, punctuation but `-` and `_` dropped, spaces to `-`."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def _prose(path: Path, code: bool = False):
    """(line number, line) outside fenced code blocks; inline code taken out unless `code` (a heading's anchor
    keeps the text of its code)."""
    inside = False
    for n, line in enumerate(path.read_text().splitlines(), 1):
        if line.startswith(FENCE):
            inside = not inside
            continue
        if not inside:
            yield n, line if code else re.sub(r"`[^`]*`", "", line)


def anchors(path: Path) -> set[str]:
    out: set[str] = set()
    seen: dict[str, int] = {}
    for _, line in _prose(path, code=True):
        m = re.match(r"^#{1,6}\s+(.*?)\s*#*\s*$", line)
        if m:
            s = slug(m.group(1))
            out.add(s if s not in seen else f"{s}-{seen[s]}")  # GitHub numbers a repeated heading
            seen[s] = seen.get(s, 0) + 1
        out.update(re.findall(r'<a (?:name|id)="([^"]+)"', line))
    return out


def documents() -> list[Path]:
    return [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md")), REPO / "charts" / "dockyard" / "README.md"]


def broken_links(files: list[Path], root: Path = REPO) -> list[str]:
    bad = []
    for doc in files:
        for n, line in _prose(doc):
            for target in LINK.findall(line):
                if re.match(r"^[a-z][a-z0-9+.-]*:", target):
                    continue  # another site (or mailto:): not dialled
                path, _, fragment = target.partition("#")
                dest = (doc.parent / path).resolve() if path else doc
                where = f"{doc.relative_to(root)}:{n}: ({target})"
                if not dest.exists():
                    bad.append(f"{where} no such file")
                elif fragment and dest.suffix == ".md" and fragment not in anchors(dest):
                    bad.append(f"{where} no heading #{fragment} in {dest.relative_to(root)}")
    return bad


def test_every_relative_link_and_anchor_of_the_docs_resolves():
    broken = broken_links(documents())
    assert not broken, "\n".join(broken)


def test_the_checker_finds_a_missing_file_and_a_missing_anchor(tmp_path):
    (tmp_path / "b.md").write_text("# Metrics-server: the API (v2)\n## Twice\n## Twice\n## Up (`up --kueue`)\n"
                                   "```\n# not a heading\n```\n")
    (tmp_path / "a.md").write_text(
        "[ok](b.md#metrics-server-the-api-v2) [ok](b.md#twice-1) [ok](b.md#up-up---kueue) [gone](c.md) "
        "[bad](b.md#not-a-heading)\n"
        "`[code](nowhere.md)` [web](https://example.invalid/x) [self](#top)\n# Top\n")
    bad = broken_links([tmp_path / "a.md"], tmp_path)
    assert bad == ["a.md:1: (c.md) no such file", "a.md:1: (b.md#not-a-heading) no heading #not-a-heading in b.md"]


def named_tests(root: Path = REPO) -> set[str]:
    """Every test function and test file (stem) of the repository's tests."""
    out: set[str] = set()
    for path in (root / "tests").rglob("test_*.py"):
        out.add(path.stem)
        out.update(re.findall(r"^\s*(?:async )?def (test_\w+)", path.read_text(), flags=re.M))
    return out


def missing_tests(files: list[Path], known: set[str], root: Path = REPO) -> list[str]:
    """The docs' `test_…` names (in inline code, as the ledger and docs cite a proof) that no test has."""
    return [f"{doc.relative_to(root)}:{n}: {name}" for doc in files
            for n, line in enumerate(doc.read_text().splitlines(), 1)
            for cited in re.findall(r"`(?:[\w/]+/)?(test_\w+?)(?:\.py)?(?:::(test_\w+))?`", line)
            for name in cited if name and name not in known]


def test_every_test_the_docs_cite_exists():
    """A proof cited by name (docs/validation-ledger.md, the docs' "proof" lines) is a test that runs."""
    missing = missing_tests(documents(), named_tests())
    assert not missing, "\n".join(missing)


def test_the_test_name_checker_finds_a_renamed_test(tmp_path):
    (tmp_path / "a.md").write_text("proved by `test_kept` and `tests/unit/test_x.py`, not `test_gone`\n"
                                   "nor `tests/unit/test_x.py::test_renamed`\n")
    assert missing_tests([tmp_path / "a.md"], {"test_kept", "test_x"}, tmp_path) == [
        "a.md:1: test_gone", "a.md:2: test_renamed"]
