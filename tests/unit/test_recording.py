"""The recordings and the fake that replays them: no credentials in the committed files, every request the
fake cannot answer fails the test, and the typed client's models are built from the replayed JSON too."""

from __future__ import annotations

import re

import pytest
from fake_cluster import RECORDED, install, recording

from generator.live.cluster.kube import Kube

SCENARIOS = sorted(p.stem for p in RECORDED.glob("*.json"))
CREDENTIALS = re.compile(r"eyJ[\w-]{20,}|-----BEGIN|\"token\"|client-key|bearer ", re.IGNORECASE)


def test_every_scenario_is_recorded_small_and_without_credentials():
    assert {"status_pending", "lease", "forbidden", "errors", "crd_missing", "doctor_admin", "doctor_alice"} <= set(
        SCENARIOS)
    for name in SCENARIOS:
        text = (RECORDED / f"{name}.json").read_text()
        assert not CREDENTIALS.search(text), name
        assert len(text) < 100_000, f"{name}.json: trim it (generator/maint/recording.py DROP)"
        doc = recording(name)
        assert doc["scenario"] == name and doc["exchanges"]


def test_a_request_nothing_was_recorded_for_fails_loudly(monkeypatch, tmp_path):
    fake = install(monkeypatch, tmp_path, "errors")
    with pytest.raises(AssertionError, match="nothing recorded for GET /api/v1/nodes"):
        Kube().request("GET", "/api/v1/nodes")
    assert fake.unmatched == ["GET /api/v1/nodes {}"]
    fake.expect_unmatched("GET /api/v1/nodes {}")  # this test's purpose: not a teardown failure


def test_typed_calls_replay_too(monkeypatch, tmp_path):
    install(monkeypatch, tmp_path, "status_pending")
    kube = Kube()
    ns = kube.core.read_namespace("rec")
    assert ns.metadata.name == "rec" and ns.status.phase == "Active"
    assert kube.calls == 1


def test_requests_are_bounded_by_the_verbs_deadline(monkeypatch, tmp_path):
    """Kube gives each request its request_timeout, cut to what is left of the verb's deadline (at least
    REQUEST_FLOOR seconds to read the end state)."""
    import time

    from generator.live.cluster.kube import REQUEST_FLOOR

    fake = install(monkeypatch, tmp_path, "status_pending")
    kube = Kube()
    kube.namespace_exists("rec")
    kube.deadline = time.monotonic() + 10
    kube.namespace_exists("rec")
    kube.deadline = time.monotonic() - 1  # past it
    kube.namespace_exists("rec")
    assert fake.timeouts[0] == kube.request_timeout == 30.0
    assert 9 < fake.timeouts[1] <= 10 and fake.timeouts[2] == REQUEST_FLOOR
