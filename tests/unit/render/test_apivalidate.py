"""`check` runs the apiserver's own validation (kube-validate) on every object and on every pod
template embedded in the RayJob/RayCluster, and sizes Helm's release Secret: what kubeconform's
shape check lets through, the cluster refuses, and `check` must say so (exit 1, object, field,
the apiserver's message)."""

from __future__ import annotations

import random
import re
import string
from pathlib import Path
from typing import Any

import pytest
import yaml

from generator.cli import main
from generator.render import apivalidate
from tests.conftest import (
    EXAMPLES,
    INFRA_EXAMPLES,
    RECIPE,
    chart_values,
    deep_merge,
    render_values,
    without_ignored,
    write,
)

BASE_INFRA = yaml.safe_load((EXAMPLES / "grpo_swe.infra.yaml").read_text())


def _check(tmp_path: Path, capsys, infra_over: dict[str, Any] | None = None,
           recipe: str | None = None) -> tuple[int, str]:
    infra = deep_merge(BASE_INFRA, infra_over or {})
    recipe_path = write(tmp_path, "recipe.yaml", recipe) if recipe is not None else RECIPE
    code = main(["check", str(recipe_path), str(write(tmp_path, "infra.yaml", infra))])
    return code, capsys.readouterr().out


def _refusal(out: str, kind: str, name: str, field: str, message: str) -> None:
    """`out` marks `kind name` refused and prints `field: ... message` under it (`field` a regex)."""
    lines = out.splitlines()
    row = next((i for i, line in enumerate(lines) if re.match(rf"^  ✗ {kind} +{re.escape(name)}\b", line)), None)
    assert row is not None, f"no ✗ row for {kind} {name}:\n{out}"
    below = []
    for line in lines[row + 1:]:
        if not line.startswith("      "):
            break
        below.append(line.strip())
    hits = [b for b in below if re.match(rf"apiserver refuses {field}: ", b) and message in b]
    assert hits, f"no refusal of {field} with {message!r} under {kind} {name}:\n{out}"
    assert re.search(r"^✗ api validation +\d+ refusals? in \d+ objects?; ", out, re.M), out


def _overlay_container(group: str, container: dict[str, Any], **pod: Any) -> dict[str, Any]:
    """A kuberay.spec overlay putting `container` (merged by name) and `pod` fields into one group."""
    template = {"spec": {"containers": [container], **pod}}
    if group == "head":
        return {"kuberay": {"spec": {"headGroupSpec": {"template": template}}}}
    return {"kuberay": {"spec": {"workerGroupSpecs": [
        {"groupName": g,
         "template": template if g == group else {"spec": {"nodeSelector": {"nvidia.com/gpu.present": "true"}}}}
        for g in ("trainer", "inference")
    ]}}}


def test_configmap_over_one_mebibyte(tmp_path, capsys):
    recipe = RECIPE.read_text() + "notes: " + "x" * (1024 * 1024) + "\n"
    code, out = _check(tmp_path, capsys, recipe=recipe)
    assert code == 1, out
    _refusal(out, "ConfigMap", "grpo-swe-recipe", "the object",
             "Too long: may not be more than 1048576 bytes (data and binaryData together")


def test_release_secret_over_one_mebibyte(tmp_path, capsys):
    # ~640 KiB that gzip cannot shrink much: the ConfigMap fits, but Helm's release holds the recipe
    # twice (the values and the rendered ConfigMap), gzipped then base64'd: over 1 MiB.
    rng = random.Random(9)
    noise = "".join(rng.choice(string.ascii_letters + string.digits) for _ in range(640 * 1024))
    code, out = _check(tmp_path, capsys, recipe=RECIPE.read_text() + f"notes: {noise}\n")
    assert code == 1, out
    assert "✓ api validation" in out  # every object is fine on its own
    assert re.search(r"^✗ release size +~\d+ KiB of 1024 KiB", out, re.M), out
    assert "the apiserver refuses a Secret over 1048576 bytes (1 MiB), so `helm install` fails" in out


