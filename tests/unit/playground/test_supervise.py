"""The playground's supervisor (generator/playground/supervise.py) and its record (restarts.py), on local
processes only: the kubelet's back-off, a restart after each kind of exit with the exit recorded (code or
signal, reason, the logged error line, when), a stop that restarts nothing, no child outliving its
supervisor, and what `status` and `down` make of a supervised component."""

from __future__ import annotations

import io
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from generator.playground import processes as procs
from generator.playground import restarts, supervise
from generator.playground.state import STATE_FILE, PlaygroundState
from tests.support.playground_state import old_state

QUICK = ["--initial-backoff", "0.2", "--max-backoff", "0.8"]  # the kubelet's shape, in tenths of its seconds


def test_the_backoff_is_the_kubelets_crash_loop_backoff():
    b = supervise.Backoff()
    delays, previous = [], None
    for _ in range(8):
        previous = b.next(previous, ran_seconds=1.0)
        delays.append(previous)
    assert delays == [10, 20, 40, 80, 160, 300, 300, 300]
    assert b.next(300, ran_seconds=599) == 300  # still crash-looping
    assert b.next(300, ran_seconds=600) == 10  # a child that ran 10 min starts the count afresh


def test_reason_and_error_line():
    assert supervise.reason(0) == (0, None, "Completed")
    assert supervise.reason(1) == (1, None, "Error")
    assert supervise.reason(-9) == (None, "SIGKILL", "SIGKILL")
    rt3 = int(signal.SIGRTMIN) + 3  # a real-time signal has no name of its own (signal.Signals(rt3) raises)
    assert supervise.reason(-rt3) == (None, "SIGRTMIN+3", "SIGRTMIN+3")
    assert supervise.reason(-99) == (None, "signal 99", "signal 99")
    log = ("2026-12-03T19:47:08.176Z\tinfo\tFailed to renew lease\n"
           "2026-12-03T19:47:08.176Z\terror\tsetup\tproblem running manager\t{\"error\": \"leader election lost\"}\n"
           "main.exitOnError\n\t/root/go/pkg/mod/ray-operator@v1.6.1/main.go:325\nruntime.main\n")
    assert supervise.error_line(log) == ('2026-12-03T19:47:08.176Z error setup problem running manager '
                                         '{"error": "leader election lost"}')
    assert supervise.error_line("starting\nbye\n") == "bye"  # no error line: the last one
    assert len(supervise.error_line("error " + "x" * 1000)) == 240


