"""The chart's own refusals, for plain `helm install` users: the checks values.schema.json cannot say,
gathered in dockyard.validateValues (one failure listing every refusal), and those that need the
merged kuberay.spec overlay, made where it is merged. The models refuse each of them first (exit 2,
file:line and key path): every refusal the templates can print has a row below, and every row a
model twin, so a refusal only the chart makes cannot come back."""

from __future__ import annotations

import re
import subprocess
from typing import Any

import pytest

from generator.cli import main
from generator.pinned_tools import CHART_DIR, binary, versions
from generator.render.helm import values_json
from tests.conftest import RECIPE, chart_values, deep_merge, write
from tests.support.infra import GOOD_INFRA


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


def _resources(given: Any) -> dict[str, Any]:
    return _worker(rayStartParams={"resources": given})


NOT_JSON = "kuberay.spec.workerGroupSpecs[0].rayStartParams.resources: {} is not a JSON object"
CHARS = "U+007F to U+009F, U+2028, U+2029, U+FFFE, U+FFFF"

# (id, values over the chart defaults — the same keys in an infra spec —, the chart's refusal, the
# models' words for the same infra spec). Rendered over values the models never saw (deep_merge after
# chart_values), so that each reaches the chart.
CASES = [
    ("labels param", {"kuberay": {"spec": {"headGroupSpec": {"rayStartParams": {"labels": "a=b"}}}}},
     "kuberay.spec head: rayStartParams.labels is refused by KubeRay; use the group's labels field",
     "kuberay.spec: headGroupSpec: rayStartParams.labels is refused by KubeRay"),
    ("resources twice", _worker(resources={"custom": "1"}, rayStartParams={"num-cpus": "2"}),
     "kuberay.spec trainer: Ray resources set both in group-level resources and rayStartParams; KubeRay refuses this",
     "kuberay.spec: trainer: Ray resources set both in group-level `resources` and rayStartParams ['num-cpus']"),
    ("duplicate group",
     {"kuberay": {"spec": {"workerGroupSpecs": [{"groupName": "trainer"}, {"groupName": "trainer"}]}}},
     'kuberay.spec.workerGroupSpecs: duplicate groupName "trainer"',
     "kuberay.spec.workerGroupSpecs: duplicate groupName 'trainer'"),
    ("bad resources JSON", _resources("not json"),
     "kuberay.spec trainer: rayStartParams.resources is not a JSON object: not json", NOT_JSON.format("'not json'")),
    ("resources JSON array", _resources("[1]"),
     "kuberay.spec trainer: rayStartParams.resources is not a JSON object: [1]", NOT_JSON.format("'[1]'")),
    ("resources JSON null", _resources("null"),  # was: "assignment to entry in nil map"
     "kuberay.spec trainer: rayStartParams.resources is not a JSON object: null", NOT_JSON.format("'null'")),
    ("resources a mapping", _resources({"custom": 2}),  # was: "wrong type for value; expected string"
     "kuberay.spec trainer: rayStartParams.resources is not a JSON object: map[custom:2]",
     "kuberay.spec.workerGroupSpecs[0].rayStartParams.resources: {'custom': 2} is not a JSON object in a string"),
    ("resource not a number", _resources('{"custom": "2"}'),
     'kuberay.spec trainer: rayStartParams.resources: the Ray resource "custom" is not a number: {"custom": "2"}',
     "rayStartParams.resources: the Ray resource 'custom' is \"2\", not a number"),
    ("resource below 0", _resources('{"custom": -1}'),
     'kuberay.spec trainer: rayStartParams.resources: the Ray resource "custom" is below 0: {"custom": -1}',
     "rayStartParams.resources: the Ray resource 'custom' is -1, not a number from 0"),
    ("quote in a resource", _resources('{"it\'s": 1}'),
     "kuberay.spec trainer: a Ray resource name holds a single quote: {\"dockyard_fleet_trainer\":1,\"it's\":1}",
     "rayStartParams.resources: the Ray resource name \"it's\" holds a single quote"),
    # (in the one free-form block, the overlay: every other key is typed, and the schema checks it first)
    ("merge key in an overlay", {"kuberay": {"spec": {"headGroupSpec": {"<<": {"serviceType": "NodePort"}}}}},
     ('kuberay.spec.headGroupSpec: the key "<<" is YAML\'s merge key, which Helm\'s toYaml writes unquoted: it would '
     "merge into or break the object; rename it"),
     "kuberay.spec.headGroupSpec.<<: the key '<<' is YAML's merge key"),
    ("toYaml drops a value's character", {"sandbox": {"podAnnotations": {"disk": "ssd\u0085"}}},
     (f'sandbox.podAnnotations.disk: "ssd\\u0085" holds a character Helm\'s toYaml drops or mangles ({CHARS}); '
     "remove it"),
     "sandbox.podAnnotations.disk: 'ssd\\x85' holds U+0085, which Helm's toYaml drops or mangles"),
    ("toYaml drops a key's character", {"kuberay": {"spec": {"headGroupSpec": {"a\u2028": "x"}}}},
     (f'kuberay.spec.headGroupSpec: the key "a\\u2028" holds a character Helm\'s toYaml drops or mangles '
      f"({CHARS}); remove it"),
     "kuberay.spec.headGroupSpec: the key 'a\\u2028' holds U+2028, which Helm's toYaml drops or mangles"),
    ("toYaml drops a path's character", {"launch": {"configMountPath": "/etc/\ufffe"}},
     (f'launch.configMountPath: "/etc/\\ufffe" holds a character Helm\'s toYaml drops or mangles ({CHARS}); '
     "remove it"),
     "launch.configMountPath: '/etc/\\ufffe' holds U+FFFE"),
    # the sandbox pool: autoscaling bounds, rollout, shutdown
    ("hpa min over max", {"sandbox": {"autoscaling": {"enabled": True, "minReplicas": 5, "maxReplicas": 3,
                                                      "targetCPUUtilizationPercentage": 70}}},
     ("sandbox.autoscaling.maxReplicas: minReplicas 5 is more than maxReplicas 3; expected maxReplicas of at least 5, "
      "or a lower minReplicas"),
     "sandbox.autoscaling.maxReplicas: minReplicas 5 is more than maxReplicas 3"),
    ("pdb takes the hpa minimum", {"sandbox": {"autoscaling": {"enabled": True, "minReplicas": 3,
                                                               "targetCPUUtilizationPercentage": 70},
                                               "pdb": {"maxUnavailable": 3}}},
     ("sandbox.pdb.maxUnavailable: maxUnavailable 3 lets a drain evict every executor at the HPA's minimum "
      "(autoscaling.minReplicas 3); expected pdb.maxUnavailable from 1 to 2, or autoscaling.minReplicas of at least 4 "
      "(a maxUnavailable of 0 would block every node drain)"),
     "sandbox.pdb.maxUnavailable: maxUnavailable 3 lets a drain evict every executor at the HPA's minimum"),
    ("preStop eats the grace period", {"sandbox": {"terminationGracePeriodSeconds": 30, "preStopSleepSeconds": 30}},
     ("sandbox.preStopSleepSeconds: preStopSleepSeconds 30 leaves no time of terminationGracePeriodSeconds 30 to "
      "finish the tasks in flight; expected preStopSleepSeconds below 30, or a longer terminationGracePeriodSeconds"),
     "sandbox.preStopSleepSeconds: preStopSleepSeconds 30 leaves no time of terminationGracePeriodSeconds 30"),
]
# Refused by values.schema.json first: the chart's refusal shows with --skip-schema-validation.
SCHEMA_FIRST = [
    ("quota without limits", {"infra": {"resourceQuota": {"enabled": True, "hard": {}}}},
     "infra.resourceQuota is enabled but infra.resourceQuota.hard is empty",
     "infra.resourceQuota.hard: resourceQuota is enabled but `hard` is empty"),
    ("chart env", {"sandbox": {"extraEnv": [{"name": "DOCKYARD_WORK_DIR", "value": "/tmp"}]}},
     ("sandbox.extraEnv[0].name: DOCKYARD_WORK_DIR is set by the chart itself (it sets DOCKYARD_EXECUTOR_PORT, "
     "DOCKYARD_WORK_DIR from sandbox.port and sandbox.security.workDir); choose another name"),
     "sandbox.extraEnv[0].name: DOCKYARD_WORK_DIR is set by the chart itself"),
    ("chart label", {"sandbox": {"podLabels": {"dockyard.dev/fleet": "x"}}},
     ('sandbox.podLabels: "dockyard.dev/fleet" is a label the chart sets itself on the executor pods '
     "(app.kubernetes.io/component, app.kubernetes.io/instance, app.kubernetes.io/managed-by, "
     "app.kubernetes.io/name, app.kubernetes.io/part-of, app.kubernetes.io/version, dockyard.dev/fleet, "
     "dockyard.dev/sandbox-backend, helm.sh/chart); choose another key"),
     'sandbox.podLabels: "dockyard.dev/fleet" is a label the chart sets itself'),
    ("hpa without a target", {"sandbox": {"autoscaling": {"enabled": True, "targetCPUUtilizationPercentage": None}}},
     ("sandbox.autoscaling: autoscaling is enabled but sets no target, so the HPA has no metric to act on; expected "
      "targetCPUUtilizationPercentage (e.g. 70) or targetMemoryUtilizationPercentage"),
     "sandbox.autoscaling: autoscaling is enabled but sets no target"),
    ("rollout neither surges nor drops", {"sandbox": {"rollingUpdate": {"maxSurge": 0, "maxUnavailable": "0%"}}},
     ("sandbox.rollingUpdate: maxSurge and maxUnavailable are both zero, a rollout Kubernetes refuses; expected "
      "maxSurge of at least 1 (maxUnavailable 0 keeps every replica serving)"),
     "sandbox.rollingUpdate: maxSurge and maxUnavailable are both zero"),
    ("hpa under agent-sandbox", {"sandbox": {"backend": "agent-sandbox", "autoscaling": {
        "enabled": True, "targetCPUUtilizationPercentage": 70}}},
     ("sandbox.autoscaling.enabled: autoscaling.enabled is a setting of the pool backend, which means nothing with "
      "backend agent-sandbox; expected false (its default), or backend pool"),
     ("sandbox.autoscaling.enabled: autoscaling.enabled is a setting of the pool backend, which means nothing with "
      "backend agent-sandbox")),
    ("rollout knob under agent-sandbox", {"sandbox": {"backend": "agent-sandbox", "rollingUpdate": {
        "maxUnavailable": "10%"}}},
     ("sandbox.rollingUpdate.maxUnavailable: rollingUpdate.maxUnavailable is a setting of the pool backend, which "
      "means nothing with backend agent-sandbox; expected 0 (its default), or backend pool"),
     "sandbox.rollingUpdate.maxUnavailable: rollingUpdate.maxUnavailable is a setting of the pool backend"),
    ("pdb knob under agent-sandbox", {"sandbox": {"backend": "agent-sandbox", "pdb": {"maxUnavailable": 2}}},
     ("sandbox.pdb.maxUnavailable: pdb.maxUnavailable is a setting of the pool backend, which means nothing with "
      "backend agent-sandbox; expected 1 (its default), or backend pool"),
     "sandbox.pdb.maxUnavailable: pdb.maxUnavailable is a setting of the pool backend"),
    ("warm pool under the pool", {"sandbox": {"warmPool": {"updateStrategy": "OnReplenish"}}},
     ("sandbox.warmPool.updateStrategy: warmPool.updateStrategy is a setting of the agent-sandbox backend, which "
      'means nothing with backend pool; expected "Recreate" (its default), or backend agent-sandbox'),
     "sandbox.warmPool.updateStrategy: warmPool.updateStrategy is a setting of the agent-sandbox backend"),
    ("unknown group", {"kuberay": {"spec": {"workerGroupSpecs": [{"groupName": "bogus"}]}}},
     'kuberay.spec.workerGroupSpecs: unknown groupName "bogus" (expected trainer or inference)',
     "kuberay.spec.workerGroupSpecs[0].groupName: 'bogus' is not allowed"),
    # Kueue's admission rules, and suspend left to Kueue
    ("priority class without a queue", {"launch": {"priorityClass": "high"}},
     ("launch.priorityClass: a WorkloadPriorityClass without launch.queue does nothing: Kueue reads it only on a "
      "queued RayJob or RayCluster; set launch.queue or remove launch.priorityClass"),
     "launch.priorityClass: a WorkloadPriorityClass without launch.queue does nothing"),
    ("queue in attach mode", {"launch": {"mode": "attach", "clusterName": "shared", "queue": "training"}},
     ("launch.queue: an existing cluster cannot be queued: Kueue admits a RayJob with its own cluster or a "
      "RayCluster, and refuses a queued RayJob on a clusterSelector; use launch.mode rayjob or bringup, or remove "
      "launch.queue"),
     "launch.queue: an existing cluster cannot be queued"),
    ("queued rayjob keeps its cluster", {"launch": {"queue": "training", "shutdownAfterJobFinishes": False}},
     ("launch.shutdownAfterJobFinishes: Kueue refuses a queued RayJob that keeps its cluster after the job ends "
      "(the cluster would go on holding the queue's quota); set it to true or remove launch.queue"),
     "launch.shutdownAfterJobFinishes: Kueue refuses a queued RayJob that keeps its cluster"),
    ("queued with in-tree autoscaling",
     {"launch": {"mode": "bringup", "queue": "training"}, "kuberay": {"spec": {"enableInTreeAutoscaling": True}}},
     ("kuberay.spec.enableInTreeAutoscaling: Kueue refuses in-tree autoscaling on a queued RayJob or RayCluster: it "
      "admits the gang at its fixed size; set it to false or remove launch.queue"),
     "kuberay.spec.enableInTreeAutoscaling: Kueue refuses in-tree autoscaling"),
    # storage: a claim the chart creates that several pods write
    ("storage without ReadWriteMany", {"infra": {"storage": {"checkpoints": {"size": "1Ti",
                                                                            "accessModes": ["ReadWriteOnce"]}}}},
     ("infra.storage.checkpoints.accessModes: 3 pods (head, trainer, inference) mount it and write, but its access "
      "modes [ReadWriteOnce] do not include ReadWriteMany"),
     ("infra.storage.checkpoints.accessModes: 4 pods (head, trainer, inference) mount it and write, but its access "
      "modes [ReadWriteOnce] do not include ReadWriteMany")),
    ("suspend in the overlay", {"kuberay": {"spec": {"suspend": True}}},
     ("kuberay.spec.suspend: the chart never renders suspend: Kueue suspends a queued RayJob or RayCluster and "
      "admits it by clearing suspend, and a helm upgrade must not flip it; remove it"),
     "kuberay.spec.suspend: the chart never renders suspend"),
]
# (release, mode, the chart's refusal, the models' words for the recipe named so)
RELEASES = [
    ("1abc", "rayjob", 'release name "1abc" must be a DNS-1035 label (lower case, starting with a letter)',
     "name: '1abc' is not valid"),
    ("a" * 48, "rayjob", f'release name "{"a" * 48}" has 48 characters; KubeRay allows at most 47 in rayjob mode',
     "has 48 characters; KubeRay allows at most 47 for a RayJob"),
    ("a.b", "bringup", 'release name "a.b" must be a DNS-1035 label (lower case, starting with a letter)',
     "name: 'a.b' is not valid"),
]


