"""smoke's probe (generator/in_image/smoke_probe.py), the script that runs on the Ray head, called in this process:
the fleets' resources and GPUs counted against what the release asks for, the recipe's hash, the sandbox row without
URLs. It runs for real in tests/live (smoke on the real node)."""

from __future__ import annotations

import hashlib

from generator.in_image import smoke_probe
from generator.live.verbs import smoke  # the rows the probe prints, read back as the verb reads them


class _FakeRay:
    def __init__(self, nodes):
        self._nodes = nodes

    def nodes(self):
        return self._nodes



def test_probe_counts_fleet_resources_and_gpus_per_fleet(capsys):
    good = _FakeRay([
        {"Alive": True, "Resources": {"dockyard_fleet_head": 1, "CPU": 1}},
        {"Alive": True, "Resources": {"dockyard_fleet_trainer": 1, "GPU": 1}},
        {"Alive": True, "Resources": {"dockyard_fleet_inference": 1, "GPU": 1}},
        {"Alive": False, "Resources": {"dockyard_fleet_trainer": 1, "GPU": 1}},  # a dead node counts for nothing
    ])
    expect = {"trainer": {"nodes": 1, "gpus": 1}, "inference": {"nodes": 1, "gpus": 1}}
    assert smoke_probe.check_resources(good, expect, wait=0)
    no_gpus = _FakeRay([{"Alive": True, "Resources": {"dockyard_fleet_trainer": 1}},
                        {"Alive": True, "Resources": {"dockyard_fleet_inference": 1, "GPU": 1}}])
    capsys.readouterr()
    assert not smoke_probe.check_resources(no_gpus, expect, wait=0)
    rows, _ = smoke.parse_rows(capsys.readouterr().out)
    assert {r["row"]: r["ok"] for r in rows} == {
        "fleet resource dockyard_fleet_trainer": True, "GPUs of the trainer fleet": False,
        "fleet resource dockyard_fleet_inference": True, "GPUs of the inference fleet": True}


def test_probe_recipe_row_compares_the_hash(tmp_path, capsys):
    f = tmp_path / "recipe.yaml"
    f.write_text("name: x\n")
    assert smoke_probe.check_recipe(str(f), hashlib.sha256(b"name: x\n").hexdigest())
    assert not smoke_probe.check_recipe(str(f), hashlib.sha256(b"name: y\n").hexdigest())
    assert not smoke_probe.check_recipe(str(tmp_path / "missing.yaml"), "0" * 64)
    rows, _ = smoke.parse_rows(capsys.readouterr().out)
    assert [r["ok"] for r in rows] == [True, False, False] and "No such file" in rows[2]["detail"]


def test_probe_sandbox_row_without_urls_fails(capsys):
    assert not smoke_probe.check_sandbox("", 1)
    rows, _ = smoke.parse_rows(capsys.readouterr().out)
    assert rows == [{"ok": False, "row": "sandbox POST /task/submit",
                     "detail": "DOCKYARD_SANDBOX_URLS is not set on the head"}]

