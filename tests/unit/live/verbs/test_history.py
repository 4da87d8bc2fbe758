"""verbs/history.py (`history`): the release's revisions from Helm, as a table (the update time to the second)
or the same records as JSON/YAML, for the release resolved as every verb resolves it."""

from __future__ import annotations

import json
from argparse import Namespace

from generator.live.verbs import history as history_mod

REVISIONS = [
    {"revision": 1, "updated": "2026-12-03 20:00:01.123456789 +0000 UTC", "status": "superseded",
     "chart": "dockyard-0.1.0", "description": "Install complete"},
    {"revision": 2, "updated": "2026-12-03 20:05:09.5 +0000 UTC", "status": "deployed", "chart": "dockyard-0.1.0",
     "description": "Upgrade complete"},
]


def run(monkeypatch, output):
    asked = []

    class Helm:
        def __init__(self, kube):
            pass

        def history(self, release, namespace):
            asked.append((release, namespace))
            return REVISIONS

    monkeypatch.setattr(history_mod, "Kube", lambda kubeconfig, context: object())
    monkeypatch.setattr(history_mod, "resolve", lambda kube, release, namespace: ("small", "rec", []))
    monkeypatch.setattr(history_mod, "Helm", Helm)
    code = history_mod.history(Namespace(kubeconfig=None, context=None, release=None, namespace=None, output=output))
    assert code == 0 and asked == [("small", "rec")]


def test_the_table_has_a_row_per_revision(monkeypatch, capsys):
    run(monkeypatch, "table")
    assert capsys.readouterr().out.splitlines() == [
        "REVISION   UPDATED               STATUS       CHART            DESCRIPTION",
        "1          2026-12-03 20:00:01   superseded   dockyard-0.1.0   Install complete",
        "2          2026-12-03 20:05:09   deployed     dockyard-0.1.0   Upgrade complete",
    ]


def test_json_is_helms_records_whole(monkeypatch, capsys):
    run(monkeypatch, "json")
    assert json.loads(capsys.readouterr().out) == REVISIONS
