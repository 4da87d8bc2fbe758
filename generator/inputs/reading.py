"""Every input read once and its bytes kept (a FIFO, `/dev/stdin`, `<(…)` or `-` can be read only
once), within a size cap; and the release and namespace the raw text most likely names. No YAML here:
`render` and `check` start helm from this before the YAML parser is even imported."""

from __future__ import annotations

import os
import re
import stat
import sys
from pathlib import Path

from generator.errors import InputError, Problem

TYPE_CHECKING = False  # typing's import costs ~3 ms at start-up: for type checkers only
if TYPE_CHECKING:
    from typing import Any

STDIN = "-"
MAX_INPUT_BYTES = 4 * 1024 * 1024  # a recipe must fit a 1 MiB ConfigMap; 4 MiB leaves room and a bound

# argument -> (identity of a regular file or None, its bytes or the InputError reading it raised)
_read: dict[str, tuple[tuple[int, ...] | None, bytes | InputError]] = {}


def forget_inputs() -> None:
    """Drop the kept bytes (the CLI calls this at the start of each command)."""
    _read.clear()


def display_name(path: str | Path) -> str:
    return "<stdin>" if str(path) == STDIN else str(path)


def _identity(st: os.stat_result) -> tuple[int, ...] | None:
    """A regular file's identity and version; None for pipes, FIFOs and devices (read once only)."""
    if stat.S_ISREG(st.st_mode):
        return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)
    return None


def _capped(stream: Any, file: str) -> bytes:
    data = stream.read(MAX_INPUT_BYTES + 1)
    if len(data) > MAX_INPUT_BYTES:
        raise InputError([Problem(file, None, "", f"input is larger than {MAX_INPUT_BYTES // (1024 * 1024)} MiB; "
                                  "a recipe must fit a 1 MiB ConfigMap (is this the right file?)")])
    return data


def read_input(path: str | Path) -> bytes:
    """The bytes of an input file (`-` is stdin), read once per command and kept."""
    key, file = str(path), display_name(path)
    kept = _read.get(key)
    if kept is not None:
        ident, result = kept
        if ident is not None:  # a regular file: reuse only the same version of it
            try:
                current = _identity(os.stat(key))
            except OSError:
                current = None
        if ident is None or current == ident:
            if isinstance(result, InputError):
                raise result
            return result
    ident = None
    try:
        if key == STDIN:
            result = _capped(sys.stdin.buffer, file)
        else:
            with open(key, "rb") as stream:
                ident = _identity(os.fstat(stream.fileno()))
                result = _capped(stream, file)
    except InputError as exc:
        result = exc
    except (OSError, ValueError, AttributeError) as exc:  # ValueError/AttributeError: a closed or absent stdin
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc) or type(exc).__name__
        result = InputError([Problem(file, None, "", f"cannot read the file: {reason}")])
    _read[key] = (ident, result)
    if isinstance(result, InputError):
        raise result
    return result


_NAME = r"^name:[ \t]*(['\"]?)([a-z][-a-z0-9]*)\1[ \t]*(?:#.*)?$"
_NAMESPACE = r"^[ \t]+namespace:[ \t]*(['\"]?)([a-z0-9][-a-z0-9]*)\1[ \t]*(?:#.*)?$"


def release_guess(recipe_path: str | Path, infra_path: str | Path, overrides: list[str]) -> tuple[str, str] | None:
    """The release and namespace as the raw text most likely gives them, without parsing it: only to
    start helm early (`helm.started`); `helm.render` compares them with the validated ones."""
    try:
        recipe, infra = read_input(recipe_path).decode(), read_input(infra_path).decode()
    except (InputError, UnicodeDecodeError):
        return None
    names = [m[1] for m in re.findall(_NAME, recipe, re.M)]
    names += [o.partition("=")[2] for o in overrides if o.startswith("name=")]
    spaces = [m[1] for m in re.findall(_NAMESPACE, infra, re.M)]
    if not names or len(spaces) > 1:
        return None
    return names[-1], spaces[0] if spaces else "default"
