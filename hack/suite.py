#!/usr/bin/env python3
"""`make test` and `make tools`: the tool builds and the test suite as one schedule, with a timeline.

The suite has five parts that need different tools (the `needed_by` column of the table of tools,
generator/tool_table.toml) and share nothing at run time:

- real node: tests/live/test_real_node*.py, on a playground with the machine's one real node;
- real Ray: tests/live/test_real_pull.py and test_real_ray*.py, the same slot after it (plus Kueue and the Ray image);
- real sandbox: tests/live/test_real_agent_sandbox.py, the same slot after that (plus agent-sandbox's controller);
- live: the rest of tests/live, on the session playground (kwok nodes; the control plane, KubeRay, Kueue, the
  registry, Helm 4);
- offline: the unit and chart tests (helm, kubeconform, kube-validate, checkov, the KubeRay CRDs).

Each part is its own pytest process, started as soon as the tools it needs are built, so the parts run beside
each other and beside the builds still going. The builds run in two streams (a Go build uses both cores, but
module downloads and links leave them idle; two streams fill those gaps), the table's `stream` column in its
order: first what the part with the longest tests (the real node) needs, and every Kubernetes tool after the
control plane in the same stream, so those reuse its compiled packages from Go's build cache instead of
compiling them twice side by side. A failed build does not stop the others (a part that does not need it still
runs); the run stops early once no part can run.

The modules of a real node part share one start of its node (~40 s and more; tests/live/conftest.py), in the order
the part lists them, which is their alphabetical order (`pytest tests/live -m real_node` runs them so too, and one
node of each kind); a module whose tests down the node (marked downs_real_node) comes last in its part.
tests/unit/test_suite.py holds both.

Each part's output goes to a log under .suite/ and is printed whole when the part ends; progress lines say
what started and ended meanwhile. At the end: the timeline (each phase's start, end and wall time, counted
from the start of `make test`) and one line with every part's counts together (a part, build or gate that
failed without a count of its own counts as one failure there).

The real node's three parts need root, cgroup v1, overlayfs and network namespaces
(generator/playground/node/machine.py, the check `playground up --real-node` makes). The run decides at its start
and says so in its first lines: `--real-node=auto` (the default) skips them on a machine that cannot host the
real node, loudly, and under $CI counts them as failed instead (CI must not lose them quietly); `--real-node=1`
requires them; `--real-node=0` skips them (`make test REAL_NODE=0`). Skipped parts are rows of the timeline and
counted in the last line; the tools only they need are not built.

usage: python3 hack/suite.py [test | tools] [--real-node=auto|1|0]   (stdlib only: it runs before the virtualenv)
"""

from __future__ import annotations

import importlib.util
import os
import re
import signal
import subprocess
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parent.parent
VENV_PY = ROOT / ".venv" / "bin" / "python"


def _load(relative: str) -> ModuleType:
    """A stdlib-only module by its path: the package's (its dependencies may not be installed yet) or hack/'s."""
    name = f"dockyard_suite_{Path(relative).stem}"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, ROOT / relative)
        assert spec and spec.loader
        sys.modules[name] = module = importlib.util.module_from_spec(spec)  # before it runs: dataclasses look it up
        spec.loader.exec_module(module)
    return sys.modules[name]


_TOOL_TABLE = _load("generator/tool_table.py")  # first: on a Python older than it needs it says so in one line, exit 2
_run = _load("hack/suite_run.py")
LOGS, Builds, Children, Stopping, Timeline = _run.LOGS, _run.Builds, _run.Children, _run.Stopping, _run.Timeline


# The tools, their streams and who needs which: the table generator/tool_table.toml. The streams build in its order:
# first what the real node's part needs (the longest tests), then what the session playground's part adds, then
# the Ray image and what only the offline part needs; every Kubernetes tool after the control plane in its stream
# (they reuse its compiled packages from Go's build cache instead of compiling them a second time beside it).
TABLE = _TOOL_TABLE.load()
STREAMS = TABLE.streams()
ALL_TOOLS = [t for stream in STREAMS for t in stream]
MACHINE = _load("generator/playground/node/machine.py")  # whether this machine can host the real node

