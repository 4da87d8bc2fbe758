"""doctor's agent-sandbox rows (generator/live/doctor/agent_sandbox.py): made only for sandbox.backend agent-sandbox;
against agent-sandbox's real controller in tests/live/test_live_agent_sandbox.py."""

from __future__ import annotations

from generator.live.doctor import agent_sandbox


def test_the_pool_backend_costs_no_read():
    assert agent_sandbox.rows(None, {"sandbox": {"backend": "pool"}}) == []  # kube is never touched
    assert agent_sandbox.rows(None, {}) == []

