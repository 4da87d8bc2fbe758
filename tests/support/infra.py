"""An infra spec that passes, and the same spec with keys changed at dotted paths: the starting point of the tests
that refuse one key at a time."""

from __future__ import annotations

import yaml

from generator.cli import main
from tests.conftest import RECIPE, write

GOOD_INFRA = {
    "infra": {"namespace": "dockyard", "image": {"repository": "ghcr.io/dockyard-rl/ubuntu-swe", "tag": "2026.11-vllm"},
              "backend": "vllm"},
    "launch": {"mode": "rayjob"},
    "sandbox": {"replicas": 2},
}


def infra_with_in(base: dict, path: str, value) -> dict:
    """`base` with `value` set at dotted `path`."""
    data = yaml.safe_load(yaml.safe_dump(base))
    node = data
    *parents, last = path.split(".")
    for p in parents:
        node = node.setdefault(p, {})
    node[last] = value
    return data


def infra_with(path: str, value) -> dict:
    """GOOD_INFRA with `value` set at dotted `path`."""
    return infra_with_in(GOOD_INFRA, path, value)


def infra_with_all(changes: dict) -> dict:
    """GOOD_INFRA with each value set at its dotted path."""
    data = GOOD_INFRA
    for path, value in changes.items():
        data = infra_with_in(data, path, value)
    return data


def run_values(capsys, recipe, infra, *extra) -> tuple[int, str]:
    """`dockyard-k8s values RECIPE INFRA ...` in this process: its exit code and what it wrote to stderr."""
    code = main(["values", str(recipe), str(infra), *extra])
    return code, capsys.readouterr().err


def required(requirement: dict) -> dict:
    """An affinity whose required node affinity holds this one requirement."""
    return {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [{"matchExpressions": [requirement]}]}}}


def refused_at_input(tmp_path, capsys, change: tuple, expected: list[str]) -> None:
    """`values` of the example recipe and GOOD_INFRA with one `change` ("infra" or "recipe", dotted path or None
    for a dict of paths, value) exits 2 naming the changed file and every `expected` fragment, without a
    traceback."""
    target, path, value = change
    recipe, infra = RECIPE, write(tmp_path, "bad.infra.yaml", GOOD_INFRA)
    if target == "infra":
        bad = infra_with(path, value) if path is not None else infra_with_all(value)
        infra = write(tmp_path, "bad.infra.yaml", bad)
    else:
        data = yaml.safe_load(RECIPE.read_text())
        data[path] = value
        recipe = write(tmp_path, "bad.yaml", data)
    code, err = run_values(capsys, recipe, infra)
    assert code == 2, err
    assert "Traceback" not in err
    bad_file = infra if target == "infra" else recipe
    assert f"error: {bad_file}:" in err
    for fragment in expected:
        assert fragment in err, f"{fragment!r} not in:\n{err}"
