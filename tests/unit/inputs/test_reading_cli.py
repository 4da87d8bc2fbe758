"""The bounded YAML reader (generator/inputs/reading.py) through the CLI: a file that is not YAML text, YAML past the
reader's bounds, a file that cannot be read, each exits 2 with the file and line and one sentence, never a traceback;
a bad value points at its own line."""

from __future__ import annotations

import pytest

from tests.conftest import RECIPE, write
from tests.support.infra import GOOD_INFRA, run_values


def test_line_numbers_point_at_the_key(tmp_path, capsys):
    infra = write(tmp_path, "i.yaml", (
        "infra:\n"
        "  image: {repository: ghcr.io/x/ubuntu-swe}\n"
        "sandbox:\n"
        "  replicas: 2\n"
        "  resources:\n"
        "    cpu: one\n"
    ))
    code, err = run_values(capsys, RECIPE, infra)
    assert code == 2
    assert f"error: {infra}:6: sandbox.resources.cpu: 'one' is not a Kubernetes quantity" in err


@pytest.mark.parametrize("text, fragment", [
    ("infra: [unclosed\n", ":2: malformed YAML: expected ',' or ']'"),
    ("infra:\n  image: {repository: a}\n  image: {repository: b}\n", ":3: infra.image: duplicate key 'image'"),
    ("- a list\n", ":1: the file holds a list, not a mapping"),
    # Bounded parsing: alias expansion, nesting depth, size
    ("a: &a [x, x, x, x, x, x, x, x, x, x]\n"
     + "".join(f"{n}: &{n} [{', '.join([f'*{p}'] * 10)}]\n" for p, n in zip("abcde", "bcdef", strict=True)),
     ":5: aliases expand to more than 20000 nodes"),
    ("x: " + "[" * 500 + "]" * 500 + "\n", ":1: nested more than 100 levels deep"),
    ("x:\n" + "".join("  " * i + f"- k{i}:\n" for i in range(1, 120)), "nested more than 100 levels deep"),
    ("x: &x [*x]\n", ":1: alias *x is used inside its own anchor &x"),
    ("x: &x {y: *x}\n", ":1: alias *x is used inside its own anchor &x"),
    ("x: \x00\n", ":1: malformed YAML: character '\\x00' (U+0000) is not allowed in YAML"),
    ("? [a]\n: 1\n", ":1: a mapping key must be a plain value"),
    ("x: !!python/name:os.system\n", ":1: x: cannot read the value"),
    ("x: !!python/object/new:list [[1]]\n", ":1: x: cannot read the value: the tag"),
    ("a: 1\n---\nb: 2\n", ":2: malformed YAML: expected a single document in the stream"),
    ("base: &b {replicas: 2}\nsandbox:\n  <<: *b\n  <<: *b\n", ":4: sandbox.<<: duplicate key '<<'"),
    ("sandbox:\n  <<: [1]\n", ":2: sandbox.<<: a merge key '<<' takes a mapping or a list of mappings"),
    ("infra: {image: {repository: a}}\nx: &r {replicas: -1}\nsandbox: {<<: *r}\n",
     ":2: sandbox.replicas: -1 is out of range"),
    # Half a surrogate pair is no character: UTF-8 (and so Helm) cannot carry it; a whole pair is one.
    ('sandbox:\n  nodeSelector: {disk: "ssd\\ud800"}\n',
     ":2: sandbox.nodeSelector.disk: the value holds U+D800, half of a UTF-16 surrogate pair"),
    ('sandbox:\n  podAnnotations: {"\\udc00": x}\n', ":2: sandbox.podAnnotations: the value holds U+DC00"),
])
def test_malformed_yaml(tmp_path, capsys, text, fragment):
    code, err = run_values(capsys, RECIPE, write(tmp_path, "i.yaml", text))
    assert code == 2 and fragment in err and "Traceback" not in err


@pytest.mark.parametrize("raw, fragment", [
    (b"infra:\n  namespace: caf\xe9\n", ":2: the file is not UTF-8 text: byte 0xe9 cannot be decoded"),
    (b"\xfe\xff\x00i\x00n", ":1: the file is not UTF-8 text"),
    (b"x: \x1b[31m\n", ":1: malformed YAML: character '\\x1b' (U+001B) is not allowed in YAML"),
])
def test_bytes_that_are_not_yaml_text(tmp_path, capsys, raw, fragment):
    infra = tmp_path / "i.yaml"
    infra.write_bytes(raw)
    code, err = run_values(capsys, RECIPE, infra)
    assert code == 2 and f"error: {infra}{fragment}" in err and "Traceback" not in err, err


@pytest.mark.parametrize("source", ["/dev/zero", "/dev/urandom"])
def test_endless_input(tmp_path, capsys, source):
    code, err = run_values(capsys, source, write(tmp_path, "i.yaml", GOOD_INFRA))
    assert code == 2 and f"error: {source}: input is larger than 4 MiB" in err


@pytest.mark.parametrize("make", ["directory", "missing"])
def test_unreadable_input_is_one_line(tmp_path, capsys, make):
    path = tmp_path if make == "directory" else tmp_path / "gone.yaml"
    code, err = run_values(capsys, path, write(tmp_path, "i.yaml", GOOD_INFRA))
    reason = "Is a directory" if make == "directory" else "No such file or directory"
    assert code == 2 and err == f"error: {path}: cannot read the file: {reason}\n"


def test_missing_file(tmp_path, capsys):
    code, err = run_values(capsys, RECIPE, tmp_path / "nope.yaml")
    assert code == 2 and "cannot read the file" in err