REAL_NODE_MARK = "pytestmark = pytest.mark.real_node"  # how a module says it needs the real node


def real_node_modules(root: Path = ROOT) -> list[str]:
    """The test modules that mark themselves as the real node's (the line REAL_NODE_MARK), as paths from the repo: the
    module says it, so none can be missing from a list kept here."""
    return sorted(p.relative_to(root).as_posix() for p in (root / "tests").rglob("test_*.py")
                  if any(line.startswith(REAL_NODE_MARK) for line in p.read_text().splitlines()))


DOWNS_REAL_NODE = "@pytest.mark.downs_real_node"  # how a test says it downs its part's real node (or needs none up)


def downs_real_node(module: str, root: Path = ROOT) -> bool:
    """Whether a test of `module` (a path from the repo) downs its real node: the module must run last in its part."""
    return any(line.strip().startswith(DOWNS_REAL_NODE) for line in (root / module).read_text().splitlines())


# The real node parts' modules, in the order they run: alphabetical, the ones that down the node last
REAL_NODE = ["tests/live/test_real_node.py", "tests/live/test_real_node_gvisor.py", "tests/live/test_real_node_load.py",
             "tests/live/test_real_node_pool.py", "tests/live/test_real_node_teardown.py"]
REAL_RAY = ["tests/live/test_real_pull.py", "tests/live/test_real_ray.py", "tests/live/test_real_ray_storage.py",
            "tests/live/test_real_ray_watch.py"]
REAL_SANDBOX = ["tests/live/test_real_agent_sandbox.py"]
REAL_NODE_MODULES = real_node_modules()


def lint_commands(py: str) -> dict[str, list[str]]:
    """The lint gate before any test part starts, by name (the timeline's row lists them); helm lint follows."""
    return {"ruff": [py, "-m", "ruff", "check", "--no-fix", "generator", "tests", "bench", "hack"],
            "mypy": [py, "-m", "mypy"],
            # the import rules of .importlinter (layers, independent verbs, no cycles); no cache in the clone
            "lint-imports": [str(Path(py).parent / "lint-imports"), "--no-cache"]}


@dataclass
class Part:
    """One pytest process of the suite: started once the tools the table says it needs are built, the part named
    `after` has ended, and (with `after_builds`) every build has ended. `real_node`: it needs the machine's real
    node."""

    name: str
    args: list[str]
    after: str | None = None
    after_builds: bool = False
    real_node: bool = False

    @property
    def needs(self) -> list[str]:
        return TABLE.needed_by(self.name)


PARTS = [
    Part("real node", REAL_NODE, real_node=True),
    # the same machine-wide real node slot, so after the real node's part; Kueue admits its queued smoke; a tag the
    # node lacks ends the wait at the first failed pull (the same Ray image)
    Part("real Ray", REAL_RAY, after="real node", real_node=True),
    # the same slot again: agent-sandbox's claims from a pod of the Ray image, under runc and gVisor
    Part("real sandbox", REAL_SANDBOX, after="real Ray", real_node=True),
    Part("live", ["tests/live", *(f"--ignore={m}" for m in REAL_NODE_MODULES)]),
    # CPU-bound (a helm, kube-validate or kubeconform for each test), so after the builds, which it would only
    # slow: from then on the CPU is mostly idle while the live parts wait on pods and controllers
    Part("offline", ["tests/unit", "tests/chart"], after_builds=True),
]


def real_node_order(parts: list[Part], downs: Callable[[str], bool] = downs_real_node) -> list[str]:
    """What is wrong with the real node parts' order ([]: nothing): a part whose modules are not in alphabetical
    order, one whose module that `downs` its node runs before one that needs it, and parts whose modules interleave
    alphabetically (one pytest process over all of them would start a node of each kind more than once)."""
    real = [p for p in parts if p.real_node]
    wrong = [f"{p.name}: its modules are not in alphabetical order: {p.args}" for p in real if p.args != sorted(p.args)]
    for p in real:
        flags = [downs(m) for m in p.args]
        if flags != sorted(flags):
            wrong.append(f"{p.name}: a module that downs its real node runs before one that needs it: "
                         f"{[m + (' (downs it)' if d else '') for m, d in zip(p.args, flags, strict=True)]}")
    runs = [next(p.name for p in real if m in p.args) for m in sorted(m for p in real for m in p.args)]
    runs = [name for i, name in enumerate(runs) if i == 0 or runs[i - 1] != name]
    if len(runs) != len(set(runs)):
        wrong.append(f"the parts' modules interleave alphabetically: {runs}")
    return wrong


