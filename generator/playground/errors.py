"""The playground's errors, raised like the rest of the CLI's (generator.errors) and printed by
generator/cli.py: `PlaygroundError` exits 1, `UsageError` exits 2, both as one `error: ...` line."""

from __future__ import annotations

from generator.errors import CheckFailed, InputError


class PlaygroundError(CheckFailed):
    """A playground action failed: exit 1."""


class UpError(PlaygroundError):
    """`up` failed; `component` names the process whose log tail helps, when there is one."""

    def __init__(self, message: str, component: str | None = None):
        super().__init__(message)
        self.component = component


class UsageError(InputError):
    """Bad flags or a folder that is not the playground's: exit 2."""

    def __init__(self, message: str):
        super().__init__([])
        self.args = (f"error: {message}",)


class NodeError(UpError):
    """A real-node failure `up` reports in one line (no traceback)."""
