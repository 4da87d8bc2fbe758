"""Parsing is bounded and never a traceback: size cap, nesting cap, alias-expansion cap, non-UTF-8
and unprintable bytes, recursive aliases, odd keys and tags; `<<` merge keys work."""

from __future__ import annotations

import resource
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from generator.cli import main
from generator.inputs.compose import load_inputs
from generator.inputs.loader import MAX_ALIAS_NODES, MAX_DEPTH, MAX_NODES
from generator.inputs.reading import MAX_INPUT_BYTES
from tests.conftest import EXAMPLES, RECIPE, write

INFRA = EXAMPLES / "grpo_swe.infra.yaml"
HEAD = "name: grpo-swe\nentrypoint: python -m dockyard_rl.train\n"

LAUGHS = HEAD + "a: &a [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n" + "".join(
    f"{c}: &{c} [{', '.join([f'*{p}'] * 9)}]\n" for p, c in zip("abcdefgh", "bcdefghi", strict=True)
)


def values(capsys, recipe, infra=INFRA, *extra):
    code = main(["values", str(recipe), str(infra), *map(str, extra)])
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err
    return code, captured.out, captured.err


def test_alias_bomb_is_refused_fast_and_small(tmp_path, capsys):
    recipe = write(tmp_path, "bomb.yaml", LAUGHS)
    assert len(LAUGHS) < 600
    before, start = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, time.monotonic()
    code, _, err = values(capsys, recipe)
    assert code == 2 and f"aliases expand to more than {MAX_ALIAS_NODES} nodes" in err
    assert time.monotonic() - start < 10
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before < 200_000  # KiB


def test_alias_bomb_in_the_infra_spec_and_in_an_override(tmp_path, capsys):
    infra = write(tmp_path, "i.yaml", INFRA.read_text() + LAUGHS.replace(HEAD, "x-bomb:\n").replace("\n", "\n  ")[:-2])
    code, _, err = values(capsys, RECIPE, infra)
    assert code == 2 and "aliases expand" in err
    flow = ("{a: &a [1,1,1,1,1,1,1,1,1,1], b: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a,*a], "
            "c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b,*b], d: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c,*c], "
            "e: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d,*d], f: [*e,*e,*e,*e,*e,*e,*e,*e,*e,*e]}")
    code, _, err = values(capsys, RECIPE, INFRA, f"grpo.bomb={flow}")
    assert code == 2 and "error: <command line>: grpo.bomb: value is not YAML: aliases expand" in err


def test_modest_aliases_still_work(tmp_path, capsys):
    text = HEAD + "base: &base {lr: 1.0e-6, steps: [1, 2, 3]}\n" + "".join(f"run{i}: *base\n" for i in range(50))
    code, out, err = values(capsys, write(tmp_path, "r.yaml", text))
    assert code == 0, err
    assert yaml.safe_load(yaml.safe_load(out)["recipe"]["config"])["run49"]["steps"] == [1, 2, 3]


@pytest.mark.parametrize("source", ["/dev/zero", "/dev/urandom"])
def test_endless_input_is_capped(capsys, source):
    code, _, err = values(capsys, source)
    assert code == 2 and err.strip() == (f"error: {source}: input is larger than {MAX_INPUT_BYTES // 2**20} MiB; "
                                         "a recipe must fit a 1 MiB ConfigMap (is this the right file?)")


def test_endless_stdin_is_capped():
    done = subprocess.run(f"{sys.executable} -m generator values - {INFRA} < /dev/zero", shell=True,
                          capture_output=True,
                          text=True, timeout=60, cwd=Path(__file__).parents[3])
    assert done.returncode == 2 and "error: <stdin>: input is larger than" in done.stderr


def test_a_large_regular_file_is_capped(tmp_path, capsys):
    recipe = tmp_path / "big.yaml"
    recipe.write_text(HEAD + "pad: " + "x" * MAX_INPUT_BYTES + "\n")
    code, _, err = values(capsys, recipe)
    assert code == 2 and "input is larger than" in err


@pytest.mark.parametrize("style", ["flow", "block"])
def test_too_many_values_are_refused_as_the_cap_is_passed(tmp_path, capsys, monkeypatch, style):
    """Under the byte cap, but more values than a config holds: stopped at MAX_NODES, not parsed whole. Counted
    in the parser's events the loader pulls (a wall-clock bound fails on a loaded machine and proves less)."""
    from generator.inputs import loader

    pulled: dict[loader._BoundedLoader, int] = {}  # per parse (one loader each), kept alive: no reused ids
    real = loader._BoundedLoader.get_event

    def counting(self):
        pulled[self] = pulled.get(self, 0) + 1
        return real(self)

    monkeypatch.setattr(loader._BoundedLoader, "get_event", counting)
    n = MAX_NODES * 4
    body = ("data: [" + ",".join(["0"] * n) + "]\n") if style == "flow" else ("data:\n" + "- 0\n" * n)
    recipe = write(tmp_path, "r.yaml", HEAD + body)
    code, _, err = values(capsys, recipe)
    assert code == 2 and f"the document holds more than {MAX_NODES} values" in err
    # each parse of the recipe: the head's few keys, then the cap; three quarters of the values never read
    parses = [n for parsed, n in pulled.items() if parsed.file == str(recipe)]
    assert parses and all(MAX_NODES < n < MAX_NODES + 100 for n in parses), parses


