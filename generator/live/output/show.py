"""Output of the reading verbs: one document as JSON, YAML or a table, columns, ages."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from datetime import UTC, datetime

TYPE_CHECKING = False  # typing's import costs ~3 ms at start-up: for type checkers only
if TYPE_CHECKING:
    from typing import Any


def emit(data: Any, fmt: str, table: Callable[[], str]) -> None:
    """Print `data` as JSON or YAML, or the table `table()` draws."""
    if fmt == "json":
        print(json.dumps(data, indent=2, default=str))
    elif fmt == "yaml":
        import yaml

        print(yaml.safe_dump(json.loads(json.dumps(data, default=str)), sort_keys=False).rstrip())
    else:
        print(table())


def columns(rows: list[list[str]]) -> str:
    """Rows as left-aligned columns three spaces apart (the first row is the header)."""
    widths = [max(len(str(r[i])) for r in rows) for i in range(len(rows[0]))]
    return "\n".join("   ".join(str(c).ljust(w) for c, w in zip(r, widths, strict=False)).rstrip() for r in rows)


def age(ts: Any) -> str:
    """An RFC 3339 stamp (or datetime) as an age: 42s, 17m, 5h; '-' when there is none."""
    if not ts:
        return "-"
    if isinstance(ts, str):
        ts = datetime.fromisoformat(ts)
    s = int((datetime.now(UTC) - ts).total_seconds())
    return f"{s}s" if s < 120 else f"{s // 60}m" if s < 7200 else f"{s // 3600}h"


# A terminal's escape sequences: CSI (colours, cursor moves: ESC [ params final), OSC (titles, links: ESC ] ...
# BEL or ESC \\), a character set's choice (ESC ( B, as `tput sgr0` writes it) and the one-character ones (ESC =,
# ESC 7, ...), as Ray's and most programs' coloured logs hold them.
ESCAPES = r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[()][0-9A-Za-z]|\x1b[=>78NMDEHc]"


def for_output(text: str, tty: bool) -> str:
    """`text` as printed: as it is on a terminal, without its escape sequences elsewhere (a file, a pipe,
    grep), where they are noise."""
    return text if tty else re.sub(ESCAPES, "", text)


def write_stdout(text: str) -> None:
    """Stream `text` to stdout as it comes (a driver's log): its escape sequences on a terminal only."""
    import sys

    sys.stdout.write(for_output(text, sys.stdout.isatty()))
    sys.stdout.flush()
