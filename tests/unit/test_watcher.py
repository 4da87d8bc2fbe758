"""The run watcher, charts/dockyard/files/run_watch.py (shipped by the chart, run in the user's image), with real
child processes: it passes the output through, records the reports, keeps the driver log within its cap, and ends
a job that stops reporting, but never one that reports steadily; the negative control is the same hang without
the guard, still running past the bound."""

from __future__ import annotations

import json
import os
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from generator.live.state.driver_log import watcher, watcher_file

rw = watcher()  # the chart's files/run_watch.py as a module
WATCHER = watcher_file()


def job(body: str) -> str:
    """A shell command that runs `body` as Python (one quoted word for the watcher)."""
    return f"{sys.executable} -c {shlex.quote(body)}"


REPORT = ('import json, time\n'
          'def report(s, **kw): print("DOCKYARD_PROGRESS", json.dumps({"step": s, **kw}), flush=True)\n')


STARTED: list[subprocess.Popen] = []


@pytest.fixture(autouse=True)
def _no_process_left():
    """Every watcher a test started ends with it, its job too, even when the test fails half-way."""
    yield
    while STARTED:
        proc = STARTED.pop()
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        proc.communicate()


def start(tmp_path: Path, command: str, *flags: str, sid: str = "raysubmit_1", cluster: str = "grpo-swe-abcde",
          logs: bool = True) -> subprocess.Popen:
    env = dict(os.environ, RAY_CLUSTER_NAME=cluster,
               RAY_JOB_CONFIG_JSON_ENV_VAR=json.dumps({"metadata": {"job_submission_id": sid}}))
    env.pop("DOCKYARD_LOG_DIR", None)
    if logs:
        env["DOCKYARD_LOG_DIR"] = str(tmp_path / "volume")
    # a process group of its own, as Ray starts an entrypoint
    proc = subprocess.Popen([sys.executable, str(WATCHER), "--run", "grpo-swe", "--ray-logs", str(tmp_path / "ray"),
                             "--kill-grace", "1", *flags, "--", command], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)
    STARTED.append(proc)
    return proc


def head_records(tmp_path: Path, sid: str = "raysubmit_1") -> list[dict]:
    path = tmp_path / "ray" / "dockyard" / f"progress-{sid}.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()]


def kept_jobs(tmp_path: Path) -> list[Path]:
    return sorted((tmp_path / "volume" / "dockyard-runs" / "grpo-swe").iterdir())


def test_parse_report_takes_the_contract_and_nothing_else():
    assert rw.parse_report('DOCKYARD_PROGRESS {"step": 3, "total": 10}') == {"step": 3, "total": 10}
    # a Ray actor's forwarded line, prefix and all; metrics kept (numbers and strings), the rest dropped
    line = '(Trainer pid=41, ip=10.0.0.2) DOCKYARD_PROGRESS {"step": 7, "metrics": {"reward": 0.5, "x": [1]}} tail'
    assert rw.parse_report(line) == {"step": 7, "metrics": {"reward": 0.5}}
    for bad in ("step 3", "DOCKYARD_PROGRESS", "DOCKYARD_PROGRESS {", 'DOCKYARD_PROGRESS {"step": -1}',
                'DOCKYARD_PROGRESS {"step": "3"}', 'DOCKYARD_PROGRESS {"step": true}', 'DOCKYARD_PROGRESS [3]'):
        assert rw.parse_report(bad) is None, bad
    assert rw.parse_report('DOCKYARD_PROGRESS {"step": 1, "total": 0}') == {"step": 1}


def test_newest_checkpoint_is_the_highest_step_and_not_one_being_written(tmp_path):
    for name in ("global_step_9", "global_step_12", "tmp_step_13", "notes"):
        (tmp_path / name).mkdir()
    assert rw.newest_checkpoint(str(tmp_path))["step"] == 12
    assert rw.newest_checkpoint(str(tmp_path / "missing")) is None and rw.newest_checkpoint(None) is None


