"""The versions users run (other KubeRay and Kubernetes minors): `check --kuberay-version X` validates against that
KubeRay minor's own CRDs (every example passes there with only the chart's defaults), `check --kube-version 1.X`
targets that Kubernetes minor (kubeconform's schemas, Helm's capabilities, the apiserver validation of the nearest
pinned minor named); a version outside the range is exit 2."""

from __future__ import annotations

import subprocess

import pytest
import yaml

from generator.cli import main
from generator.inputs.version_rules import DEFAULT_KUBERAY_MINOR
from generator.maint.validate_examples import plain_helm_values_files
from generator.pinned_tools import CHART_DIR, KUBE_MINORS, KUBERAY_PINS, REPO, binary, targeting, tool_dir, versions
from generator.render import kubeconform
from tests.conftest import INFRA_EXAMPLES, RECIPE, chart_values, render_values, write
from tests.support.kuberay_crds import older_crds  # noqa: F401 (the fixture: the older minors' CRDs)

INFRA = REPO / "values-examples" / "grpo_swe.infra.yaml"
BRINGUP = REPO / "values-examples" / "grpo_swe_bringup.infra.yaml"


def _infra(tmp_path, base, **kuberay):
    data = yaml.safe_load(base.read_text())
    data.setdefault("kuberay", {}).update(kuberay)
    return write(tmp_path, "infra.yaml", data)


def _summary(out: str, step: str) -> str:
    return next(line for line in out.splitlines() if line.startswith((f"✓ {step}", f"✗ {step}")))


# launch.preRunningDeadlineSeconds (RayJob, new in KubeRay v1.6): its default is left out for the older minors,
# whose CRDs lack it (tests/unit/inputs/test_version_rules.py).
WITHOUT_DEADLINE = {"1.4", "1.5"}


def _launch(tmp_path, base, **launch):
    data = yaml.safe_load(base.read_text())
    data.setdefault("launch", {}).update(launch)
    return write(tmp_path, "infra.yaml", data)


@pytest.mark.parametrize("minor", sorted(KUBERAY_PINS))
def test_check_validates_against_the_chosen_kuberay_crds(minor, capsys, tmp_path):
    assert main(["check", str(RECIPE), str(INFRA), "--kuberay-version", minor]) == 0
    pinned = versions()[KUBERAY_PINS[minor]]
    assert f"KubeRay {pinned} CRDs" in _summary(capsys.readouterr().out, "kubeconform")
    assert (tool_dir("kuberay-crds").name == f"kuberay-crds-{versions()['KUBERAY_VERSION']}")  # the default is kept


# Every example (values-examples/) against each older KubeRay's CRDs, with only the chart's defaults: they cover
# each launch mode and each feature the chart renders into the Ray objects (storage's claims and mounts, Kueue's
# queue label and suspend, the topology's placement, the locked egress, SGLang, the playground's shape). A default
# the older CRDs lack must be left out for that KubeRay, with a note (generator/inputs/version_rules.py).
OLDER = [minor for minor in sorted(KUBERAY_PINS) if minor != DEFAULT_KUBERAY_MINOR]


@pytest.mark.parametrize("minor", OLDER)
@pytest.mark.parametrize("infra", INFRA_EXAMPLES, ids=lambda p: p.name)
def test_every_example_passes_check_on_each_older_kuberay(infra, minor, capsys):
    launch = yaml.safe_load(infra.read_text())["launch"]
    assert "preRunningDeadlineSeconds" not in launch  # only the defaults: the deadline set is refused by name
    code = main(["check", str(RECIPE), str(infra), "--kuberay-version", minor])
    out = capsys.readouterr().out
    assert code == 0, out
    assert f"KubeRay {versions()[KUBERAY_PINS[minor]]} CRDs" in _summary(out, "kubeconform"), out
    note = f"note: KubeRay {minor}'s RayJob has no preRunningDeadlineSeconds: the default start deadline"
    assert (note in out) == (launch["mode"] == "rayjob"), out  # the chart's RayJob only: bringup and attach have none


