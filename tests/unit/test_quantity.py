"""Kubernetes quantities (generator/quantity.py): the suffixes the API accepts, binary and decimal, parsed to numbers,
and a row's figure shown again in the unit a reader expects (cores or millicores; Mi, Gi, Ti)."""

from __future__ import annotations

import pytest

from generator.quantity import fmt, qty


@pytest.mark.parametrize(("text", "value"), [
    ("500m", 0.5), ("2", 2.0), ("1.5", 1.5), ("8Gi", 8 * 2**30), ("512Mi", 512 * 2**20), ("1Ti", 2**40),
    ("1k", 1e3), ("1K", 1e3), ("2M", 2e6), ("1G", 1e9), ("100n", 100e-9), (8, 8.0), (None, 0.0),
])
def test_a_quantity_is_its_number(text, value):
    assert qty(text) == pytest.approx(value)


def test_the_longest_suffix_wins():
    assert qty("1Mi") == 2**20 and qty("1M") == 1e6  # "Mi" is not "M" followed by a stray "i"
    with pytest.raises(ValueError):
        qty("lots")


@pytest.mark.parametrize(("key", "value", "shown"), [
    ("cpu", 0.25, "250m"), ("cpu", 4.0, "4"), ("memory", 8 * 2**30, "8Gi"), ("memory", 1.5 * 2**20, "1.5Mi"),
    ("ephemeral-storage", 2 * 2**40, "2Ti"), ("memory", 100.0, "100"), ("nvidia.com/gpu", 8.0, "8"), ("cpu", None, "-"),
])
def test_a_rows_figure_is_shown_in_the_unit_a_reader_expects(key, value, shown):
    assert fmt(key, value) == shown
