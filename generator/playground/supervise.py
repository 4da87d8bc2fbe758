"""The supervisor of one playground component: it restarts the component when it exits, as a kubelet
restarts a pod's container (restartPolicy Always, CrashLoopBackOff).

A controller ends by design when it can no longer do its job safely: the KubeRay operator exits with
`leader election lost` once its apiserver stops answering for longer than its lease's renew deadline. On a
cluster its Deployment starts it again; here this process does. `up` starts each supervised component
(control_plane.SUPERVISED) through it, as a detached process of its own:

    python -m generator.playground.supervise --name NAME --record FILE -- ARGV...

It runs ARGV as its child, with the same standard output (the component's log). When the child exits, it
records the exit (restarts.py) and starts ARGV again after a back-off: 10 s, doubled after each exit up to
5 min, and 10 s again after a child that ran 10 min (the kubelet's numbers). SIGTERM, SIGINT or SIGHUP (what
`down` sends) ends it without a restart: the child gets SIGTERM, SIGKILL after `--stop-seconds`, and the
supervisor exits once it is gone. Should the supervisor itself die, the kernel SIGKILLs the child
(PR_SET_PDEATHSIG): no component outlives its supervisor.
"""

from __future__ import annotations

import argparse
import ctypes
import os
import re
import select
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from generator.playground import restarts
from generator.playground.processes import start_time
from generator.playground.state import Process

STOP_SECONDS = 8.0  # the child's time to go after SIGTERM; under processes.STOP_SECONDS, `down`'s wait for us
_PR_SET_PDEATHSIG = 1  # prctl(2)
_ERROR = re.compile(r"\b(error|fatal|panic)\b", re.IGNORECASE)
_LOG_TAIL = 64 * 1024  # the bytes of a failed child's log read for its message
_MESSAGE = 240  # characters of the message kept
_POLL = 0.2  # seconds between looks at the child where no pidfd says when it exits


@dataclass(frozen=True)
class Backoff:
    """The kubelet's CrashLoopBackOff: the first restart after `initial` seconds, each next one after twice
    the previous wait, at most `cap`; back to `initial` after a child that ran `reset_after` seconds."""

    initial: float = 10.0
    cap: float = 300.0
    reset_after: float = 600.0

    def next(self, previous: float | None, ran_seconds: float) -> float:
        if previous is None or ran_seconds >= self.reset_after:
            return self.initial
        return min(previous * 2, self.cap)


def reason(returncode: int) -> tuple[int | None, str | None, str]:
    """(exit code, signal name, reason) of a child's returncode (negative: the signal that ended it)."""
    if returncode < 0:
        name = signal_name(-returncode)
        return None, name, name
    return returncode, None, "Completed" if returncode == 0 else "Error"


def signal_name(number: int) -> str:
    """SIGKILL, SIGRTMIN+3 (a real-time signal has no name of its own), or `signal 99`."""
    try:
        return signal.Signals(number).name
    except ValueError:
        if signal.SIGRTMIN < number < signal.SIGRTMAX:
            return f"SIGRTMIN+{number - signal.SIGRTMIN}"
        return f"signal {number}"


def error_line(text: str) -> str:
    """The line that says why a process failed: its last one naming an error, fatal or panic, else its last."""
    lines = [" ".join(ln.split()) for ln in text.splitlines() if ln.strip()]
    line = next((ln for ln in reversed(lines) if _ERROR.search(ln)), lines[-1] if lines else "")
    return line if len(line) <= _MESSAGE else line[: _MESSAGE - 1] + "…"


