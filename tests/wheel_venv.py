"""A wheel of this checkout installed in a virtualenv of its own, outside the checkout, with an audit hook that
records every file the installed package opens, lists or runs from the checkout (it must reach none).

`python -m build` makes the sdist, then the wheel from the sdist (so the sdist is proven to carry what the wheel
needs); the virtualenv has no pip and no system site-packages: this interpreter's pip installs the wheel and its
dependencies into it (from pip's cache once fetched). tests/unit/test_wheel.py runs the offline verbs with it,
tests/live/test_live_wheel.py `run` on the session playground.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

from generator.pinned_tools import REPO

# Loaded by the venv's interpreter at start (a .pth line): logs to $DOCKYARD_AUDIT_LOG every path under
# $DOCKYARD_AUDIT_ROOT that the process puts on sys.path, opens, lists, enters or passes to a program it runs.
AUDIT = '''
import os, sys
ROOT, LOG = os.environ.get("DOCKYARD_AUDIT_ROOT"), os.environ.get("DOCKYARD_AUDIT_LOG")
EVENTS = {"open": 0, "os.listdir": 0, "os.scandir": 0, "os.chdir": 0, "shutil.copytree": 0,
          "subprocess.Popen": None, "os.posix_spawn": None, "os.exec": None}
busy = []

def under(path):
    try:
        path = os.path.abspath(os.fsdecode(path))
    except (TypeError, ValueError):
        return False
    return path == ROOT or path.startswith(ROOT + os.sep)

def report(event, path):
    busy.append(1)
    try:
        with open(LOG, "a") as f:
            f.write(f"{os.getpid()} {event} {path}\\n")
    finally:
        busy.pop()

def hook(event, args):
    if busy or event not in EVENTS:
        return
    if EVENTS[event] is None:  # a program started: its path, its arguments, its working folder
        paths = [args[0], *(args[1] or ()), *(args[2:3] if event == "subprocess.Popen" else ())]
    else:
        paths = [args[0]]
    for p in paths:
        if isinstance(p, (str, bytes, os.PathLike)) and under(p):
            report(event, os.fsdecode(p))

if ROOT and LOG:
    for entry in sys.path:
        if entry and under(entry):
            report("sys.path", entry)
    sys.addaudithook(hook)
'''

# The environment the installed CLI runs in: none of this process's Python settings (PYTHONPATH would put the
# checkout back), no other table of tools nor chosen helm; the tool cache as the user's.
DROP = ("PYTHONPATH", "PYTHONHOME", "PYTHONSTARTUP", "PYTHONSAFEPATH", "VIRTUAL_ENV", "DOCKYARD_TOOLS_TABLE",
        "DOCKYARD_HELM", "PYTHONDONTWRITEBYTECODE")


class Installed:
    def __init__(self, root: Path, wheel: Path, venv: Path, log: Path, build_output: str) -> None:
        self.root, self.wheel, self.venv, self.log, self.build_output = root, wheel, venv, log, build_output

    @property
    def cli(self) -> str:
        return str(self.venv / "bin" / "dockyard-k8s")

    def env(self, **more: str) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if k not in DROP}
        env["PATH"] = os.pathsep.join([str(self.venv / "bin"), "/usr/local/bin", "/usr/bin", "/bin"])
        env.update(DOCKYARD_AUDIT_ROOT=str(REPO), DOCKYARD_AUDIT_LOG=str(self.log),
                   DOCKYARD_PLAYGROUND_DIR=str(self.root / "playground"), **more)  # never the user's playground
        return env

    def run(self, *argv: object, cwd: Path | None = None, env: dict[str, str] | None = None,
            timeout: float = 240) -> subprocess.CompletedProcess[str]:
        """`dockyard-k8s ARGV` (or, with argv[0] a path, that program) in the work folder, the audit on."""
        cmd = [str(a) for a in argv]
        if not cmd[0].startswith("/"):
            cmd.insert(0, self.cli)
        return subprocess.run(cmd, cwd=cwd or self.root / "work", env=env or self.env(), capture_output=True,
                              text=True, timeout=timeout)

    def reached(self) -> list[str]:
        """What reached into the checkout since the last call (then forgotten)."""
        lines = self.log.read_text().splitlines() if self.log.exists() else []
        self.log.unlink(missing_ok=True)
        return lines


def install(root: Path) -> Installed:
    """Build the sdist and wheel of the checkout into root/dist and install the wheel in root/venv."""
    assert not root.resolve().is_relative_to(REPO), f"{root} must be outside the checkout {REPO}"
    for module in ("build", "hatchling"):
        if shutil.which(module) is None and not _importable(module):
            raise AssertionError(f"{module} is not installed in {sys.prefix}: `make venv` (pyproject's test extras)")
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONDONTWRITEBYTECODE")}
    built = subprocess.run([sys.executable, "-m", "build", "--no-isolation", "--outdir", str(root / "dist"), str(REPO)],
                           capture_output=True, text=True, env=env, cwd=root, timeout=300)
    assert built.returncode == 0, built.stdout + built.stderr
    wheel, = (root / "dist").glob("*.whl")
    venv = root / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    python = venv / "bin" / "python"
    pip = subprocess.run([sys.executable, "-m", "pip", "--python", str(python), "install", "-q", "--no-compile",
                          "--disable-pip-version-check", str(wheel)],
                         capture_output=True, text=True, env=env, cwd=root, timeout=600)
    assert pip.returncode == 0, pip.stdout + pip.stderr
    site = Path(subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                               capture_output=True, text=True, check=True).stdout.strip())
    (site / "_dockyard_audit.py").write_text(AUDIT)
    (site / "_dockyard_audit.pth").write_text("import _dockyard_audit\n")
    (root / "work").mkdir()
    assert sysconfig.get_paths()["purelib"] != str(site)
    return Installed(root, wheel, venv, root / "reached.log", built.stdout)


def _importable(module: str) -> bool:
    import importlib.util

    return importlib.util.find_spec(module) is not None
