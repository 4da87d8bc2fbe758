"""generator.inputs.mode_keys: every key of the infra spec, in every launch mode, is either used by that mode or
refused. Used: the mode's manifests (or the RayJob `job submit` creates on the mode's cluster) change when the key
changes, rendered by the real helm. Refused: the infra spec setting it exits 2 naming the key and the mode, and the
chart values carrying it are refused by the models and by values.schema.json (Helm).

The recipe is not walked: it is the trainer's file, the same for every mode (its launcher keys are the generator's).
"""

from __future__ import annotations

import json
import os
import subprocess
import typing
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from pydantic import BaseModel, Field, ValidationError, create_model

from generator.cli import main
from generator.inputs import schema_check
from generator.inputs.mode_keys import MODES, USED_BY, entry_of
from generator.inputs.models import ChartValues, InfraSpec
from generator.inputs.models.infra import LaunchSettings
from generator.live.verbs.jobs import rayjob_body, target_cluster
from generator.pinned_tools import CHART_DIR, binary, versions
from tests.conftest import RECIPE, deep_merge, write

Path = tuple[str, ...]


def leaves(model: type[BaseModel], prefix: Path = ()) -> list[Path]:
    """The key paths of a model down to its leaves: a field holding a settings block (a model, not optional, not
    free-form) is walked into; any other field (a scalar, a list, a mapping, an optional block) is a leaf."""
    out: list[Path] = []
    for name, field in model.model_fields.items():
        key, kind = field.alias or name, field.annotation
        if isinstance(kind, type) and issubclass(kind, BaseModel) and kind.model_config.get("extra") != "allow":
            out += leaves(kind, prefix + (key,))
        else:
            out.append(prefix + (key,))
    return out


def field_of(model: type[BaseModel], path: Path) -> Any:
    for key in path[:-1]:
        model = next(f.annotation for n, f in model.model_fields.items() if (f.alias or n) == key)
    return next(f for n, f in model.model_fields.items() if (f.alias or n) == path[-1])


def auto_sample(field: Any) -> Any:
    """A value other than the default, for a boolean, a bounded integer or a choice; None for anything else."""
    default, kind = field.default, field.annotation
    high = next((m.le for m in field.metadata if getattr(m, "le", None) is not None), None)
    low = next((m.ge for m in field.metadata if getattr(m, "ge", None) is not None), 1)
    if isinstance(default, bool):
        return not default
    if kind is int and isinstance(default, int):
        return default + 1 if high is None or default + 1 <= high else default - 1
    if typing.get_origin(kind) is typing.Literal:
        return next(choice for choice in typing.get_args(kind) if choice != default)
    if default is None and int in typing.get_args(kind):
        return max(low, 1) + 7
    return None


TOL = [{"key": "example.com/t", "operator": "Exists", "effect": "NoSchedule"}]
NODE_AFF = {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
    {"matchExpressions": [{"key": "example.com/pool", "operator": "In", "values": ["a"]}]}]}}
POD_AFF = {"preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 1, "podAffinityTerm": {
    "topologyKey": "kubernetes.io/hostname", "labelSelector": {"matchLabels": {"app": "x"}}}}]}
SEL = {"example.com/pool": "a"}
GPU_SEC = {"infra.security.enabled": True}
HEAD, WORKER = {"kuberay.head": {"cpu": "2", "memory": "8Gi"}}, {"kuberay.worker": {"cpu": "8", "memory": "32Gi"}}
HPA = {"sandbox.autoscaling.enabled": True, "sandbox.autoscaling.targetCPUUtilizationPercentage": 70}