def _supervise(tmp_path: Path, script: str, *flags: str) -> tuple[subprocess.Popen, Path, Path]:
    """A supervisor of `sh -c script` (its runs counted in tmp_path/runs), its output in tmp_path/log."""
    record, log = tmp_path / "supervise" / "x.json", tmp_path / "log"
    with open(log, "ab") as out:
        proc = subprocess.Popen(_command(record, *flags, "--", "sh", "-c", script, "x", str(tmp_path / "runs")),
                                stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    return proc, record, log


def _command(record: Path, *args: str) -> list[str]:
    """supervise.command's line with flags of the test's before the command."""
    line = supervise.command("x", record, ["true"])
    assert line[-2:] == ["--", "true"]
    return [*line[:-2], *args]


def _record(file: Path) -> dict:
    try:
        return json.loads(file.read_text())
    except (FileNotFoundError, ValueError):
        return {}


def _until(predicate, timeout: float, what: str):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if value := predicate():
            return value
        time.sleep(0.05)
    pytest.fail(f"timed out after {timeout} s waiting for {what}", pytrace=False)


# runs 1-2 fail with an error line, run 3 is SIGKILLed, run 4 and later stay up
CRASHING = """n=$(( $(cat "$1" 2>/dev/null || echo 0) + 1 )); echo $n > "$1"
case $n in
  1|2) echo "E1203 12:00:00 main.go:1] error: cannot reach the apiserver (run $n)"; echo goroutine 1; exit 3;;
  3) kill -9 $$;;
  *) exec sleep 120;;
esac"""


def test_a_crashing_child_is_restarted_with_backoff_and_each_exit_recorded(tmp_path):
    proc, file, log = _supervise(tmp_path, CRASHING, *QUICK)
    try:
        runs = tmp_path / "runs"
        rec = _until(lambda: (r := _record(file)).get("restarts") == 3 and r.get("state") == "running"
                     and runs.read_text().strip() == "4" and r, 20, "the fourth run")
        exits = rec["exits"]
        assert [(e["code"], e["signal"], e["reason"]) for e in exits] == [(3, None, "Error"), (3, None, "Error"),
                                                                          (None, "SIGKILL", "SIGKILL")]
        assert exits[0]["message"] == "E1203 12:00:00 main.go:1] error: cannot reach the apiserver (run 1)"
        assert exits[1]["message"].endswith("(run 2)") and exits[2]["message"] == ""  # a signal logs no reason
        assert [e["delay"] for e in exits] == [0.2, 0.4, 0.8]
        assert all(time.time() - 30 < e["at"] <= time.time() for e in exits)
        child = restarts.Record.from_dict(rec).child
        assert child and procs.is_running(child)
        assert rec["supervisor"]["pid"] == proc.pid
        text = log.read_text()
        assert "[supervisor] x ended after" in text and "restart 3 in 1 s" in text and "restart 3: sh -c" in text

        proc.send_signal(signal.SIGTERM)  # what `down` sends: the child goes, nothing restarts
        assert proc.wait(timeout=10) == 0
        assert not procs.is_running(child)
        rec = _record(file)
        assert (rec["state"], rec["child"], rec["restarts"]) == ("stopped", None, 3)
        assert runs.read_text().strip() == "4"
    finally:
        proc.kill()
        proc.wait()


def test_a_child_ended_by_a_real_time_signal_is_recorded_and_restarted(tmp_path):
    rt3 = int(signal.SIGRTMIN) + 3
    script = f"""n=$(( $(cat "$1" 2>/dev/null || echo 0) + 1 )); echo $n > "$1"
case $n in 1) exec {sys.executable} -c 'import os; os.kill(os.getpid(), {rt3})';; *) exec sleep 120;; esac"""
    proc, file, _ = _supervise(tmp_path, script, *QUICK)
    try:
        rec = _until(lambda: (r := _record(file)).get("restarts") == 1 and r.get("state") == "running" and r,
                     10, "the second run")
        assert [(e["code"], e["signal"], e["reason"]) for e in rec["exits"]] == [(None, "SIGRTMIN+3", "SIGRTMIN+3")]
        assert proc.poll() is None  # the supervisor lives on
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=10)


# The supervisor with a fault forced into it (the rest of the command line is supervise.main's)
NO_PIDFD = """import os, sys
def pidfd_open(pid, flags=0):
    raise OSError(38, "Function not implemented")
os.pidfd_open = pidfd_open
from generator.playground import supervise
sys.exit(supervise.main(sys.argv[1:]))"""
SAVE_FAILS_ONCE = """import sys, time
from generator.playground import restarts, supervise
save, failed = restarts.save, []
def flaky(file, record):
    if record.state == restarts.RUNNING and not failed:
        failed.append(1)
        time.sleep(0.5)  # the child has written its PID by then
        raise OSError(28, "No space left on device")
    save(file, record)
restarts.save = flaky
sys.exit(supervise.main(sys.argv[1:]))"""
PIDS = 'echo $$ >> "$1"; exec sleep 120'  # each run's PID, one a line


def _forced(tmp_path: Path, preamble: str, *flags: str) -> tuple[subprocess.Popen, Path]:
    record = tmp_path / "supervise" / "x.json"
    argv = [sys.executable, "-c", preamble, *_command(record, *flags, "--", "sh", "-c", PIDS, "x",
                                                      str(tmp_path / "runs"))[3:]]
    with open(tmp_path / "log", "ab") as out:
        proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    return proc, record


def _pids(tmp_path: Path) -> list[int]:
    runs = tmp_path / "runs"
    return [int(p) for p in runs.read_text().split()] if runs.exists() else []


def _alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] not in ("Z", "X")
    except FileNotFoundError:
        return False


