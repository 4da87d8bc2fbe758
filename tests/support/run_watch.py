"""The run watcher, charts/dockyard/files/run_watch.py, as its tests start it: the module, its file, a job given as
Python, and the autouse fixture that ends every process a test started (tests import `no_process_left`)."""

from __future__ import annotations

import os
import shlex
import signal
import subprocess
import sys

import pytest

from generator.live.state.driver_log import watcher, watcher_file

rw = watcher()  # the chart's files/run_watch.py as a module


WATCHER = watcher_file()


def job(body: str) -> str:
    """A shell command that runs `body` as Python (one quoted word for the watcher)."""
    return f"{sys.executable} -c {shlex.quote(body)}"


REPORT = ('import json, time\n'
          'def report(s, **kw): print("DOCKYARD_PROGRESS", json.dumps({"step": s, **kw}), flush=True)\n')


STARTED: list[subprocess.Popen] = []


@pytest.fixture(autouse=True)
def no_process_left():
    """Every watcher a test started ends with it, its job too, even when the test fails half-way."""
    yield
    while STARTED:
        proc = STARTED.pop()
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        proc.communicate()

