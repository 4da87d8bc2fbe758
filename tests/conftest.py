"""Shared helpers: compose values, render them with the real helm, index the objects."""

from __future__ import annotations

import copy
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import settings

from generator.inputs.models import ChartValues
from generator.pinned_tools import REPO

# Property tests take derandomize from the profile (none pins it). `make test`: "derandomized", the same
# examples every run (reproducible CI). `make test-random`: "random", a new seed each run, printed by the
# target; a failure replays with `make test-random SEED=N` (or pytest --hypothesis-seed=N) and its blob.
# Hypothesis picks its own "ci" profile where $CI is set (no deadline: a loaded CI machine): "derandomized"
# builds on whichever of the two is in force, so CI keeps its deadline rule.
_AUTO = ("default", "ci")  # profiles nobody chose with --hypothesis-profile
if settings.get_current_profile_name() in _AUTO:  # not chosen, and not re-imported as tests.conftest
    settings.register_profile("derandomized", parent=settings.get_profile(settings.get_current_profile_name()),
                              derandomize=True)
    settings.load_profile("derandomized")  # before the test modules build their settings
settings.register_profile("random", derandomize=False, database=None, print_blob=True)

EXAMPLES = REPO / "values-examples"
RECIPE = EXAMPLES / "grpo_swe.yaml"
INFRA_EXAMPLES = sorted(EXAMPLES.glob("*.infra.yaml"))


def deep_merge(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    out = copy.deepcopy(base)
    for key, value in over.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = deep_merge(out[key], value)
        else:
            out[key] = value
    return out


def without_ignored(doc: dict[str, Any], mode: str) -> dict[str, Any]:
    """`doc` (chart values or an infra spec, changed in place) without the keys `mode` ignores, which the models
    refuse in that mode (generator.inputs.mode_keys): for tests that switch every feature on in every mode."""
    from generator.inputs.mode_keys import ignored

    for key in ignored(mode):
        *parents, last = key.split(".")
        node: Any = doc
        for part in parents:
            node = node.get(part) if isinstance(node, dict) else None
        if isinstance(node, dict):
            node.pop(last, None)
    return doc


def chart_values(**over: Any) -> dict[str, Any]:
    """Chart defaults with `over` deep-merged, validated by the model (like the generator does)."""
    base = ChartValues().model_dump(mode="json", by_alias=True, exclude_none=True)
    base["recipe"]["name"] = "grpo-swe"
    merged = deep_merge(base, over)
    return ChartValues.model_validate(merged).model_dump(mode="json", by_alias=True, exclude_none=True)


class Rendered:
    """Objects of one `helm template`, indexed by (kind, name)."""

    def __init__(self, text: str):
        self.text = text
        self.docs = [d for d in yaml.safe_load_all(text) if d]

    def kinds(self) -> list[str]:
        return [d["kind"] for d in self.docs]

    def all(self, kind: str) -> list[dict[str, Any]]:
        return [d for d in self.docs if d["kind"] == kind]

    def one(self, kind: str) -> dict[str, Any]:
        found = self.all(kind)
        assert len(found) == 1, f"expected one {kind}, found {len(found)}: {self.kinds()}"
        return found[0]

    def ray_spec(self) -> dict[str, Any]:
        if self.all("RayJob"):
            return self.one("RayJob")["spec"]["rayClusterSpec"]
        return self.one("RayCluster")["spec"]

    def groups(self) -> dict[str, dict[str, Any]]:
        spec = self.ray_spec()
        out = {"head": spec["headGroupSpec"]}
        out.update({g["groupName"]: g for g in spec["workerGroupSpecs"]})
        return out

    def pod_specs(self) -> dict[str, dict[str, Any]]:
        """Every pod spec by role: sandbox, head, trainer, inference, submitter, test."""
        from generator.render.pod_templates import pod_specs

        return pod_specs(self.docs)


def render_values(values: dict[str, Any], release: str = "grpo-swe", namespace: str = "dockyard",
                  tests: bool = True) -> Rendered:
    from generator.render.helm import template

    return Rendered(template(values, release, namespace, tests=tests))


@pytest.fixture
def render():
    """render(**overrides) -> Rendered, from chart defaults plus overrides."""

    def _render(**over: Any) -> Rendered:
        return render_values(chart_values(**over))

    return _render


@pytest.fixture(autouse=True)
def _recorded_cluster_answered_every_request():
    """A request the recorded fake cluster (tests/support/fake_cluster.py) had no answer for fails the test at
    teardown, even when the code under test swallowed the fake's AssertionError in an `except Exception`."""
    yield
    fakes = sys.modules.get("tests.support.fake_cluster")  # imported only by the tests that install a fake
    if fakes is not None:
        fakes.check_installed()


def write(tmp_path: Path, name: str, data: Any) -> Path:
    path = tmp_path / name
    path.write_text(data if isinstance(data, str) else yaml.safe_dump(data, sort_keys=False))
    return path