@dataclass
class RealNode:
    """Whether the real node's parts run, decided at the start: `run`, or not (`failing`: counted as failed)."""

    run: bool
    failing: bool = False
    why: str = ""  # the timeline's note for the parts left out
    message: str = ""  # said in the first lines of the run


def real_node_plan(mode: str, lacks: list[str], ci: bool) -> RealNode:
    """`mode` (auto, 1, 0: `make test REAL_NODE=...`) against what this machine `lacks` for a real node."""
    rest = ("The real node's tests (tests/live/test_real_*.py; pytest marker `real_node`) "
            f"need {MACHINE.NEEDS}. Everything else runs without them: `make test REAL_NODE=0`, or "
            "`pytest -m 'not real_node'`.")
    if mode == "0":
        return RealNode(False, why="skipped: REAL_NODE=0",
                        message="real node: skipped, as asked (REAL_NODE=0): the parts real node, real Ray and real "
                                "sandbox do not run, and the tools only they need are not built.")
    if not lacks:
        return RealNode(True)
    said = f"this machine cannot host the real node: it lacks {'; '.join(lacks)}. {rest}"
    if mode == "1" or ci:
        asked = "REAL_NODE=1" if mode == "1" else "under CI (REAL_NODE=auto counts them as failed there)"
        return RealNode(False, failing=True, why="could not run: the machine lacks what the real node needs",
                        message=f"real node: FAILING, {asked}: {said}")
    return RealNode(False, why="skipped: the machine cannot host the real node",
                    message=f"real node: SKIPPED (REAL_NODE=auto): {said}")


def run_part(part: Part, builds: Builds, timeline: Timeline, children: Children, results: dict,
             ended: dict[str, threading.Event]) -> None:
    try:
        if part.after:
            ended[part.after].wait()
        if part.after_builds:
            builds.wait_for(builds.tools)
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
        counts = _run.counts(text)
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
    return subprocess.run([str(VENV_PY), "-c", "from generator.pinned_tools import binary; print(binary('helm'))"],
                          cwd=ROOT, capture_output=True, text=True, check=True).stdout.strip()


class Run:
    """What `tools` and `test` share: the real node's decision, the children, the builds, stopping on a signal."""

    def __init__(self, real_node: str) -> None:
        LOGS.mkdir(exist_ok=True)
        self.timeline = Timeline()
        self.real_node = real_node_plan(real_node, MACHINE.lacks(commands=False), bool(os.environ.get("CI")))
        if self.real_node.message:  # the run's first line
            self.timeline.say(self.real_node.message)
        skipped = not self.real_node.run and not self.real_node.failing
        self.parts = [p for p in PARTS if not (p.real_node and not self.real_node.run)]
        self.left_out = [p for p in PARTS if p not in self.parts]
        # the tools some part that runs (or the lint gate) needs; all of them unless the real node is skipped
        needed = set(TABLE.needed_by("lint")).union(*(p.needs for p in (self.parts if skipped else PARTS)))
        self.children = Children()
        self.builds = Builds(self.timeline, self.children, [[t for t in s if t in needed] for s in STREAMS])
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


def tools(real_node: str = "auto") -> int:
    run = Run(real_node)
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


def _collected(modules: list[str]) -> int | None:
    """How many tests pytest collects from `modules` (what a skipped part would have run); None if unknown."""
    out = subprocess.run([str(VENV_PY), "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider", *modules],
                         cwd=ROOT, capture_output=True, text=True).stdout
    found = re.search(r"^(\d+)(?:/\d+)? tests? collected", out, re.M)
    return int(found.group(1)) if found else None