# key path -> (a value other than the default, the other keys it needs). The context may hold the key itself:
# then the baseline render has the context's value, the other one the sample's. A key without a row here takes
# auto_sample's value (a boolean flipped, an integer moved, another choice) with no context.
SAMPLES: dict[str, tuple[Any, dict[str, Any]]] = {
    "infra.namespace": ("other", {}),
    "infra.image.repository": ("example.com/other-vllm", {}),
    "infra.image.tag": ("v2", {}),
    "infra.image.digest": ("sha256:" + "a" * 64, {}),
    "infra.imagePullSecrets": (["regcred"], {}),
    "infra.priorityClassName": ("high", {}),
    "infra.env": ([{"name": "FOO", "value": "bar"}], {}),
    "infra.envFrom": ([{"configMapRef": {"name": "cm"}}], {}),
    "infra.security.dropCapabilities": (["NET_RAW"], GPU_SEC),
    "infra.security.workDir": ("/work2", {**GPU_SEC, "infra.security.readOnlyRootFilesystem": True}),
    "infra.security.workDirSizeLimit": ("1Gi", {**GPU_SEC, "infra.security.readOnlyRootFilesystem": True}),
    # (quotas that hold the release: a smaller one is refused by the quota rule)
    "infra.resourceQuota.enabled": (True, {"infra.resourceQuota.hard": {"pods": "50"}}),
    "infra.resourceQuota.hard": ({"pods": "100"}, {"infra.resourceQuota.enabled": True,
                                                   "infra.resourceQuota.hard": {"pods": "50"}}),
    "infra.storage.checkpoints": ({"size": "1Ti"}, {}),
    "infra.storage.modelCache": ({"size": "1Ti"}, {}),
    "infra.storage.logs": ({"size": "1Ti"}, {}),
    "launch.clusterName": ("other", {}),
    "launch.configMountPath": ("/etc/other", {}),
    "launch.queue": ("q", {}),
    "launch.priorityClass": ("high", {"launch.queue": "q"}),
    "launch.topology": ({"level": "example.com/rack"}, {"launch.queue": "q"}),
    "launch.watch.firstReportSeconds": (900, {"launch.watch.stallTimeoutSeconds": 600}),
    "launch.watch.keepRayLogMiB": (32, {"infra.storage.logs": {"size": "1Ti"}}),
    "kuberay.rayVersion": ("2.50.0", {}),
    "kuberay.head.cpu": ("3", HEAD), "kuberay.head.memory": ("9Gi", HEAD),
    "kuberay.worker.cpu": ("9", WORKER), "kuberay.worker.memory": ("33Gi", WORKER),
    # the ServiceAccount the overlay names: with agent-sandbox, bound to the sandbox claims in every mode
    "kuberay.spec": ({"headGroupSpec": {"template": {"spec": {"serviceAccountName": "existing"}}}},
                     {"sandbox.backend": "agent-sandbox"}),
    "kuberay.pdb.minAvailable": (1, {"kuberay.pdb.enabled": True}),
    "kuberay.network.socketInterface": ("eth1", {}),
    "kuberay.network.profile": ("hostNetwork", {}),
    "kuberay.network.rdma": ({"resourceName": "rdma/b"}, {"kuberay.network.profile": "rdma",
                                                          "kuberay.network.rdma": {"resourceName": "rdma/a"}}),
    "kuberay.network.efa": ({"perPod": 2}, {"kuberay.network.profile": "efa", "kuberay.network.efa": {"perPod": 1}}),
    "sandbox.warmPool.updateStrategy": ("OnReplenish", {"sandbox.backend": "agent-sandbox"}),
    "sandbox.image.repository": ("example.com/sandbox", {}),
    "sandbox.image.tag": ("v2", {}),
    "sandbox.image.digest": ("sha256:" + "b" * 64, {}),
    "sandbox.image.pullPolicy": ("Always", {}),
    "sandbox.resources.cpu": ("2", {}), "sandbox.resources.memory": ("3Gi", {}),
    "sandbox.resources.ephemeralStorage": ("11Gi", {}),
    "sandbox.resources.cpuLimit": ("4", {}), "sandbox.resources.memoryLimit": ("8Gi", {}),
    "sandbox.resources.ephemeralStorageLimit": ("20Gi", {}),
    "sandbox.security.dropCapabilities": (["NET_RAW"], {}),
    "sandbox.security.workDir": ("/work2", {}),
    "sandbox.security.workDirSizeLimit": ("1Gi", {"sandbox.security.readOnlyRootFilesystem": True}),
    "sandbox.networkPolicy.allowedEgressCidrs": (["10.0.0.0/8"], {"sandbox.networkPolicy.allowEgress": False}),
    "sandbox.autoscaling.enabled": (True, {"sandbox.autoscaling.targetCPUUtilizationPercentage": 70}),
    "sandbox.autoscaling.minReplicas": (3, HPA),
    "sandbox.autoscaling.maxReplicas": (11, HPA),
    "sandbox.autoscaling.targetCPUUtilizationPercentage": (80, HPA),
    "sandbox.autoscaling.targetMemoryUtilizationPercentage": (80, HPA),
    "sandbox.autoscaling.behavior": ({"scaleUp": {"stabilizationWindowSeconds": 30}}, HPA),
    "sandbox.rollingUpdate.maxSurge": (1, {}),
    "sandbox.rollingUpdate.maxUnavailable": (1, {}),
    "sandbox.readinessProbe.path": ("/ready", {}),
    "sandbox.topologySpreadConstraints": ([{"topologyKey": "kubernetes.io/hostname"}], {}),
    "sandbox.nodeSelector": (SEL, {}),
    "sandbox.tolerations": (TOL, {}),
    "sandbox.affinity": ({"nodeAffinity": NODE_AFF}, {}),
    "sandbox.runtimeClassName": ("gvisor", {}),
    "sandbox.extraEnv": ([{"name": "FOO", "value": "bar"}], {}),
    "sandbox.podLabels": ({"example.com/l": "v"}, {}),
    "sandbox.podAnnotations": ({"example.com/a": "v"}, {}),
}
for _role in ("gpu", "head", "submitter", "trainer", "inference"):
    _at = f"kuberay.placement.{_role}"
    SAMPLES |= {f"{_at}.nodeSelector": (SEL, {}), f"{_at}.tolerations": (TOL, {}),
                f"{_at}.affinity": ({"nodeAffinity": NODE_AFF}, {}), f"{_at}.affinity.nodeAffinity": (NODE_AFF, {}),
                f"{_at}.affinity.podAffinity": (POD_AFF, {}), f"{_at}.affinity.podAntiAffinity": (POD_AFF, {})}
