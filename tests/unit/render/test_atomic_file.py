"""`-o FILE` is written safely, for every verb that writes one: atomically (a
temporary file beside the target, renamed over it), never over an input, and every I/O error is one
line and exit 2 with the old file kept."""

from __future__ import annotations

import errno
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from generator.cli import main
from tests.conftest import EXAMPLES, RECIPE

INFRA = EXAMPLES / "grpo_swe.infra.yaml"
VERBS = ["values", "render"]
OLD = "old contents\n"


def cli(capsys, verb: str, out: str | Path, recipe: Path = RECIPE, infra: Path = INFRA) -> tuple[int, str]:
    code = main([verb, str(recipe), str(infra), "-o", str(out)])
    err = capsys.readouterr().err
    assert "Traceback" not in err
    return code, err


def one_line(err: str) -> str:
    assert err.count("\n") == 1 and err.startswith("error: "), err
    return err


def leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.endswith(".tmp"))


@pytest.fixture
def inputs(tmp_path):
    recipe, infra = tmp_path / "r.yaml", tmp_path / "i.yaml"
    recipe.write_bytes(RECIPE.read_bytes())
    infra.write_bytes(INFRA.read_bytes())
    return recipe, infra


@pytest.mark.parametrize("verb", VERBS)
@pytest.mark.parametrize("which", ["recipe", "infra"])
@pytest.mark.parametrize("spelling", ["same", "relative", "symlink", "hardlink", "dotdot"])
def test_an_output_onto_an_input_is_refused(tmp_path, capsys, monkeypatch, inputs, verb, which, spelling):
    recipe, infra = inputs
    target = recipe if which == "recipe" else infra
    before = target.read_bytes()
    monkeypatch.chdir(tmp_path)
    out: str | Path = {
        "same": target,
        "relative": f"./{target.name}",
        "dotdot": f"sub/../{target.name}",
        "symlink": tmp_path / "link.yaml",
        "hardlink": tmp_path / "hard.yaml",
    }[spelling]
    (tmp_path / "sub").mkdir()
    if spelling == "symlink":
        os.symlink(target, out)
    if spelling == "hardlink":
        os.link(target, out)
    code, err = cli(capsys, verb, out, recipe, infra)
    assert code == 2
    assert one_line(err) == (f"error: {out}: refusing to write the output over the input {target}; "
                             "choose another -o path\n")
    assert target.read_bytes() == before


@pytest.mark.parametrize("verb", VERBS)
def test_a_new_file_gets_the_usual_permissions(tmp_path, capsys, verb):
    out = tmp_path / "out.yaml"
    mask = os.umask(0o022)
    try:
        code, err = cli(capsys, verb, out)
    finally:
        os.umask(mask)
    assert code == 0, err
    assert stat.S_IMODE(out.stat().st_mode) == 0o644
    assert yaml.safe_load_all(out.read_text()) and leftovers(tmp_path) == []


@pytest.mark.parametrize("verb", VERBS)
def test_replacing_keeps_mode_and_follows_a_symlink(tmp_path, capsys, verb):
    real = tmp_path / "real.yaml"
    real.write_text(OLD)
    real.chmod(0o640)
    link = tmp_path / "link.yaml"
    link.symlink_to(real)
    code, err = cli(capsys, verb, link)
    assert code == 0, err
    assert link.is_symlink() and real.read_text() != OLD
    assert stat.S_IMODE(real.stat().st_mode) == 0o640


