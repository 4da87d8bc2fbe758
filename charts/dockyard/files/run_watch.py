"""The run watcher: the Ray job's driver is this program, and the training's entrypoint its child.

The chart ships it in the recipe ConfigMap (mounted on the head) and wraps the RayJob's entrypoint in it; the
CLI's `job submit` wraps a submitted job the same way. It runs in the user's image beside Ray, so it is one file of
the standard library only (Python 3.8 or newer), and it needs no Kubernetes rights at all: everything it does is
on the head's own disk, the logs volume, and its own child.

The job stays in the watcher's process group, the one Ray starts the entrypoint in, so Ray's stop signals and its
clean-up reach every process of the job as they would without the watcher; the watcher itself only records how
the job ended. What it does, while passing the child's output through to its own as it comes (the driver log):

- **Progress.** A line that holds `DOCKYARD_PROGRESS` followed by a JSON object is a report:
  `DOCKYARD_PROGRESS {"step": 212, "total": 1000, "metrics": {"reward": 0.41}}` (step required, the rest
  optional; `checkpoint` may name the step of the checkpoint just written). Any process of the job may print
  it: Ray forwards its workers' and actors' stdout to the driver, prefix and all. Each report is appended, with
  the watcher's clock, to `progress-<submission id>.jsonl` in `dockyard/` under the head's Ray log folder (and
  to `progress-latest.jsonl`, the newest job's, for a bringup cluster), where `dockyard-k8s status` reads its
  last lines through the Ray dashboard's log API.
- **Stall guard** (`--stall-timeout`). No report for that many seconds after the last one (or for
  `--first-report` seconds after the start): every process of the job gets SIGTERM, then those still there
  SIGKILL after `--kill-grace` seconds, and the watcher exits 1 with `dockyard: stalled: …` as its last line. Ray then marks
  the job FAILED with that line in its message, so KubeRay's retry (launch.backoffLimit) runs the next attempt,
  which resumes from the newest checkpoint.
- **Kept logs** (`DOCKYARD_LOG_DIR`, the logs volume). The driver log and the progress records of this job are
  written, line by line as they come, to `dockyard-runs/<run>/<UTC start>-<RayCluster>-<submission>/` on the
  volume, so they outlive the attempt's RayCluster; `dockyard-k8s logs --attempt N` reads them back. The driver
  log is capped at `--keep-bytes` (the newest half kept in `driver.log`, the half before it in `driver.log.1`),
  the progress records at 1 MiB. A SIGKILL loses at most what is being written. The attempt's end (exit code, stall) is written there too,
  and the next attempt's watcher reports the previous attempt's end in its own progress records.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time

MARK = "DOCKYARD_PROGRESS"
KEPT_MARK = "DOCKYARD_KEPT"  # the first line of `kept`: the index of the kept attempts
NO_POD_LOGS = "DOCKYARD_NO_POD_LOGS"  # the last line of `kept --role` when no pod of the role kept its logs
RAY_LOGS = "/tmp/ray/session_latest/logs"
PROGRESS_CAP = 1 << 20  # the progress file on the head is cut to its last lines past 1 MiB
CHECKPOINT_NAME = re.compile(r"^(?!tmp)[A-Za-z_\-]*?(\d+)$")  # step_12, global_step_12, checkpoint-12; not tmp_step_12


def submission_id() -> str:
    """The Ray job's submission id, from the driver's environment (Ray puts the job config there)."""
    try:
        conf = json.loads(os.environ.get("RAY_JOB_CONFIG_JSON_ENV_VAR") or "{}")
        sid = (conf.get("metadata") or {}).get("job_submission_id")
    except ValueError:
        sid = None
    return re.sub(r"[^A-Za-z0-9_.\-]", "_", sid or f"pid{os.getpid()}")


def parse_report(line: str) -> dict | None:
    """The report a line holds, or None: `… DOCKYARD_PROGRESS {"step": 3, …}` with an integer step ≥ 0."""
    at = line.find(MARK)
    if at < 0:
        return None
    try:
        obj, _ = json.JSONDecoder().raw_decode(line[at + len(MARK):].lstrip())
    except ValueError:
        return None
    if not isinstance(obj, dict) or not isinstance(obj.get("step"), int) or isinstance(obj.get("step"), bool) \
            or obj["step"] < 0:
        return None
    out = {"step": obj["step"]}
    if isinstance(obj.get("total"), int) and not isinstance(obj.get("total"), bool) and obj["total"] > 0:
        out["total"] = obj["total"]
    if isinstance(obj.get("checkpoint"), int) and not isinstance(obj.get("checkpoint"), bool):
        out["checkpoint"] = obj["checkpoint"]
    if isinstance(obj.get("metrics"), dict):
        out["metrics"] = {str(k)[:64]: (v[:128] if isinstance(v, str) else v)
                          for k, v in list(obj["metrics"].items())[:16]
                          if isinstance(v, (int, float, str)) and not isinstance(v, bool)}
    return out


def newest_checkpoint(folder: str | None) -> dict | None:
    """The newest checkpoint in the checkpoint folder: the entry whose name ends in the highest step number
    (step_12, global_step_12, checkpoint-12; tmp* entries are being written), with its age's clock."""
    if not folder:
        return None
    try:
        names = os.listdir(folder)
    except OSError:
        return None
    best = None
    for name in names:
        m = CHECKPOINT_NAME.match(name)
        if m and (best is None or int(m.group(1)) > best[0]):
            best = (int(m.group(1)), name)
    if best is None:
        return None
    try:
        mtime = os.stat(os.path.join(folder, best[1])).st_mtime
    except OSError:
        return None
    return {"step": best[0], "t": round(mtime, 3)}


