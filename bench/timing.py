"""The bench's clock: the commands it times (the installed console script, the example's files), an environment with
bytecode cached as an installed package has it, and the ways it times them (repeated runs; interleaved rounds with
CPU and peak RSS from wait4) and writes the figures."""

from __future__ import annotations

import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from generator.pinned_tools import versions  # noqa: E402

PY = sys.executable
# The installed console script, as a user runs it (`python -m generator` adds runpy's ~5 ms).
SCRIPT = Path(PY).parent / "dockyard-k8s"
CLI = [str(SCRIPT)] if SCRIPT.exists() else [PY, "-m", "generator"]
RECIPE = REPO / "values-examples" / "grpo_swe.yaml"
INFRA = REPO / "values-examples" / "grpo_swe.infra.yaml"
# Bytecode cached as an installed package has it (pip compiles at install), but outside the tree:
# with PYTHONDONTWRITEBYTECODE every run would compile the generator's modules again (~20 ms).
ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
ENV["PYTHONPYCACHEPREFIX"] = os.path.join(tempfile.gettempdir(), f"dockyard-bench-pycache-{os.getuid()}")


def timed(cmd: list[str] | str, repeat: int, shell: bool = False, check: bool = True) -> list[float]:
    """Wall seconds of `repeat` runs (after one warm-up)."""
    subprocess.run(cmd, shell=shell, env=ENV, capture_output=True, check=check)
    out = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        subprocess.run(cmd, shell=shell, env=ENV, capture_output=True, check=check)
        out.append(time.perf_counter() - t0)
    return out


def fmt(samples: list[float]) -> str:
    return f"{statistics.median(samples) * 1000:.0f} ms ({min(samples) * 1000:.0f}–{max(samples) * 1000:.0f})"


def fmt_s(samples: list[float]) -> str:
    return f"{statistics.median(samples):.1f} s ({min(samples):.1f}–{max(samples):.1f})"


def ratio(a: list[float], b: list[float]) -> str:
    return f"{statistics.median(a) / statistics.median(b):.2f}×"


def machine() -> str:
    cpu = next((ln.split(":", 1)[1].strip() for ln in Path("/proc/cpuinfo").read_text().splitlines()
                if ln.startswith("model name")), platform.processor())
    mem = next(int(ln.split()[1]) for ln in Path("/proc/meminfo").read_text().splitlines() if ln.startswith("MemTotal"))
    v = versions()
    return (f"{os.cpu_count()} cores ({cpu}), {mem / 1024 / 1024:.0f} GiB, Python {platform.python_version()}, "
            f"helm {v['HELM_VERSION']}, kubeconform {v['KUBECONFORM_VERSION']}, Kubernetes {v['KUBERNETES_VERSION']}, "
            f"KubeRay {v['KUBERAY_VERSION']}")


class Sample:
    """Wall seconds, CPU seconds (user + system, every process) and the peak RSS of the largest
    process (KiB), from wait4()."""

    def __init__(self) -> None:
        self.wall: list[float] = []
        self.cpu: list[float] = []
        self.rss: list[int] = []


def run_once(cmd: list[str] | str, shell: bool, env: dict[str, str], sample: Sample | None) -> None:
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, shell=shell, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    err = proc.stderr.read().decode() if proc.stderr else ""
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise SystemExit(f"{cmd!r} failed ({proc.returncode}): {err}")
    if sample is not None:  # children's usage includes their own waited-for children (helm, kubeconform, ...)
        sample.wall.append(wall)
        sample.cpu.append(usage.ru_utime + usage.ru_stime)
        sample.rss.append(usage.ru_maxrss)


def interleaved(cmds: dict[str, tuple[list[str] | str, bool, dict[str, str]]], rounds: int) -> dict[str, Sample]:
    """Every command once per round, in a rotating order, after one warm-up round: drift in the
    machine's load (other builds and tests share it) hits every command alike."""
    out = {name: Sample() for name in cmds}
    names = list(cmds)
    for r in range(rounds + 1):
        order = names[r % len(names):] + names[: r % len(names)]
        for name in order:
            cmd, shell, env = cmds[name]
            run_once(cmd, shell, env, out[name] if r else None)
    return out


def loadavg() -> str:
    return ", ".join(Path("/proc/loadavg").read_text().split()[:3])


def med_ms(samples: list[float]) -> float:
    return statistics.median(samples) * 1000


def row(s: Sample) -> str:
    return f"{fmt(s.wall)} | {med_ms(s.cpu):.0f} ms | {statistics.median(s.rss) / 1024:.0f} MiB"
