"""Polling a condition until it holds or a timeout passes: the waits that have no watch to wake them."""

from __future__ import annotations

import time
from typing import Any


def wait_until(predicate: Any, timeout: float, interval: float = 0.5) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value or time.monotonic() >= deadline:
            return value
        time.sleep(interval)
