"""A supervised component's record: the process doing its work now and the exits it has had.

The supervisor (supervise.py) writes it, and only it; health.py and `playground status` read it:

    <state>/supervise/<name>.json
    {"name", "supervisor": {name, pid, start_time, exe, log}, "state": "running" | "waiting" | "stopped",
     "child": {name, pid, start_time, exe, log} | null, "restarts", "next_start": epoch seconds | null,
     "exits": [{"code", "signal", "reason", "message", "at", "ran_seconds", "delay"}, ...]}   (the newest last)

state.json records the supervisor as the component's process: its PID stays the same for the playground's
life, and it is what `down` stops (the supervisor stops its child). The process that serves the component
is the record's child, which changes at each restart: `current` resolves it.
"""

from __future__ import annotations

import json
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from generator.playground.state import PlaygroundState, Process

FOLDER = "supervise"
KEPT_EXITS = 10  # the exits a record keeps (the newest); `restarts` counts them all

RUNNING, WAITING, STOPPED = "running", "waiting", "stopped"


@dataclass
class Exit:
    """One end of the child, named as the kubelet names a container's termination."""

    code: int | None  # its exit status; None when a signal ended it
    signal: str | None  # the signal that ended it (e.g. SIGKILL)
    reason: str  # Completed (exit 0), Error (another status) or the signal's name
    message: str  # for an exit with an error: the last error line it logged (the kubelet's FallbackToLogsOnError)
    at: float  # when, in seconds since the epoch
    ran_seconds: float  # how long that child had run
    delay: float  # the back-off the supervisor waited before starting the next one

    def what(self) -> str:
        """e.g. `exit code 1 (Error)`, `killed by SIGKILL`, and why when it was logged."""
        what = f"killed by {self.signal}" if self.signal else f"exit code {self.code} ({self.reason})"
        return what + (f": {self.message}" if self.message else "")

    def describe(self) -> str:
        """what() with when (UTC, and how long ago) and how long that child had run."""
        when = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(self.at))
        what = f"killed by {self.signal}" if self.signal else f"exit code {self.code} ({self.reason})"
        text = f"{what} at {when} ({_ago(time.time() - self.at)}) after {self.ran_seconds:.0f} s running"
        return text + (f": {self.message}" if self.message else "")


@dataclass
class Record:
    name: str
    supervisor: Process
    state: str = RUNNING
    child: Process | None = None
    restarts: int = 0
    next_start: float | None = None
    exits: list[Exit] = field(default_factory=list)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Record:
        return cls(name=str(d["name"]), supervisor=Process.from_dict(d["supervisor"]), state=str(d["state"]),
                   child=Process.from_dict(d["child"]) if d.get("child") else None, restarts=int(d["restarts"]),
                   next_start=d.get("next_start"), exits=[Exit(**e) for e in d.get("exits") or []])

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def add_exit(self, ended: Exit) -> None:
        self.exits = [*self.exits, ended][-KEPT_EXITS:]

    def summary(self) -> str:
        """`status`'s words on the restarts: their count and the newest exit (code or signal, when, why)."""
        if not self.exits:
            return f"restarts {self.restarts}"
        return f"restarts {self.restarts} (last: {self.exits[-1].describe()})"

    def waiting(self) -> str:
        """The words for a child that is down and about to be started again."""
        due = max(0.0, (self.next_start or time.time()) - time.time())
        last = self.exits[-1].describe() if self.exits else "no exit recorded"
        return (f"exited ({last}); restart {self.restarts + 1} in {due:.0f} s by its supervisor "
                f"(pid {self.supervisor.pid})")


def _ago(seconds: float) -> str:
    seconds = max(0.0, seconds)
    if seconds < 120:
        return f"{seconds:.0f} s ago"
    if seconds < 7200:
        return f"{seconds / 60:.0f} min ago"
    return f"{seconds / 3600:.1f} h ago"


def path(state_dir: str | Path, name: str) -> Path:
    return Path(state_dir) / FOLDER / f"{name.replace('/', '-')}.json"


def save(file: Path, record: Record) -> None:
    """Written aside, then renamed: a reader never sees half a record."""
    file.parent.mkdir(parents=True, exist_ok=True)
    tmp = file.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(record.to_dict(), indent=2, sort_keys=True))
    tmp.replace(file)


def load(state_dir: str | Path, name: str) -> Record | None:
    try:
        return Record.from_dict(json.loads(path(state_dir, name).read_text()))
    except (FileNotFoundError, ValueError, KeyError, TypeError):
        return None


def of(state_dir: str | Path, rec: Process) -> Record | None:
    """The record of the supervisor `rec`, or None when `rec` is not a supervisor (an unsupervised component,
    or a playground an earlier version started), or the record is another process's."""
    record = load(state_dir, rec.name)
    if record and (record.supervisor.pid, record.supervisor.start_time) == (rec.pid, rec.start_time):
        return record
    return None


def current(state_dir: str | Path, rec: Process) -> Process | None:
    """The process doing the work of the component `rec` records: `rec` itself, or a supervisor's child
    (None while the supervisor waits to start the next one)."""
    record = of(state_dir, rec)
    return rec if record is None else record.child


def current_processes(state: PlaygroundState) -> dict[str, Process]:
    """The control plane's components and the process doing each one's work now (tests signal these)."""
    out = {}
    for name, rec in state.components.items():
        proc = current(state.state_dir, rec)
        if proc is not None:
            out[name] = proc
    return out
