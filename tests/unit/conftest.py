"""Fixtures the unit tests share: the doctor's recorded clusters (tests/unit/recorded/doctor_*.json, replayed by
fake_cluster.py), as the cluster admin and as ServiceAccount alice of namespace `rec`."""

from __future__ import annotations

import pytest

from generator.live.client.kube import Kube
from tests.support.fake_cluster import install

NS = "rec"  # the namespace alice's recording was made in


@pytest.fixture
def admin(monkeypatch, tmp_path):
    install(monkeypatch, tmp_path, "doctor_admin")
    return Kube()


@pytest.fixture
def alice(monkeypatch, tmp_path):
    install(monkeypatch, tmp_path, "doctor_alice", namespace=NS)
    return Kube()
