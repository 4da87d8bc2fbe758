"""Every input is read exactly once and its bytes kept: a recipe from `-`, /dev/stdin, a FIFO or a
process substitution `<(…)` ships whole, for every verb that reads inputs."""

from __future__ import annotations

import io
import json
import os
import shlex
import subprocess
import sys
import threading
from pathlib import Path

import pytest
import yaml

from generator.cli import main
from generator.inputs.reading import forget_inputs, read_input
from tests.conftest import EXAMPLES, RECIPE

INFRA = EXAMPLES / "grpo_swe.infra.yaml"
CLI = [sys.executable, "-m", "generator"]
VERBS = ["values", "render"]


def shipped(verb: str, out: str) -> str:
    """The recipe text a `values` or `render` output ships to the Ray head."""
    if verb == "values":
        return yaml.safe_load(out)["recipe"]["config"]
    docs = [d for d in yaml.safe_load_all(out) if d]
    (config_map,) = [d for d in docs if d["kind"] == "ConfigMap" and d["metadata"]["name"].endswith("-recipe")]
    return config_map["data"]["recipe.yaml"]


def through_fifo(fifo: Path, data: bytes, args: list[str]) -> tuple[int, str, str]:
    """Run the CLI while one writer writes `data` into the FIFO once, as `cat file > fifo &` does.
    Bounded: a reader that opens the FIFO a second time gets EOF after the timeout, not a hang."""
    os.mkfifo(fifo)
    writer = threading.Thread(target=fifo.write_bytes, args=(data,), daemon=True)
    writer.start()
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            cwd=Path(__file__).parents[3])
    try:
        out, err = proc.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate()
        err += "\n(timed out: the FIFO was opened a second time)"
    finally:
        # If the child never opened the FIFO, the writer still waits for a reader: be that reader.
        while writer.is_alive():
            fd = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
            writer.join(timeout=0.1)
            os.close(fd)
    return proc.returncode, out, err


def run(args: list[str], **kw) -> subprocess.CompletedProcess[str]:
    return subprocess.run(args, capture_output=True, text=True, timeout=60, cwd=Path(__file__).parents[3], **kw)


@pytest.mark.parametrize("verb", VERBS)
def test_dash_reads_the_recipe_from_stdin(verb, monkeypatch, capsys):
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(RECIPE.read_bytes())))
    assert main([verb, "-", str(INFRA)]) == 0, capsys.readouterr().err
    assert shipped(verb, capsys.readouterr().out) == RECIPE.read_text()


def test_dash_reads_the_infra_spec_from_stdin(monkeypatch, capsys):
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(INFRA.read_bytes())))
    assert main(["values", str(RECIPE), "-"]) == 0, capsys.readouterr().err
    assert yaml.safe_load(capsys.readouterr().out)["sandbox"]["replicas"] == 4


def test_stdin_errors_name_stdin(monkeypatch, capsys):
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b"name: [unclosed\n")))
    assert main(["values", "-", str(INFRA)]) == 2
    err = capsys.readouterr().err
    assert "error: <stdin>:2: malformed YAML" in err and "Traceback" not in err


def test_both_inputs_from_stdin_is_refused(capsys):
    assert main(["values", "-", "-"]) == 2
    assert "only one input can be read from stdin" in capsys.readouterr().err


@pytest.mark.parametrize("verb", VERBS)
def test_dev_stdin_ships_the_whole_recipe(verb):
    done = run([*CLI, verb, "/dev/stdin", str(INFRA)], input=RECIPE.read_text())
    assert done.returncode == 0, done.stderr
    assert shipped(verb, done.stdout) == RECIPE.read_text()


@pytest.mark.parametrize("verb", VERBS)
def test_process_substitution_ships_the_whole_recipe(verb):
    command = " ".join([*map(shlex.quote, CLI), verb, f"<(cat {shlex.quote(str(RECIPE))})", shlex.quote(str(INFRA))])
    done = run(["bash", "-c", command])
    assert done.returncode == 0, done.stderr
    assert shipped(verb, done.stdout) == RECIPE.read_text()


@pytest.mark.parametrize("verb", VERBS)
def test_fifo_is_read_once_and_the_call_does_not_hang(verb, tmp_path):
    fifo = tmp_path / "recipe.fifo"
    code, out, err = through_fifo(fifo, RECIPE.read_bytes(), [*CLI, verb, str(fifo), str(INFRA)])
    assert code == 0, err
    assert shipped(verb, out) == RECIPE.read_text()


def test_fifo_infra_spec(tmp_path):
    fifo = tmp_path / "infra.fifo"
    code, out, err = through_fifo(fifo, INFRA.read_bytes(), [*CLI, "values", str(RECIPE), str(fifo)])
    assert code == 0, err
    assert yaml.safe_load(out)["sandbox"]["replicas"] == 4


CHECK_PATH = """
import json, sys
from generator.inputs.compose import compose, composed, load_inputs, values_dict
recipe, infra = sys.argv[1:]
fast = composed(recipe, infra)
values = values_dict(compose(load_inputs(recipe, infra)))
print(json.dumps([fast.values["recipe"]["config"], values["recipe"]["config"]]))
"""


def test_check_path_reads_a_fifo_once(tmp_path):
    """The inputs may be parsed twice in one command (the schema check, then the models when it
    refuses): both must see the one read of the FIFO."""
    fifo = tmp_path / "recipe.fifo"
    code, out, err = through_fifo(fifo, RECIPE.read_bytes(), [sys.executable, "-c", CHECK_PATH, str(fifo), str(INFRA)])
    assert code == 0, err
    assert json.loads(out) == [RECIPE.read_text(), RECIPE.read_text()]


def test_a_regular_file_is_read_again_only_when_it_changed(tmp_path):
    path = tmp_path / "r.yaml"
    path.write_text("name: a\n")
    forget_inputs()
    assert read_input(str(path)) == b"name: a\n"
    path.write_text("name: bb\n")  # a new version (size and mtime differ): read it
    assert read_input(str(path)) == b"name: bb\n"


def test_unreadable_input_is_one_line(tmp_path, capsys):
    assert main(["values", str(tmp_path), str(INFRA)]) == 2  # a directory
    err = capsys.readouterr().err
    assert err.strip() == f"error: {tmp_path}: cannot read the file: Is a directory"
