"""`check` when a tool it runs fails: helm template, kubeconform, kube-validate, the release-size estimate,
and with --server the apiserver. Whatever fails (missing, cannot start, crashes, ends with an unexpected
code, prints what is not its report), `check` says so in one line in the CLI's voice, exits 1, and
leaves nothing running: the tools still at work are stopped and reaped.

The failing tools are stand-ins (small shell scripts) in a tool cache of their own ($DOCKYARD_TOOLS_CACHE
pointing at a temporary folder whose other entries link to the real cache) or $DOCKYARD_HELM; the other
tools are the real pinned ones."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from generator.cli import main
from generator.pinned_tools import REPO, cache_dir, tool_dir
from tests.conftest import RECIPE

INFRA = REPO / "values-examples" / "grpo_swe.infra.yaml"
CHECK = ["check", str(RECIPE), str(INFRA)]

# Stand-ins. A sleeper records its pid (exec keeps it) and sleeps: a tool still at work. The pid file appears whole
# (written aside, then renamed): a reader never sees the empty file `>` creates before echo writes.
SLEEPER = 'echo $$ > "{pidfile}.tmp" && mv "{pidfile}.tmp" "{pidfile}"\nexec sleep 300\n'
PANIC = ("cat > /dev/null\n"
         "echo 'panic: runtime error: index out of range [3] with length 3' >&2\n"
         "echo '' >&2\necho 'goroutine 1 [running]:' >&2\necho 'main.main()' >&2\nexit 2\n")


def _wait_for(*pidfiles: Path) -> str:
    """Shell lines that wait (at most ~10 s) until the sleepers have written their pids."""
    test = " && ".join(f'[ -s "{p}" ]' for p in pidfiles)
    return f"i=0\nuntil {test} || [ $i -ge 200 ]; do sleep 0.05; i=$((i+1)); done\n"


def children() -> set[int]:
    """This process's child processes, zombies (exited, not reaped) included."""
    out = set()
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rpartition(")")[2].split()
        except OSError:  # ended meanwhile
            continue
        if int(fields[1]) == os.getpid():
            out.add(int(stat.parent.name))
    return out