@pytest.mark.parametrize("over, refusal", [c[1:3] for c in CASES], ids=[c[0] for c in CASES])
def test_each_refusal_word_for_word(over, refusal):
    assert _refusal(_helm(deep_merge(chart_values(), over))) == [refusal]


@pytest.mark.parametrize("over, refusal", [c[1:3] for c in SCHEMA_FIRST], ids=[c[0] for c in SCHEMA_FIRST])
def test_each_refusal_the_schema_makes_first_word_for_word(over, refusal):
    values = deep_merge(chart_values(), over)
    assert _helm(values).returncode == 1
    assert _refusal(_helm(values, "grpo-swe", "--skip-schema-validation")) == [refusal]


@pytest.mark.parametrize("release, mode, refusal", [r[:3] for r in RELEASES], ids=[r[0][:8] for r in RELEASES])
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
        "kuberay": {"spec": {"headGroupSpec": {"rayStartParams": {"labels": "a=b"}, "<<": "x"},
                             "workerGroupSpecs": [{"groupName": "inference", "resources": {"x": "1"},
                                                   "rayStartParams": {"num-gpus": "1"}}]}},
        "sandbox": {"podAnnotations": {"disk": "ssd\u0085"}},
    })
    assert _refusal(_helm(values, "1abc")) == [
        'release name "1abc" must be a DNS-1035 label (lower case, starting with a letter)',
        "kuberay.spec head: rayStartParams.labels is refused by KubeRay; use the group's labels field",
        ("kuberay.spec inference: Ray resources set both in group-level resources and rayStartParams; "
         "KubeRay refuses this"),
        ('kuberay.spec.headGroupSpec: the key "<<" is YAML\'s merge key, which Helm\'s toYaml writes unquoted: it '
         "would merge into or break the object; rename it"),
        ('sandbox.podAnnotations.disk: "ssd\\u0085" holds a character Helm\'s toYaml drops or mangles (U+007F to '
         "U+009F, U+2028, U+2029, U+FFFE, U+FFFF); remove it"),
    ]


