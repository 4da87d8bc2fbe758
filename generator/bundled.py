"""The files the package carries beside its code: the chart (the repository's charts/dockyard) and the input
schemas (schema/*.schema.json), and the clone some verbs need.

Installed from a wheel or an sdist, they are package data: generator/_bundle/chart and generator/_bundle/schema
(pyproject.toml's force-include copies them there), and nothing outside the package's own files is read. Run from a
clone (the editable install: a .pth naming the clone), there is no generator/_bundle and the clone's own
charts/dockyard and schema/ are read, so an edit shows without a reinstall.

The location is found from this file as importlib.resources.files("generator") would for a package on disk (a
wheel installs as files), without importing importlib.resources, whose import costs ~25 ms (typing, tempfile) at
every start of the CLI. Paths are strings until a caller asks: pathlib too is left to the callers that use it.
"""

from __future__ import annotations

import os

from generator.errors import ToolMissing

TYPE_CHECKING = False
if TYPE_CHECKING:
    from pathlib import Path

PACKAGE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.join(PACKAGE, "_bundle")  # the packaged copies (a wheel's); absent in a clone


class NeedsClone(ToolMissing):
    """A verb that runs the repository's scripts (hack/tools.sh, the playground's builds) run from an installed
    package: exit 1 with one sentence naming the make target that does it from a clone."""


def clone() -> str | None:
    """The root of the clone this package runs from, or None when it is installed (it carries its data). An
    installed package is told by its data folder first, so nothing beside site-packages is looked at."""
    if os.path.isdir(DATA):
        return None
    root = os.path.dirname(PACKAGE)
    if os.path.isfile(os.path.join(root, "pyproject.toml")) and os.path.isdir(os.path.join(root, "charts", "dockyard")):
        return root
    return None


def _data(packaged: str, in_clone: str) -> Path:
    """The packaged copy, or the clone's file. Neither (an install that lost its data): the packaged path still,
    which the reader's error then names."""
    from pathlib import Path

    root = clone()
    return Path(DATA, packaged) if root is None else Path(root, in_clone)


def chart_dir() -> Path:
    """The chart's folder: Chart.yaml, values.yaml, values.schema.json, templates/, files/."""
    return _data("chart", os.path.join("charts", "dockyard"))


def schema_path(name: str) -> Path:
    """An input's JSON schema, `recipe` or `infra` (schema/<name>.schema.json)."""
    return _data("schema", "schema") / f"{name}.schema.json"


def chart_version() -> str:
    """The chart's `version` (Chart.yaml): the package's too (pyproject.toml's [tool.hatch.version] reads it)."""
    import re

    text = (chart_dir() / "Chart.yaml").read_text(encoding="utf-8")
    m = re.search(r"^version:\s*[\"']?([^\"'\s#]+)", text, re.M)
    return m.group(1) if m else "unknown"


def needs_clone(what: str, make: str) -> Path:
    """The clone's root for `what` (a verb that runs the repository's scripts); from an installed package,
    NeedsClone saying to run it from a clone with `make`."""
    from pathlib import Path

    root = clone()
    if root is None:
        raise NeedsClone(f"{what} needs the repository's scripts, which an installed package does not carry: "
                         f"run it from a clone of the dockyard-k8s repository: `{make}`")
    return Path(root)
