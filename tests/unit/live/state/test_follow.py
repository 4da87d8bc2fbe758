"""state/follow.py: a wait re-reads the release on every watched change until its end state; it ends ready, on a
terminal failure, when the release or its namespace goes from under it, or at the deadline, each with the
reasons of what is not ready. The reads are snapshots made here (take() is replaced), the watch fires at once."""

from __future__ import annotations

import io
import time

import pytest

from generator.errors import CheckFailed
from generator.live.state import follow as follow_mod
from generator.live.state.controllers import LeaderWatch
from generator.live.state.progress import Progress
from generator.live.state.snapshot import Fleet, Snapshot


class Kube:
    """What follow() asks of the cluster besides take(): watches (an event at once) and the namespace's state."""

    def __init__(self, namespace_state=(True, None)):
        self.state = namespace_state
        self.watched = []

    def watch(self, path, on_event, stop, selector):
        self.watched.append((path, selector))
        on_event()

    def namespace_state(self, namespace):
        return self.state


def snap(sandbox_ready, revision=1, reason=""):
    s = Snapshot(release="small", namespace="rec", revision=revision, mode="attach")
    s.fleets["sandbox"] = Fleet("sandbox", desired=2, ready=2 if sandbox_ready else 1, pods=2, reason=reason)
    return s


@pytest.fixture
def reads(monkeypatch):
    """follow()'s reads, in order: each call of take() returns the next snapshot (the last one again at the end)."""
    queue: list[Snapshot] = []

    def take(kube, release, namespace):
        return queue.pop(0) if len(queue) > 1 else queue[0]

    monkeypatch.setattr(follow_mod, "take", take)
    monkeypatch.setattr(follow_mod, "LeaderWatch", lambda kube: LeaderWatch(kube, leaders=()))
    monkeypatch.setattr(follow_mod, "MIN_INTERVAL", 0.0)
    monkeypatch.setattr(follow_mod, "FLOOR_INTERVAL", 0.01)
    return queue


def test_a_wait_ends_at_the_first_ready_read_and_says_each_change(reads):
    reads += [snap(False, reason="ContainerCreating"), snap(False, reason="ContainerCreating"), snap(True)]
    out = io.StringIO()
    kube = Kube()
    got = follow_mod.follow(kube, "small", "rec", time.monotonic() + 30, Progress(out))
    assert got.ready() and not reads[1:]
    lines = out.getvalue().splitlines()
    assert len(lines) == 2  # the same state read twice is said once
    assert "sandbox 1/2 (ContainerCreating)" in lines[0] and "sandbox 2/2" in lines[1]
    assert {p.rsplit("/", 1)[1] for p, _ in kube.watched} == {"pods", "rayjobs", "rayclusters"}


def test_the_timeout_names_what_is_not_ready(reads):
    reads += [snap(False, reason="ImagePullBackOff")]
    with pytest.raises(CheckFailed) as exc:
        follow_mod.follow(Kube(), "small", "rec", time.monotonic(), Progress(io.StringIO()))
    assert str(exc.value) == "small not ready after the timeout\n  sandbox 1/2: ImagePullBackOff"


def test_a_release_uninstalled_under_the_wait_ends_it_at_once(reads):
    reads += [snap(False, revision=None)]
    with pytest.raises(CheckFailed, match="release small was uninstalled from rec while waiting for it"):
        follow_mod.follow(Kube(), "small", "rec", time.monotonic() + 30, Progress(io.StringIO()))


def test_a_namespace_being_deleted_ends_the_wait_with_its_state(reads):
    reads += [snap(False, revision=None)]
    with pytest.raises(CheckFailed, match="namespace rec is being deleted; small cannot become ready there"):
        follow_mod.follow(Kube((True, "being deleted")), "small", "rec", time.monotonic() + 30,
                          Progress(io.StringIO()))


def test_reasons_are_one_indented_line_per_fleet_and_nothing_when_all_are_ready():
    assert follow_mod.reasons(snap(True)) == ""
    want = "\n  sandbox 1/2: Unschedulable: 0/3 nodes"
    assert follow_mod.reasons(snap(False, reason="Unschedulable: 0/3 nodes")) == want