def test(real_node: str = "auto") -> int:
    run = Run(real_node)
    timeline, builds, children, parts = run.timeline, run.builds, run.children, run.parts
    results: dict[str, tuple[int, dict[str, int]]] = {}
    ended = {p.name: threading.Event() for p in PARTS}
    for p in run.left_out:  # a part that does not run has ended for a part that runs after it
        ended[p.name].set()
        timeline.record(f"tests: {p.name}", False if run.real_node.failing else None, run.real_node.why)
    threads = [threading.Thread(target=run_part, args=(p, builds, timeline, children, results, ended), daemon=True)
               for p in parts]

    def doomed() -> None:  # after a failed build: stop early once no part can run any more
        if all(set(p.needs) & builds.failed for p in parts):
            run.stop("no part of the suite can run: a tool each needs failed to build")

    builds.on_failure = doomed
    py = str(VENV_PY)
    left_out = None
    try:
        builds.start()  # beside the virtualenv: they need bash, go and the system python3 only
        lint = lint_commands(py)
        gate = step(timeline, children, "venv", ["make", "-s", "venv"]) and step(
            timeline, children, f"lint: {', '.join(lint)}", *lint.values())
        if gate:
            for t in threads:
                t.start()
            if run.left_out:
                left_out = _collected([a for p in run.left_out for a in p.args])
            gate = builds.wait_for(TABLE.needed_by("lint")) and step(
                timeline, children, "lint: helm lint --strict", [_helm(), "lint", "--strict", "charts/dockyard"])
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
    line, ok = report(run, results, gate, left_out)
    print(line)
    if run.signalled:
        return 128 + run.signalled
    return 0 if ok else 1


def report(run: Run, results: dict[str, tuple[int, dict[str, int]]], gate: bool,
           left_out: int | None) -> tuple[str, bool]:
    """What went wrong, printed; then the last line (every part's counts together) and whether the run passed.
    `left_out`: how many tests the parts that did not run hold (None: unknown)."""
    total: dict[str, int] = {}
    for _, counts in results.values():
        for k, v in counts.items():
            total[k] = total.get(k, 0) + v
    bad = total.get("failed", 0) + total.get("error", 0)
    if run.builds.failed:
        print(f"tools: failed or not built: {', '.join(sorted(run.builds.failed))} "
              f"(logs: {LOGS.relative_to(ROOT)}/tool-*.log)")
    failed = [name for name, (rc, counts) in results.items() if rc != 0]
    if failed:
        print(f"parts that failed: {', '.join(failed)} (logs: {LOGS.relative_to(ROOT)}/tests-*.log)")
        bad += sum(1 for name in failed if not (results[name][1].get("failed") or results[name][1].get("error")))
    never = [p.name for p in run.parts if p.name not in results]
    if never:
        print(f"parts that never ran: {', '.join(never)}")
    bad += len(never) + (0 if gate else 1)
    extra = f", {total['skipped']} skipped" if total.get("skipped") else ""
    if run.left_out:  # said again at the end, and counted: skipped, or failed when they had to run
        print(run.real_node.message)
        parts = [p.name for p in run.left_out]
        names = " and ".join(parts) if len(parts) < 3 else f"{', '.join(parts[:-1])} and {parts[-1]}"
        tests = f"{left_out} tests" if left_out is not None else f"{len(run.left_out)} parts"
        if run.real_node.failing:
            bad += left_out if left_out is not None else len(run.left_out)
            extra += f" ({tests} of {names} among them: {run.real_node.why})"
        else:
            extra += f", {tests} of {names} skipped ({run.real_node.why.removeprefix('skipped: ')})"
    ok = gate and not failed and not never and not run.builds.failed and not run.real_node.failing
    return f"suite: {total.get('passed', 0)} passed, {bad} failed{extra}", ok


def main(argv: list[str]) -> int:
    args = argv[1:]
    options = [a for a in args if a.startswith("--")]
    what = [a for a in args if not a.startswith("--")] or ["test"]
    real_node = "auto"
    for option in options:
        name, _, value = option.partition("=")
        if name != "--real-node" or value not in ("auto", "1", "0"):
            what = ["usage"]
        real_node = value
    if what == ["tools"]:
        return tools(real_node)
    if what == ["test"]:
        return test(real_node)
    print((__doc__ or "").strip().splitlines()[-1], file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
