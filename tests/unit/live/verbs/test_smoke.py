"""`smoke` without a cluster: what it installs (the probe in the recipe ConfigMap, the entrypoint, the
expectations it hands the probe) and how it reads the probe's rows; the probe's checks on fakes."""

from __future__ import annotations

import hashlib
import json
import shlex
from pathlib import Path

import yaml

from generator.live.verbs import smoke

REPO = Path(__file__).resolve().parents[4]
RECIPE = REPO / "values-examples" / "grpo_swe.yaml"
INFRA = REPO / "values-examples" / "grpo_swe_playground.infra.yaml"
SHAPE = ["cluster.trainer.nodes=1", "cluster.trainer.gpusPerNode=1", "cluster.inference.gpusPerNode=1"]


def _values():
    from generator.live.changes.plan import plan

    p = plan(str(RECIPE), str(INFRA), SHAPE, "grpo-swe-smoke", "ns1", mode="rayjob")
    return p, smoke.probe_values(p.values, p.release, p.namespace, wait=40)


def test_the_probe_ships_in_the_recipe_configmap_and_is_the_entrypoint():
    from generator.render.helm import template

    p, values = _values()
    docs = {d["kind"]: d for d in yaml.safe_load_all(template(values, p.release, p.namespace)) if d}
    cm = docs["ConfigMap"]["data"]
    assert cm["probe.py"] == smoke.PROBE.read_text()
    # the recipe text is what `render` ships without the probe
    plain = {d["kind"]: d for d in yaml.safe_load_all(template(p.values, p.release, p.namespace)) if d}
    assert cm["recipe.yaml"] == plain["ConfigMap"]["data"]["recipe.yaml"]
    outer = shlex.split(docs["RayJob"]["spec"]["entrypoint"])  # under the run watcher, without a stall guard
    assert outer[:2] == ["python3", "/etc/dockyard/run_watch.py"] and "--stall-timeout" not in outer
    argv = shlex.split(outer[-1])
    assert argv[:2] == ["python3", "/etc/dockyard/probe.py"] and argv[2] == "--expect"
    expect = json.loads(argv[3])
    assert expect["trainer"] == {"nodes": 1, "gpus": 1} and expect["inference"] == {"nodes": 1, "gpus": 1}
    assert expect["recipe_sha256"] == hashlib.sha256(cm["recipe.yaml"].encode()).hexdigest()
    assert expect["sandbox_urls"] == "http://grpo-swe-smoke-sandbox.ns1.svc.cluster.local:9090"
    assert argv[4:6] == ["--config", "/etc/dockyard/recipe.yaml"]  # appended by the chart


def test_without_injected_urls_the_probe_skips_the_sandbox_row():
    from generator.live.changes.plan import plan

    p = plan(str(RECIPE), str(INFRA), SHAPE + [], "r", "ns1", mode="rayjob")
    p.values["sandbox"]["injectUrls"] = False
    values = smoke.probe_values(p.values, p.release, p.namespace, wait=40)
    expect = json.loads(shlex.split(values["recipe"]["entrypoint"])[3])
    assert expect["sandbox_urls"] is None


def test_rows_are_read_from_the_driver_log_and_printed_as_a_table():
    log = "\n".join([
        "some ray noise",
        'DOCKYARD-SMOKE {"ok": true, "row": "fleet resource dockyard_fleet_trainer", "detail": "1"}',
        'DOCKYARD-SMOKE {"ok": false, "row": "GPUs of the trainer fleet", "detail": "0 of 1"}',
        'DOCKYARD-SMOKE-END {"ok": false}',
    ])
    rows, end = smoke.parse_rows(log)
    assert [r["ok"] for r in rows] == [True, False] and end is False
    text = smoke.table(rows)
    assert text.splitlines()[0].startswith("✓ fleet resource dockyard_fleet_trainer")
    assert text.splitlines()[1].startswith("✗ GPUs of the trainer fleet")
    assert smoke.parse_rows("no marker at all") == ([], None)


def test_driver_log_outcome_names_the_state_and_the_reason():
    from generator.live.state import driver_log

    failed = "Job entrypoint command failed with exit code 1"
    job = {"metadata": {"name": "j"}, "status": {"jobStatus": "FAILED", "jobDeploymentStatus": "Complete",
                                                 "rayJobInfo": {"message": failed}}}
    assert driver_log.outcome(job) == f"RayJob j: job FAILED (deployment Complete): {failed}"
    assert driver_log.head_service({"status": {"rayClusterName": "c"}}) == "c-head-svc"