# Each refusal's model twin ----------------------------------------------------------------------

@pytest.mark.parametrize("over, words", [(c[1], c[3]) for c in CASES + SCHEMA_FIRST],
                         ids=[c[0] for c in CASES + SCHEMA_FIRST])
def test_the_models_refuse_it_first(tmp_path, capsys, over, words):
    """The same keys in an infra spec: exit 2 before helm runs, with the file, the line and the key path."""
    infra = write(tmp_path, "i.yaml", deep_merge(GOOD_INFRA, over))
    assert main(["render", str(RECIPE), str(infra)]) == 2
    err = capsys.readouterr().err
    assert re.search(rf"^error: {re.escape(str(infra))}:\d+: ", err, re.M) and words in err, err
    assert "execution error" not in err and "Traceback" not in err


@pytest.mark.parametrize("release, mode, words", [(r[0], r[1], r[3]) for r in RELEASES],
                         ids=[r[0][:8] for r in RELEASES])
def test_the_models_refuse_the_release_names_first(tmp_path, capsys, release, mode, words):
    recipe = write(tmp_path, "r.yaml", RECIPE.read_text().replace("name: grpo-swe", f"name: {release}"))
    infra = write(tmp_path, "i.yaml", deep_merge(GOOD_INFRA, {"launch": {"mode": mode}}))
    assert main(["render", str(recipe), str(infra)]) == 2
    err = capsys.readouterr().err
    assert f"error: {recipe}:" in err and words in err, err