class Supervisor:
    def __init__(self, name: str, argv: list[str], record_file: Path, backoff: Backoff,
                 stop_seconds: float = STOP_SECONDS) -> None:
        self.argv, self.file, self.backoff, self.stop_seconds = argv, record_file, backoff, stop_seconds
        me = os.getpid()
        self.record = restarts.Record(name=name, supervisor=Process(name, me, start_time(me) or 0, sys.executable,
                                                                      _log_path() or ""))
        self.child: subprocess.Popen[bytes] | None = None
        self._stop_at: float | None = None  # set by a stop signal: when the child gets SIGKILL
        self._wake_r, wake_w = os.pipe()
        os.set_blocking(self._wake_r, False)
        os.set_blocking(wake_w, False)
        signal.set_wakeup_fd(wake_w)  # a signal wakes the select() calls below
        for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            signal.signal(sig, self._on_signal)
        self._libc = ctypes.CDLL(None, use_errno=True)

    def _on_signal(self, signum: int, frame: object) -> None:
        """A stop: the main loop (woken by the wakeup fd) passes it on to the child and restarts nothing."""
        if self._stop_at is None:
            self._stop_at = time.monotonic() + self.stop_seconds

    def stopping(self) -> bool:
        return self._stop_at is not None

    def run(self) -> int:
        delay: float | None = None
        while not self.stopping():
            started, offset = time.monotonic(), _log_size()
            returncode, failure = self._run_child()
            if self.stopping():
                break  # the end we asked for: no restart
            ran = time.monotonic() - started
            delay = self.backoff.next(delay, ran)
            code, sig, why = reason(returncode)
            message = failure or (error_line(_log_since(offset)) if code else "")
            self.record.add_exit(restarts.Exit(code, sig, why, message, time.time(), round(ran, 1), delay))
            self.record.state, self.record.child = restarts.WAITING, None
            self.record.next_start = time.time() + delay
            restarts.save(self.file, self.record)
            self._say(f"{self.record.name} ended after {ran:.1f} s, {self.record.exits[-1].what()}; "
                      f"restart {self.record.restarts + 1} in {delay:.0f} s")
            self._sleep(delay)
            if not self.stopping():
                self.record.restarts += 1
        self.record.state, self.record.child, self.record.next_start = restarts.STOPPED, None, None
        restarts.save(self.file, self.record)
        return 0

    def _run_child(self) -> tuple[int, str]:
        """Start the child and wait for its end: (returncode, why, when it never ran or could not be watched).
        Only the start itself is an exit like the shell's 127 (a binary gone): an error once the child runs
        (its record not written) kills that child first, so no copy runs that the record does not name and
        a stop would miss."""
        if self.record.restarts:
            self._say(f"restart {self.record.restarts}: {' '.join(self.argv)}")
        try:
            self.child = self._spawn()
        except OSError as exc:
            return 127, f"cannot start {self.argv[0]}: {exc}"
        try:
            self._record_child(self.child.pid)
            return self._wait_child(), ""
        except Exception as exc:
            self.child.kill()
            returncode = self.child.wait()
            return returncode, f"cannot supervise {self.argv[0]} (pid {self.child.pid}, killed): {exc}"

    def _spawn(self) -> subprocess.Popen[bytes]:
        parent = os.getpid()

        def die_with_parent() -> None:  # runs in the child between fork and exec
            self._libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
            if os.getppid() != parent:  # the supervisor died before the line above
                os._exit(1)

        return subprocess.Popen(self.argv, stdin=subprocess.DEVNULL, close_fds=True, preexec_fn=die_with_parent)

    def _record_child(self, pid: int) -> None:
        st = None
        for _ in range(100):
            st = start_time(pid)
            if st is not None:
                break
            time.sleep(0.01)
        self.record.child = Process(self.record.name, pid, st or 0, self.argv[0], self.record.supervisor.log)
        self.record.state, self.record.next_start = restarts.RUNNING, None
        restarts.save(self.file, self.record)

    def _wait_child(self) -> int:
        """The child's returncode once it exits; SIGKILL to it once a stop has waited `stop_seconds`. A pidfd
        wakes us when the child exits; without one (a kernel before 5.3, a seccomp filter) we poll."""
        assert self.child is not None
        pidfd = _pidfd(self.child.pid)
        told = False
        try:
            while (rc := self.child.poll()) is None:
                timeout = None if pidfd is not None else _POLL
                if self.stopping():
                    if not told:
                        self.child.terminate()
                        told = True
                    left = (self._stop_at or 0.0) - time.monotonic()
                    if left <= 0:
                        self.child.kill()
                        left = 1.0
                    timeout = left if timeout is None else min(timeout, left)
                select.select([self._wake_r] if pidfd is None else [pidfd, self._wake_r], [], [], timeout)
                self._drain()
            return rc
        finally:
            if pidfd is not None:
                os.close(pidfd)

    def _sleep(self, seconds: float) -> None:
        """The back-off; a stop ends it early."""
        until = time.monotonic() + seconds
        while not self.stopping() and (left := until - time.monotonic()) > 0:
            select.select([self._wake_r], [], [], left)
            self._drain()

    def _drain(self) -> None:
        """Empty the wakeup pipe (the signals were handled already)."""
        try:
            while os.read(self._wake_r, 64):
                pass
        except BlockingIOError:
            pass

    def _say(self, text: str) -> None:
        stamp = time.strftime("%Y-%m-%dT%H:%M:%S%z")
        os.write(1, f"\n==> {stamp} [supervisor] {text}\n".encode())


def _pidfd(pid: int) -> int | None:
    """A file descriptor that becomes readable when the process exits, or None where the system has none."""
    try:
        return os.pidfd_open(pid)
    except (AttributeError, OSError):
        return None


def _log_path() -> str | None:
    """The file our standard output goes to (the component's log), when it is one."""
    try:
        target = os.readlink("/proc/self/fd/1")
    except OSError:
        return None
    return target if Path(target).is_file() else None


def _log_size() -> int:
    try:
        return os.fstat(1).st_size
    except OSError:
        return 0


def _log_since(offset: int) -> str:
    """What the child wrote to the log since `offset` (its last 64 KiB)."""
    log = _log_path()
    if not log:
        return ""
    with open(log, "rb") as fh:
        size = fh.seek(0, os.SEEK_END)
        fh.seek(max(offset, size - _LOG_TAIL))
        return fh.read().decode(errors="replace")


def command(name: str, record_file: Path, argv: list[str]) -> list[str]:
    """The command line that runs `argv` supervised (startup.py starts it as the component's process)."""
    return [sys.executable, "-m", "generator.playground.supervise", "--name", name, "--record", str(record_file),
            "--", *argv]


def main(args: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m generator.playground.supervise", description=__doc__.split("\n")[0])
    p.add_argument("--name", required=True)
    p.add_argument("--record", required=True, type=Path, help="the record file (restarts.py) this process writes")
    defaults = Backoff()
    p.add_argument("--initial-backoff", type=float, default=defaults.initial, metavar="S")
    p.add_argument("--max-backoff", type=float, default=defaults.cap, metavar="S")
    p.add_argument("--reset-after", type=float, default=defaults.reset_after, metavar="S")
    p.add_argument("--stop-seconds", type=float, default=STOP_SECONDS, metavar="S")
    p.add_argument("argv", nargs=argparse.REMAINDER)
    ns = p.parse_args(args)
    argv = ns.argv[1:] if ns.argv[:1] == ["--"] else ns.argv
    if not argv:
        p.error("the command to supervise is missing (after --)")
    backoff = Backoff(ns.initial_backoff, ns.max_backoff, ns.reset_after)
    return Supervisor(ns.name, argv, ns.record, backoff, ns.stop_seconds).run()


if __name__ == "__main__":
    sys.exit(main())
