"""kubeconform -strict over every object, RayJob and RayCluster included, fully offline."""

from __future__ import annotations

import copy

import pytest
import yaml

from generator.cli import main
from generator.maint.validate_examples import check_plain_values, plain_helm_values_files
from generator.render import kubeconform
from tests.conftest import INFRA_EXAMPLES, RECIPE, chart_values, render_values


@pytest.mark.parametrize("infra", INFRA_EXAMPLES, ids=lambda p: p.name)
def test_check_passes_on_every_example(infra, capsys):
    assert main(["check", str(RECIPE), str(infra)]) == 0
    out = capsys.readouterr().out
    assert "✓ kubeconform" in out and " 0 not " in out
    mode = yaml.safe_load(infra.read_text())["launch"]["mode"]
    expected = {"rayjob": "✓ RayJob", "bringup": "✓ RayCluster", "attach": "✓ Deployment"}[mode]
    assert expected in out


def test_ray_objects_are_validated_not_skipped():
    for mode, kind in (("rayjob", "RayJob"), ("bringup", "RayCluster")):
        out = render_values(chart_values(launch={"mode": mode}))
        results = {r.kind: r.status for r in kubeconform.validate(out.text)}
        assert results[kind] == "valid"
        assert set(results.values()) == {"valid"}


def _mutated(text: str, kind: str, mutate) -> str:
    docs = [d for d in yaml.safe_load_all(text) if d]
    for d in docs:
        if d["kind"] == kind:
            mutate(d)
    return yaml.safe_dump_all(docs)


@pytest.mark.parametrize("kind, mutate, fragment", [
    ("RayJob", lambda d: d["spec"]["rayClusterSpec"]["workerGroupSpecs"][0]["template"]["spec"]["containers"][0]
     .update(imagePolicy="x"), "imagePolicy"),
    ("RayJob", lambda d: d["spec"].update(entrypoint=5), "entrypoint"),
    ("RayJob", lambda d: d["spec"]["rayClusterSpec"]["headGroupSpec"].update(rayStartParams={"num-cpus": 1}),
     "num-cpus"),
    ("Deployment", lambda d: d["spec"]["template"]["spec"].update(hostNetworking=True), "hostNetworking"),
    ("NetworkPolicy", lambda d: d["spec"]["ingress"][0]["ports"][0].update(endPort="high"), "endPort"),
    ("PodDisruptionBudget", lambda d: d["spec"].update(maxUnavailable=[1]), "maxUnavailable"),
])
def test_strict_validation_catches_mistakes(kind, mutate, fragment):
    text = render_values(chart_values()).text
    results = kubeconform.validate(_mutated(text, kind, mutate))
    bad = [r for r in results if r.kind == kind]
    assert bad and bad[0].status == "invalid", bad
    assert fragment in bad[0].message


def test_raycluster_strictness_from_the_crd():
    text = render_values(chart_values(launch={"mode": "bringup"})).text
    results = kubeconform.validate(_mutated(text, "RayCluster", lambda d: d["spec"].update(headGroupSpecs={})))
    assert [r.status for r in results if r.kind == "RayCluster"] == ["invalid"]


@pytest.mark.parametrize("path", plain_helm_values_files(), ids=lambda p: p.name)
def test_hand_written_values_work_with_plain_helm(path):
    results = check_plain_values(path)
    assert results and all(r.status == "valid" for r in results), results
    assert {r.kind for r in results} >= {"Deployment", "Service", "NetworkPolicy", "PodDisruptionBudget",
                                         "ServiceAccount"}
    assert not {"RayJob", "RayCluster"} & {r.kind for r in results}


def test_check_reports_an_invalid_object_and_exits_1(tmp_path, capsys):
    # A hostile overlay that only the CRD schema can catch: an unknown RayClusterSpec key.
    infra = yaml.safe_load(INFRA_EXAMPLES[0].read_text())
    infra = copy.deepcopy(infra)
    infra["kuberay"].setdefault("spec", {})["headGroupSpecTypo"] = {}
    path = tmp_path / "typo.infra.yaml"
    path.write_text(yaml.safe_dump(infra))
    assert main(["check", str(RECIPE), str(path)]) == 1
    out = capsys.readouterr().out
    assert "✗ RayJob" in out and "headGroupSpecTypo" in out and "✗ kubeconform" in out