def test_output_passes_through_reports_are_recorded_and_the_exit_code_kept(tmp_path):
    body = REPORT + 'report(0, total=2)\nprint("hello")\nreport(1, total=2, metrics={"loss": 1.5})\nraise SystemExit(3)'
    proc = start(tmp_path, job(body))
    out, _ = proc.communicate(timeout=30)
    assert proc.returncode == 3
    assert "hello" in out and 'DOCKYARD_PROGRESS {"step": 1' in out  # the driver log is the job's output
    recs = head_records(tmp_path)
    assert recs[0]["event"] == "started" and recs[0]["cluster"] == "grpo-swe-abcde" and recs[0]["kept"] is True
    assert [r["step"] for r in recs if "step" in r] == [0, 1] and recs[2]["metrics"] == {"loss": 1.5}
    assert recs[-1]["event"] == "ended" and recs[-1]["end"] == "failed: exit code 3"
    (kept,) = kept_jobs(tmp_path)
    assert kept.name.endswith("-grpo-swe-abcde-raysubmit_1")
    assert "hello" in (kept / "driver.log").read_text()
    assert json.loads((kept / "end.json").read_text())["exitCode"] == 3
    assert (kept / "progress.jsonl").read_text().splitlines() == \
        (tmp_path / "ray" / "dockyard" / "progress-raysubmit_1.jsonl").read_text().splitlines()


def test_a_hang_after_reports_is_ended_within_the_timeout_and_the_bound(tmp_path):
    body = REPORT + 'for s in range(3): report(s)\nprint("hanging", flush=True)\ntime.sleep(600)'
    t0 = time.monotonic()
    proc = start(tmp_path, job(body), "--stall-timeout", "2")
    out, _ = proc.communicate(timeout=30)
    took = time.monotonic() - t0
    assert proc.returncode == 1, out
    assert out.rstrip().splitlines()[-1] == "dockyard: stalled: no progress for 2 s after step 2", out
    recs = head_records(tmp_path)
    last = [r for r in recs if "step" in r][-1]
    stalled = next(r for r in recs if r.get("event") == "stalled")
    assert 2 <= stalled["t"] - last["t"] <= 2 + 1 + 2  # checked once a second, + slack on a busy machine
    assert took < 2 + 1 + 2 + 1 + 5, took  # + the kill grace (the child ends on SIGTERM at once) + start-up
    assert "dockyard: stalled" in (kept_jobs(tmp_path)[0] / "driver.log").read_text()


def test_negative_control_the_same_hang_without_the_guard_runs_on(tmp_path):
    body = REPORT + 'for s in range(3): report(s)\ntime.sleep(600)'
    proc = start(tmp_path, job(body))
    try:
        time.sleep(2 + 1 + 2 + 1 + 2)  # past the guarded run's bound
        assert proc.poll() is None
        assert not any(r.get("event") == "stalled" for r in head_records(tmp_path))
    finally:
        os.killpg(proc.pid, signal.SIGTERM)  # as Ray stops a job: the whole group
        proc.communicate(timeout=10)
    assert proc.returncode == 128 + signal.SIGTERM


def test_steady_reports_slower_than_nothing_but_within_the_timeout_are_never_ended(tmp_path):
    body = REPORT + 'for s in range(5):\n    report(s)\n    time.sleep(1.2)'  # 6 s in all, 1.2 s apart
    proc = start(tmp_path, job(body), "--stall-timeout", "2")
    out, _ = proc.communicate(timeout=30)
    assert proc.returncode == 0, out
    assert "stalled" not in out