def test_without_pidfd_the_supervisor_polls_its_one_child_and_stops_it(tmp_path):
    proc, file = _forced(tmp_path, NO_PIDFD, *QUICK, "--stop-seconds", "1")
    try:
        rec = _until(lambda: (r := _record(file)).get("child") and r, 10, "the child")
        time.sleep(1.5)  # several back-offs long: a child taken for one that never started would be started again
        assert len(_pids(tmp_path)) == 1 and _alive(_pids(tmp_path)[0])
        rec = _record(file)
        assert (rec["state"], rec["restarts"], rec["exits"]) == ("running", 0, [])
        os.kill(_pids(tmp_path)[0], signal.SIGKILL)  # its exit is seen without a pidfd
        rec = _until(lambda: (r := _record(file)).get("restarts") == 1 and r.get("state") == "running" and r,
                     10, "the restart")
        assert rec["exits"][0]["signal"] == "SIGKILL"
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=10) == 0
        assert [_alive(p) for p in _pids(tmp_path)] == [False, False]
    finally:
        proc.kill()
        proc.wait()
        for pid in _pids(tmp_path):
            if _alive(pid):
                os.kill(pid, signal.SIGKILL)


def test_a_child_whose_record_cannot_be_written_is_killed_before_the_next_one(tmp_path):
    proc, file = _forced(tmp_path, SAVE_FAILS_ONCE, *QUICK)
    try:
        rec = _until(lambda: (r := _record(file)).get("restarts") == 1 and r.get("state") == "running" and r,
                     10, "the restart")
        first, second = _pids(tmp_path)
        assert not _alive(first) and _alive(second)
        assert rec["child"]["pid"] == second
        assert rec["exits"][0]["signal"] == "SIGKILL"
        assert "No space left on device" in rec["exits"][0]["message"]
        assert "killed" in rec["exits"][0]["message"]
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=10)
        for pid in _pids(tmp_path):
            if _alive(pid):
                os.kill(pid, signal.SIGKILL)


def test_the_backoff_starts_afresh_after_a_child_that_ran_long_enough(tmp_path):
    script = """n=$(( $(cat "$1" 2>/dev/null || echo 0) + 1 )); echo $n > "$1"
case $n in 2) sleep 0.7; exit 1;; 1|3) exit 1;; *) exec sleep 120;; esac"""
    proc, file, _ = _supervise(tmp_path, script, *QUICK, "--reset-after", "0.5")
    try:
        rec = _until(lambda: (r := _record(file)).get("restarts") == 3 and r, 20, "the fourth run")
        assert [e["delay"] for e in rec["exits"]] == [0.2, 0.2, 0.4]  # without the reset: 0.2, 0.4, 0.8
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=10)


def test_a_stop_during_the_backoff_restarts_nothing(tmp_path):
    proc, file, _ = _supervise(tmp_path, 'echo run >> "$1"; exit 1', "--initial-backoff", "30")
    try:
        _until(lambda: _record(file).get("state") == "waiting", 10, "the back-off")
        t0 = time.monotonic()
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=10) == 0 and time.monotonic() - t0 < 5
        assert _record(file)["state"] == "stopped" and (tmp_path / "runs").read_text() == "run\n"
    finally:
        proc.kill()
        proc.wait()


def test_a_child_that_ignores_sigterm_is_killed_after_the_stop_seconds(tmp_path):
    ready = tmp_path / "ready"
    stubborn = f"import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); open({str(ready)!r}, 'w'); " \
               "time.sleep(120)"
    record, log = tmp_path / "x.json", tmp_path / "log"
    with open(log, "ab") as out:
        proc = subprocess.Popen(_command(record, "--stop-seconds", "1", "--", sys.executable, "-c", stubborn),
                                stdout=out, stderr=subprocess.STDOUT)
    try:
        _until(ready.exists, 10, "the child to ignore SIGTERM")
        child = restarts.Record.from_dict(_record(record)).child
        assert child
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=10) == 0
        assert not procs.is_running(child)
        assert _record(record)["restarts"] == 0
    finally:
        proc.kill()
        proc.wait()


def test_a_killed_supervisor_takes_its_child_with_it(tmp_path):
    proc, file, _ = _supervise(tmp_path, "exec sleep 120")
    try:
        rec = _until(lambda: (r := _record(file)).get("child") and r, 10, "the child")
        child = restarts.Record.from_dict(rec).child
        assert child and procs.is_running(child)
        proc.kill()  # SIGKILL: no chance to stop the child itself
        proc.wait()
        _until(lambda: not procs.is_running(child), 5, "the child to die with its supervisor (PR_SET_PDEATHSIG)")
    finally:
        proc.kill()
        proc.wait()