def test_the_plain_helm_examples_render_nothing_of_kuberay():
    """The plain-Helm examples (no generator) are out of the walk above: they render no RayJob or RayCluster,
    so the KubeRay minor changes nothing in them."""
    files = plain_helm_values_files()
    assert files, "no plain-Helm example found"
    for path in files:
        proc = subprocess.run([binary("helm"), "template", "dockyard", str(CHART_DIR), "-f", str(path),
                               "--kube-version", versions()["KUBERNETES_VERSION"]],
                              capture_output=True, text=True, check=True)
        kinds = {d["apiVersion"] for d in yaml.safe_load_all(proc.stdout) if d}
        assert not [k for k in kinds if k.startswith("ray.io/")], (path, kinds)


def test_the_default_is_the_pinned_kuberay():
    with targeting():
        assert tool_dir("kuberay-crds").name == f"kuberay-crds-{versions()['KUBERAY_VERSION']}"
    with targeting(kuberay=versions()["KUBERAY_1_4_VERSION"]):
        assert tool_dir("kuberay-crds").name == f"kuberay-crds-{versions()['KUBERAY_1_4_VERSION']}"


# Fields of the CRDs that older minors lack (diff of the v1.4.0, v1.5.0 and v1.6.1 CRDs): the chart renders
# none by default, but the kuberay.spec overlay passes them on, and the older operator's CRD prunes or refuses them.
NEWER_FIELDS = [
    # RayClusterSpec.authOptions: new in v1.6
    (INFRA, {"spec": {"authOptions": {"mode": "token"}}}, "RayJob", "authOptions", {"1.4", "1.5"}),
    (BRINGUP, {"spec": {"upgradeStrategy": {"type": "None"}}}, "RayCluster", "upgradeStrategy", {"1.4", "1.5"}),
    # the head group's Ray resources/labels: new in v1.5
    (BRINGUP, {"spec": {"headGroupSpec": {"labels": {"zone": "a"}}}}, "RayCluster", "labels", {"1.4"}),
]


@pytest.mark.parametrize("base, kuberay, kind, field, refused_by", NEWER_FIELDS,
                         ids=[f"{f[2]}-{f[3]}" for f in NEWER_FIELDS])
def test_a_field_an_older_crd_lacks_is_refused(tmp_path, capsys, base, kuberay, kind, field, refused_by):
    infra = _infra(tmp_path, base, **kuberay)
    for minor in sorted(KUBERAY_PINS):
        code = main(["check", str(RECIPE), str(infra), "--kuberay-version", minor])
        out = capsys.readouterr().out
        if minor in refused_by:
            assert code == 1, out
            bad = [line for line in out.splitlines() if line.startswith(f"  ✗ {kind}")]
            assert bad and field in bad[0], out
            assert _summary(out, "kubeconform").startswith("✗")
        else:
            assert code == 0, out


def test_a_kuberay_version_outside_the_range_is_exit_2(capsys):
    for given in ("1.3", "1.7", "v2.0", "latest", "v1.4.1"):
        assert main(["check", str(RECIPE), str(INFRA), "--kuberay-version", given]) == 2
        err = capsys.readouterr().err
        assert f"--kuberay-version {given}" in err and "v1.4-v1.6" in err, err


@pytest.mark.parametrize("minor", KUBE_MINORS)
def test_check_targets_the_chosen_kubernetes_minor(minor, capsys):
    assert main(["check", str(RECIPE), str(INFRA), "--kube-version", f"1.{minor}"]) == 0
    out = capsys.readouterr().out
    assert f"with --kube-version v1.{minor}.0" in _summary(out, "helm template")
    assert f"Kubernetes v1.{minor}.0," in _summary(out, "kubeconform")
    api = _summary(out, "api validation")
    pinned = ".".join(versions()["KUBERNETES_VERSION"].lstrip("v").split(".")[:2])
    assert f"Kubernetes {versions()['KUBERNETES_VERSION']} validation" in api
    assert ("nearest pinned minor" in api) == (f"1.{minor}" != pinned), api


