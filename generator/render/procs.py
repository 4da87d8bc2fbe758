"""How a tool that `check` runs (helm, kubeconform, kube-validate) failed, in one line of the CLI's voice:
the tool, how it ended, its binary and the first line it printed (a Go panic's trace is dozens)."""

from __future__ import annotations

from generator.errors import CheckFailed

LIMIT = 200  # characters of a tool's own words kept in the line


def first_line(*texts: str) -> str:
    """The first non-blank line of the first text that has one, cut to LIMIT characters, control
    characters escaped (a tool's garbage stays one printable line)."""
    for text in texts:
        for line in text.splitlines():
            line = "".join(c if c.isprintable() else ascii(c)[1:-1] for c in line.strip())
            if line:
                return line if len(line) <= LIMIT else line[: LIMIT - 1] + "…"
    return ""


def ended(code: int | None) -> str:
    """`exit 3`, `killed by SIGSEGV`."""
    if code is None:
        return "still running"
    if code < 0:
        import signal

        try:
            return f"killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"killed by signal {-code}"
    return f"exit {code}"


def failed(tool: str, path: str, code: int | None, stderr: str, stdout: str = "", what: str = "failed") -> CheckFailed:
    """`kubeconform failed (exit 2, /path/kubeconform): panic: ...`."""
    said = first_line(stderr, stdout) or "it printed nothing"
    return CheckFailed(f"{tool} {what} ({ended(code)}, {path}): {said}")


def cannot_start(tool: str, path: str, exc: OSError) -> CheckFailed:
    """The binary is there but does not run (not executable, not a program for this machine)."""
    return CheckFailed(f"{tool} {path}: cannot run it: {exc.strerror or exc} (rebuild it: `make tools`)")
