"""Comments and docs say what they mean, never which issue asked for it: the repository has no tracker a reader
could follow, so a reference such as "issue" followed by a number tells a reader nothing. Every text file under
generator/, tests/, hack/, docs/, bench/, charts/ and README.md is scanned (the words "issue" or "issues", then a
number, `#` allowed); a hit fails naming the file, the line and the text.

The one kind of exception: a file whose text is hashed into a tool build's recipe key (the `source` column of the
table of tools, generator/tool_table.toml, as hack/tools.sh reads it), where editing a comment would rebuild the tool.
Such a file may only be listed in KEYED_EXCEPTIONS, by path, with what its reference means; today none is needed
(no hashed file holds a reference), and a listed file that is not hashed, or holds no reference any more, fails.
"""

from __future__ import annotations

import re
from pathlib import Path

from generator import tool_table

REPO = Path(__file__).resolve().parents[2]
SCANNED = ["generator", "tests", "hack", "docs", "bench", "charts", "README.md"]
# written so that this file's own pattern is no reference: "issue", optional "s", a space, an optional "#", digits
REFERENCE = re.compile(r"\b" + "iss" + r"ues?\s+#?\d+", re.IGNORECASE)

# path -> what its reference means; only files a recipe key hashes (see the docstring)
KEYED_EXCEPTIONS: dict[str, str] = {}


def text_files() -> list[Path]:
    out = []
    for top in SCANNED:
        path = REPO / top
        candidates = [path] if path.is_file() else sorted(path.rglob("*"))
        for f in candidates:
            rel = f.relative_to(REPO)
            if not f.is_file() or any(p.startswith(".") or p == "__pycache__" for p in rel.parts):
                continue
            data = f.read_bytes()
            if b"\0" not in data[:8192]:
                out.append(f)
    return out


def references(path: Path) -> list[str]:
    text = path.read_text(errors="replace")
    return [f"{path.relative_to(REPO)}:{n}: {line.strip()[:120]}"
            for n, line in enumerate(text.splitlines(), 1) if REFERENCE.search(line)]


def hashed_by_a_recipe_key() -> set[str]:
    """The repository files whose content is part of some tool's recipe key (globs expanded)."""
    out = set()
    for tool in tool_table.load().tools.values():
        for source in tool.source:
            for f in REPO.glob(source):
                out |= {p.relative_to(REPO).as_posix() for p in ([f] if f.is_file() else f.rglob("*")) if p.is_file()}
    return out


def test_the_pattern_finds_the_references_it_is_for():
    word = "iss" + "ue"  # not spelled out next to a number, so this file holds no reference itself
    assert REFERENCE.search(f"the sandbox pool ({word.title()} 21)") and REFERENCE.search(f"{word}s 9 and 11")
    assert REFERENCE.search(f"see {word} #4")
    assert not REFERENCE.search(f"no {word} here; 12 {word}d tokens; t{word} 3")


def test_no_comment_or_doc_refers_to_an_issue_number():
    found = [hit for f in text_files() if f.relative_to(REPO).as_posix() not in KEYED_EXCEPTIONS
             for hit in references(f)]
    assert len(text_files()) > 200  # the scan reached the repository
    assert not found, ("say what the reference meant (the feature, the module, the reason) instead of the "
                       "number; the repository has no tracker a reader could follow:\n" + "\n".join(found))


def test_every_exception_is_a_hashed_file_that_still_holds_a_reference():
    hashed = hashed_by_a_recipe_key()
    assert "generator/playground/node/ray_image.py" in hashed  # the table's sources were read
    for path, meaning in KEYED_EXCEPTIONS.items():
        assert path in hashed, f"{path} is hashed by no recipe key: rewrite its reference instead of listing it"
        assert references(REPO / path), f"{path} holds no reference any more: drop it from KEYED_EXCEPTIONS"
        assert meaning.strip(), f"{path}: say what its reference means"
