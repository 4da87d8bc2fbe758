"""generator.inputs.mode_keys: every key of the infra spec, in every launch mode, is either used by that mode or
refused. Used: the mode's manifests (or the RayJob `job submit` creates on the mode's cluster) change when the key
changes, rendered by the real helm. Refused: the infra spec setting it exits 2 naming the key and the mode, and the
chart values carrying it are refused by the models and by values.schema.json (Helm).

The recipe is not walked: it is the trainer's file, the same for every mode (its launcher keys are the generator's).
"""

from __future__ import annotations

import json
import subprocess
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from pydantic import Field, ValidationError, create_model

from generator.cli import main
from generator.inputs import schema_check
from generator.inputs.mode_keys import MODES, USED_BY, entry_of
from generator.inputs.models import ChartValues, InfraSpec
from generator.inputs.models.infra import LaunchSettings
from generator.pinned_tools import CHART_DIR, binary, versions
from tests.conftest import RECIPE, deep_merge, write
from tests.support.infra_keys import (
    CHECKS,
    INFRA_IMAGE,
    MODE_CONTEXT,
    REFUSED,
    chart_values,
    infra_leaves,
    leaves,
    nested,
    rendered,
    sample,
    switched_off,
)


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
            off = switched_off(base, mode) - {key}  # the context of a switch the baseline has off (switch_keys)
            base = {k: v for k, v in base.items() if k not in off}
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