def _chart_refusals() -> list[str]:
    """Every refusal the templates can print, as a pattern: the formats of `fail (printf …)` and of
    the messages dockyard.validateValues collects, and the plain lines of its checks."""
    out = []
    for path in sorted((CHART_DIR / "templates").rglob("*")):
        if path.suffix not in (".tpl", ".yaml", ".txt"):
            continue
        text = re.sub(r"\{\{-?\s*/\*.*?\*/\s*-?\}\}", "", path.read_text(), flags=re.S)  # comments
        # every failure is one of the forms read below (or validateValues' join of the collected ones)
        assert not re.search(r"(?:\{\{-?|\(|\||:?=)\s*required\s", text), path  # Helm's `required`
        fails = [text[m.end():] for m in re.finditer(r"\bfail\b", text)]
        assert all(re.match(r' \((printf "|join "\\n" \.\))', after) for after in fails), path
        checks = path.name == "_validate.tpl"  # its defines print their refusals
        where = r"fail \(|append \$messages \(" + (r"|\{\{-?\s*" if checks else "")
        printed = rf'(?:{where})printf "((?:[^"\\]|\\.)*)"'
        for fmt in re.findall(printed, text):
            out.append(fmt.replace('\\"', '"').replace("\\\\", "\\"))
        if checks:
            out += [line for line in text.splitlines() if line.strip() and "{{" not in line]
    return out