def test_release_size_estimate_bounds():
    text = render_values(chart_values()).text
    size, exact = apivalidate.release_size(chart_values(), text)
    assert not exact and 0 < size < apivalidate.SECRET_LIMIT
    # the gzipped size of incompressible data is close to the data itself, base64'd twice over
    rng = random.Random(1)
    blob = "".join(rng.choice(string.ascii_letters) for _ in range(600 * 1024))
    size, exact = apivalidate.release_size({"blob": blob}, blob)
    assert exact and size > apivalidate.SECRET_LIMIT


def test_label_value_over_63_characters_in_the_overlay(tmp_path, capsys):
    over = {"kuberay": {"spec": {"headGroupSpec": {"template": {"metadata": {"labels": {"team": "t" * 64}}}}}}}
    code, out = _check(tmp_path, capsys, over)
    assert code == 1, out
    # the apiserver's own path for a pod template's labels (as for a Deployment: spec.template.labels)
    _refusal(out, "RayJob", "grpo-swe", re.escape("spec.rayClusterSpec.headGroupSpec.template.labels"),
             f'Invalid value: "{"t" * 64}": must be no more than 63 bytes')


def test_invalid_env_var_name_in_the_overlay(tmp_path, capsys):
    over = _overlay_container("trainer", {"name": "ray-worker", "env": [{"name": "BAD=NAME", "value": "1"}]})
    code, out = _check(tmp_path, capsys, over)
    assert code == 1, out
    _refusal(out, "RayJob", "grpo-swe",
             r"spec\.rayClusterSpec\.workerGroupSpecs\[0\]\.template\.spec\.containers\[0\]\.env\[\d+\]\.name",
             "Invalid value: \"BAD=NAME\": a valid environment variable name must consist only of printable ASCII "
             "characters other than '='")


def test_invalid_port_in_the_overlay(tmp_path, capsys):
    over = _overlay_container("inference", {"name": "metrics", "image": "busybox", "ports": [{"containerPort": 70000}]})
    code, out = _check(tmp_path, capsys, over)
    assert code == 1, out
    _refusal(out, "RayJob", "grpo-swe",
             r"spec\.rayClusterSpec\.workerGroupSpecs\[1\]\.template\.spec\.containers\[\d+\]\.ports\[0\]\.containerPort",
             "Invalid value: 70000: must be between 1 and 65535, inclusive")


def test_conflicting_toleration(tmp_path, capsys):
    """In the free-form overlay (kuberay.placement and sandbox.tolerations refuse it at input, exit 2):
    after kuberay.placement.gpu's own toleration."""
    bad = {"key": "dedicated", "operator": "Exists", "value": "sandbox"}
    over = {"kuberay": {"spec": {"workerGroupSpecs": [
        {"groupName": "trainer", "template": {"spec": {"tolerations": [bad]}}}]}}}
    code, out = _check(tmp_path, capsys, over)
    assert code == 1, out
    _refusal(out, "RayJob", "grpo-swe",
             re.escape("spec.rayClusterSpec.workerGroupSpecs[0].template.spec.tolerations[1].operator"),
             "value must be empty when `operator` is 'Exists'")


def _found_after_the_models(values: dict[str, Any], kind: str, edit: Any) -> list[apivalidate.Finding]:
    """kube-validate's findings on the chart's render of `values` with the `kind` object edited after the
    models (which refuse the edit at input, exit 2): as a values file given to Helm by hand would carry it."""
    docs = render_values(chart_values(**without_ignored(deep_merge({}, values), "rayjob"))).docs
    edit(next(d for d in docs if d["kind"] == kind))
    return apivalidate.validate(yaml.safe_dump_all(docs)).findings


def test_min_domains_with_schedule_anyway():
    spread = {"topologyKey": "topology.kubernetes.io/zone", "whenUnsatisfiable": "DoNotSchedule", "minDomains": 2}

    def edit(deployment: dict[str, Any]) -> None:
        deployment["spec"]["template"]["spec"]["topologySpreadConstraints"][0]["whenUnsatisfiable"] = "ScheduleAnyway"

    found = _found_after_the_models({"sandbox": {"topologySpreadConstraints": [spread]}}, "Deployment", edit)
    assert [f.field for f in found] == ["spec.template.spec.topologySpreadConstraints[0].minDomains"], found
    assert "can only use minDomains if whenUnsatisfiable=DoNotSchedule" in found[0].message