def _script(path: Path, body: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(0o755)
    return path


class Cache:
    """A tool cache whose entries link to the real one, but for the tools given a stand-in."""

    def __init__(self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        real = cache_dir()
        self.root = tmp_path / "cache"
        self.root.mkdir()
        self.pids = tmp_path / "pids"
        self.pids.mkdir()
        monkeypatch.setenv("DOCKYARD_TOOLS_CACHE", str(self.root))
        self._real = real
        self._replaced: set[str] = set()
        self.sleepers: list[Path] = []
        self.before = children()

    def stand_in(self, tool: str, body: str | bytes | None) -> Path:
        """`tool`'s binary is this script (bytes: this file's content; None: no binary at all)."""
        folder = tool_dir(tool)
        self._replaced.add(folder.name)
        folder.mkdir()
        (folder / ".complete").touch()
        path = folder / tool
        if isinstance(body, bytes):
            path.write_bytes(body)
            path.chmod(0o755)
        elif body is not None:
            _script(path, body)
        return path

    def sleeper(self, tool: str) -> Path:
        pidfile = self.pids / f"{tool}.pid"
        self.stand_in(tool, SLEEPER.format(pidfile=pidfile))
        self.sleepers.append(pidfile)
        return pidfile

    def link_the_rest(self) -> None:
        for entry in self._real.iterdir():
            if entry.name not in self._replaced:
                (self.root / entry.name).symlink_to(entry)

    def reaped(self, started: bool = True) -> None:
        """No child process of this one is left (running or a zombie), and every sleeper that wrote its pid
        (all of them when `started`) is gone (a sleeper of another process: not a child of this one)."""
        left = children() - self.before
        assert not left, f"child processes left running or unreaped: {sorted(left)}"
        for pidfile in self.sleepers:
            if not started and not pidfile.is_file():
                continue
            assert pidfile.is_file(), f"{pidfile.stem} was never started"
            pid = int(pidfile.read_text())
            try:
                os.kill(pid, 0)
            except ProcessLookupError:
                continue
            os.kill(pid, 9)  # left running: stop it, then fail
            pytest.fail(f"{pidfile.stem} (pid {pid}) was left running or unreaped")


@pytest.fixture
def cache(tmp_path, monkeypatch):
    c = Cache(tmp_path, monkeypatch)
    yield c
    for pidfile in c.sleepers:  # the old code leaves sleepers behind: never past the test
        if pidfile.is_file():
            try:
                os.kill(int(pidfile.read_text()), 9)
            except ProcessLookupError:
                pass


def _one_line(capsys, starts: str) -> str:
    captured = capsys.readouterr()
    err = captured.err
    assert err.count("\n") == 1 and err.endswith("\n"), f"not one line:\n{err}"
    assert err.startswith(starts), err
    assert "Traceback" not in err and "check " not in captured.out, (err, captured.out)
    return err


def test_kubeconform_crash_is_one_line_and_kube_validate_is_stopped(cache, capsys):
    pidfile = cache.sleeper("kube-validate")
    path = cache.stand_in("kubeconform", _wait_for(pidfile) + PANIC)
    cache.link_the_rest()
    assert main(CHECK) == 1
    assert _one_line(capsys, "error: kubeconform failed (exit 2, ") == (
        f"error: kubeconform failed (exit 2, {path}): panic: runtime error: index out of range [3] with length 3\n")
    cache.reaped()


@pytest.mark.parametrize("body, said", [
    # an unexpected code: kubeconform ends 0 (all valid) or 1 (one is not), whatever it printed
    ("cat > /dev/null\nprintf 'garbage\\377\\000 out' \nexit 3\n", "failed (exit 3, "),
    ('cat > /dev/null\necho \'{"resources": []}\'\nexit 3\n', "failed (exit 3, "),
    ("cat > /dev/null\nkill -SEGV $$\n", "failed (killed by SIGSEGV, "),
    # an expected code with what is not kubeconform's JSON report
    ("cat > /dev/null\necho 'not json'\nexit 0\n", "answered with what is not its JSON report (exit 0, "),
    ("cat > /dev/null\necho '[]'\nexit 1\n", "answered with what is not its JSON report (exit 1, "),
    ('cat > /dev/null\necho \'{"resources": [3]}\'\n', "answered with what is not its JSON report (exit 0, "),
], ids=["exit-3-garbage", "exit-3-report", "segv", "not-json", "a-list", "resources-not-objects"])
def test_kubeconform_failures_are_one_line(cache, capsys, body, said):
    pidfile = cache.sleeper("kube-validate")
    cache.stand_in("kubeconform", _wait_for(pidfile) + body)
    cache.link_the_rest()
    assert main(CHECK) == 1
    _one_line(capsys, f"error: kubeconform {said}")
    cache.reaped()


def test_kubeconform_that_cannot_start(cache, capsys):
    path = cache.stand_in("kubeconform", b"\x7fELF but not a program for this machine")
    cache.link_the_rest()
    assert main(CHECK) == 1
    assert _one_line(capsys, f"error: kubeconform {path}: cannot run it: ") == (
        f"error: kubeconform {path}: cannot run it: Exec format error (rebuild it: `make tools`)\n")
    cache.reaped()  # the helm started before the command line was parsed, too


def test_kubeconform_missing(cache, capsys, monkeypatch):
    cache.stand_in("kubeconform", None)
    cache.link_the_rest()
    monkeypatch.setenv("PATH", "/nonexistent")
    assert main(CHECK) == 1
    err = _one_line(capsys, "error: kubeconform is neither in the tool cache (")
    assert "nor on PATH; run `make tools`, or put kubeconform v" in err  # the pinned version, named
    cache.reaped()


@pytest.mark.parametrize("body, said", [
    (PANIC, "failed (exit 2, {path}): panic: runtime error: index out of range [3] with length 3"),
    ("cat > /dev/null\necho 'kube-validate: reading the stream: unexpected EOF' >&2\nexit 2\n",
     "failed (exit 2, {path}): kube-validate: reading the stream: unexpected EOF"),
    ("cat > /dev/null\necho '{}'\n", "answered with what is not its JSON report (exit 0, {path}): {{}}"),
], ids=["panic", "its-own-error", "report-without-fields"])
def test_kube_validate_failures_are_one_line(cache, capsys, body, said):
    path = cache.stand_in("kube-validate", body)
    cache.link_the_rest()
    assert main(CHECK) == 1
    assert _one_line(capsys, "error: kube-validate ") == f"error: kube-validate {said.format(path=path)}\n"
    cache.reaped()


def test_helm_crash_is_one_line_and_the_validators_are_stopped(cache, capsys, tmp_path, monkeypatch):
    pids = cache.sleeper("kubeconform"), cache.sleeper("kube-validate")
    cache.link_the_rest()
    helm = _script(tmp_path / "helm", _wait_for(*pids) + PANIC)
    monkeypatch.setenv("DOCKYARD_HELM", str(helm))
    assert main(CHECK) == 1
    assert _one_line(capsys, "error: helm template failed") == (
        f"error: helm template failed (exit 2, {helm}): panic: runtime error: index out of range [3] with length 3\n")
    cache.reaped()


def test_helm_that_cannot_start(cache, capsys, tmp_path, monkeypatch):
    cache.sleeper("kubeconform")
    cache.sleeper("kube-validate")
    cache.link_the_rest()
    helm = tmp_path / "helm"
    helm.write_bytes(b"\x7fELF but not a program for this machine")
    helm.chmod(0o755)
    monkeypatch.setenv("DOCKYARD_HELM", str(helm))
    assert main(CHECK) == 1
    _one_line(capsys, f"error: helm {helm}: cannot run it: Exec format error")
    cache.reaped(started=False)  # they may be stopped before they wrote their pids


def test_the_release_size_estimate_that_cannot_read_the_chart(capsys, monkeypatch):
    """The estimate reads every chart file after helm did: one that became unreadable in between."""
    from generator.render import apivalidate

    def unreadable(chart):
        raise PermissionError(13, "Permission denied", str(chart / "values.yaml"))

    monkeypatch.setattr(apivalidate, "_chart_files", unreadable)
    assert main(CHECK) == 1
    _one_line(capsys, "error: the release-size estimate cannot read ")


def test_check_server_with_no_apiserver_is_one_line(tmp_path, capsys):
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(
        "apiVersion: v1\nkind: Config\ncurrent-context: none\n"
        f"clusters: [{{name: none, cluster: {{server: 'https://127.0.0.1:{port}', insecure-skip-tls-verify: true}}}}]\n"
        "users: [{name: none, user: {token: t}}]\ncontexts: [{name: none, context: {cluster: none, user: none}}]\n")
    assert main([*CHECK, "--server", "--kubeconfig", str(kubeconfig)]) == 1
    captured = capsys.readouterr()
    assert captured.err == (f"error: cannot reach the Kubernetes API at https://127.0.0.1:{port}: Connection refused "
                            "(check --kubeconfig / --context, or start the playground)\n"), captured.err


def test_from_the_command_line(cache):
    """The installed entry point (a process of its own): exit 1, one line on stderr, the sleeper gone."""
    pidfile = cache.sleeper("kube-validate")
    cache.stand_in("kubeconform", _wait_for(pidfile) + PANIC)
    cache.link_the_rest()
    proc = subprocess.run([sys.executable, "-m", "generator", *CHECK], capture_output=True, text=True, timeout=60,
                          env={**os.environ})
    assert proc.returncode == 1, proc.stderr
    assert proc.stderr.count("\n") == 1 and proc.stderr.startswith("error: kubeconform failed (exit 2, "), proc.stderr
    cache.reaped()


def test_check_server_with_a_bad_kubeconfig_stops_kubeconform(cache, capsys, tmp_path):
    """kubeconform starts first (its start-up overlaps the rest); a usage error after it stops it."""
    cache.sleeper("kubeconform")
    cache.link_the_rest()
    assert main([*CHECK, "--server", "--kubeconfig", str(tmp_path / "absent")]) == 2
    assert capsys.readouterr().err == f"error: <command line>: --kubeconfig {tmp_path / 'absent'}: no such file\n"
    cache.reaped(started=False)