def test_every_chart_refusal_has_a_row_and_so_a_model_twin():
    refusals = [c[2] for c in CASES + SCHEMA_FIRST] + [r[2] for r in RELEASES]
    formats = _chart_refusals()
    assert len(formats) >= 15, formats
    for fmt in formats:
        pattern = re.escape(fmt)
        for verb in ("%s", "%q", "%d", "%v"):
            pattern = pattern.replace(re.escape(verb), ".+")
        assert any(re.fullmatch(pattern, r) for r in refusals), f"no row (and no model twin) for: {fmt}"


# fromJson's failure told from a valid object ---------------------------------------------------

def test_a_resources_object_with_a_key_named_error_renders():
    """fromJson reports its failure as a map with key "Error": the chart once took {"Error": 1} for one."""
    values = deep_merge(chart_values(), _resources('{"Error": 1, "custom": 2}'))
    done = _helm(values)
    assert done.returncode == 0, done.stderr
    assert """resources: '''{"Error":1,"custom":2,"dockyard_fleet_trainer":1}'''""" in done.stdout


@pytest.mark.parametrize("given", ["not json", "{not json}", '{"a": 1} trailing', '{"a": 1}, {"b": 2}', "''",
                                   '{"a": NaN}', '{"a": 1e400}', "5", '"text"', "true"])
