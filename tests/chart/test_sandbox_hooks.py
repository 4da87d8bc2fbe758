"""The sandbox's bitnami-style hooks: sandbox.extraEnv, sandbox.podLabels, sandbox.podAnnotations.

Rendered where a user expects them, and unable to take over what the chart sets itself: the executor's
DOCKYARD_* env and the pod labels its selector, Service and tools match on. A refused value is refused
alike by the models (exit 2 with the key path), the pydantic-free checker, Helm's schema and the chart.
"""

from __future__ import annotations

import subprocess
from typing import Any

import pytest
import yaml

from generator.cli import main
from generator.errors import CheckFailed
from generator.inputs import schema_check
from generator.inputs.models import ChartValues, InfraSpec
from generator.inputs.models.infra import SANDBOX_CHART_ENV, SANDBOX_CHART_LABELS
from generator.pinned_tools import CHART_DIR, binary, versions
from generator.render.helm import values_json
from tests.conftest import EXAMPLES, RECIPE, chart_values, deep_merge, render_values, write

BASE_INFRA = yaml.safe_load((EXAMPLES / "grpo_swe.infra.yaml").read_text())
HOOKS = {
    "extraEnv": [{"name": "HF_HOME", "value": "/cache"},
                 {"name": "HF_TOKEN", "valueFrom": {"secretKeyRef": {"name": "hf", "key": "token"}}}],
    "podLabels": {"team": "rl", "example.com/cost-center": "42"},
    "podAnnotations": {"prometheus.io/scrape": "true", "note": "two\nlines"},
}
BOTH_ENV = {"extraEnv": [{"name": "HF_TOKEN", "value": "x", "valueFrom": {"secretKeyRef": {"name": "hf", "key": "t"}}}]}
BAD_ENV = {"extraEnv": [{"name": "HF_HOME", "value": "/cache"}, {"name": "DOCKYARD_WORK_DIR", "value": "/"}]}
BAD_LABEL = {"podLabels": {"team": "rl", "app.kubernetes.io/component": "other"}}
ENV_REFUSAL = "DOCKYARD_WORK_DIR is set by the chart itself (it sets DOCKYARD_EXECUTOR_PORT, DOCKYARD_WORK_DIR"
LABEL_REFUSAL = '"app.kubernetes.io/component" is a label the chart sets itself on the executor pods'


def _deployment(**sandbox: Any) -> dict[str, Any]:
    return render_values(chart_values(sandbox=sandbox)).one("Deployment")


def test_hooks_render_into_the_executor_pods():
    plain, hooked = _deployment(), _deployment(**HOOKS)
    pod, plain_pod = hooked["spec"]["template"], plain["spec"]["template"]
    executor, plain_executor = pod["spec"]["containers"][0], plain_pod["spec"]["containers"][0]
    # extraEnv: appended after the chart's env, objects as given
    assert executor["env"] == plain_executor["env"] + HOOKS["extraEnv"]
    # podLabels: merged into the pod template's labels only
    assert pod["metadata"]["labels"] == {**plain_pod["metadata"]["labels"], **HOOKS["podLabels"]}
    assert hooked["spec"]["selector"] == plain["spec"]["selector"]
    assert hooked["metadata"]["labels"] == plain["metadata"]["labels"]
    # podAnnotations: the pod template's only; the Deployment keeps its scanner annotations
    assert pod["metadata"]["annotations"] == HOOKS["podAnnotations"]
    assert "annotations" not in plain_pod["metadata"]
    assert hooked["metadata"]["annotations"] == plain["metadata"]["annotations"]
    # nothing else moves
    for doc in (hooked, plain):
        del doc["spec"]["template"]["metadata"], doc["spec"]["template"]["spec"]["containers"][0]["env"]
    assert hooked == plain


def test_the_reserved_names_are_what_the_chart_sets():
    """The models' reserved env names and label keys are exactly what the chart renders on the pods."""
    pod = _deployment()["spec"]["template"]
    assert [e["name"] for e in pod["spec"]["containers"][0]["env"]] == list(SANDBOX_CHART_ENV)
    assert sorted(pod["metadata"]["labels"]) == sorted(SANDBOX_CHART_LABELS)


def test_the_hooks_pass_the_apiservers_validation(tmp_path, capsys):
    infra = write(tmp_path, "infra.yaml", deep_merge(BASE_INFRA, {"sandbox": HOOKS}))
    assert main(["check", str(RECIPE), str(infra)]) == 0, capsys.readouterr().out
    out = tmp_path / "out.yaml"
    assert main(["render", str(RECIPE), str(infra), "-o", str(out)]) == 0
    pod = next(d for d in yaml.safe_load_all(out.read_text()) if d and d["kind"] == "Deployment")["spec"]["template"]
    assert pod["spec"]["containers"][0]["env"][-2:] == HOOKS["extraEnv"]
    assert pod["metadata"]["annotations"] == HOOKS["podAnnotations"]


