"""The run watcher, charts/dockyard/files/run_watch.py (shipped by the chart, run in the user's image), with real
child processes: it passes the output through, records the reports, keeps the driver log within its cap, and ends
a job that stops reporting, but never one that reports steadily; the negative control is the same hang without
the guard, still running past the bound."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from tests.support.run_watch import REPORT, STARTED, WATCHER, job, no_process_left, rw  # noqa: F401  (the fixture)


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