def test_what_is_not_one_json_object_is_still_the_charts_refusal(given):
    assert _refusal(_helm(deep_merge(chart_values(), _resources(given)))) == [
        f"kuberay.spec trainer: rayStartParams.resources is not a JSON object: {given}"]


# The same words: what the chart says where the models' rule functions say it too ------------------

def _models_words(sandbox: dict[str, Any]) -> str:
    """The refusal the models' own functions make of a `sandbox` block, written as the chart writes one."""
    from generator.inputs.models.infra import chart_env_problem, chart_label_problem
    from generator.inputs.rules import sandbox_pool_problem

    for i, env in enumerate(sandbox.get("extraEnv") or []):
        if (problem := chart_env_problem(env["name"])) is not None:
            return f"sandbox.extraEnv[{i}].name: {problem}"
    for key in sorted(sandbox.get("podLabels") or {}):
        if (problem := chart_label_problem(key)) is not None:
            return f"sandbox.podLabels: {problem}"
    found = sandbox_pool_problem(sandbox)
    assert found is not None
    where, message, expected = found
    return f"sandbox.{'.'.join(map(str, where))}: {message}; expected {expected}"


SAME_WORDS = [c for c in CASES + SCHEMA_FIRST if set(c[1]) == {"sandbox"} and "podAnnotations" not in c[1]["sandbox"]]


@pytest.mark.parametrize("over", [c[1] for c in SAME_WORDS], ids=[c[0] for c in SAME_WORDS])
def test_the_sandbox_refusals_are_the_models_words(over):
    """_validate.tpl's sandbox checks (pool, backends, the chart's own env and labels) print what the models'
    rule functions (generator/inputs/rules.py, models/env.py, models/sandbox.py) print, word for word."""
    values = deep_merge(chart_values(), over)
    assert _refusal(_helm(values, "grpo-swe", "--skip-schema-validation")) == [_models_words(values["sandbox"])]


def test_same_words_covers_every_sandbox_check():
    """Each of the chart's sandbox refusals has a row above: the pool's rules, both backends, env and labels."""
    firsts = {c[2].split(":", 1)[0] for c in SAME_WORDS}
    assert {"sandbox.autoscaling.maxReplicas", "sandbox.autoscaling", "sandbox.pdb.maxUnavailable",
            "sandbox.rollingUpdate", "sandbox.preStopSleepSeconds", "sandbox.autoscaling.enabled",
            "sandbox.warmPool.updateStrategy", "sandbox.extraEnv[0].name", "sandbox.podLabels"} <= firsts
