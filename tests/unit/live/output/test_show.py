"""output/show.py: the reading verbs' output. JSON and YAML are the same document (any value made a string the
same way), a table is left-aligned columns three spaces apart, and times are ages a reader compares at a glance."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import yaml

from generator.live.output.show import age, columns, emit

DOC = {"release": "small", "revision": 3, "updated": datetime(2026, 12, 3, 20, 0, tzinfo=UTC), "fleets": []}


def test_json_and_yaml_print_the_same_document_and_the_table_only_when_asked(capsys):
    drawn = []

    def table():
        drawn.append(1)
        return "TABLE"

    emit(DOC, "json", table)
    as_json = json.loads(capsys.readouterr().out)
    emit(DOC, "yaml", table)
    as_yaml = yaml.safe_load(capsys.readouterr().out)
    assert as_json == as_yaml == {"release": "small", "revision": 3, "updated": "2026-12-03 20:00:00+00:00",
                                  "fleets": []}
    assert not drawn
    emit(DOC, "table", table)
    assert capsys.readouterr().out == "TABLE\n" and drawn == [1]


def test_columns_are_left_aligned_three_spaces_apart_without_trailing_blanks():
    assert columns([["NAME", "READY", "AGE"], ["sandbox", "2/2", "5m"], ["trainer-long", "0/2", ""]]) == (
        "NAME           READY   AGE\n"
        "sandbox        2/2     5m\n"
        "trainer-long   0/2")


def test_ages_in_seconds_then_minutes_then_hours():
    now = datetime.now(UTC)
    assert age(None) == age("") == "-"
    assert age(now - timedelta(seconds=42)) in ("42s", "43s")
    assert age((now - timedelta(minutes=17, seconds=5)).isoformat()) == "17m"
    assert age(now - timedelta(hours=5, minutes=1)) == "5h"
    assert age(now - timedelta(seconds=119)) in ("119s", "2m") and age(now - timedelta(seconds=150)) == "2m"
