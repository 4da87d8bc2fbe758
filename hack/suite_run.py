"""The machinery of hack/suite.py's run: its timeline, its child processes, and the tool builds in streams.

Stdlib only (it runs before the virtualenv exists); hack/suite.py holds the plan (the parts, what they need, the
real node's decision) and drives these.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LOGS = ROOT / ".suite"


@dataclass
class Phase:
    name: str
    start: float
    end: float | None = None
    ok: bool | None = None
    note: str = ""


@dataclass
class Timeline:
    t0: float = field(default_factory=time.monotonic)
    phases: list[Phase] = field(default_factory=list)
    lock: threading.RLock = field(default_factory=threading.RLock)

    def now(self) -> float:
        return time.monotonic() - self.t0

    def begin(self, name: str) -> Phase:
        phase = Phase(name, self.now())
        with self.lock:
            self.phases.append(phase)
        return phase

    def end(self, phase: Phase, ok: bool | None, note: str = "") -> None:
        phase.end, phase.ok, phase.note = self.now(), ok, note

    def record(self, name: str, ok: bool | None, note: str) -> None:
        """A phase that did not run (a part skipped or unable to run): a row of its own, `ok` None for a skip."""
        self.end(self.begin(name), ok, note)

    def say(self, text: str) -> None:
        with self.lock:
            print(f"[suite {self.now():6.0f} s] {text}", flush=True)

    def table(self) -> str:
        rows = [("phase", "start", "end", "wall", "")]
        with self.lock:
            phases = list(self.phases)
        for p in phases:
            end = p.end if p.end is not None else self.now()
            mark = "FAILED " if p.ok is False else ("(unfinished) " if p.end is None else "")
            rows.append((p.name, f"{p.start:.0f}", f"{end:.0f}", f"{end - p.start:.0f}", mark + p.note))
        rows.append(("total", "0", f"{self.now():.0f}", f"{self.now():.0f}", f"{self.now() / 60:.1f} min"))
        widths = [max(len(r[i]) for r in rows) for i in range(4)]
        lines = ["timeline (seconds from the start of the run):"]
        for r in rows:
            lines.append("  " + r[0].ljust(widths[0]) + "  " + "  ".join(r[i].rjust(widths[i]) for i in (1, 2, 3))
                         + ("  " + r[4] if r[4] else ""))
        return "\n".join(lines)


class Stopping(Exception):
    """The run is stopping: no new process is started."""


class Children:
    """Every process the run starts (each in a session of its own), to stop them all on a failure or a signal."""

    def __init__(self) -> None:
        self.procs: list[subprocess.Popen] = []
        self.lock = threading.RLock()
        self.stopping = threading.Event()

    def popen(self, argv: list[str], log: Path | None) -> subprocess.Popen:
        """Start `argv` (output to `log`, or to ours when None); Stopping once the run stops."""
        with self.lock:
            if self.stopping.is_set():
                raise Stopping
            fh = open(log, "w") if log else None  # closed below: the child holds its own copy
            try:
                proc = subprocess.Popen(argv, cwd=ROOT, stdout=fh, stderr=subprocess.STDOUT if fh else None,
                                        stdin=subprocess.DEVNULL, start_new_session=True)
            finally:
                if fh:
                    fh.close()
            self.procs.append(proc)
            return proc

    def stop_all(self, grace: float = 120) -> None:
        """SIGINT first (pytest then runs its teardown: playgrounds go down), SIGKILL after `grace` seconds."""
        with self.lock:
            self.stopping.set()
            live = [p for p in self.procs if p.poll() is None]
        for p in live:
            _signal_group(p, signal.SIGINT)
        deadline = time.monotonic() + grace
        for p in live:
            try:
                p.wait(max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                _signal_group(p, signal.SIGKILL)
                p.wait()

    def stop_in_background(self) -> None:
        """stop_all from a signal handler: in a thread of its own (the handler may interrupt a holder of a lock)."""
        if not self.stopping.is_set():
            self.stopping.set()  # at once: no new process starts from here on
            threading.Thread(target=self.stop_all, daemon=True).start()


def _signal_group(proc: subprocess.Popen, sig: int) -> None:
    try:
        os.killpg(proc.pid, sig)
    except ProcessLookupError:
        pass


class Builds:
    """hack/tools.sh, one tool per call, in streams; each tool's end is an event the parts wait on. A failed
    build does not stop its stream: each call is independent (the order only serves Go's build cache)."""

    def __init__(self, timeline: Timeline, children: Children, streams: list[list[str]]) -> None:
        self.timeline, self.children = timeline, children
        self.tools = [t for stream in streams for t in stream]
        self.done = {t: threading.Event() for t in self.tools}
        self.failed: set[str] = set()
        self.on_failure = lambda: None  # called after each failed build
        self.threads = [threading.Thread(target=self._stream, args=(i, s), daemon=True) for i, s in enumerate(streams)]

    def start(self) -> None:
        for t in self.threads:
            t.start()

    def join(self) -> None:
        for t in self.threads:
            t.join()

    def wait_for(self, tools: list[str]) -> bool:
        """Block until each of `tools` has ended; True if all were built (and the run is not stopping)."""
        for t in tools:
            self.done[t].wait()
        return not (set(tools) & self.failed) and not self.children.stopping.is_set()

    def _stream(self, index: int, tools: list[str]) -> None:
        phase = self.timeline.begin(f"tools: stream {index + 1}")
        built: list[str] = []
        try:
            for tool in tools:
                try:
                    if not self._build(tool, built):
                        self.failed.add(tool)
                        self.on_failure()
                finally:
                    self.done[tool].set()
        finally:
            for tool in tools:  # an unexpected error: what is left counts as failed, and nobody waits forever
                if not self.done[tool].is_set():
                    self.failed.add(tool)
                    self.done[tool].set()
            bad = [t for t in tools if t in self.failed]
            note = ("built: " + ", ".join(built)) if built else "all cached" if not bad else ""
            self.timeline.end(phase, not bad, "; ".join(x for x in (note, f"failed: {', '.join(bad)}" if bad else "")
                                                        if x))

    def _build(self, tool: str, built: list[str]) -> bool:
        log = LOGS / f"tool-{tool}.log"
        t0 = time.monotonic()
        try:
            rc = self.children.popen(["bash", "hack/tools.sh", tool], log).wait()
        except Stopping:
            return False
        took = time.monotonic() - t0
        text = log.read_text(errors="replace")
        if rc != 0:
            if not self.children.stopping.is_set():
                self.timeline.say(f"tool {tool}: FAILED (exit {rc}); the last lines of {log}:\n" + tail(text, 40))
            return False
        if not re.search(r"^\[tools\] \S+ \S+: cached \(", text, re.M):  # one entry per call: built
            built.append(f"{tool} {took:.0f}")
            self.timeline.say(f"tool {tool}: built in {took:.0f} s")
        return True


def tail(text: str, n: int) -> str:
    return "\n".join(text.splitlines()[-n:])


def counts(text: str) -> dict[str, int]:
    """pytest's closing line ('== 3 failed, 1800 passed, 2 skipped in 900.1s ==', or without the '=' under -q)
    as counts: passed, failed, error, skipped, xfailed, xpassed. Empty when there is none."""
    out: dict[str, int] = {}
    for line in reversed(text.splitlines()):
        if re.search(r"\b(passed|failed|errors?|skipped|deselected|xfailed|xpassed|no tests ran)\b.* in [\d.]+s\b",
                     line):
            for n, word in re.findall(r"(\d+) (passed|failed|errors?|skipped|xfailed|xpassed)\b", line):
                key = "error" if word.startswith("error") else word
                out[key] = out.get(key, 0) + int(n)
            break
    return out
