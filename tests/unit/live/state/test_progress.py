"""state/progress.py: what a wait prints. Plain output (a log, a pipe): one line per change of state, with the
time since the start. A terminal: the block redrawn in place (cursor up over the last one), a line per fleet."""

from __future__ import annotations

import io

from generator.live.state.progress import Progress, fleet_lines
from generator.live.state.snapshot import Fleet, Snapshot


class Terminal(io.StringIO):
    def isatty(self):
        return True


def snap(ready, reason=""):
    s = Snapshot(release="small", namespace="rec", revision=1, mode="rayjob")
    s.fleets["sandbox"] = Fleet("sandbox", desired=2, ready=2)
    s.fleets["trainer"] = Fleet("trainer", desired=2, ready=ready, pods=2, gpus_requested=16,
                                gpus_allocated=8 * ready, nodes=["gpu-0"], reason=reason)
    s.fleets["submitter"] = Fleet("submitter")  # no pod yet: not shown
    s.rayjob = {"name": "small", "deploymentStatus": "Initializing", "jobStatus": None}
    return s


def test_plain_output_says_each_state_once_with_its_phase():
    out = io.StringIO()
    p = Progress(out)
    p.update(snap(1, "Unschedulable"), "installing")
    p.update(snap(1, "Unschedulable"), "installing")
    p.update(snap(2), "waiting")
    lines = out.getvalue().splitlines()
    assert len(lines) == 2
    want = "installing: trainer 1/2 (Unschedulable) · sandbox 2/2 · rayjob Initializing · raycluster -"
    assert lines[0].endswith(want)
    assert lines[1].endswith("waiting: trainer 2/2 · sandbox 2/2 · rayjob Initializing · raycluster -")
    assert lines[0].startswith("[") and "s] " in lines[0]


def test_a_terminal_gets_the_block_redrawn_in_place():
    out = Terminal()
    p = Progress(out, title="small")
    p.update(snap(1, "Unschedulable"), "waiting")
    first = out.getvalue()
    assert "\x1b[" not in first and len(first.splitlines()) == 1 + len(fleet_lines(snap(1, "Unschedulable")))
    p.update(snap(2), "waiting")
    assert out.getvalue()[len(first):].startswith(f"\x1b[{len(first.splitlines())}F\x1b[J")
    p.say("small: ready")  # a said line stays: the next block is drawn below it, not over it
    p.update(snap(2), "waiting")
    assert "\x1b[" not in out.getvalue().rsplit("small: ready\n", 1)[1]


def test_quiet_on_a_terminal_prints_plain_lines():
    out = Terminal()
    Progress(out, quiet=True).update(snap(2), "waiting")
    assert "\x1b[" not in out.getvalue() and out.getvalue().count("\n") == 1


def test_fleet_lines_mark_ready_fleets_and_say_why_the_others_wait():
    lines = fleet_lines(snap(1, "Unschedulable: 0/3 nodes"))
    assert lines == ["  … trainer    1/2 gpus 8/16 on gpu-0  — Unschedulable: 0/3 nodes",
                     "  ✓ sandbox    2/2",
                     "    rayjob small: Initializing"]
