"""A live test's bound on a verb is the verb's own, computed from the numbers the code uses, plus SLACK.

A test that waits less than the verb may take fails on a loaded machine while the verb keeps its promise
(`dev --down --timeout 120` was given 90 s); each bound here names where its numbers come from.
"""

from __future__ import annotations

import argparse
import inspect
import subprocess

import pytest

from generator.live.helm.runner import GRACE
from generator.live.verbs.dev import Forward
from generator.playground import cli as playground_cli
from generator.playground.lifecycle import COMPONENTS
from generator.playground.processes import KILL_SECONDS, STOP_SECONDS

SLACK = 10.0  # seconds no verb's clock counts: the interpreter's start and imports (~0.5 s idle), a loaded host

FORWARD_START = inspect.signature(Forward.start).parameters["timeout"].default  # dev: each port-forward's start
FORWARD_STOP = 5.0  # dev: each port-forward's wait after SIGTERM in Forward.stop (then SIGKILL)
FORWARDS = 2  # dev: the Ray dashboard and the sandbox pool
SESSION_UP = 180.0  # the session playground's `up` timeout (tests/live/conftest.py)


def _playground_up_default() -> float:
    parser = argparse.ArgumentParser()
    playground_cli.add_parser(parser.add_subparsers())
    return float(parser.parse_args(["playground", "up"]).timeout)


PLAYGROUND_UP = _playground_up_default()  # `playground up`'s --timeout when none is given


def verb(timeout: float) -> float:
    """A dockyard-k8s verb given --timeout ends within it plus GRACE (docs/live.md, "Timeouts are bounds")."""
    return timeout + GRACE + SLACK


def dev_forwards_open(timeout: float) -> float:
    """`dev`: the cluster up within its --timeout (install and until_ready), then each port-forward started."""
    return verb(timeout) + FORWARDS * FORWARD_START


def dev_down(timeout: float) -> float:
    """`dev --down` after Ctrl-C: the port-forwards stopped, then the uninstall within --timeout."""
    return FORWARDS * FORWARD_STOP + verb(timeout)


def playground_down() -> float:
    """`playground down` (no real node): each component SIGTERMed, SIGKILLed after STOP_SECONDS."""
    return len(COMPONENTS) * (STOP_SECONDS + KILL_SECONDS) + SLACK


def playground_up(timeout: float) -> float:
    """`playground up --timeout T` (no real node, tools built): healthy within T, or stopped after it."""
    return timeout + playground_down()


def ended(proc: subprocess.Popen, within: float, what: str) -> tuple[str, str]:
    """proc.communicate(), or the test fails (and proc is killed) when it runs past `within` seconds."""
    try:
        return proc.communicate(timeout=max(0.0, within))
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate()
        pytest.fail(f"{what} still ran past its bound ({within:.0f} s); stderr: {err[-2000:]}", pytrace=False)
