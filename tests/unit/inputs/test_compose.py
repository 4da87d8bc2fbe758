"""Composition: recipe + infra -> values, overrides, the shipped recipe."""

from __future__ import annotations

import pytest
import yaml

from generator.cli import main
from generator.inputs.compose import compose, load_inputs, values_dict
from tests.conftest import EXAMPLES, RECIPE

INFRA = EXAMPLES / "grpo_swe.infra.yaml"


def test_values_carry_recipe_keys_and_infra_blocks():
    values = values_dict(compose(load_inputs(RECIPE, INFRA)))
    assert values["recipe"]["name"] == "grpo-swe"
    assert values["recipe"]["cluster"] == {"trainer": {"nodes": 2, "gpusPerNode": 8},
                                           "inference": {"nodes": 1, "gpusPerNode": 8}}
    assert values["recipe"]["config"] == RECIPE.read_text()  # shipped unchanged
    assert values["infra"]["image"]["tag"] == "2026.11-vllm"
    assert "namespace" not in values["infra"]  # the release namespace wins in the chart
    assert values["sandbox"]["replicas"] == 4
    assert set(values) == {"recipe", "infra", "launch", "kuberay", "sandbox"}


def test_overrides_are_yaml_typed_and_reach_the_shipped_recipe():
    inputs = load_inputs(RECIPE, INFRA,
                         ["cluster.trainer.nodes=4", "grpo.max_num_steps=10", "policy.tags=[a, b]", "new.key=on"])
    values = values_dict(compose(inputs))
    assert values["recipe"]["cluster"]["trainer"]["nodes"] == 4
    shipped = yaml.safe_load(values["recipe"]["config"])
    assert shipped["cluster"]["trainer"]["nodes"] == 4
    assert shipped["grpo"]["max_num_steps"] == 10
    assert shipped["policy"]["tags"] == ["a", "b"]
    assert shipped["new"] == {"key": True}
    assert shipped["data"] == {"dataset_name": "swe-gym"}  # untouched keys survive


def test_a_list_item_is_set_by_its_index():
    """`KEY[N]=VALUE` sets an existing item (it once made a key named `sandbox_urls[0]`)."""
    inputs = load_inputs(RECIPE, INFRA, ["env.code.sandbox_urls[0]=http://x:1", "policy.tags=[a, {k: 1}]",
                                         "policy.tags[1].k=2"])
    shipped = yaml.safe_load(values_dict(compose(inputs))["recipe"]["config"])
    assert shipped["env"]["code"] == {"sandbox_urls": ["http://x:1"]}
    assert shipped["policy"]["tags"] == ["a", {"k": 2}]


@pytest.mark.parametrize("override, error", [
    ("env.code.sandbox_urls[1]=x",
     ("error: <command line>: env.code.sandbox_urls[1]: index 1 is out of range: env.code.sandbox_urls has 1 item\n"
     "  expected: index 0\n"
     "  did you mean: env.code.sandbox_urls=[...] to set the whole list\n")),
    ("env.code.sandbox_urls.0=x",
     ("error: <command line>: env.code.sandbox_urls.0: cannot set env.code.sandbox_urls.0: env.code.sandbox_urls is "
     "a list, and a list item is written [N]\n"
     "  expected: a key path with [N] for a list item\n"
     "  did you mean: env.code.sandbox_urls[0]=x\n")),
    ("policy[0]=x", "error: <command line>: policy[0]: cannot set policy[0]: policy is a dict, not a list\n"),
    ("nothing.here[0]=x", "nothing.here: cannot set nothing.here[0]: nothing.here is not set"),
    ("env.code.sandbox_urls[-1]=x", "env.code.sandbox_urls[-1]: bad override 'env.code.sandbox_urls[-1]=x'"),
    ("env.code[x]=1", "bad override 'env.code[x]=1'\n  expected: KEY=VALUE: a dotted key path, [N] for a list item"),
])
def test_list_indices_out_of_the_grammar_exit_2(capsys, override, error):
    assert main(["values", str(RECIPE), str(INFRA), override]) == 2
    err = capsys.readouterr().err
    assert error in err and err.count("error:") == 1, err


def test_values_output_is_stable_and_written_to_a_file(tmp_path, capsys):
    out = tmp_path / "values.yaml"
    assert main(["values", str(RECIPE), str(INFRA), "-o", str(out)]) == 0
    assert main(["values", str(RECIPE), str(INFRA)]) == 0
    assert capsys.readouterr().out == out.read_text()
    assert yaml.safe_load(out.read_text())["launch"]["mode"] == "rayjob"


def test_render_is_byte_identical_across_runs(tmp_path):
    a, b = tmp_path / "a.yaml", tmp_path / "b.yaml"
    for path in (a, b):
        assert main(["render", str(RECIPE), str(INFRA), "-o", str(path)]) == 0
    assert a.read_bytes() == b.read_bytes()
    kinds = [d["kind"] for d in yaml.safe_load_all(a.read_text()) if d]
    assert "Pod" not in kinds  # the helm test hook is not part of what `render | kubectl apply` installs
    assert kinds[-1] == "RayJob"


def test_cli_usage_errors_exit_2(capsys):
    assert main([]) == 2
    try:
        main(["values"])
    except SystemExit as exc:
        assert exc.code == 2
    else:
        raise AssertionError("argparse should exit 2 on missing arguments")


def test_values_yaml_quotes_what_helm_would_read_as_booleans(tmp_path):
    from generator.inputs.compose import values_yaml
    from generator.inputs.models import ChartValues

    values = ChartValues.model_validate({"infra": {"priorityClassName": "y", "imagePullSecrets": ["n", "on"]}})
    text = values_yaml(values)
    assert "priorityClassName: 'y'" in text
    assert "- 'n'" in text and "- 'on'" in text


def test_overrides_may_follow_options(tmp_path):
    out = tmp_path / "v.yaml"
    assert main(["values", str(RECIPE), str(INFRA), "-o", str(out), "cluster.trainer.nodes=5"]) == 0
    assert yaml.safe_load(out.read_text())["recipe"]["cluster"]["trainer"]["nodes"] == 5
    try:
        main(["values", str(RECIPE), str(INFRA), "--bogus"])
    except SystemExit as exc:
        assert exc.code == 2
    else:
        raise AssertionError("an unknown option must exit 2")