def test_limitrange_default_above_max():
    def edit(limit_range: dict[str, Any]) -> None:
        limit_range["spec"]["limits"][0].update(default={"cpu": "4"}, max={"cpu": "2"})

    found = _found_after_the_models({"infra": {"limitRange": {"enabled": True, "max": {"cpu": "4"}}}}, "LimitRange",
                                    edit)
    # the apiserver defaults defaultRequest to the default, which is then above the max too
    assert {f.field for f in found} == {"spec.limits[0].default[cpu]", "spec.limits[0].defaultRequest[cpu]"}
    assert any("default value 4 is greater than max value 2" in f.message for f in found), found


def test_duplicate_mount_path_in_the_overlay(tmp_path, capsys):
    over = _overlay_container("head",
                              {"name": "ray-head", "volumeMounts": [{"name": "scratch", "mountPath": "/etc/dockyard"}]},
                              volumes=[{"name": "scratch", "emptyDir": {}}])
    code, out = _check(tmp_path, capsys, over)
    assert code == 1, out
    _refusal(out, "RayJob", "grpo-swe",
             r"spec\.rayClusterSpec\.headGroupSpec\.template\.spec\.containers\[0\]\.volumeMounts\[\d+\]\.mountPath",
             'Invalid value: "/etc/dockyard": must be unique')


def test_crd_cel_rule_in_the_overlay(tmp_path, capsys):
    # the KubeRay CRD's x-kubernetes-validations (CEL): kubeconform does not run them, the apiserver does
    code, out = _check(tmp_path, capsys, {"kuberay": {"spec": {"managedBy": "my-controller"}}})
    assert code == 1, out
    _refusal(out, "RayJob", "grpo-swe", re.escape("spec.rayClusterSpec.managedBy"),
             "Invalid value: \"my-controller\": the managedBy field value must be either "
             "'ray.io/kuberay-operator' or 'kueue.x-k8s.io/multikueue'")


@pytest.mark.parametrize("infra", INFRA_EXAMPLES, ids=lambda p: p.name)
def test_examples_pass_api_validation(infra, capsys):
    assert main(["check", str(RECIPE), str(infra)]) == 0
    out = capsys.readouterr().out
    launch = yaml.safe_load(infra.read_text())["launch"]
    mode = launch["mode"]
    templates = {"rayjob": 4, "bringup": 3, "attach": 0}[mode]  # head + 2 workers (+ the submitter)
    if launch.get("submissionMode") == "HTTPMode":  # the operator submits over HTTP: no submitter pod
        templates -= 1
    summary = rf"^✓ api validation +\d+ objects, {templates} pod templates \(Kubernetes v1\.\d+\.\d+ validation\)$"
    assert re.search(summary, out, re.M), out
    assert re.search(r"^✓ release size +≤ \d+ KiB of 1024 KiB", out, re.M), out


def test_kube_validate_counts_every_object_and_template():
    text = render_values(chart_values(launch={"mode": "bringup"})).text
    report = apivalidate.validate(text)
    assert report.findings == [] and report.warnings == []
    assert report.objects == len([d for d in yaml.safe_load_all(text) if d])  # the RayCluster too, by its CRD
    assert report.pod_templates == 3


def test_unreadable_stream_is_one_line_not_a_traceback():
    from generator.errors import CheckFailed

    with pytest.raises(CheckFailed, match=r"^kube-validate failed \(exit 2, /\S+/kube-validate\): kube-validate: "
                                          r"document 0: [^\n]*$"):
        apivalidate.validate("kind: [unclosed\n")