def test_the_first_report_has_its_own_grace(tmp_path):
    body = REPORT + 'time.sleep(3)\nreport(0)\ntime.sleep(1)\nreport(1)'  # loading takes longer than the timeout
    proc = start(tmp_path, job(body), "--stall-timeout", "2", "--first-report", "6")
    out, _ = proc.communicate(timeout=30)
    assert proc.returncode == 0, out
    proc = start(tmp_path, job("import time; time.sleep(600)"), "--stall-timeout", "2", "--first-report", "2",
                 sid="raysubmit_2")
    out, _ = proc.communicate(timeout=30)
    assert proc.returncode == 1 and "stalled: no progress report in the first 2 s" in out, out


def _started(marker: Path) -> int:
    deadline = time.monotonic() + 10
    while not marker.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    return int(marker.read_text())


def test_the_job_stays_in_the_group_ray_stops_and_the_watcher_records_the_end(tmp_path):
    marker = tmp_path / "child.pid"
    body = f'import os, time\nopen({str(marker)!r}, "w").write(str(os.getpid()))\ntime.sleep(600)'
    proc = start(tmp_path, job(body))
    child = _started(marker)
    assert os.getpgid(child) == proc.pid  # in the watcher's group: Ray's group signals reach it
    os.killpg(proc.pid, signal.SIGTERM)
    proc.communicate(timeout=10)
    assert head_records(tmp_path)[-1]["end"] == "failed: exit code -15"
    deadline = time.monotonic() + 5
    while _alive(child) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _alive(child)


