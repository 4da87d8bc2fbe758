"""The recorded fake cluster's teardown check (tests/conftest.py, fake_cluster.check_installed): a request
nothing was recorded for fails the test even when the code under test swallowed the fake's AssertionError."""

from __future__ import annotations

import subprocess
import sys

from generator.live.client.kube import Kube
from generator.pinned_tools import REPO
from tests.support.fake_cluster import install


def _swallowed(monkeypatch, tmp_path):
    fake = install(monkeypatch, tmp_path, "errors")
    try:
        Kube().request("GET", "/api/v1/nodes")  # nothing recorded for it
    except Exception:  # what an `except Exception` in the code under test does
        pass
    return fake


# probe_*: collected only by the pytest the tests below start (-o python_functions=probe_*)
def probe_swallows_an_unrecorded_request(monkeypatch, tmp_path):
    _swallowed(monkeypatch, tmp_path)


def probe_expects_its_unrecorded_request(monkeypatch, tmp_path):
    _swallowed(monkeypatch, tmp_path).expect_unmatched("GET /api/v1/nodes {}")


def _run_probe(name: str) -> subprocess.CompletedProcess:
    argv = ["-q", "-p", "no:cacheprovider", "-o", "python_functions=probe_*", f"{__file__}::{name}"]
    return subprocess.run([sys.executable, "-m", "pytest", *argv], cwd=REPO, capture_output=True, text=True,
                          timeout=120)


def test_a_swallowed_unrecorded_request_fails_the_test_at_teardown():
    done = _run_probe("probe_swallows_an_unrecorded_request")
    assert done.returncode == 1, done.stdout + done.stderr
    assert "1 passed, 1 error" in done.stdout, done.stdout
    assert "ERROR at teardown of probe_swallows_an_unrecorded_request" in done.stdout, done.stdout
    assert "no answer for 1 request(s), whatever the code did with the error: ['GET /api/v1/nodes {}']" in done.stdout


def test_an_expected_unrecorded_request_passes():
    done = _run_probe("probe_expects_its_unrecorded_request")
    assert done.returncode == 0 and "1 passed" in done.stdout, done.stdout + done.stderr
