"""What a wait is waiting on: a redrawn block on a terminal, plain lines (on change) otherwise."""

from __future__ import annotations

import sys
import threading
import time
from typing import TextIO

from generator.live.state import queueing
from generator.live.state.pods import FLEETS
from generator.live.state.snapshot import Snapshot


def fleet_lines(snap: Snapshot) -> list[str]:
    lines = []
    for name in FLEETS:
        f = snap.fleets.get(name)
        if f is None or (name == "submitter" and f.pods == 0):
            continue
        mark = "✓" if f.is_ready else "…"
        gpus = f" gpus {f.gpus_allocated}/{f.gpus_requested}" if f.gpus_requested else ""
        nodes = f" on {','.join(f.nodes)}" if f.nodes else ""
        reason = f"  — {f.reason}" if f.reason and not f.is_ready else ""
        lines.append(f"  {mark} {name:<10} {f.ready}/{f.desired}{gpus}{nodes}{reason}")
    if snap.rayjob:
        j = snap.rayjob
        lines.append(f"    rayjob {j['name']}: {j.get('deploymentStatus') or 'New'}"
                     + (f", job {j['jobStatus']}" if j.get("jobStatus") else ""))
    if snap.raycluster:
        c = snap.raycluster
        lines.append(f"    raycluster {c['name']}: {c.get('state') or 'pending'}")
    if snap.queue:
        lines.append(f"    kueue: {queueing.line(snap.queue)}")
    return lines


class Progress:
    def __init__(self, out: TextIO | None = None, quiet: bool = False, title: str = ""):
        self.out = out or sys.stdout
        self.tty = self.out.isatty() and not quiet
        self.quiet = quiet
        self.title = title
        self.t0 = time.monotonic()
        self._last = ""
        self._drawn = 0
        self._lock = threading.Lock()

    def update(self, snap: Snapshot, phase: str = "") -> None:
        with self._lock:
            elapsed = time.monotonic() - self.t0
            if self.tty:
                lines = [f"{self.title} {phase} ({elapsed:.0f}s)".strip()] + fleet_lines(snap)
                if self._drawn:
                    self.out.write(f"\x1b[{self._drawn}F\x1b[J")
                self.out.write("\n".join(lines) + "\n")
                self.out.flush()
                self._drawn = len(lines)
                return
            line = f"{phase + ': ' if phase else ''}{snap.summary_line()}"
            if line != self._last:
                self._last = line
                self.out.write(f"[{elapsed:5.1f}s] {line}\n")
                self.out.flush()

    def say(self, text: str) -> None:
        with self._lock:
            self._drawn = 0
            self.out.write(text + "\n")
            self.out.flush()