def _supervised_playground(tmp_path: Path, argv: list[str]) -> tuple[Path, PlaygroundState]:
    """A state folder whose `kuberay-operator` is a supervisor of `argv`, started as `up` starts it."""
    from generator.playground import startup

    state_dir = tmp_path / "pg"
    (state_dir / "logs").mkdir(parents=True)
    state = PlaygroundState.from_dict(old_state(state_dir))
    startup.start(state, state_dir, state.components, "kuberay-operator", "kuberay-operator", argv, supervised=True)
    return state_dir, state


def test_status_shows_a_supervised_component_down_until_its_restart(tmp_path):
    from generator.playground.lifecycle import status

    state_dir, state = _supervised_playground(tmp_path, ["sh", "-c", 'echo "error: leader election lost"; exit 1'])
    try:
        file = restarts.path(state_dir, "kuberay-operator")
        _until(lambda: _record(file).get("state") == "waiting", 10, "the back-off")
        out = io.StringIO()
        assert status(state_dir, out=out) == 1
        line = next(ln for ln in out.getvalue().splitlines() if ln.split()[:1] == ["kuberay-operator"])
        assert line.split()[1] == "DOWN", line
        assert "exited (exit code 1 (Error) at " in line and ": error: leader election lost); restart 1 in " in line
        assert f"by its supervisor (pid {state.components['kuberay-operator'].pid})" in line
    finally:
        procs.stop(list(state.components.values()))


def test_down_stops_the_supervisor_and_its_child_and_nothing_restarts(tmp_path):
    from generator.playground.lifecycle import down

    state_dir, state = _supervised_playground(tmp_path, ["sleep", "120"])
    sup = state.components["kuberay-operator"]
    child = restarts.of(state_dir, sup)
    assert child and child.child and procs.is_running(child.child) and child.child.exe == "sleep"
    assert json.loads((state_dir / STATE_FILE).read_text())["components"]["kuberay-operator"]["pid"] == sup.pid
    out = io.StringIO()
    try:
        assert down(state_dir, out=out) == 0
    finally:
        procs.stop([child.child, sup], timeout=1)
    assert not procs.is_running(sup) and not procs.is_running(child.child)
    assert out.getvalue() == f"playground down: stopped 1 processes (kuberay-operator); removed {state_dir}\n"
    assert not state_dir.exists()


def _up_again(state_dir: Path, state: PlaygroundState, monkeypatch) -> str:
    """`up` on the playground whose every component but the operator is healthy; the operator's endpoint does
    not answer. Starting afresh (which drops every release) fails the test."""
    from generator.playground import lifecycle

    def health(_state, name):
        ok = name != "kuberay-operator"
        return ok, "ok" if ok else "pid 1, http://127.0.0.1:1/readyz: [Errno 111] Connection refused"

    def wipe(*_args, **_kwargs):
        raise AssertionError("up tore the running playground down")

    monkeypatch.setattr(lifecycle, "component_health", health)
    monkeypatch.setattr(lifecycle, "print_summary", lambda *_: None)
    monkeypatch.setattr(lifecycle, "_node_teardown", wipe)
    monkeypatch.setattr(lifecycle, "_stop", wipe)
    monkeypatch.setattr(lifecycle, "remove_tree", wipe)
    out = io.StringIO()
    assert lifecycle.up(state_dir, state.shape, out=out) == 0
    return out.getvalue()


def test_up_leaves_a_just_restarted_component_to_its_supervisor(tmp_path, monkeypatch):
    state_dir, state = _supervised_playground(tmp_path, ["sleep", "120"])
    try:
        record = restarts.of(state_dir, state.components["kuberay-operator"])
        assert record and record.child and procs.is_running(record.child)
        text = _up_again(state_dir, state, monkeypatch)  # its child runs, started just now, and is not healthy yet
        assert text.startswith(f"playground already running ({state_dir})\n")
        assert "  note: kuberay-operator is not healthy yet, its supervisor restarts it: pid 1, " in text
    finally:
        procs.stop(list(state.components.values()))


def test_up_counts_a_component_unhealthy_past_the_grace_as_broken(tmp_path, monkeypatch):
    from generator.playground import lifecycle

    state_dir, state = _supervised_playground(tmp_path, ["sleep", "120"])
    try:
        monkeypatch.setattr(lifecycle, "RESTART_GRACE", 0.0)
        with pytest.raises(AssertionError, match="tore the running playground down"):
            _up_again(state_dir, state, monkeypatch)
    finally:
        procs.stop(list(state.components.values()))