def test_apiserver_warnings_are_shown_and_do_not_fail(tmp_path, capsys):
    # a deprecated node label: the apiserver accepts it with a warning, for a template in a RayJob too
    old_label = {"beta.kubernetes.io/arch": "amd64"}
    over = {"kuberay": {"spec": {"headGroupSpec": {"template": {"spec": {"nodeSelector": old_label}}}}},
            "sandbox": {"nodeSelector": old_label}}
    code, out = _check(tmp_path, capsys, over)
    assert code == 0, out
    deprecated = ': deprecated since v1.14; use "kubernetes.io/arch" instead'
    arch = "nodeSelector[beta.kubernetes.io/arch]" + deprecated
    assert f"  ! apiserver warns on RayJob grpo-swe: spec.rayClusterSpec.headGroupSpec.template.spec.{arch}" in out
    assert f"  ! apiserver warns on Deployment grpo-swe-sandbox: spec.template.spec.{arch}" in out
    assert "✓ api validation" in out


@pytest.mark.parametrize("path", sorted(EXAMPLES.glob("*.values.yaml")), ids=lambda p: p.name)
def test_plain_helm_values_examples_pass_api_validation(path):
    import subprocess

    from generator.pinned_tools import CHART_DIR, binary

    out = subprocess.run([binary("helm"), "template", "dockyard", str(CHART_DIR), "-f", str(path)],
                         capture_output=True, text=True, check=True).stdout
    report = apivalidate.validate(out)
    assert report.findings == [] and report.objects == len([d for d in yaml.safe_load_all(out) if d])


# Every kind the chart can render is validated ---------------------------------------------------------

TEMPLATES = Path(__file__).resolve().parents[3] / "charts" / "dockyard" / "templates"
# Values that switch on every optional object of the chart; one render per launch mode (RayJob and
# RayCluster exclude each other). A template whose kind no render here shows fails the test below.
ALL_ON = {
    "infra": {"resourceQuota": {"enabled": True, "hard": {"pods": 100}},
              "limitRange": {"enabled": True, "max": {"cpu": "64"}},
              "storage": {"checkpoints": {"size": "1Ti"}}},
    "kuberay": {"pdb": {"enabled": True}},
    "sandbox": {"autoscaling": {"enabled": True, "minReplicas": 2, "targetCPUUtilizationPercentage": 70},
                "networkPolicy": {"enabled": True}, "pdb": {"enabled": True}},
}


def _template_kinds() -> set[tuple[str, str]]:
    """(apiVersion, kind) of every object a template of the chart writes: its top-level `apiVersion:` and
    `kind:` lines, read from the templates themselves (not a list kept by hand)."""
    found = set()
    for path in sorted(TEMPLATES.rglob("*.yaml")):
        heads = re.findall(r"^(apiVersion|kind): *(\S.*?)\s*$", path.read_text(), re.M)
        assert len(heads) % 2 == 0, f"{path}: apiVersion and kind lines do not pair: {heads}"
        for (k1, api), (k2, kind) in zip(heads[::2], heads[1::2], strict=True):
            assert (k1, k2) == ("apiVersion", "kind") and "{{" not in api + kind, (
                f"{path}: a templated apiVersion or kind ({api!r}, {kind!r}): this test reads them literally")
            found.add((api.strip("\"'"), kind.strip("\"'")))
    return found


def test_every_kind_the_chart_can_render_is_validated_by_kube_validate():
    """kube-validate's own list (`-kinds`: its registry strategies and the chart's CRDs) holds every apiVersion
    and kind the templates write; renders with every switch on show exactly the templates' kinds, so the
    reading of the templates misses none."""
    in_templates = _template_kinds()
    rendered: set[tuple[str, str]] = set()
    for values in _all_on():
        rendered |= {(d["apiVersion"], d["kind"]) for d in render_values(values).docs}
    assert rendered == in_templates, f"the renders and the templates differ (add the switch to ALL_ON): " \
                                     f"{sorted(rendered ^ in_templates)}"
    validated = {(k.api_version, k.kind): k.by for k in apivalidate.kinds()}
    custom = [("ray.io/v1", "RayJob"), ("ray.io/v1", "RayCluster"),
              ("extensions.agents.x-k8s.io/v1beta1", "SandboxTemplate"),
              ("extensions.agents.x-k8s.io/v1beta1", "SandboxWarmPool")]
    assert {k: validated[k] for k in custom} == dict.fromkeys(custom, "CRD")  # KubeRay's and agent-sandbox's CRDs
    missing = sorted(in_templates - set(validated))
    assert not missing, f"the chart renders kinds kube-validate does not validate: {missing} " \
                        "(add their registry strategy to tools/kube-validate/main.go's table)"


