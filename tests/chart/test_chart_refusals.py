"""The chart's own refusals, for plain `helm install` users: the checks values.schema.json cannot say,
gathered in dockyard.validateValues (one failure listing every refusal), and the two that need the
merged kuberay.spec overlay, made where it is merged. The generator refuses the same inputs first."""

from __future__ import annotations

import subprocess
from typing import Any

import pytest

from generator.render.helm import values_json
from generator.tools import CHART_DIR, binary, versions
from tests.conftest import chart_values, deep_merge


def _helm(values: dict[str, Any], release: str = "grpo-swe", *extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([binary("helm"), "template", release, str(CHART_DIR), "--namespace", "dockyard",
                           "--values", "-", "--kube-version", versions()["KUBERNETES_VERSION"], *extra],
                          input=values_json(values), capture_output=True, text=True, encoding="utf-8")


def _refusal(done: subprocess.CompletedProcess[str]) -> list[str]:
    """The refusals of a failed render, one a line, without helm's prefix and suffix."""
    assert done.returncode == 1, done.stdout[-500:]
    text = done.stderr.split("): ", 1)[1] if "execution error at (" in done.stderr else done.stderr
    return [line for line in text.split("\n\nUse --debug")[0].splitlines() if line]


def _worker(**group: Any) -> dict[str, Any]:
    return {"kuberay": {"spec": {"workerGroupSpecs": [{"groupName": "trainer", **group}]}}}


# (id, values over the chart defaults, the refusal); the models refuse each of these before Helm sees it.
CASES = [
    ("labels param", {"kuberay": {"spec": {"headGroupSpec": {"rayStartParams": {"labels": "a=b"}}}}},
     "kuberay.spec head: rayStartParams.labels is refused by KubeRay; use the group's labels field"),
    ("resources twice", _worker(resources={"custom": "1"}, rayStartParams={"num-cpus": "2"}),
     "kuberay.spec trainer: Ray resources set both in group-level resources and rayStartParams; KubeRay refuses this"),
    ("duplicate group",
     {"kuberay": {"spec": {"workerGroupSpecs": [{"groupName": "trainer"}, {"groupName": "trainer"}]}}},
     'kuberay.spec.workerGroupSpecs: duplicate groupName "trainer"'),
    ("bad resources JSON", _worker(rayStartParams={"resources": "not json"}),
     "kuberay.spec trainer: rayStartParams.resources is not a JSON object: not json"),
    ("quote in a resource", _worker(rayStartParams={"resources": '{"it\'s": 1}'}),
     "kuberay.spec trainer: a Ray resource name holds a single quote: {\"dockyard_fleet_trainer\":1,\"it's\":1}"),
]


@pytest.mark.parametrize("over, refusal", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_each_refusal_word_for_word(over, refusal):
    assert _refusal(_helm(deep_merge(chart_values(), over))) == [refusal]


@pytest.mark.parametrize("release, mode, refusal", [
    ("1abc", "rayjob", 'release name "1abc" must be a DNS-1035 label (lower case, starting with a letter)'),
    ("a" * 48, "rayjob", f'release name "{"a" * 48}" has 48 characters; KubeRay allows at most 47 in rayjob mode'),
    ("a.b", "bringup", 'release name "a.b" must be a DNS-1035 label (lower case, starting with a letter)'),
])
def test_release_names_kuberay_refuses(release, mode, refusal):
    assert _refusal(_helm(chart_values(launch={"mode": mode}), release)) == [refusal]


def test_schema_less_refusals_are_the_charts_too():
    """What values.schema.json refuses first is refused by the chart with --skip-schema-validation."""
    values = deep_merge(chart_values(), {"infra": {"resourceQuota": {"enabled": True, "hard": {}}},
                                         "kuberay": {"spec": {"workerGroupSpecs": [{"groupName": "bogus"}]}}})
    assert _refusal(_helm(values, "grpo-swe", "--skip-schema-validation")) == [
        'kuberay.spec.workerGroupSpecs: unknown groupName "bogus" (expected trainer or inference)',
        "infra.resourceQuota is enabled but infra.resourceQuota.hard is empty",
    ]


def test_every_refusal_in_one_failure():
    """dockyard.validateValues collects: one render lists each refusal, in the checks' order."""
    values = deep_merge(chart_values(), {
        "kuberay": {"spec": {"headGroupSpec": {"rayStartParams": {"labels": "a=b"}},
                             "workerGroupSpecs": [{"groupName": "inference", "resources": {"x": "1"},
                                                   "rayStartParams": {"num-gpus": "1"}}]}},
        "sandbox": {"nodeSelector": {"<<": "x", "disk": "ssd\u0085"}},
    })
    assert _refusal(_helm(values, "1abc")) == [
        'release name "1abc" must be a DNS-1035 label (lower case, starting with a letter)',
        "kuberay.spec head: rayStartParams.labels is refused by KubeRay; use the group's labels field",
        ("kuberay.spec inference: Ray resources set both in group-level resources and rayStartParams; "
         "KubeRay refuses this"),
        ('sandbox.nodeSelector: the key "<<" is YAML\'s merge key, which Helm\'s toYaml writes unquoted: it would '
         "merge into or break the object; rename it"),
        ('sandbox.nodeSelector.disk: "ssd\\u0085" holds a character Helm\'s toYaml drops or mangles (U+007F to '
         "U+009F, U+2028, U+2029, U+FFFE, U+FFFF); remove it"),
    ]
