"""verbs/rollback.py (`rollback [REVISION]`): which revision a rollback goes to. Without REVISION the last one
before the current that was deployed or superseded (a failed revision is never a target); an asked revision must
exist; 0 or below is a usage error (Helm would read 0 as "the previous one"). The guard, the lock and Helm's run
are proven in tests/unit/live/changes/test_guard_gate.py and the live tests."""

from __future__ import annotations

import pytest

from generator.errors import CheckFailed, InputError
from generator.live.verbs.rollback import _revision_arg, _target


def revisions(*statuses):
    return {i: {"metadata": {"labels": {"version": str(i), "status": s}}} for i, s in enumerate(statuses, 1)}


def test_without_a_revision_the_last_good_one_before_the_current():
    assert _target(revisions("superseded", "superseded", "deployed"), 3, "small", None) == 2
    assert _target(revisions("superseded", "deployed", "failed", "failed"), 4, "small", None) == 2
    with pytest.raises(CheckFailed, match="release small has no earlier revision to roll back to"):
        _target(revisions("failed", "deployed"), 2, "small", None)


def test_an_asked_revision_must_exist():
    assert _target(revisions("superseded", "deployed"), 2, "small", 1) == 1
    with pytest.raises(CheckFailed, match=r"release small has no revision 7 \(it has 1, 2\)"):
        _target(revisions("superseded", "deployed"), 2, "small", 7)


@pytest.mark.parametrize("revision", [0, -1])
def test_a_revision_below_one_is_a_usage_error(revision):
    with pytest.raises(InputError, match="revisions start at 1"):
        _revision_arg(revision)
    assert _revision_arg(None) is None and _revision_arg(3) == 3