def _alive(pid: int) -> bool:
    """Running, not ended (a zombie that nobody reaped yet has ended)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def test_the_kept_driver_log_stays_within_its_cap_and_keeps_the_newest_lines(tmp_path):
    body = 'for i in range(20000): print("line %05d %s" % (i, "x" * 40))'
    proc = start(tmp_path, job(body), "--keep-bytes", "65536")
    out, _ = proc.communicate(timeout=60)
    assert proc.returncode == 0 and out.count("\n") >= 20000  # the driver log has every line
    (kept,) = kept_jobs(tmp_path)
    parts = [kept / "driver.log.1", kept / "driver.log"]
    assert sum(p.stat().st_size for p in parts) <= 65536
    text = "".join(p.read_text() for p in parts)
    assert text.rstrip().endswith("line 19999 " + "x" * 40)
    assert "line 00000" not in text


def test_without_the_logs_volume_nothing_is_kept_but_progress_is_recorded(tmp_path):
    proc = start(tmp_path, job(REPORT + "report(0)"), logs=False)
    proc.communicate(timeout=30)
    assert proc.returncode == 0 and not (tmp_path / "volume").exists()
    assert head_records(tmp_path)[0]["kept"] is False


def test_the_next_job_reports_how_the_one_before_ended_and_kept_groups_attempts(tmp_path, capsys):
    body = REPORT + 'for s in range(2): report(s)\ntime.sleep(600)'
    first = start(tmp_path, job(body), "--stall-timeout", "2", sid="raysubmit_a", cluster="grpo-swe-aaaaa")
    first.communicate(timeout=30)
    time.sleep(1.1)  # the kept folders are named by the second they start
    again = start(tmp_path, job(REPORT + "report(2)"), sid="raysubmit_b", cluster="grpo-swe-aaaaa")
    again.communicate(timeout=30)
    time.sleep(1.1)
    retry = start(tmp_path, job(REPORT + 'report(2)\nprint("attempt two")'), sid="raysubmit_c",
                  cluster="grpo-swe-bbbbb")
    retry.communicate(timeout=30)
    prev = next(r for r in head_records(tmp_path, "raysubmit_c") if r.get("event") == "previous")
    assert prev["cluster"] == "grpo-swe-aaaaa" and prev["end"] == "succeeded"
    prev = next(r for r in head_records(tmp_path, "raysubmit_b") if r.get("event") == "previous")
    assert prev["end"] == "stalled: no progress for 2 s after step 1"

    os.environ["DOCKYARD_LOG_DIR"] = str(tmp_path / "volume")
    try:
        capsys.readouterr()
        assert rw.main(["kept", "grpo-swe", "", "1", "0"]) == 0
        out = capsys.readouterr().out
        index = json.loads(out.splitlines()[0].removeprefix("DOCKYARD_KEPT "))
        assert [c for c, _ in index["attempts"]] == ["grpo-swe-aaaaa", "grpo-swe-bbbbb"]
        assert [len(jobs) for _, jobs in index["attempts"]] == [2, 1]
        assert "dockyard: stalled" in out and "(submitted again on the same RayCluster): succeeded" in out
        assert "attempt two" not in out
        since = index["attempts"][1][1][0][:16]  # the third job's stamp: only it is of "this" RayJob
        rw.main(["kept", "grpo-swe", since, "1", "1"])
        out = capsys.readouterr().out
        assert json.loads(out.splitlines()[0].removeprefix("DOCKYARD_KEPT "))["attempts"][0][0] == "grpo-swe-bbbbb"
        lines = [line for line in out.splitlines() if line]
        assert lines[-2] == "attempt two"  # --tail 1 (the index again last)
        assert lines[-1] == lines[0]
    finally:
        del os.environ["DOCKYARD_LOG_DIR"]


def test_a_stall_ends_a_process_that_ignores_sigterm_behind_a_shell(tmp_path):
    """`cd . && python …`: the shell ends on SIGTERM, its child ignores it; the guard still ends the child."""
    marker = tmp_path / "child.pid"
    body = (REPORT + f'import os, signal\nsignal.signal(signal.SIGTERM, signal.SIG_IGN)\n'
            f'open({str(marker)!r}, "w").write(str(os.getpid()))\nreport(0)\ntime.sleep(600)')
    proc = start(tmp_path, "cd . && " + job(body), "--stall-timeout", "2")
    child = _started(marker)
    out, _ = proc.communicate(timeout=30)
    assert proc.returncode == 1 and "stalled: no progress for 2 s after step 0" in out
    deadline = time.monotonic() + 5
    while _alive(child) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _alive(child)


def test_output_without_newlines_passes_at_once_and_caps_count_bytes(tmp_path):
    marker = tmp_path / "seen"
    body = ('import sys, time\nsys.stdout.write("50%\\r"); sys.stdout.flush()\n'
            f'while not __import__("os").path.exists({str(marker)!r}): time.sleep(0.05)\n'
            'print("\\u2588" * 40000)')  # 120000 bytes of three-byte characters
    proc = start(tmp_path, job(body), "--keep-bytes", "65536")
    assert proc.stdout is not None
    got = b""
    while len(got) < 4:  # a progress bar's update, before any newline
        got += os.read(proc.stdout.fileno(), 4 - len(got))
    assert got == b"50%\r"
    marker.touch()
    proc.communicate(timeout=30)
    (kept,) = kept_jobs(tmp_path)
    assert sum(p.stat().st_size for p in kept.iterdir() if p.name.startswith("driver.log")) <= 65536


def test_progress_records_stay_within_their_cap_and_carry_their_context(tmp_path):
    big = "x" * 4000
    body = REPORT + f'for s in range(600): report(s, metrics={{"note": {big!r}, "r": s}})'
    proc = start(tmp_path, job(body))
    proc.communicate(timeout=60)
    path = tmp_path / "ray" / "dockyard" / "progress-raysubmit_1.jsonl"
    assert path.stat().st_size <= rw.PROGRESS_CAP
    last = [r for r in head_records(tmp_path) if "step" in r][-1]
    assert last["step"] == 599 and len(last["metrics"]["note"]) == 128
    assert last["context"] == {"cluster": "grpo-swe-abcde", "run": "grpo-swe", "stallTimeout": 0}


def ray_session(tmp_path: Path, name: str = "session_2026-12-05_10-00-00_000000_1") -> Path:
    """A Ray log folder as Ray lays it out: /tmp/ray/session_<start>/logs, session_latest linking to it."""
    logs = tmp_path / "ray" / name / "logs"
    logs.mkdir(parents=True)
    latest = tmp_path / "ray" / "session_latest"
    if latest.is_symlink():
        latest.unlink()
    latest.symlink_to(tmp_path / "ray" / name)
    return logs


def keeper(tmp_path: Path, role: str, pod: str, cap: int = 1 << 20, every: str = "0.2") -> subprocess.Popen:
    env = dict(os.environ, DOCKYARD_LOG_DIR=str(tmp_path / "volume"), POD_NAME=pod, RAY_CLUSTER_NAME="grpo-swe-aaaaa")
    proc = subprocess.Popen([sys.executable, str(WATCHER), "keep-ray", "--role", role, "--keep-bytes", str(cap),
                             "--every", every, "--ray-logs", str(tmp_path / "ray" / "session_latest" / "logs")],
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)
    STARTED.append(proc)
    return proc


def wait_for_file(path: Path, text: str, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not (path.exists() and text in path.read_text()):
        assert time.monotonic() < deadline, f"{path} never held {text!r}"
        time.sleep(0.05)


def test_the_ray_log_keeper_copies_each_ray_process_output_as_it_grows_and_on_sigterm(tmp_path):
    logs = ray_session(tmp_path)
    (logs / "raylet.out").write_text("raylet up\n")
    (logs / "python-core-worker-1.log").write_text("debug noise\n")  # not a process's stdout or stderr
    proc = keeper(tmp_path, "trainer", "grpo-swe-aaaaa-trainer-worker-x1")
    kept = tmp_path / "volume" / "dockyard-pods" / "grpo-swe-aaaaa" / "grpo-swe-aaaaa-trainer-worker-x1"
    session = kept / "session_2026-12-05_10-00-00_000000_1"
    wait_for_file(session / "raylet.out", "raylet up\n")
    with open(logs / "worker-01-02-77.out", "a") as fh:
        fh.write("the actor's unique line\n")
    wait_for_file(session / "worker-01-02-77.out", "the actor's unique line")
    with open(logs / "raylet.out", "a") as fh:
        fh.write("raylet down\n")
    proc.send_signal(signal.SIGTERM)  # the pod stops: the last sweep copies what came since the one before
    assert proc.wait(timeout=10) == 0
    assert (session / "raylet.out").read_text() == "raylet up\nraylet down\n"  # appended, not copied again
    assert not (session / "python-core-worker-1.log").exists()
    assert json.loads((kept / "pod.json").read_text())["role"] == "trainer"

    # a restarted sidecar (a new process) goes on where the last one was; a new Ray session (the Ray container
    # restarted) is a folder of its own, and the old session is swept once more for its last lines (the crash's)
    with open(logs / "raylet.out", "a") as fh:
        fh.write("the crash's last line\n")
    new = ray_session(tmp_path, "session_2026-12-05_11-00-00_000000_1")
    (new / "raylet.out").write_text("second session\n")
    again = keeper(tmp_path, "trainer", "grpo-swe-aaaaa-trainer-worker-x1")
    wait_for_file(kept / "session_2026-12-05_11-00-00_000000_1" / "raylet.out", "second session")
    with open(logs / "raylet.out", "a") as fh:
        fh.write("after the switch\n")  # the old session is no longer followed
    time.sleep(0.5)
    again.send_signal(signal.SIGTERM)
    assert again.wait(timeout=10) == 0
    assert (session / "raylet.out").read_text() == "raylet up\nraylet down\nthe crash's last line\n"


def test_a_sigkilled_pod_loses_at_most_the_last_sweep_interval(tmp_path):
    logs = ray_session(tmp_path)
    proc = keeper(tmp_path, "inference", "p1", every="0.5")
    kept = tmp_path / "volume" / "dockyard-pods" / "grpo-swe-aaaaa" / "p1" / "session_2026-12-05_10-00-00_000000_1"
    with open(logs / "worker-a.err", "a") as fh:
        fh.write("before the kill\n")
        fh.flush()
        time.sleep(1.2)  # more than one interval: the line is on the volume before the SIGKILL
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)
        fh.write("after the kill\n")
    assert (kept / "worker-a.err").read_text() == "before the kill\n"


def test_the_ray_logs_kept_stay_within_the_pods_cap_newest_kept(tmp_path):
    logs = ray_session(tmp_path)
    cap = 256 * 1024
    proc = keeper(tmp_path, "trainer", "p1", cap=cap, every="0.1")
    kept = tmp_path / "volume" / "dockyard-pods" / "grpo-swe-aaaaa" / "p1"
    line = "x" * 99 + "\n"
    for i in range(40):  # 40 files of 16 KiB each, then a last line to one of them: 640 KiB from Ray
        (logs / f"worker-{i:02d}.out").write_text(line * 164)
    time.sleep(0.5)
    with open(logs / "worker-00.out", "a") as fh:
        fh.write("the newest line\n")
    wait_for_file(kept / "session_2026-12-05_10-00-00_000000_1" / "worker-00.out", "the newest line")
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=10) == 0
    on_volume = sum(f.stat().st_size for f in (kept / "session_2026-12-05_10-00-00_000000_1").iterdir())
    assert on_volume <= cap, on_volume
    assert "the newest line" in (kept / "session_2026-12-05_10-00-00_000000_1" / "worker-00.out").read_text()
    assert "over the cap" in (kept / "dropped.txt").read_text()


def test_kept_with_a_role_prints_that_roles_pods_ray_logs_or_says_none_kept(tmp_path, capsys):
    logs = ray_session(tmp_path)
    (logs / "worker-01.out").write_text("trainer actor line\n" + "".join(f"line {i}\n" for i in range(5)))
    proc = keeper(tmp_path, "trainer", "grpo-swe-aaaaa-trainer-worker-x1")
    wait_for_file(tmp_path / "volume" / "dockyard-pods" / "grpo-swe-aaaaa" / "grpo-swe-aaaaa-trainer-worker-x1" /
                  "session_2026-12-05_10-00-00_000000_1" / "worker-01.out", "line 4")
    proc.send_signal(signal.SIGTERM)
    proc.wait(timeout=10)
    run = tmp_path / "volume" / "dockyard-runs" / "grpo-swe" / "20261205T100000Z-grpo-swe-aaaaa-raysubmit_1"
    run.mkdir(parents=True)
    (run / "started.json").write_text(json.dumps({"cluster": "grpo-swe-aaaaa"}))
    (run / "driver.log").write_text("driver line\n")
    os.environ["DOCKYARD_LOG_DIR"] = str(tmp_path / "volume")
    try:
        capsys.readouterr()
        assert rw.main(["kept", "grpo-swe", "", "1", "0", "trainer"]) == 0
        out = capsys.readouterr().out
        assert "driver line" in out
        assert ("--- pod grpo-swe-aaaaa-trainer-worker-x1 (trainer) session_2026-12-05_10-00-00_000000_1/"
                "worker-01.out\ntrainer actor line\n") in out
        assert rw.main(["kept", "grpo-swe", "", "1", "2", "trainer"]) == 0  # --tail 2: of each file
        out = capsys.readouterr().out
        assert "line 3\nline 4\n" in out and "trainer actor line" not in out
        assert rw.main(["kept", "grpo-swe", "", "1", "0", "inference"]) == 0
        last = [line for line in capsys.readouterr().out.splitlines() if line][-2]  # before the index, again last
        assert last == "DOCKYARD_NO_POD_LOGS no pod of role inference of RayCluster grpo-swe-aaaaa kept its Ray logs"
    finally:
        del os.environ["DOCKYARD_LOG_DIR"]


def test_the_latest_progress_file_belongs_to_the_newest_job_alone(tmp_path):
    """A bringup cluster's `status` reads progress-latest.jsonl: a job still running when a newer one starts stops
    writing there (the newer one replaced the file), so the newest job's records are not mixed with its."""
    older = start(tmp_path, job(REPORT + 'for s in range(30):\n    report(s)\n    time.sleep(0.1)'), sid="raysubmit_a")
    latest = tmp_path / "ray" / "dockyard" / "progress-latest.jsonl"
    deadline = time.monotonic() + 10
    while '"step":' not in (latest.read_text() if latest.exists() else ""):
        assert time.monotonic() < deadline
        time.sleep(0.05)
    newer = start(tmp_path, job(REPORT + "report(100)"), sid="raysubmit_b")
    newer.communicate(timeout=30)
    older.communicate(timeout=30)
    records = [json.loads(line) for line in latest.read_text().splitlines()]
    assert {r["submission"] for r in records} == {"raysubmit_b"}, records
    assert [r["step"] for r in records if "step" in r] == [100]
    own = [json.loads(line) for line in (tmp_path / "ray" / "dockyard" / "progress-raysubmit_a.jsonl").open()]
    assert [r["step"] for r in own if "step" in r] == list(range(30))  # its own file has all of them
    assert all(r["context"]["run"] == "grpo-swe" for r in own if "step" in r)