def test_a_kubernetes_minor_outside_the_range_is_exit_2(capsys):
    for given in (f"1.{KUBE_MINORS[0] - 1}", f"1.{KUBE_MINORS[-1] + 1}", "2.0", "x"):
        assert main(["check", str(RECIPE), str(INFRA), "--kube-version", given]) == 2
        err = capsys.readouterr().err
        assert f"--kube-version {given}" in err and f"v1.{KUBE_MINORS[0]}-v1.{KUBE_MINORS[-1]}" in err, err


def test_helm_is_given_the_chosen_minor():
    """Helm's capabilities (`.Capabilities.KubeVersion`, the chart's kubeVersion) are the chosen minor's."""
    from generator.render import helm

    with targeting(kube="v1.34.0"):
        t = helm.Template(chart_values(), "grpo-swe", "dockyard")
    t.result()
    args = list(t.proc.args)
    assert args[args.index("--kube-version") + 1] == "v1.34.0"
    t = helm.Template(chart_values(), "grpo-swe", "dockyard")
    t.result()
    args = list(t.proc.args)
    assert args[args.index("--kube-version") + 1] == versions()["KUBERNETES_VERSION"]


def _deployment_with(field: str, value) -> str:
    text = render_values(chart_values()).text
    docs = [d for d in yaml.safe_load_all(text) if d]
    for d in docs:
        if d["kind"] == "Deployment":
            d["spec"]["template"]["spec"][field] = value
    return yaml.safe_dump_all(docs)


@pytest.mark.parametrize("minor", sorted(KUBERAY_PINS))
def test_the_pre_running_deadline_set_is_refused_by_name_before_kuberay_1_6(minor, capsys, tmp_path):
    """Set in the infra spec, the deadline reaches the RayJob; before v1.6 the models refuse it by name (exit 2)."""
    infra = _launch(tmp_path, INFRA, preRunningDeadlineSeconds=900)
    code = main(["check", str(RECIPE), str(infra), "--kuberay-version", minor])
    captured = capsys.readouterr()
    if minor not in WITHOUT_DEADLINE:
        assert code == 0, captured.out
        return
    assert code == 2, captured.out
    assert (f"launch.preRunningDeadlineSeconds: KubeRay {minor}'s RayJob has no preRunningDeadlineSeconds "
            "(new in KubeRay v1.6)") in captured.err


def test_kubeconform_uses_the_chosen_minors_schemas():
    """PodSpec.hostnameOverride is new in Kubernetes 1.34: 1.33's strict schema refuses it, 1.34's accepts it."""
    stream = _deployment_with("hostnameOverride", "x")
    for minor, status in (("v1.33.0", "invalid"), ("v1.34.0", "valid")):
        with targeting(kube=minor):
            found = {r.kind: r for r in kubeconform.validate(stream)}
        assert found["Deployment"].status == status, (minor, found["Deployment"])
        if status == "invalid":
            assert "hostnameOverride" in found["Deployment"].message


def test_crds_not_fetched_name_the_tool_to_fetch(monkeypatch, tmp_path, capsys):
    monkeypatch.setenv("DOCKYARD_TOOLS_CACHE", str(tmp_path))
    assert main(["check", str(RECIPE), str(INFRA), "--kuberay-version", "1.4"]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "KubeRay v1.4.0 CRDs are not fetched" in err
    assert "bash hack/tools.sh kuberay-crds-1.4" in err, err


def test_the_playground_kuberay_is_picked_by_its_variable(monkeypatch):
    from generator.pinned_tools import PLAYGROUND_KUBERAY_ENV, ToolMissing

    assert tool_dir("kuberay").name == f"kuberay-{versions()['KUBERAY_VERSION']}"
    monkeypatch.setenv(PLAYGROUND_KUBERAY_ENV, "1.5")
    assert tool_dir("kuberay").name == f"kuberay-{versions()['KUBERAY_1_5_VERSION']}"
    assert tool_dir("kuberay-crds").name == f"kuberay-crds-{versions()['KUBERAY_VERSION']}"  # check's own choice
    monkeypatch.setenv(PLAYGROUND_KUBERAY_ENV, "1.2")
    with pytest.raises(ToolMissing, match=f"{PLAYGROUND_KUBERAY_ENV}=1.2: dockyard-k8s supports KubeRay v1.4-v1.6"):
        tool_dir("kuberay")
