"""client/wait.py: wait_until polls a condition until it holds or the timeout passes, and returns the last
value either way (the caller says what it waited for); the condition is read at least once, even past the
deadline."""

from __future__ import annotations

import time

from generator.live.client.wait import wait_until


def test_the_first_true_value_is_returned_at_once():
    reads = iter([None, [], "gone"])
    start = time.monotonic()
    assert wait_until(lambda: next(reads), timeout=5, interval=0.01) == "gone"
    assert time.monotonic() - start < 1


def test_at_the_timeout_the_last_false_value_is_returned():
    calls = []
    start = time.monotonic()
    assert wait_until(lambda: calls.append(1) or 0, timeout=0.2, interval=0.05) == 0
    assert 0.2 <= time.monotonic() - start < 2 and len(calls) >= 3


def test_a_zero_timeout_still_reads_once():
    calls = []
    assert wait_until(lambda: calls.append(1) or None, timeout=0) is None and calls == [1]