@pytest.mark.parametrize("sandbox, where, refusal", [
    (BAD_ENV, ":", f"sandbox.extraEnv[1].name: {ENV_REFUSAL}"),
    (BAD_LABEL, ":", f"sandbox.podLabels: {LABEL_REFUSAL}"),
    ({"extraEnv": [{"name": "A", "vaule": "x"}]}, ":", "sandbox.extraEnv[0].vaule: unknown key"),
    ({"extraEnv": [{"name": "A=B"}]}, ":", "sandbox.extraEnv[0].name: 'A=B' is not valid"),
    ({"extraEnv": [{"name": "A", "value": 1}]}, ":", "sandbox.extraEnv[0].value: wrong type"),
    ({"podLabels": {"team": 1}}, ":", "sandbox.podLabels.team: wrong type"),
    (BOTH_ENV, ":", "sandbox.extraEnv[0]: HF_TOKEN has both value and valueFrom"),
])
def test_the_generator_refuses_with_the_key_path(tmp_path, capsys, sandbox, where, refusal):
    infra = write(tmp_path, "infra.yaml", deep_merge(BASE_INFRA, {"sandbox": sandbox}))
    code = main(["values", str(RECIPE), str(infra)])
    err = capsys.readouterr().err
    assert code == 2, err
    assert "Traceback" not in err
    assert f"error: {infra}{where}" in err and refusal in err, err


@pytest.mark.parametrize("sandbox", [BAD_ENV, BAD_LABEL, {"extraEnv": [{"name": "DOCKYARD_EXECUTOR_PORT"}]},
                                     {"podLabels": {"dockyard.dev/fleet": "x"}}, {"podLabels": {"helm.sh/chart": "x"}}])
def test_refused_by_the_models_and_the_checker_alike(sandbox):
    data = deep_merge(BASE_INFRA, {"sandbox": sandbox})
    with pytest.raises(ValueError, match="set(s)? (by the chart|itself)"):
        InfraSpec.model_validate(data)
    with pytest.raises(schema_check.Refused):
        schema_check.check("infra", data)
    with pytest.raises(schema_check.Refused):
        schema_check.check("values", {"sandbox": sandbox})


def test_value_and_value_from_together_are_refused_by_the_models_the_checker_and_helm():
    data = deep_merge(BASE_INFRA, {"sandbox": BOTH_ENV})
    with pytest.raises(ValueError, match="both value and valueFrom"):
        InfraSpec.model_validate(data)
    with pytest.raises(schema_check.Refused):
        schema_check.check("infra", data)
    values = chart_values()
    values["sandbox"].update(BOTH_ENV)
    with pytest.raises(CheckFailed, match="/sandbox/extraEnv/0"):
        render_values(values)


def test_accepted_by_the_models_and_the_checker_alike():
    data = deep_merge(BASE_INFRA, {"sandbox": HOOKS})
    dumped = InfraSpec.model_validate(data).model_dump(mode="json", by_alias=True, exclude_none=True)
    assert schema_check.check("infra", data) == dumped
    values = ChartValues.model_validate({"sandbox": HOOKS}).model_dump(mode="json", by_alias=True, exclude_none=True)
    assert schema_check.check("values", {"sandbox": HOOKS}) == values


def _helm(values: dict[str, Any], *extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([binary("helm"), "template", "grpo-swe", str(CHART_DIR), "--namespace", "dockyard",
                           "--values", "-", "--kube-version", versions()["KUBERNETES_VERSION"], *extra],
                          input=values_json(values), capture_output=True, text=True, encoding="utf-8")


@pytest.mark.parametrize("sandbox, schema_path, refusal", [
    (BAD_ENV, "/sandbox/extraEnv/1/name", f"sandbox.extraEnv[1].name: {ENV_REFUSAL}"),
    (BAD_LABEL, "/sandbox/podLabels", f"sandbox.podLabels: {LABEL_REFUSAL}"),
])
def test_helm_refuses_them_too(sandbox, schema_path, refusal):
    """values.schema.json refuses them; without it (--skip-schema-validation) the chart's validateValues does."""
    values = chart_values()
    values["sandbox"].update(sandbox)
    with pytest.raises(CheckFailed, match=schema_path):
        render_values(values)
    done = _helm(values, "--skip-schema-validation")
    assert done.returncode == 1 and refusal in done.stderr, done.stderr


def test_the_chart_collects_every_refusal_into_one_failure():
    values = chart_values()
    values["sandbox"].update({**BAD_ENV, **BAD_LABEL})
    done = _helm(values, "--skip-schema-validation")
    assert done.returncode == 1
    assert ENV_REFUSAL in done.stderr and LABEL_REFUSAL in done.stderr, done.stderr


def test_default_values_render_no_hook():
    """The defaults ([] and {}) add nothing: the chart's render before the hooks existed."""
    defaults = yaml.safe_load((CHART_DIR / "values.yaml").read_text())["sandbox"]
    assert (defaults["extraEnv"], defaults["podLabels"], defaults["podAnnotations"]) == ([], {}, {})
    pod = _deployment()["spec"]["template"]
    assert list(pod["metadata"]) == ["labels"] and len(pod["spec"]["containers"][0]["env"]) == len(SANDBOX_CHART_ENV)