for _kind in ("default", "defaultRequest", "max", "min"):
    for _name, _value in (("cpu", "1"), ("memory", "1Gi"), ("ephemeral-storage", "1Gi")):
        SAMPLES[f"infra.limitRange.{_kind}.{_name}"] = (_value, {"infra.limitRange.enabled": True})
for _name in ("profile", "allowPrivilegeEscalation", "seccompProfile", "runAsNonRoot", "runAsUser", "runAsGroup",
              "fsGroup", "readOnlyRootFilesystem"):
    SAMPLES[f"infra.security.{_name}"] = (None, GPU_SEC)  # auto_sample's value, with the GPU securityContext on

# Keys that render nothing in any mode: each is a check on other keys (test_a_key_that_renders_nothing_is_a_check).
CHECKS = {"infra.backend": "declares the build of infra.image"}

# The keys of each mode's own: the baseline of a mode.
MODE_CONTEXT = {"rayjob": {}, "bringup": {}, "attach": {"launch.clusterName": "shared"}}
INFRA_IMAGE = {"infra.image": {"repository": "ghcr.io/dockyard-rl/ubuntu-swe", "tag": "2026.11"}}


def nested(flat: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in flat.items():
        node: Any = value
        for part in reversed(key.split(".")):
            node = {part: node}
        out = deep_merge(out, node)
    return out


def sample(key: str) -> tuple[Any, dict[str, Any]]:
    value, context = SAMPLES.get(key, (None, {}))
    if value is None:
        value = auto_sample(field_of(InfraSpec, tuple(key.split("."))))
    assert value is not None, f"no sample value for {key}: add a row to SAMPLES"
    return value, context


def chart_values(infra: dict[str, Any]) -> dict[str, Any]:
    """The chart values of an infra spec (as compose makes them, without a file), checked by the models."""
    spec = deep_merge({"infra": {"namespace": "dockyard"}}, infra)
    namespace = spec["infra"].pop("namespace")
    values = {"recipe": {"name": "grpo-swe"}, **spec}
    return {"namespace": namespace,
            "values": ChartValues.model_validate(values).model_dump(mode="json", by_alias=True, exclude_none=True)}


FAST_GO = {"GOGC": "off", "GOMEMLIMIT": "128MiB"}  # a short render: no garbage collection (as generator.render.helm)


REFUSED = "the chart refuses: "


def rendered(case: dict[str, Any]) -> str:
    """The chart's manifests (helm template; the values are the models', so the schema is not checked again) and
    the RayJob `job submit` creates on the mode's cluster (with the run watcher on a bringup cluster's head)."""
    values = case["values"]
    done = subprocess.run(
        [binary("helm"), "template", "grpo-swe", str(CHART_DIR), "--namespace", case["namespace"], "--values", "-",
         "--kube-version", versions()["KUBERNETES_VERSION"], "--skip-schema-validation"],
        input=json.dumps(values), capture_output=True, text=True, env={**os.environ, **FAST_GO})
    if done.returncode:
        return REFUSED + done.stderr
    mode = values["launch"]["mode"]
    job = rayjob_body("job", target_cluster(values, mode), values, watcher=mode == "bringup")
    return done.stdout + json.dumps(job, sort_keys=True)


def infra_leaves() -> list[str]:
    return [".".join(p) for p in leaves(InfraSpec)]


def test_every_key_has_an_entry_and_every_entry_names_keys():
    keys = infra_leaves()
    assert [k for k in keys if entry_of(tuple(k.split("."))) is None] == []
    assert [e for e in USED_BY if not any(k == e or k.startswith(e + ".") for k in keys)] == []
    assert all(set(modes) <= set(MODES) and modes for modes, _ in USED_BY.values())


def test_a_key_added_to_the_models_without_an_entry_is_caught():
    """Negative control of the walk: the infra spec with one more launch key has a key no entry decides."""
    launch = create_model("LaunchMore", __base__=LaunchSettings, retries=(int, Field(0)))
    spec = create_model("SpecMore", __base__=InfraSpec, launch=(launch, Field(launch())))
    missing = [p for p in leaves(spec) if entry_of(p) is None]
    assert missing == [("launch", "retries")]


def _cases() -> tuple[dict[tuple[str, str], tuple[dict[str, Any], dict[str, Any]]], list[tuple[str, str]]]:
    """(key, mode) -> the infra specs of the two renders, for the keys the mode uses; the other (key, mode) pairs."""
    used, refused = {}, []
    for key in infra_leaves():
        value, context = sample(key)
        for mode in MODES:
            if mode not in USED_BY[entry_of(tuple(key.split(".")))][0]:  # type: ignore[index]
                refused.append((key, mode))
                continue
            base = {**INFRA_IMAGE, "launch.mode": mode, **MODE_CONTEXT[mode], **context}
            changed = {**base, key: value}
            if key == "launch.mode":  # another mode, without this one's own keys
                changed = {**INFRA_IMAGE, key: "bringup" if mode == "rayjob" else "rayjob"}
            used[(key, mode)] = (nested(base), nested(changed))
    return used, refused


def _unchecked(key: str, mode: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """For a key `mode` ignores: the mode's values, and the same with the key put in as is (past the models, which
    refuse it), to show that the chart indeed ignores it there."""
    value, context = sample(key)
    uses = {k: v for k, v in context.items() if mode in USED_BY[entry_of(tuple(k.split(".")))][0]}  # type: ignore[index]
    base = chart_values(nested({**INFRA_IMAGE, "launch.mode": mode, **MODE_CONTEXT[mode], **uses}))
    raw = {k: v for k, v in context.items() if k not in uses} | {key: value}
    spec = nested(raw)
    namespace = spec.get("infra", {}).pop("namespace", base["namespace"])
    return base, {"namespace": namespace, "values": deep_merge(base["values"], spec)}


def test_the_table_is_what_each_mode_renders():
    """A key a mode uses changes its render; a key it ignores, put in past the models, changes nothing."""
    used, refused = _cases()
    cases, bad = {}, []
    for pair, (base, changed) in used.items():
        try:
            cases[pair] = (chart_values(base), chart_values(changed))
        except ValidationError as exc:
            bad.append(f"{pair}: {exc}")
    assert bad == [], "samples the models refuse (fix SAMPLES):\n" + "\n".join(bad)
    ignored = {pair: _unchecked(*pair) for pair in refused}
    unique = {json.dumps(case, sort_keys=True): case
              for pairs in (cases, ignored) for pair in pairs.values() for case in pair}
    with ThreadPoolExecutor(4) as pool:  # each set of values rendered once (the baselines are shared)
        out = dict(zip(unique, pool.map(rendered, unique.values()), strict=True))

    def differ(a: dict[str, Any], b: dict[str, Any]) -> bool:
        return out[json.dumps(a, sort_keys=True)] != out[json.dumps(b, sort_keys=True)]

    failed = [out[json.dumps(case, sort_keys=True)] for pair in cases.values() for case in pair
              if out[json.dumps(case, sort_keys=True)].startswith(REFUSED)]
    same = [f"{key} in {mode}" for (key, mode), pair in cases.items() if not differ(*pair) and key not in CHECKS]
    assert (failed, same) == ([], []), "keys the table says a mode uses, but whose change it does not render"
    # a key the mode ignores renders nothing, or is refused by the chart's own checks too (dockyard.validate)
    changed = [f"{key} in {mode}" for (key, mode), (a, b) in ignored.items()
               if differ(a, b) and not out[json.dumps(b, sort_keys=True)].startswith(REFUSED)]
    assert changed == [], "keys the table says a mode ignores, but whose change the mode renders: " + str(changed)


def test_a_key_that_renders_nothing_is_a_check():
    """infra.backend renders nothing: it declares the image's build, and an image of the other backend is refused
    (in every mode); the image of its own backend is accepted."""
    for mode in MODES:
        base = {**INFRA_IMAGE, "launch.mode": mode, **MODE_CONTEXT[mode], "infra.image.tag": "2026.11-vllm"}
        chart_values(nested({**base, "infra.backend": "vllm"}))
        with pytest.raises(ValidationError, match="the vllm build"):
            chart_values(nested({**base, "infra.backend": "sglang"}))


@pytest.mark.parametrize("mode", MODES)
def test_every_key_a_mode_ignores_is_refused(tmp_path, capsys, mode):
    _, refused = _cases()
    missed = []
    for key, _ in (pair for pair in refused if pair[1] == mode):
        value, context = sample(key)
        entry = entry_of(tuple(key.split(".")))
        # the context's keys of other entries this mode ignores are left out: each is refused on its own
        context = {k: v for k, v in context.items()
                   if entry_of(tuple(k.split("."))) == entry or mode in USED_BY[entry_of(tuple(k.split(".")))][0]}
        infra = nested({**INFRA_IMAGE, "launch.mode": mode, **MODE_CONTEXT[mode], **context, key: value})
        path = write(tmp_path, "ignored.infra.yaml", infra)
        code = main(["values", str(RECIPE), str(path)])
        err = capsys.readouterr().err
        parts = key.split(".")  # the entry, or a block around it the mode ignores too, is named
        named = [e for e in (".".join(parts[:n]) for n in range(1, len(parts) + 1))
                 if e in USED_BY and mode not in USED_BY[e][0] and e in err]
        if code != 2 or not named or f"{mode} mode" not in err:
            missed.append(f"{key}: exit {code}: {err.strip()[:300]}")
        values = deep_merge(nested({"launch.mode": mode, **MODE_CONTEXT[mode], **context, key: value}),
                            {"recipe": {"name": "grpo-swe"}})
        with pytest.raises(ValidationError):
            ChartValues.model_validate(values)
        with pytest.raises(schema_check.Refused):
            schema_check.check("values", values)
    assert missed == [], "\n".join(missed)


@pytest.mark.parametrize("mode, key, value", [
    ("attach", "launch.backoffLimit", 0),
    ("attach", "infra.storage", {}),
    ("bringup", "launch.preRunningDeadlineSeconds", 3600),
    ("rayjob", "kuberay.pdb", {"enabled": False}),
])
def test_a_key_the_mode_ignores_is_refused_even_with_its_default(tmp_path, capsys, mode, key, value):
    """Written in the file is set: the reader of the file would think it does something."""
    infra = nested({**INFRA_IMAGE, "launch.mode": mode, **MODE_CONTEXT[mode], key: value})
    text = json.dumps(infra["infra"]) + "\n"  # a line per top-level key, so that the line is the key's
    body = "infra: " + text + "".join(f"{k}: {json.dumps(v)}\n" for k, v in infra.items() if k != "infra")
    path = write(tmp_path, "default.infra.yaml", body)
    assert main(["values", str(RECIPE), str(path)]) == 2
    err = capsys.readouterr().err
    line = next(i for i, row in enumerate(body.splitlines(), 1) if row.startswith(key.split(".")[0] + ":"))
    assert f"default.infra.yaml:{line}: {key}: launch.mode {mode} ignores {key}" in err
    modes = " or ".join(USED_BY[key][0])
    assert f"expected: no {key} in {mode} mode, or launch.mode {modes}" in err


def test_helm_refuses_what_the_mode_ignores():
    """The values.schema.json twin, in Helm itself: a RayJob setting under bringup, a GPU volume under attach."""
    for over in ({"launch": {"mode": "bringup", "backoffLimit": 2}},
                 {"launch": {"mode": "attach", "clusterName": "shared"},
                  "infra": {"storage": {"logs": {"size": "1Gi"}}}}):
        done = subprocess.run(
            [binary("helm"), "template", "grpo-swe", str(CHART_DIR), "--namespace", "dockyard", "--values", "-",
             "--kube-version", versions()["KUBERNETES_VERSION"]],
            input=json.dumps(over), capture_output=True, text=True)
        assert done.returncode == 1 and "values don't meet the specifications of the schema" in done.stderr, over
    # the defaults, as values.yaml writes them (a list of models with its unset keys null), pass in every mode
    for ok in ({"launch": {"mode": "bringup", "backoffLimit": 0}}, {"launch": {"mode": "attach", "clusterName": "c"}}):
        done = subprocess.run(
            [binary("helm"), "template", "grpo-swe", str(CHART_DIR), "--namespace", "dockyard", "--values", "-",
             "--kube-version", versions()["KUBERNETES_VERSION"]], input=json.dumps(ok), capture_output=True, text=True)
        assert done.returncode == 0, done.stderr


def test_a_verb_imposing_its_mode_leaves_out_what_that_mode_ignores(tmp_path):
    """`cluster up` (bringup) of a file written for rayjob: its RayJob settings are left out, with a note each."""
    from generator.live.changes.plan import plan

    infra = nested({**INFRA_IMAGE, "infra.namespace": "dockyard", "launch.backoffLimit": 2,
                    "launch.activeDeadlineSeconds": 600})
    path = write(tmp_path, "job.infra.yaml", infra)
    p = plan(str(RECIPE), str(path), [], None, None, mode="bringup")
    assert p.values["launch"]["backoffLimit"] == 0 and p.values["launch"]["activeDeadlineSeconds"] == 600
    assert [n for n in p.notes if "launch.backoffLimit" in n] == [
        "note: launch.backoffLimit (retries of the chart's RayJob) is left out: bringup mode does not use it"]
    assert not [n for n in p.notes if "activeDeadlineSeconds" in n]  # job submit uses it on the bringup cluster