def nested(kind: str, depth: int) -> str:
    return ("[" * depth + "]" * depth) if kind == "list" else ("{a: " * depth + "1" + "}" * depth)


@pytest.mark.parametrize("kind", ["list", "map"])
@pytest.mark.parametrize("where", ["recipe", "infra"])
def test_deep_nesting_is_refused(tmp_path, capsys, kind, where):
    deep = nested(kind, 500)
    recipe, infra = RECIPE, INFRA
    if where == "recipe":
        recipe = write(tmp_path, "r.yaml", HEAD + f"deep: {deep}\n")
    else:
        infra = write(tmp_path, "i.yaml", INFRA.read_text().replace("affinity", "x") + f"x-deep: {deep}\n")
    code, _, err = values(capsys, recipe, infra)
    bad = recipe if where == "recipe" else infra
    assert code == 2 and f"error: {bad}:" in err and f"nested more than {MAX_DEPTH} levels deep" in err


def test_block_style_nesting_is_refused(tmp_path, capsys):
    text = HEAD + "".join("  " * i + f"k{i}:\n" for i in range(300)) + "  " * 300 + "v\n"
    code, _, err = values(capsys, write(tmp_path, "r.yaml", text))
    assert code == 2 and "nested more than" in err


def test_nesting_through_aliases_is_counted(tmp_path, capsys):
    # 60 levels, then an alias of them 50 levels down: 110 once expanded
    text = HEAD + "a: &a " + nested("map", 60) + "\nb: " + "{a: " * 50 + "*a" + "}" * 50 + "\n"
    code, _, err = values(capsys, write(tmp_path, "r.yaml", text))
    assert code == 2 and "nested more than" in err


def test_nesting_up_to_the_cap_works(tmp_path, capsys):
    code, out, err = values(capsys, write(tmp_path, "r.yaml", HEAD + f"deep: {nested('map', MAX_DEPTH - 1)}\n"), INFRA,
                            "grpo.x=1")
    assert code == 0, err


@pytest.mark.parametrize("override", [
    ".".join(["a"] * 600) + "=1",
    "grpo.x=" + nested("list", 500),
    "grpo.x=" + nested("map", MAX_DEPTH),
])
def test_deep_overrides_are_refused(capsys, override):
    code, _, err = values(capsys, RECIPE, INFRA, override)
    assert code == 2 and err.startswith("error: <command line>:")


def test_recursive_alias_is_refused(tmp_path, capsys):
    code, _, err = values(capsys, write(tmp_path, "r.yaml", HEAD + "loop: &loop [1, *loop]\n"))
    assert code == 2 and f"error: {tmp_path / 'r.yaml'}:3: alias *loop is used inside its own anchor &loop" in err


@pytest.mark.parametrize("raw, fragment", [
    (HEAD.encode() + b"note: caf\xe9\n", ":3: the file is not UTF-8 text: byte 0xe9 cannot be decoded"),
    (b"\xff\xfen\x00a\x00", ":1: the file is not UTF-8 text"),
    (HEAD.encode() + b"x: \x00\n", ":3: malformed YAML: character '\\x00' (U+0000) is not allowed in YAML"),
    (HEAD.encode() + b"x: a\x07b\n", ":3: malformed YAML: character '\\x07' (U+0007) is not allowed"),
])
def test_bytes_that_are_not_yaml_text(tmp_path, capsys, raw, fragment):
    recipe = tmp_path / "r.yaml"
    recipe.write_bytes(raw)
    code, _, err = values(capsys, recipe)
    assert code == 2 and f"error: {recipe}{fragment}" in err, err


def test_a_utf8_bom_is_fine(tmp_path, capsys):
    recipe = tmp_path / "r.yaml"
    recipe.write_bytes(b"\xef\xbb\xbf" + RECIPE.read_bytes())
    code, _, err = values(capsys, recipe)
    assert code == 0, err


