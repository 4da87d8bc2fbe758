"""The Ray log keeper (`run_watch.py keep-ray`, shipped by the chart, run beside Ray in every pod), with real child
processes over a Ray log folder laid out as Ray lays it: it copies each Ray process's output as it grows and on
SIGTERM, stays within the pod's cap (the newest kept), counts the bytes on the volume through rotations and restarts,
and `kept --role` prints one role's pods' logs or says none were kept."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from tests.support.run_watch import STARTED, WATCHER, no_process_left, rw  # noqa: F401  (the fixture)


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