def _all_on() -> list[dict]:
    """ALL_ON in each mode that renders a RayJob or RayCluster (less what the mode ignores, e.g. kuberay.pdb under
    rayjob), with each sandbox backend (agent-sandbox without the pool's HPA, a key it refuses, nor its target,
    which an HPA switched off refuses)."""
    agent_sandbox = {"sandbox": {"backend": "agent-sandbox",
                                 "autoscaling": {"enabled": False, "targetCPUUtilizationPercentage": None}}}
    return [chart_values(**without_ignored(deep_merge(deep_merge(ALL_ON, {"launch": {"mode": mode}}), backend), mode))
            for mode in ("rayjob", "bringup") for backend in ({}, agent_sandbox)]


def test_every_object_rendered_with_every_switch_on_is_validated():
    for values in _all_on():
        text = render_values(values).text
        report = apivalidate.validate(text)
        assert report.skipped == [] and report.findings == [], report
        assert report.objects == len([d for d in yaml.safe_load_all(text) if d])


@pytest.mark.parametrize("rules, field, message", [
    ({"policies": [{"type": "Pods", "value": 1, "periodSeconds": 0}]},
     "spec.behavior.scaleDown.policies[0].periodSeconds", "Invalid value: 0: must be greater than zero"),
    ({"policies": [{"type": "Percent", "value": 10, "periodSeconds": 1801}]},
     "spec.behavior.scaleDown.policies[0].periodSeconds", "Invalid value: 1801: must be less than or equal to 1800"),
    ({"selectPolicy": "Bogus"}, "spec.behavior.scaleDown.selectPolicy", 'Unsupported value: "Bogus"'),
    ({"stabilizationWindowSeconds": 3601}, "spec.behavior.scaleDown.stabilizationWindowSeconds",
     "must be less than or equal to 3600"),
], ids=["period-0", "period-1801", "select-bogus", "window-3601"])
def test_an_hpa_behavior_the_apiserver_refuses_is_found(rules, field, message):
    """The models refuse these at input (exit 2); kube-validate finds them in a rendered HPA edited after them."""
    def edit(hpa: dict[str, Any]) -> None:
        hpa["spec"]["behavior"] = {"scaleDown": rules}

    found = _found_after_the_models(ALL_ON, "HorizontalPodAutoscaler", edit)
    assert [(f.kind, f.field) for f in found] == [("HorizontalPodAutoscaler", field)], found
    assert message in found[0].message


def test_an_object_left_out_is_named_and_fails_the_row(tmp_path, capsys, monkeypatch):
    """A kube-validate that leaves an object out (here the real one, given no CRDs: it cannot validate the
    RayJob) makes the row ✗ and names the object and why; its object line is not ✓ either."""
    from generator.pinned_tools import cache_dir, tool_dir, versions

    real, fake = cache_dir(), tmp_path / "cache"
    fake.mkdir()
    for entry in real.iterdir():
        if entry.name != tool_dir("kube-validate").name:
            (fake / entry.name).symlink_to(entry)
    (tmp_path / "no-crds").mkdir()
    folder = fake / tool_dir("kube-validate").name
    folder.mkdir()
    script = folder / "kube-validate"
    script.write_text(f'#!/bin/sh\nexec {tool_dir("kube-validate") / "kube-validate"} -crds {tmp_path / "no-crds"}\n')
    script.chmod(0o755)
    monkeypatch.setenv("DOCKYARD_TOOLS_CACHE", str(fake))
    code, out = _check(tmp_path, capsys)
    assert code == 1, out
    assert re.search(r"^  ✗ RayJob +grpo-swe$", out, re.M), out
    assert (f"      not validated by the apiserver's rules: kube-validate {versions()['KUBERNETES_VERSION']} has no "
            "validation of RayJob (ray.io): "
            "no registry strategy of its own and no CRD of it given") in out, out
    assert re.search(r"^✗ api validation +8 of 9 objects validated \(left out: RayJob grpo-swe\), 4 pod templates ",
                     out, re.M), out
