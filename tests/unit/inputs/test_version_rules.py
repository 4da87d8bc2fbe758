"""generator.inputs.version_rules: a default whose field the target KubeRay lacks is left out, with a note; the same
field set by the user is refused by name, with the version that introduced it. launch.preRunningDeadlineSeconds is
such a default (RayJob, new in KubeRay v1.6)."""

from __future__ import annotations

import json
import subprocess
from typing import Any

import pytest
import yaml
from pydantic import ValidationError

from generator.cli import main
from generator.inputs import schema_check
from generator.inputs.models import ChartValues
from generator.inputs.version_rules import (
    KUBERAY_MINORS,
    PRE_RUNNING_DEADLINE,
    PRE_RUNNING_SINCE,
    WITHOUT_PRE_RUNNING,
    pre_running_note,
)
from generator.pinned_tools import CHART_DIR, REPO, binary, versions
from tests.conftest import RECIPE, deep_merge, render_values, write
from tests.support.kuberay_crds import older_crds  # noqa: F401 (the fixture: the older minors' CRDs)

README_INFRA = REPO / "values-examples" / "grpo_swe.infra.yaml"  # the README's own example


def _values(minor: str, **launch: Any) -> dict[str, Any]:
    base = ChartValues().model_dump(mode="json", by_alias=True, exclude_none=True)
    over = {"recipe": {"name": "grpo-swe"}, "kuberay": {"version": minor}, "launch": launch}
    return ChartValues.model_validate(deep_merge(base, over)).model_dump(mode="json", by_alias=True,
                                                                         exclude_none=True)


def _deadline(values: dict[str, Any]) -> Any:
    return render_values(values).one("RayJob")["spec"].get("preRunningDeadlineSeconds")


def test_the_older_minors_are_those_without_the_field():
    since = tuple(map(int, PRE_RUNNING_SINCE.split(".")))
    assert WITHOUT_PRE_RUNNING == [m for m in KUBERAY_MINORS if tuple(map(int, m.split("."))) < since] != []


@pytest.mark.parametrize("minor", KUBERAY_MINORS)
def test_the_default_deadline_reaches_only_a_kuberay_that_has_the_field(minor):
    expected = None if minor in WITHOUT_PRE_RUNNING else PRE_RUNNING_DEADLINE  # the chart's twin of the constant
    assert _deadline(_values(minor)) == expected
    assert _deadline(_values(minor, preRunningDeadlineSeconds=0)) is None  # 0: no deadline, on every minor


def test_a_deadline_set_is_rendered_and_refused_before_the_field():
    assert _deadline(_values(PRE_RUNNING_SINCE, preRunningDeadlineSeconds=900)) == 900
    for minor in WITHOUT_PRE_RUNNING:
        values = {"recipe": {"name": "grpo-swe"}, "kuberay": {"version": minor},
                  "launch": {"preRunningDeadlineSeconds": 900}}
        with pytest.raises(ValidationError, match=f"KubeRay {minor}'s RayJob has no preRunningDeadlineSeconds"):
            ChartValues.model_validate(values)
        with pytest.raises(schema_check.Refused):  # the values.schema.json twin, as the happy path reads it
            schema_check.check("values", values)
        done = subprocess.run([binary("helm"), "template", "grpo-swe", str(CHART_DIR), "--namespace", "dockyard",
                               "--values", "-", "--kube-version", versions()["KUBERNETES_VERSION"]],
                              input=json.dumps(values), capture_output=True, text=True)
        assert done.returncode == 1 and "preRunningDeadlineSeconds" in done.stderr, done.stderr


@pytest.mark.parametrize("minor", WITHOUT_PRE_RUNNING)
def test_check_of_the_readme_example_on_an_older_kuberay_passes_with_a_note(minor, capsys):
    assert main(["check", str(RECIPE), str(README_INFRA), "--kuberay-version", minor]) == 0
    out = capsys.readouterr().out
    note = pre_running_note({}, minor)
    assert note is not None and f"  {note}\n" in out
    assert "nothing bounds a start that cannot succeed" in note


def test_check_on_the_pinned_kuberay_prints_no_note(capsys):
    assert main(["check", str(RECIPE), str(README_INFRA)]) == 0
    assert "preRunningDeadlineSeconds" not in capsys.readouterr().out


def test_the_note_names_what_bounds_the_start_instead():
    note = pre_running_note({"activeDeadlineSeconds": 7200}, "1.4")
    assert note is not None and "launch.activeDeadlineSeconds (7200 s) bounds the whole job instead" in note
    assert pre_running_note({"mode": "bringup"}, "1.4") is None  # no RayJob of the chart
    assert pre_running_note({"preRunningDeadlineSeconds": 0}, "1.4") is None  # chosen: no deadline
    assert pre_running_note({}, PRE_RUNNING_SINCE) is None


def test_a_deadline_set_on_an_older_kuberay_is_refused_by_key_line_and_version(tmp_path, capsys):
    infra = yaml.safe_load(README_INFRA.read_text())
    infra["launch"]["preRunningDeadlineSeconds"] = 900
    path = write(tmp_path, "deadline.infra.yaml", infra)
    line = next(i for i, row in enumerate(path.read_text().splitlines(), 1) if "preRunningDeadlineSeconds" in row)
    assert main(["check", str(RECIPE), str(path), "--kuberay-version", "1.4"]) == 2
    err = capsys.readouterr().err
    assert (f"deadline.infra.yaml:{line}: launch.preRunningDeadlineSeconds: KubeRay 1.4's RayJob has no "
            f"preRunningDeadlineSeconds (new in KubeRay v{PRE_RUNNING_SINCE})") in err
    assert "expected: no launch.preRunningDeadlineSeconds (or 0) with KubeRay 1.4" in err
