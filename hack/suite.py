#!/usr/bin/env python3
"""`make test` and `make tools`: the tool builds and the test suite as one schedule, with a timeline.

The suite has four parts that need different tools and share nothing at run time:

- real node: tests/live/test_real_node.py, on a playground with the machine's one real node;
- real Ray: tests/live/test_real_ray.py, the same slot after it (plus Kueue and the Ray image);
- live: the rest of tests/live, on the session playground (kwok nodes; the control plane, KubeRay, Kueue, the
  registry, Helm 4);
- offline: the unit and chart tests (helm, kubeconform, kube-validate, checkov, the KubeRay CRDs).

Each part is its own pytest process, started as soon as the tools it needs are built, so the parts run beside
each other and beside the builds still going. The builds run in two streams (a Go build uses both cores, but
module downloads and links leave them idle; two streams fill those gaps). Their order puts first what the
part with the longest tests (the real node) needs, and builds every Kubernetes tool after the control plane in
the same stream, so those reuse its compiled packages from Go's build cache instead of compiling them twice
side by side. A failed build does not stop the others (a part that does not need it still runs); the run stops
early once no part can run.

Each part's output goes to a log under .suite/ and is printed whole when the part ends; progress lines say
what started and ended meanwhile. At the end: the timeline (each phase's start, end and wall time, counted
from the start of `make test`) and one line with every part's counts together (a part, build or gate that
failed without a count of its own counts as one failure there).

usage: python3 hack/suite.py [test | tools]      (stdlib only: it runs before the virtualenv exists)
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
VENV_PY = ROOT / ".venv" / "bin" / "python"
LOGS = ROOT / ".suite"

# hack/tools.sh's names. Every entry of its default list is in exactly one stream (tests/unit/test_tools_cache.py).
NODE = ["runc", "containerd", "cni-plugins", "coredns", "kube-router", "node-images", "kubernetes-node",
        "device-plugin", "gvisor", "metrics-server"]
# The order follows the parts' needs (cold build times in docs/playground.md): first what the real node's part
# needs (the longest tests: they start when both streams reach the bar below), then what the session playground's
# part adds (Kueue, the registry, Helm 4), then the Ray image and what only the offline part needs. Each stream's
# share before the bar is about the same, and so after it. kube-validate and kubernetes-node follow the control
# plane in its stream: built from the same Kubernetes module, they reuse its compiled packages (Go's build cache)
# instead of compiling them a second time beside it.
STREAMS = [
    ["kubernetes", "etcd", "kwok", "kuberay", "kube-validate", "kubernetes-node", "gvisor",
     # -- the real node's part can start
     "kueue"],
    ["helm", "kuberay-crds", "kubeconform", "runc", "containerd", "cni-plugins", "coredns", "kube-router",
     "node-images", "device-plugin", "metrics-server",
     # -- the real node's part can start
     "helm4", "registry", "ray-image", "kuberay-crds-1.4", "kuberay-crds-1.5", "checkov"],
]
ALL_TOOLS = [t for stream in STREAMS for t in stream]

CONTROL_PLANE = ["kubernetes", "etcd", "kwok", "kuberay"]
CHECKERS = ["helm", "kubeconform", "kube-validate", "kuberay-crds"]  # what `check` and `run` validate with
REAL_NODE = "tests/live/test_real_node.py"
REAL_RAY = "tests/live/test_real_ray.py"
REAL_NODE_MODULES = [REAL_NODE, REAL_RAY]


@dataclass
class Part:
    """One pytest process of the suite: started once the tools it `needs` are built, the part named `after` has
    ended, and (with `after_builds`) every build has ended."""

    name: str
    needs: list[str]
    args: list[str]
    after: str | None = None
    after_builds: bool = False


OFFLINE_TOOLS = CHECKERS + ["helm4", "checkov", "kuberay-crds-1.4", "kuberay-crds-1.5"]
PARTS = [
    Part("real node", CONTROL_PLANE + CHECKERS + NODE, [REAL_NODE]),
    # the same machine-wide real node slot, so after the real node's part; Kueue admits its queued smoke
    Part("real Ray", CONTROL_PLANE + CHECKERS + NODE + ["kueue", "ray-image"], [REAL_RAY], after="real node"),
    Part("live", CONTROL_PLANE + CHECKERS + ["helm4", "kueue", "registry"],
         ["tests/live", *(f"--ignore={m}" for m in REAL_NODE_MODULES)]),
    # CPU-bound (a helm, kube-validate or kubeconform for each test), so after the builds, which it would only
    # slow: from then on the CPU is mostly idle while the live parts wait on pods and controllers
    Part("offline", OFFLINE_TOOLS, ["tests/unit", "tests/chart"], after_builds=True),
]


@dataclass
class Phase:
    name: str
    start: float
    end: float | None = None
    ok: bool | None = None
    note: str = ""


@dataclass
class Timeline:
    t0: float = field(default_factory=time.monotonic)
    phases: list[Phase] = field(default_factory=list)
    lock: threading.RLock = field(default_factory=threading.RLock)

    def now(self) -> float:
        return time.monotonic() - self.t0

    def begin(self, name: str) -> Phase:
        phase = Phase(name, self.now())
        with self.lock:
            self.phases.append(phase)
        return phase

    def end(self, phase: Phase, ok: bool, note: str = "") -> None:
        phase.end, phase.ok, phase.note = self.now(), ok, note

    def say(self, text: str) -> None:
        with self.lock:
            print(f"[suite {self.now():6.0f} s] {text}", flush=True)

    def table(self) -> str:
        rows = [("phase", "start", "end", "wall", "")]
        with self.lock:
            phases = list(self.phases)
        for p in phases:
            end = p.end if p.end is not None else self.now()
            mark = "FAILED " if p.ok is False else ("(unfinished) " if p.end is None else "")
            rows.append((p.name, f"{p.start:.0f}", f"{end:.0f}", f"{end - p.start:.0f}", mark + p.note))
        rows.append(("total", "0", f"{self.now():.0f}", f"{self.now():.0f}", f"{self.now() / 60:.1f} min"))
        widths = [max(len(r[i]) for r in rows) for i in range(4)]
        lines = ["timeline (seconds from the start of the run):"]
        for r in rows:
            lines.append("  " + r[0].ljust(widths[0]) + "  " + "  ".join(r[i].rjust(widths[i]) for i in (1, 2, 3))
                         + ("  " + r[4] if r[4] else ""))
        return "\n".join(lines)


class Stopping(Exception):
    """The run is stopping: no new process is started."""


class Children:
    """Every process the run starts (each in a session of its own), to stop them all on a failure or a signal."""

    def __init__(self) -> None:
        self.procs: list[subprocess.Popen] = []
        self.lock = threading.RLock()
        self.stopping = threading.Event()

    def popen(self, argv: list[str], log: Path | None) -> subprocess.Popen:
        """Start `argv` (output to `log`, or to ours when None); Stopping once the run stops."""
        with self.lock:
            if self.stopping.is_set():
                raise Stopping
            fh = open(log, "w") if log else None  # closed below: the child holds its own copy
            try:
                proc = subprocess.Popen(argv, cwd=ROOT, stdout=fh, stderr=subprocess.STDOUT if fh else None,
                                        stdin=subprocess.DEVNULL, start_new_session=True)
            finally:
                if fh:
                    fh.close()
            self.procs.append(proc)
            return proc

    def stop_all(self, grace: float = 120) -> None:
        """SIGINT first (pytest then runs its teardown: playgrounds go down), SIGKILL after `grace` seconds."""
        with self.lock:
            self.stopping.set()
            live = [p for p in self.procs if p.poll() is None]
        for p in live:
            _signal_group(p, signal.SIGINT)
        deadline = time.monotonic() + grace
        for p in live:
            try:
                p.wait(max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                _signal_group(p, signal.SIGKILL)
                p.wait()

    def stop_in_background(self) -> None:
        """stop_all from a signal handler: in a thread of its own (the handler may interrupt a holder of a lock)."""
        if not self.stopping.is_set():
            self.stopping.set()  # at once: no new process starts from here on
            threading.Thread(target=self.stop_all, daemon=True).start()


def _signal_group(proc: subprocess.Popen, sig: int) -> None:
    try:
        os.killpg(proc.pid, sig)
    except ProcessLookupError:
        pass


class Builds:
    """hack/tools.sh, one tool per call, in streams; each tool's end is an event the parts wait on. A failed
    build does not stop its stream: each call is independent (the order only serves Go's build cache)."""

    def __init__(self, timeline: Timeline, children: Children) -> None:
        self.timeline, self.children = timeline, children
        self.done = {t: threading.Event() for t in ALL_TOOLS}
        self.failed: set[str] = set()
        self.on_failure = lambda: None  # called after each failed build
        self.threads = [threading.Thread(target=self._stream, args=(i, s), daemon=True) for i, s in enumerate(STREAMS)]

    def start(self) -> None:
        for t in self.threads:
            t.start()

    def join(self) -> None:
        for t in self.threads:
            t.join()

    def wait_for(self, tools: list[str]) -> bool:
        """Block until each of `tools` has ended; True if all were built (and the run is not stopping)."""
        for t in tools:
            self.done[t].wait()
        return not (set(tools) & self.failed) and not self.children.stopping.is_set()

    def _stream(self, index: int, tools: list[str]) -> None:
        phase = self.timeline.begin(f"tools: stream {index + 1}")
        built: list[str] = []
        try:
            for tool in tools:
                try:
                    if not self._build(tool, built):
                        self.failed.add(tool)
                        self.on_failure()
                finally:
                    self.done[tool].set()
        finally:
            for tool in tools:  # an unexpected error: what is left counts as failed, and nobody waits forever
                if not self.done[tool].is_set():
                    self.failed.add(tool)
                    self.done[tool].set()
            bad = [t for t in tools if t in self.failed]
            note = ("built: " + ", ".join(built)) if built else "all cached" if not bad else ""
            self.timeline.end(phase, not bad, "; ".join(x for x in (note, f"failed: {', '.join(bad)}" if bad else "")
                                                        if x))

    def _build(self, tool: str, built: list[str]) -> bool:
        log = LOGS / f"tool-{tool}.log"
        t0 = time.monotonic()
        try:
            rc = self.children.popen(["bash", "hack/tools.sh", tool], log).wait()
        except Stopping:
            return False
        took = time.monotonic() - t0
        text = log.read_text(errors="replace")
        if rc != 0:
            if not self.children.stopping.is_set():
                self.timeline.say(f"tool {tool}: FAILED (exit {rc}); the last lines of {log}:\n" + _tail(text, 40))
            return False
        if not re.search(r"^\[tools\] \S+ \S+: cached \(", text, re.M):  # one entry per call: built
            built.append(f"{tool} {took:.0f}")
            self.timeline.say(f"tool {tool}: built in {took:.0f} s")
        return True


def _tail(text: str, n: int) -> str:
    return "\n".join(text.splitlines()[-n:])


def _counts(text: str) -> dict[str, int]:
    """pytest's closing line ('== 3 failed, 1800 passed, 2 skipped in 900.1s ==', or without the '=' under -q)
    as counts: passed, failed, error, skipped, xfailed, xpassed. Empty when there is none."""
    out: dict[str, int] = {}
    for line in reversed(text.splitlines()):
        if re.search(r"\b(passed|failed|errors?|skipped|deselected|xfailed|xpassed|no tests ran)\b.* in [\d.]+s\b",
                     line):
            for n, word in re.findall(r"(\d+) (passed|failed|errors?|skipped|xfailed|xpassed)\b", line):
                key = "error" if word.startswith("error") else word
                out[key] = out.get(key, 0) + int(n)
            break
    return out


def run_part(part: Part, builds: Builds, timeline: Timeline, children: Children, results: dict,
             ended: dict[str, threading.Event]) -> None:
    try:
        if part.after:
            ended[part.after].wait()
        if part.after_builds:
            builds.wait_for(ALL_TOOLS)
        if not builds.wait_for(part.needs):
            return
        slug = part.name.replace(" ", "-")
        log = LOGS / f"tests-{slug}.log"
        argv = [str(VENV_PY), "-m", "pytest", "-q", "--durations=15", "-o", f"cache_dir=.pytest_cache/{slug}",
                *part.args]
        try:
            proc = children.popen(argv, log)
        except Stopping:
            return
        phase = timeline.begin(f"tests: {part.name}")
        timeline.say(f"tests: {part.name} started (log: {log.relative_to(ROOT)})")
        rc = proc.wait()
        text = log.read_text(errors="replace")
        counts = _counts(text)
        summary = ", ".join(f"{v} {k}" for k, v in counts.items()) or f"exit {rc}"
        timeline.end(phase, rc == 0, summary)
        with timeline.lock:
            print(f"\n===== tests: {part.name} (exit {rc}, {phase.end - phase.start:.0f} s) =====\n{text}", flush=True)
        results[part.name] = (rc, counts)
        timeline.say(f"tests: {part.name} ended: {summary}")
    finally:
        ended[part.name].set()


def step(timeline: Timeline, children: Children, name: str, *argvs: list[str]) -> bool:
    """Run commands one after another, their output passed through; False at the first that fails."""
    phase = timeline.begin(name)
    for argv in argvs:
        try:
            rc = children.popen(argv, None).wait()
        except Stopping:
            rc = -1
        if rc != 0:
            timeline.end(phase, False, f"{' '.join(argv[:4])}: exit {rc}")
            return False
    timeline.end(phase, True)
    return True


def _helm() -> str:
    """The pinned helm's path, as the CLI finds it."""
    return subprocess.run([str(VENV_PY), "-c", "from generator.tools import binary; print(binary('helm'))"],
                          cwd=ROOT, capture_output=True, text=True, check=True).stdout.strip()


class Run:
    """What `tools` and `test` share: the children, the builds, and stopping on a signal."""

    def __init__(self) -> None:
        LOGS.mkdir(exist_ok=True)
        self.timeline = Timeline()
        self.children = Children()
        self.builds = Builds(self.timeline, self.children)
        self.signalled: int | None = None
        signal.signal(signal.SIGTERM, self._on_signal)
        signal.signal(signal.SIGINT, self._on_signal)

    def _on_signal(self, signum: int, _frame: object) -> None:
        # no lock taken here: the main thread may hold one; the run winds down and returns 128 + signum
        self.signalled = signum
        self.children.stop_in_background()

    def stop(self, why: str) -> None:
        if not self.children.stopping.is_set():
            self.timeline.say(f"{why}: stopping every build and test part (playgrounds go down first)")
        self.children.stop_all()


def tools() -> int:
    run = Run()
    try:
        run.builds.start()
        run.builds.join()
    except BaseException:
        run.stop("an error in the driver")
        raise
    print(run.timeline.table(), flush=True)
    if run.builds.failed:
        print(f"tools: failed or not built: {', '.join(sorted(run.builds.failed))} (logs: {LOGS}/tool-*.log)")
    if run.signalled:
        return 128 + run.signalled
    return 1 if run.builds.failed else 0


def test() -> int:
    run = Run()
    timeline, builds, children = run.timeline, run.builds, run.children
    results: dict[str, tuple[int, dict[str, int]]] = {}
    ended = {p.name: threading.Event() for p in PARTS}
    threads = [threading.Thread(target=run_part, args=(p, builds, timeline, children, results, ended), daemon=True)
               for p in PARTS]

    def doomed() -> None:  # after a failed build: stop early once no part can run any more
        if all(set(p.needs) & builds.failed for p in PARTS):
            run.stop("no part of the suite can run: a tool each needs failed to build")

    builds.on_failure = doomed
    py = str(VENV_PY)
    try:
        builds.start()  # beside the virtualenv: they need bash, go and the system python3 only
        gate = step(timeline, children, "venv", ["make", "-s", "venv"]) and step(
            timeline, children, "lint: ruff, mypy",
            [py, "-m", "ruff", "check", "--no-fix", "generator", "tests", "bench", "hack"], [py, "-m", "mypy"])
        if gate:
            for t in threads:
                t.start()
            gate = builds.wait_for(["helm"]) and step(timeline, children, "lint: helm lint --strict",
                                                       [_helm(), "lint", "--strict", "charts/dockyard"])
        if not gate and not children.stopping.is_set():
            run.stop("the lint gate failed")
        builds.join()
        for t in threads:
            if t.ident is not None:
                t.join()
    except BaseException:
        run.stop("an error in the driver")
        raise

    print("\n" + timeline.table(), flush=True)
    total: dict[str, int] = {}
    for _, counts in results.values():
        for k, v in counts.items():
            total[k] = total.get(k, 0) + v
    bad = total.get("failed", 0) + total.get("error", 0)
    if builds.failed:
        print(f"tools: failed or not built: {', '.join(sorted(builds.failed))} "
              f"(logs: {LOGS.relative_to(ROOT)}/tool-*.log)")
    failed = [name for name, (rc, counts) in results.items() if rc != 0]
    if failed:
        print(f"parts that failed: {', '.join(failed)} (logs: {LOGS.relative_to(ROOT)}/tests-*.log)")
        bad += sum(1 for name in failed if not (results[name][1].get("failed") or results[name][1].get("error")))
    never = [p.name for p in PARTS if p.name not in results]
    if never:
        print(f"parts that never ran: {', '.join(never)}")
    bad += len(never) + (0 if gate else 1)
    extra = f", {total['skipped']} skipped" if total.get("skipped") else ""
    print(f"suite: {total.get('passed', 0)} passed, {bad} failed{extra}")
    if run.signalled:
        return 128 + run.signalled
    return 0 if gate and not failed and not never and not builds.failed else 1


def main(argv: list[str]) -> int:
    what = argv[1] if len(argv) > 1 else "test"
    if what == "tools":
        return tools()
    if what == "test":
        return test()
    print(__doc__.strip().splitlines()[-1], file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