def test_smoke_and_follow_are_in_the_cli(capsys):
    import pytest

    from generator.cli import main

    with pytest.raises(SystemExit) as exc:
        main(["smoke", "--help"])
    assert exc.value.code == 0 and "--keep" in capsys.readouterr().out
    with pytest.raises(SystemExit) as exc:
        main(["run", "--help"])
    assert exc.value.code == 0 and "--follow" in capsys.readouterr().out


def test_the_probes_own_claims_go_with_it(monkeypatch):
    """Helm keeps the claims infra.storage makes; the smoke release's are its own (named after it), so removing
    the probe deletes them, and only them: no smoke leaves volumes behind."""
    from types import SimpleNamespace

    from generator.live.verbs import smoke

    deleted: list = []
    listed: list = []

    class Core:
        def list_namespaced_persistent_volume_claim(self, ns, label_selector):
            listed.append((ns, label_selector))
            return SimpleNamespace(items=[SimpleNamespace(metadata=SimpleNamespace(name="small-smoke-checkpoints"))])

        def delete_namespaced_persistent_volume_claim(self, name, ns):
            deleted.append((name, ns))

    monkeypatch.setattr(smoke, "remove", lambda *a: "")
    monkeypatch.setattr("generator.live.helm.records.release_records", lambda *a: [])
    said: list = []
    smoke._remove(SimpleNamespace(core=Core(), deadline=None), "small-smoke", "ns", 0.0, said.append)
    assert listed == [("ns", "app.kubernetes.io/instance=small-smoke")]
    assert deleted == [("small-smoke-checkpoints", "ns")]
    assert said[-1] == "smoke: deleted its claim small-smoke-checkpoints"


def test_under_agent_sandbox_smoke_says_the_sandboxes_go_unchecked(tmp_path):
    """The probe checks the pool through DOCKYARD_SANDBOX_URLS; under agent-sandbox the GPU pods have no URL, so
    no row covers the sandboxes, and smoke says so rather than passing as if it had checked them."""
    from generator.live.changes.plan import plan

    _p, values = _values()
    assert smoke.unchecked_sandbox(values) is None
    assert json.loads(shlex.split(values["recipe"]["entrypoint"])[-1])["sandbox_urls"]  # the pool: a row checks it
    infra = yaml.safe_load(INFRA.read_text())
    infra.setdefault("sandbox", {})["backend"] = "agent-sandbox"
    (tmp_path / "agent.infra.yaml").write_text(yaml.safe_dump(infra))
    p = plan(str(RECIPE), str(tmp_path / "agent.infra.yaml"), SHAPE, "grpo-swe-smoke", "ns1", mode="rayjob")
    values = smoke.probe_values(p.values, p.release, p.namespace, wait=40)
    assert json.loads(shlex.split(values["recipe"]["entrypoint"])[-1])["sandbox_urls"] is None
    assert "claims no sandbox" in smoke.unchecked_sandbox(values)


def test_a_stall_guard_with_its_first_report_bound_leaves_the_probe_renderable(tmp_path):
    """The probe runs without the stall guard, so the guard's first-report bound goes too: the chart refuses one
    without a guard (docs/run-watch.md recommends setting both)."""
    from generator.live.changes.plan import plan
    from generator.render.helm import template

    data = yaml.safe_load(INFRA.read_text())
    data.setdefault("launch", {})["watch"] = {"stallTimeoutSeconds": 600, "firstReportSeconds": 900}
    infra = tmp_path / "guarded.infra.yaml"
    infra.write_text(yaml.safe_dump(data))
    p = plan(str(RECIPE), str(infra), SHAPE, "r", "ns1", mode="rayjob")
    assert p.values["launch"]["watch"]["firstReportSeconds"] == 900
    values = smoke.probe_values(p.values, p.release, p.namespace, wait=40)
    docs = {d["kind"]: d for d in yaml.safe_load_all(template(values, p.release, p.namespace)) if d}
    outer = shlex.split(docs["RayJob"]["spec"]["entrypoint"])
    assert "--stall-timeout" not in outer and "--first-report" not in outer
