"""The errors a user can act on (file, line, key path, what was expected, a close match) and the exit
codes. Imports nothing of the package but its exit codes: every layer raises these; the models'
validation errors are explained in `generator.inputs.explain`."""

from __future__ import annotations

from collections import namedtuple

from generator import EXIT_BAD_INPUT as EXIT_BAD_INPUT  # re-exported: the verbs import them from here
from generator import EXIT_FAILED as EXIT_FAILED
from generator import EXIT_OK as EXIT_OK


# A namedtuple: dataclasses' import (inspect, ast) costs ~7 ms at start-up, typing's ~3 ms.
class Problem(namedtuple("Problem", "file line path message expected suggestion", defaults=("", ""))):
    """file: str, line: int | None, path: str, message: str, expected: str, suggestion: str."""

    __slots__ = ()

    def render(self) -> str:
        where = self.file + (f":{self.line}" if self.line else "")
        head = f"error: {where}: " + (f"{self.path}: " if self.path else "") + self.message
        out = [head]
        if self.expected:
            out.append(f"  expected: {self.expected}")
        if self.suggestion:
            out.append(f"  did you mean: {self.suggestion}")
        return "\n".join(out)


class InputError(Exception):
    """Bad input: exit 2 with every problem listed."""

    def __init__(self, problems: list[Problem]):
        super().__init__("\n".join(p.render() for p in problems))
        self.problems = problems


class CheckFailed(Exception):
    """A check failed or the cluster said no: exit 1."""


class ToolMissing(RuntimeError):
    """A pinned tool is not built yet."""