@pytest.mark.parametrize("verb", VERBS)
@pytest.mark.parametrize("step, error", [
    ("write", errno.ENOSPC), ("fsync", errno.EIO), ("replace", errno.EXDEV), ("write", errno.EDQUOT),
])
def test_a_failing_write_keeps_the_old_file_and_leaves_nothing_behind(tmp_path, capsys, monkeypatch, verb, step, error):
    out = tmp_path / "out.yaml"
    out.write_text(OLD)

    def fail(*args, **kwargs):
        raise OSError(error, os.strerror(error))

    if step == "write":  # the data write of the temporary file (mkstemp's fd, wrapped by os.fdopen)
        real_fdopen = os.fdopen

        class Failing:
            def __init__(self, f):
                self.f = f

            def __enter__(self):
                return self

            def __exit__(self, *exc):
                self.f.close()

            def write(self, data):
                self.f.write(data[: len(data) // 2])
                fail()

        monkeypatch.setattr(os, "fdopen", lambda *a, **k: Failing(real_fdopen(*a, **k)))
    else:
        monkeypatch.setattr(os, step, fail)
    code, err = cli(capsys, verb, out)
    assert code == 2
    assert one_line(err).startswith(f"error: {out}: cannot write the output: {os.strerror(error)}")
    assert out.read_text() == OLD
    assert leftovers(tmp_path) == []


@pytest.mark.parametrize("verb", VERBS)
def test_a_full_disk_is_one_line(capsys, verb):
    code, err = cli(capsys, verb, "/dev/full")
    assert code == 2 and one_line(err) == "error: /dev/full: cannot write the output: No space left on device\n"


@pytest.mark.parametrize("verb", [*VERBS, "check"])
def test_a_full_disk_on_stdout_is_one_line(verb):
    done = subprocess.run(f"{sys.executable} -m generator {verb} {RECIPE} {INFRA} > /dev/full", shell=True,
                          capture_output=True, text=True, timeout=60, cwd=Path(__file__).parents[3])
    assert done.returncode == 2
    assert done.stderr == "error: <stdout>: cannot write the output: No space left on device\n"


@pytest.mark.parametrize("verb", VERBS)
def test_devices_and_stdout_are_written_through(tmp_path, capsys, verb):
    code, err = cli(capsys, verb, "/dev/null")
    assert code == 0, err
    assert main([verb, str(RECIPE), str(INFRA), "-o", "-"]) == 0
    assert "grpo-swe" in capsys.readouterr().out


@pytest.mark.parametrize("verb", VERBS)
@pytest.mark.parametrize("case", ["missing folder", "directory", "trailing slash", "folder is a file"])
def test_bad_targets_are_one_line(tmp_path, capsys, verb, case):
    (tmp_path / "afile").write_text(OLD)
    out, reason = {
        "missing folder": (tmp_path / "no" / "such" / "out.yaml", f"the folder {tmp_path}/no/such does not exist"),
        "directory": (tmp_path, "it is a directory"),
        "trailing slash": (f"{tmp_path}/new/", "the path names a folder; give a file name"),
        "folder is a file": (tmp_path / "afile" / "out.yaml", "Not a directory"),
    }[case]
    code, err = cli(capsys, verb, out)
    assert code == 2
    assert one_line(err) == f"error: {out}: cannot write the output: {reason}\n"
    assert (tmp_path / "afile").read_text() == OLD


def _immutable(path: Path) -> None:
    """Make `path` unwritable, honestly, for root too: the immutable attribute where we are root
    (root ignores permission bits), permission bits otherwise."""
    if os.geteuid() == 0:
        subprocess.run(["chattr", "+i", str(path)], check=True)
    else:
        path.chmod(0o555 if path.is_dir() else 0o444)


def _mutable(path: Path) -> None:
    if os.geteuid() == 0:
        subprocess.run(["chattr", "-i", str(path)], check=True)
    path.chmod(0o755 if path.is_dir() else 0o644)


@pytest.mark.parametrize("verb", VERBS)
def test_a_read_only_file_is_refused_and_kept(tmp_path, capsys, verb):
    out = tmp_path / "out.yaml"
    out.write_text(OLD)
    _immutable(out)
    try:
        code, err = cli(capsys, verb, out)
    finally:
        _mutable(out)
    assert code == 2 and one_line(err) == f"error: {out}: cannot write the output: the file is read-only\n"
    assert out.read_text() == OLD


@pytest.mark.parametrize("verb", VERBS)
def test_a_folder_we_cannot_write_is_one_line(tmp_path, capsys, verb):
    folder = tmp_path / "locked"
    folder.mkdir()
    _immutable(folder)
    try:
        code, err = cli(capsys, verb, folder / "out.yaml")
        names = os.listdir(folder)
    finally:
        _mutable(folder)
    assert code == 2
    assert one_line(err).startswith(f"error: {folder / 'out.yaml'}: cannot write the output: "
                                    f"cannot create a file in the folder {folder}: ")
    assert names == []


def test_the_written_file_is_what_stdout_gets(tmp_path, capsys):
    out = tmp_path / "v.yaml"
    out.write_text(OLD * 1000)  # longer than the new contents: no stale tail may survive
    assert main(["values", str(RECIPE), str(INFRA), "-o", str(out)]) == 0
    assert main(["values", str(RECIPE), str(INFRA)]) == 0
    assert out.read_text() == capsys.readouterr().out