def test_the_keepers_count_is_the_bytes_on_the_volume_through_rotations_and_a_restart(tmp_path):
    """One file grown well past its half (rotations) and many files past the pod's cap: after each sweep the
    keeper's count is what the volume holds, never over the cap; a new keeper over the same folder (a restarted
    sidecar, its state file saying more than the disk after a drop) counts the disk."""
    logs = ray_session(tmp_path)
    dest = tmp_path / "volume" / "pod"
    cap = 1 << 20  # halves of 32 KiB
    keeper = rw.RayLogKeeper(str(tmp_path / "ray" / "session_latest" / "logs"), str(dest), cap)
    on_disk = lambda: sum(f.stat().st_size for f in dest.rglob("*") if f.is_file() and f.suffix in (".out", ".1"))  # noqa: E731
    for i in range(40):
        with open(logs / "raylet.out", "a") as fh:
            fh.write(f"{i:04d} " + "x" * 40_000 + "\n")
        keeper.sweep()
        assert keeper.total == on_disk() <= cap
    kept = dest / logs.parent.name
    newest = (kept / "raylet.out.1").read_text() + (kept / "raylet.out").read_text()
    assert "0039 " in newest and "0030 " not in newest  # the newest kept, in its two halves
    for i in range(60):
        (logs / f"worker-{i:02d}.out").write_text("y" * 30_000)
    keeper.sweep()
    assert keeper.total == on_disk() <= cap
    assert "over the cap" in (dest / "dropped.txt").read_text()
    victim = next(p for p in keeper.written if os.path.exists(p))
    os.remove(victim)  # as a SIGKILL between a drop and the state's save leaves it
    again = rw.RayLogKeeper(str(tmp_path / "ray" / "session_latest" / "logs"), str(dest), cap)
    assert again.total == on_disk() and victim not in again.written
    with open(logs / "raylet.out", "a") as fh:
        fh.write("after the restart\n")
    again.sweep()
    assert "after the restart" in (dest / logs.parent.name / "raylet.out").read_text()


def test_a_keeper_started_before_ray_copies_nothing_until_rays_session_exists(tmp_path):
    """The native sidecar starts before Ray: no `session_latest` yet is no session, and no folder of that name."""
    dest = tmp_path / "volume" / "pod"
    keeper = rw.RayLogKeeper(str(tmp_path / "ray" / "session_latest" / "logs"), str(dest), 1 << 20)
    keeper.sweep()
    assert keeper.session is None
    logs = ray_session(tmp_path)
    (logs / "raylet.out").write_text("up\n")
    keeper.sweep()
    assert sorted(p.name for p in dest.iterdir() if p.is_dir()) == [logs.parent.name]