class Records:
    """The progress records: one JSON object a line, on the head (read by `status`) and on the logs volume. Past
    PROGRESS_CAP bytes a file is cut to its newest records that fit in half of it."""

    def __init__(self, paths: list, submission: str, clock=time.time, shared: tuple | None = None) -> None:
        self.paths = [p for p in paths if p]
        self.submission, self.clock = submission, clock
        self.lock = threading.Lock()
        # `shared` (progress-latest.jsonl, the inode of the file this job made) is written while it is this
        # job's: a newer job replaces the file (a new inode) at its start, and this one stops writing there
        self.shared = {shared[0]: shared[1]} if shared and shared[0] in self.paths else {}

    def add(self, record: dict) -> dict:
        record = {"t": round(self.clock(), 3), **record, "submission": self.submission}  # the writer's, always
        line = json.dumps(record, separators=(",", ":"), sort_keys=True) + "\n"
        with self.lock:
            for path in list(self.paths):
                try:
                    if path in self.shared and os.stat(path).st_ino != self.shared[path]:
                        self.paths.remove(path)  # a newer job's now
                        continue
                    with open(path, "a", encoding="utf-8") as fh:
                        fh.write(line)
                    if os.path.getsize(path) > PROGRESS_CAP:
                        inode = self._cut(path)
                        if path in self.shared:
                            self.shared[path] = inode
                except OSError as exc:
                    _say(f"dockyard: cannot write progress to {path}: {exc}\n", sys.stderr)
        return record

    @staticmethod
    def _cut(path: str) -> int:
        """Cut the file to its newest records; the inode of the file that replaces it."""
        with open(path, "rb") as fh:
            fh.seek(-(PROGRESS_CAP // 2), os.SEEK_END)
            tail = fh.read()
        tmp = f"{path}.{os.getpid()}.tmp"
        with open(tmp, "wb") as fh:
            fh.write(tail[tail.find(b"\n") + 1:])  # whole records only
            inode = os.fstat(fh.fileno()).st_ino
        os.replace(tmp, path)
        return inode


class KeptLog:
    """The driver log on the logs volume, written as it comes, at most `cap` bytes: past half of it `driver.log`
    becomes `driver.log.1` (the one before dropped)."""

    def __init__(self, path: str | None, cap: int) -> None:
        self.path, self.half = path, max(cap // 2, 4096)
        self.fh = open(path, "ab") if path else None  # noqa: SIM115
        self.size = os.path.getsize(path) if path else 0
        self.lock = threading.Lock()

    def write(self, data: bytes) -> None:
        with self.lock:
            if self.fh is None:
                return
            try:
                if self.size + len(data) > self.half and self.size:
                    self.fh.close()
                    os.replace(self.path, self.path + ".1")
                    self.fh = open(self.path, "ab")  # noqa: SIM115
                    self.size = 0
                data = data[-self.half:]
                self.fh.write(data)
                self.fh.flush()  # into the kernel: a SIGKILL of the pod loses at most what is being written
                self.size += len(data)
            except (OSError, ValueError) as exc:
                _say(f"dockyard: cannot keep the driver log in {self.path}: {exc}\n", sys.stderr)
                self.fh = None

    def close(self) -> None:
        with self.lock:
            if self.fh is not None:
                self.fh.close()
                self.fh = None


NO_END = "unknown: it left no end record (its head pod was killed, or it still runs)"


def job_record(job_dir: str) -> dict:
    """What a kept job's folder says of it: its start (`started.json`: RayCluster, submission) and its end
    (`end.json`), or NO_END when it has none."""
    out: dict = {}
    for part, missing in (("started.json", {}), ("end.json", {"end": NO_END})):
        try:
            with open(os.path.join(job_dir, part), encoding="utf-8") as fh:
                out.update(json.load(fh))
        except (OSError, ValueError):
            out.update(missing)
    return out


def previous_end(run_dir: str | None, own: str) -> dict | None:
    """How the run's latest earlier job on the logs volume ended, for the progress records."""
    if not run_dir:
        return None
    try:
        earlier = sorted(d for d in os.listdir(run_dir) if d < own)
    except OSError:
        return None
    return {"job": earlier[-1], **job_record(os.path.join(run_dir, earlier[-1]))} if earlier else None


class Watch:
    def __init__(self, args: argparse.Namespace, clock=time.monotonic) -> None:
        self.args, self.clock = args, clock
        self.started = clock()
        self.last_report: float | None = None
        self.last_step: int | None = None
        self.done = threading.Event()

    def stalled(self) -> str | None:
        """The stall reason when the guard's time is up, else None."""
        if not self.args.stall_timeout:
            return None
        now = self.clock()
        if self.last_report is None:
            if now - self.started >= self.args.first_report:
                return f"stalled: no progress report in the first {self.args.first_report} s"
            return None
        if now - self.last_report >= self.args.stall_timeout:
            return f"stalled: no progress for {self.args.stall_timeout} s after step {self.last_step}"
        return None

    def reported(self, report: dict) -> None:
        self.last_report, self.last_step = self.clock(), report["step"]


def _say(text: str, stream=None) -> None:
    """Write to the driver log (or stream); a failing write (a full disk) is no reason to stop watching."""
    try:
        (stream or sys.stdout).write(text)
        (stream or sys.stdout).flush()
    except (OSError, ValueError):
        pass


def _ancestors() -> set:
    """This process and its ancestors: not to be signalled when the job's processes are ended."""
    out, pid = set(), os.getpid()
    while pid > 1 and pid not in out:
        out.add(pid)
        try:
            with open(f"/proc/{pid}/stat", encoding="utf-8") as fh:
                pid = int(fh.read().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            break
    return out


def job_processes() -> list:
    """The job's processes: every process of this process group (Ray starts the entrypoint in a group of its own,
    and the watcher keeps the job in it, so Ray's own stop and clean-up reach them too), less this process and
    its ancestors."""
    group, skip, out = os.getpgid(0), _ancestors(), []
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) in skip:
            continue
        try:
            if os.getpgid(int(name)) == group:
                out.append(int(name))
        except OSError:
            continue
    return out


def end_job(proc: subprocess.Popen, grace: float) -> None:
    """SIGTERM to every process of the job, then SIGKILL to those still there after `grace` seconds (a shell
    that ended on SIGTERM does not take a child that ignores it with it)."""
    for pid in job_processes():
        try:
            os.kill(pid, signal.SIGTERM)
        except OSError:
            pass
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline:
        proc.poll()  # reap the direct child: a zombie is no process to wait for
        if not [p for p in job_processes() if not _zombie(p)]:
            return
        time.sleep(0.1)
    for pid in job_processes():
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass


def _zombie(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] == "Z"
    except (OSError, IndexError):
        return True


RAY_LOG_FILE = re.compile(r"^[A-Za-z0-9_.\-]+\.(out|err)$")  # the stdout and stderr of each Ray process


class RayLogKeeper:
    """`run_watch.py keep-ray --role R`: a sidecar of each Ray pod that mounts the logs volume copies the stdout and
    stderr of every Ray process of the pod (`*.out`, `*.err` in the Ray log folder: raylet, GCS, dashboard, each
    worker's and actor's) to `dockyard-pods/<RayCluster>/<pod>/<Ray session>/` on the volume, every `every`
    seconds and once more when the pod stops, so they outlive the RayCluster. When Ray starts a new session (its
    container restarted), the old session's folder is swept once more first: its last lines are the crash's.

    Bounded: at most `cap` bytes of copies per pod on the volume, counted as they are written. Each file's copy is
    cut in halves like the driver log (past cap/32 the copy becomes `<file>.1`, the one before dropped: at most
    cap/16 per file); past `cap` in all, the older halves and then the copies written to least recently are
    dropped, and `dropped.txt` (itself cut to its last 64 KiB) says which. A SIGKILL of the pod loses at most the
    last `every` seconds."""

    NOTES_CAP = 65536

    def __init__(self, logs: str, dest: str, cap: int) -> None:
        self.logs, self.dest, self.cap = logs, dest, cap
        self.half = max(cap // 32, 32768)
        self.state = os.path.join(dest, "offsets.json")  # a restarted sidecar goes on where the last one was
        self.offsets: dict = {}  # "session/name" -> bytes of the source already copied
        self.written: dict = {}  # kept path (and its .1) -> [bytes on the volume, when last written to]
        self.session: str | None = None  # the Ray session folder followed
        try:
            with open(self.state, encoding="utf-8") as fh:
                saved = json.load(fh)
            offsets = {str(k): int(v) for k, v in saved["offsets"].items()}
            written = {str(k): float(v[1]) for k, v in saved["written"].items()}
            session = saved.get("session")
            self.offsets, self.session = offsets, session if isinstance(session, str) else None
            # the copies as the disk has them (a SIGKILL may have come between a drop and the state's save)
            self.written = {p: [os.path.getsize(p), t] for p, t in written.items() if os.path.isfile(p)}
        except (OSError, ValueError, KeyError, TypeError, AttributeError, IndexError):
            pass
        self.total = sum(size for size, _ in self.written.values())

    def sweep(self) -> None:
        before = dict(self.offsets)
        session = os.path.realpath(os.path.dirname(self.logs))  # session_latest -> session_<start>
        if not os.path.isdir(os.path.join(session, os.path.basename(self.logs))):
            return  # Ray has not started a session yet (the sidecar starts first)
        if self.session and self.session != session:
            self._sweep_session(self.session)  # the old session's last lines, once
        self.session = session
        self._sweep_session(session)
        if self.offsets != before:
            try:
                with open(self.state + ".tmp", "w", encoding="utf-8") as fh:
                    json.dump({"offsets": self.offsets, "written": self.written, "session": self.session}, fh)
                os.replace(self.state + ".tmp", self.state)
            except OSError:
                pass

    def _sweep_session(self, session: str) -> None:
        folder = os.path.join(session, os.path.basename(self.logs))
        try:
            names = sorted(n for n in os.listdir(folder) if RAY_LOG_FILE.match(n))
        except OSError:
            return  # Ray has not started yet, or the session is gone
        name_of = os.path.basename(session)
        for name in names:
            self._copy(f"{name_of}/{name}", os.path.join(folder, name), os.path.join(self.dest, name_of, name))

    def _copy(self, key: str, src: str, dst: str) -> None:
        try:
            size = os.path.getsize(src)
            at = self.offsets.get(key, 0)
            if size < at:
                at = 0  # the file was truncated: copy it again from its start
            if size == at:
                return
            os.makedirs(os.path.dirname(dst), exist_ok=True)
            with open(src, "rb") as fin:
                fin.seek(at)
                while True:
                    data = fin.read(min(65536, self.half))
                    if not data:
                        break
                    have = self.written.get(dst, [0, 0])[0]
                    if have and have + len(data) > self.half:
                        self._forget(dst + ".1")  # the older half, replaced
                        try:
                            os.replace(dst, dst + ".1")
                            self.written[dst + ".1"] = self.written.pop(dst)  # its bytes move with it
                        except FileNotFoundError:  # gone under us: nothing to move
                            self._forget(dst)
                        have = 0
                    with open(dst, "ab") as fout:
                        fout.write(data)
                    self.written[dst] = [have + len(data), time.time()]
                    self.total += len(data)
                    at += len(data)
                    self.offsets[key] = at
                    if self.total > self.cap:
                        self._bound(keep=dst)
        except OSError as exc:
            _say(f"dockyard: cannot keep {src}: {exc}\n", sys.stderr)

    def _forget(self, path: str) -> None:
        size, _ = self.written.pop(path, [0, 0])
        self.total -= size

    def _bound(self, keep: str) -> None:
        """Past `cap`: drop the older halves, then the copies least recently written to (`keep`, being written,
        last of all)."""
        order = sorted((p for p in self.written if p != keep), key=lambda p: self.written[p][1])
        dropped = []
        for path in [p for p in order if p.endswith(".1")] + [p for p in order if not p.endswith(".1")] + [keep]:
            if self.total <= self.cap:
                break
            try:
                os.remove(path)
            except OSError:
                pass
            self._forget(path)
            dropped.append(os.path.relpath(path, self.dest))
        if dropped:
            notes = os.path.join(self.dest, "dropped.txt")
            try:
                with open(notes, "a", encoding="utf-8") as fh:
                    fh.write("".join(f"{time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())} over the cap: {d}\n"
                                     for d in dropped))
                if os.path.getsize(notes) > self.NOTES_CAP:
                    with open(notes, "rb") as fh:
                        fh.seek(-(self.NOTES_CAP // 2), os.SEEK_END)
                        tail = fh.read()
                    with open(notes, "wb") as fh:
                        fh.write(tail[tail.find(b"\n") + 1:])
            except OSError:
                pass


def keep_ray(argv: list[str]) -> int:
    """The sidecar loop of RayLogKeeper, until SIGTERM (the pod stops: a native sidecar stops after the Ray
    container, so the last sweep sees its last lines)."""
    ap = argparse.ArgumentParser(prog="run_watch.py keep-ray")
    ap.add_argument("--role", required=True)
    ap.add_argument("--keep-bytes", type=int, default=64 << 20)
    ap.add_argument("--every", type=float, default=5.0)
    ap.add_argument("--ray-logs", default=RAY_LOGS)
    args = ap.parse_args(argv)
    pod = os.environ.get("POD_NAME") or "pod"
    cluster = re.sub(r"[^A-Za-z0-9_.\-]", "_", os.environ.get("RAY_CLUSTER_NAME") or "cluster")
    dest = os.path.join(os.environ.get("DOCKYARD_LOG_DIR") or "/dockyard/logs", "dockyard-pods", cluster, pod)
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    try:
        os.makedirs(dest, exist_ok=True)
        with open(os.path.join(dest, "pod.json"), "w", encoding="utf-8") as fh:
            json.dump({"pod": pod, "role": args.role, "cluster": cluster, "started": round(time.time(), 3)}, fh)
    except OSError as exc:
        _say(f"dockyard: the Ray logs of this pod are not kept: cannot write {dest}: {exc}\n", sys.stderr)
        stop.wait()  # a sidecar that exits is restarted: wait for the pod to stop instead
        return 0
    keeper = RayLogKeeper(args.ray_logs, dest, args.keep_bytes)
    while not stop.is_set():
        keeper.sweep()
        stop.wait(args.every)
    keeper.sweep()
    return 0


def pod_logs(cluster: str, role: str, tail: int) -> None:
    """What `logs --attempt N --role R` prints after the attempt's jobs: the kept Ray logs of each pod of role R
    of the attempt's RayCluster, file by file (the last TAIL lines of each; 0: all)."""
    base = os.path.join(os.environ.get("DOCKYARD_LOG_DIR") or "/dockyard/logs", "dockyard-pods", cluster)
    try:
        pods = sorted(os.listdir(base))
    except OSError:
        pods = []
    shown = 0
    for pod in pods:
        try:
            with open(os.path.join(base, pod, "pod.json"), encoding="utf-8") as fh:
                if json.load(fh).get("role") != role:
                    continue
        except (OSError, ValueError):
            continue
        shown += 1
        for session in sorted(d for d in os.listdir(os.path.join(base, pod))
                              if os.path.isdir(os.path.join(base, pod, d))):
            folder = os.path.join(base, pod, session)
            for name in sorted(n for n in os.listdir(folder) if not n.endswith(".1")):
                parts = [os.path.join(folder, name + ".1"), os.path.join(folder, name)]
                if not any(os.path.exists(p) and os.path.getsize(p) for p in parts):
                    continue
                print(f"--- pod {pod} ({role}) {session}/{name}", flush=True)
                _print_parts(parts, tail)
        dropped = os.path.join(base, pod, "dropped.txt")
        if os.path.exists(dropped):
            print(f"--- pod {pod} ({role}): some of its logs were dropped over the cap", flush=True)
            _print_parts([dropped], 0)
    if not shown:
        print(f"{NO_POD_LOGS} no pod of role {role} of RayCluster {cluster} kept its Ray logs", flush=True)


def _print_parts(parts: list, tail: int) -> None:
    """The files one after the other on stdout: streamed whole, or their last TAIL lines (bounded memory)."""
    last: collections.deque = collections.deque(maxlen=tail or None)
    for part in parts:
        try:
            with open(part, "rb") as fh:
                if tail:
                    last.extend(fh)
                else:
                    sys.stdout.flush()
                    shutil.copyfileobj(fh, sys.stdout.buffer)
        except OSError:
            pass
    sys.stdout.flush()
    sys.stdout.buffer.writelines(last)
    sys.stdout.buffer.flush()


def kept(argv: list[str]) -> int:
    """`run_watch.py kept RUN SINCE ATTEMPT TAIL [ROLE]`: what `dockyard-k8s logs --attempt [--role]` prints, run in
    a pod that mounts the logs volume. First line `DOCKYARD_KEPT {"attempts": [[cluster, [job, …]], …]}` (the run's jobs
    since the UTC stamp SINCE, grouped by RayCluster: one attempt each), then attempt ATTEMPT's jobs: each one's
    start and end records and its driver log (the last TAIL lines of it; 0: all); with ROLE, then the Ray logs the
    attempt's pods of that role kept (pod_logs)."""
    run, since, want, tail = argv[0], argv[1], int(argv[2]), int(argv[3])
    role = argv[4] if len(argv) > 4 else None
    folder = os.path.join(os.environ.get("DOCKYARD_LOG_DIR") or "/dockyard/logs", "dockyard-runs", run)
    try:
        jobs = sorted(n for n in os.listdir(folder) if n >= since)
    except OSError:
        jobs = []
    attempts: list = []
    records = {name: job_record(os.path.join(folder, name)) for name in jobs}
    for name in jobs:
        cluster = records[name].get("cluster") or name
        if attempts and attempts[-1][0] == cluster:
            attempts[-1][1].append(name)
        else:
            attempts.append([cluster, [name]])
    print(KEPT_MARK + " " + json.dumps({"attempts": attempts}), flush=True)
    if not 1 <= want <= len(attempts):
        return 0
    for i, name in enumerate(attempts[want - 1][1]):
        job = os.path.join(folder, name)
        print(f"--- job {name}" + (" (submitted again on the same RayCluster)" if i else "")
              + f": {records[name]['end']}")
        _print_parts([os.path.join(job, "driver.log.1"), os.path.join(job, "driver.log")], tail)
    if role:
        pod_logs(attempts[want - 1][0], role, tail)
    # the index again last, on a line of its own (a log cut mid-line ends without one): the kubelet keeps the end
    # of a long container log (containerLogMaxSize), not its start
    print("\n" + KEPT_MARK + " " + json.dumps({"attempts": attempts}), flush=True)
    return 0


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["kept"]:
        return kept(argv[1:])
    if argv[:1] == ["keep-ray"]:
        return keep_ray(argv[1:])
    ap = argparse.ArgumentParser(prog="run_watch.py", description=__doc__.split("\n\n")[0])
    ap.add_argument("--run", required=True, help="the run's name (the release): the kept logs' folder")
    ap.add_argument("--stall-timeout", type=int, default=0, help="seconds without a report that end the job")
    ap.add_argument("--first-report", type=int, default=1800, help="seconds the first report may take")
    ap.add_argument("--kill-grace", type=float, default=10.0, help="seconds from SIGTERM to SIGKILL")
    ap.add_argument("--keep-bytes", type=int, default=64 << 20, help="cap of the kept driver log")
    ap.add_argument("--ray-logs", default=RAY_LOGS, help=argparse.SUPPRESS)
    ap.add_argument("command", help="the entrypoint, run by /bin/sh")
    args = ap.parse_args(argv)

    sid = submission_id()
    cluster = re.sub(r"[^A-Za-z0-9_.\-]", "_", os.environ.get("RAY_CLUSTER_NAME") or "cluster")
    head_dir = os.path.join(args.ray_logs, "dockyard")
    head_paths: list = []
    shared = None
    try:
        os.makedirs(head_dir, exist_ok=True)
        head_paths.append(os.path.join(head_dir, f"progress-{sid}.jsonl"))
        # the newest job's records under a fixed name too: what `status` reads on a bringup cluster, whose jobs
        # it does not know by their submission ids (records of an older job still running carry its own id)
        latest = os.path.join(head_dir, "progress-latest.jsonl")
        with open(f"{latest}.{sid}", "w", encoding="utf-8") as fh:
            shared = (latest, os.fstat(fh.fileno()).st_ino)  # this job's file, whoever replaces it next
        os.replace(f"{latest}.{sid}", latest)  # a new file: the job before sees it is no longer its own
        head_paths.append(latest)
    except OSError:
        pass
    run_dir = job_dir = None
    if os.environ.get("DOCKYARD_LOG_DIR"):
        run_dir = os.path.join(os.environ["DOCKYARD_LOG_DIR"], "dockyard-runs", args.run)
        stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
        job_dir = os.path.join(run_dir, f"{stamp}-{cluster}-{sid}")
        try:
            os.makedirs(job_dir, exist_ok=True)
        except OSError as exc:
            _say(f"dockyard: logs not kept: cannot make {job_dir}: {exc}\n", sys.stderr)
            run_dir = job_dir = None
    records = Records([*head_paths, job_dir and os.path.join(job_dir, "progress.jsonl")], sid, shared=shared)
    driver_log = KeptLog(job_dir and os.path.join(job_dir, "driver.log"), args.keep_bytes)
    watch = Watch(args)
    checkpoints = os.environ.get("DOCKYARD_CHECKPOINT_DIR")
    records.add({"event": "started", "cluster": cluster, "run": args.run, "stallTimeout": args.stall_timeout,
                 "firstReport": args.first_report, "kept": bool(job_dir)})
    if job_dir:
        try:
            with open(os.path.join(job_dir, "started.json"), "w", encoding="utf-8") as fh:
                json.dump({"cluster": cluster, "submission": sid, "started": round(time.time(), 3)}, fh)
        except OSError:
            pass
    prev = previous_end(run_dir, os.path.basename(job_dir)) if job_dir else None
    if prev:
        records.add({"event": "previous", **prev})

    # The job stays in this process group (Ray starts the entrypoint in a group of its own): Ray's stop signals
    # and its clean-up after a lost supervisor reach every process of the job, as without the watcher.
    proc = subprocess.Popen(["/bin/sh", "-c", args.command], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            stdin=subprocess.DEVNULL)
    stopped: list = []

    def stop(sig: int, _frame: object) -> None:
        stopped.append(sig)  # the job got the same signal from Ray; the watcher stays to record how it ends

    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, stop)
    # with each report: what `status` needs even when it reads only the newest records
    context = {"cluster": cluster, "run": args.run, "stallTimeout": args.stall_timeout}
    if prev:
        context["previous"] = {"cluster": prev.get("cluster"), "end": prev.get("end")}

    def on_line(raw: bytes) -> None:
        report = parse_report(raw.decode("utf-8", errors="replace"))
        if report is None:
            return
        watch.reported(report)
        ckpt = newest_checkpoint(checkpoints)
        if ckpt:
            report["newestCheckpoint"] = ckpt
        records.add({**report, "context": context})

    def pump() -> None:
        """The job's output as it comes (chunks: a progress bar without newlines passes at once), through to the
        driver log and the kept log; each whole line is looked at for a report."""
        assert proc.stdout is not None
        fd, partial = proc.stdout.fileno(), b""
        while True:
            try:
                data = os.read(fd, 65536)
            except OSError:
                break
            if not data:
                break
            try:
                sys.stdout.buffer.write(data)
                sys.stdout.buffer.flush()
            except (OSError, ValueError):
                pass  # a full disk under the driver log: the job goes on, and so does the guard
            driver_log.write(data)
            *lines, partial = (partial + data).split(b"\n")
            partial = partial[-65536:]  # a report is one line: the start of an endless one is not kept
            for raw in lines:
                try:
                    on_line(raw)
                except Exception as exc:  # noqa: BLE001 (a record not written is no reason to stop reading)
                    _say(f"dockyard: a progress report was not recorded: {exc}\n", sys.stderr)
        if partial:
            on_line(partial)
        watch.done.set()

    reader = threading.Thread(target=pump, daemon=True)
    reader.start()
    reason = None
    while proc.poll() is None:
        reason = None if stopped else watch.stalled()
        if reason:
            break
        time.sleep(1.0)
    if reason:
        line = f"dockyard: {reason}; ending the attempt (SIGTERM, SIGKILL after {args.kill_grace:g} s)\n"
        _say(line)
        driver_log.write(line.encode())
        records.add({"event": "stalled", "reason": reason})
        end_job(proc, args.kill_grace)
    code = proc.wait()
    watch.done.wait(5.0)  # the output's last lines, unless a process of the job still holds the pipe open
    end = {"end": reason or ("succeeded" if code == 0 else f"failed: exit code {code}"), "exitCode": code,
           "lastStep": watch.last_step, "cluster": cluster}
    records.add({"event": "ended", **end})
    if job_dir:
        try:
            with open(os.path.join(job_dir, "end.json"), "w", encoding="utf-8") as fh:
                json.dump(end, fh)
        except OSError:
            pass
    if reason:
        # The last line of the driver log: Ray ends the job's message with it, and KubeRay copies that message.
        line = f"dockyard: {reason}\n"
        _say(line)
        driver_log.write(line.encode())
    driver_log.close()
    return 1 if reason else (code if code >= 0 else 128 - code)


if __name__ == "__main__":
    sys.exit(main())