@pytest.mark.parametrize("text, fragment", [
    (HEAD + "? [a, b]\n: 1\n", ":3: a mapping key must be a plain value, not a list or mapping"),
    (HEAD + "{x: 1}: 2\n", ":3: a mapping key must be a plain value"),
    (HEAD + "x: !!python/object/apply:os.system [echo hi]\n", ":3: x: cannot read the value"),
    (HEAD + "x: !custom 1\n", ":3: x: cannot read the value: could not determine a constructor for the tag '!custom'"),
    (HEAD + "x: !!int abc\n", ":3: x: cannot read the value 'abc' as tag:yaml.org,2002:int"),
    (HEAD + "x: !!set {a, b}\n", ":3: x: cannot read the value: the tag 'tag:yaml.org,2002:set' is not supported"),
    (HEAD + "x: !!omap [a: 1]\n", ":3: x: cannot read the value: the tag 'tag:yaml.org,2002:omap' is not supported"),
    (HEAD + "x: !!timestamp yesterday\n", ":3: x: cannot read the value 'yesterday' as tag:yaml.org,2002:timestamp"),
    (HEAD + "x: *nowhere\n", ":3: malformed YAML: found undefined alias 'nowhere'"),
    (HEAD + "---\nname: b\n",
     ":3: malformed YAML: expected a single document in the stream (line 1), but found another document"),
    (HEAD + "x: &a 1\ny: &a 2\n",
     ":4: malformed YAML: found duplicate anchor 'a'; first occurrence (line 3), second occurrence"),
    ("", ":1: the file holds a dict"),  # an empty file is an empty mapping: the models say what is missing
])
def test_odd_yaml_is_one_clear_error(tmp_path, capsys, text, fragment):
    recipe = write(tmp_path, "r.yaml", text)
    code, _, err = values(capsys, recipe)
    if fragment is None:
        assert code == 0, err
    elif fragment.endswith("dict"):
        assert code == 2 and "name: required key is missing" in err
    else:
        assert code == 2 and f"error: {recipe}{fragment}" in err, err


MERGED = """\
name: grpo-swe
entrypoint: python -m dockyard_rl.train
shapes:
  small: &small {nodes: 1, gpusPerNode: 4}
  wide: &wide {gpusPerNode: 8, nodes: 3}
cluster:
  trainer:
    <<: *small
    nodes: 2
  inference:
    <<: [*wide, *small]
    nodes: 4
    gpusPerNode: 2
"""


def test_merge_keys_are_supported_and_explicit_keys_win(tmp_path, capsys):
    recipe = write(tmp_path, "r.yaml", MERGED)
    code, out, err = values(capsys, recipe)
    assert code == 0, err
    values_ = yaml.safe_load(out)
    assert values_["recipe"]["cluster"] == {"trainer": {"nodes": 2, "gpusPerNode": 4},
                                            "inference": {"nodes": 4, "gpusPerNode": 2}}
    assert values_["recipe"]["config"] == MERGED  # shipped as written
    assert yaml.safe_load(MERGED)["cluster"] == values_["recipe"]["cluster"]  # as PyYAML (the trainer's reader) sees it


def test_a_key_two_merged_mappings_set_differently_must_be_explicit(tmp_path, capsys):
    """The YAML merge spec says the first listed mapping wins; PyYAML, which reads the shipped recipe
    on the cluster, does not always agree: refuse rather than size the cluster differently."""
    recipe = write(tmp_path, "r.yaml", MERGED.replace("    gpusPerNode: 2\n", ""))
    code, _, err = values(capsys, recipe)
    assert code == 2
    assert (f"error: {recipe}:4: cluster.inference.gpusPerNode: 'gpusPerNode' is set differently by two merged "
            "mappings") in err
    same = write(tmp_path, "s.yaml", HEAD + "a: &a {x: 1, y: 2}\nb: &b {x: 1, z: 3}\nc: {<<: [*a, *b]}\n")
    assert load_inputs(same, INFRA).recipe_doc.data["c"] == {"x": 1, "y": 2, "z": 3}


def test_merge_keys_in_the_infra_spec_with_lines_of_merged_keys(tmp_path, capsys):
    infra = write(tmp_path, "i.yaml",
                  INFRA.read_text().replace("sandbox:\n", "x-res: &res {cpu: lots, memory: 2Gi}\nsandbox:\n")
                  .replace("  resources:\n", "  resources:\n    <<: *res\n").replace('    cpu: "1"\n', ""))
    line = infra.read_text().splitlines().index("x-res: &res {cpu: lots, memory: 2Gi}") + 1
    code, _, err = values(capsys, RECIPE, infra)
    assert code == 2 and f"error: {infra}:{line}: sandbox.resources.cpu: 'lots' is not a Kubernetes quantity" in err
    assert f"error: {infra}:{line}: x-res: unknown key 'x-res'" in err


def test_merge_and_alias_copies_are_independent(tmp_path):
    recipe = write(tmp_path, "r.yaml", MERGED + "a: &a {k: 1}\nb: *a\n")
    inputs = load_inputs(recipe, INFRA, ["a.k=2"])
    assert inputs.recipe_doc.data["a"] == {"k": 2} and inputs.recipe_doc.data["b"] == {"k": 1}


@pytest.mark.parametrize("snippet, fragment", [
    ("<<: 3\n", ":3: <<: a merge key '<<' takes a mapping or a list of mappings"),
    ("<<: [{a: 1}, 2]\n", ":3: <<: a merge key '<<' takes a mapping or a list of mappings"),
    ("<<: {a: 1}\n<<: {b: 1}\n", ":4: <<: duplicate key '<<'"),
])
def test_bad_merge_keys(tmp_path, capsys, snippet, fragment):
    recipe = write(tmp_path, "r.yaml", HEAD + snippet)
    code, _, err = values(capsys, recipe)
    assert code == 2 and f"error: {recipe}{fragment}" in err, err
