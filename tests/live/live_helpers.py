"""Helpers of the live-path tests: run the CLI in-process or as a subprocess, write infra variants."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml

from generator.tools import REPO

DATA = Path(__file__).resolve().parent / "data"
RECIPE = DATA / "small.yaml"
INFRA = DATA / "small.infra.yaml"


def cli(capsys, *argv: Any) -> tuple[int, str, str]:
    """Run `dockyard-k8s ARGV` in this process; (exit code, stdout, stderr)."""
    from generator.cli import main

    capsys.readouterr()
    rc = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return rc, out, err


def spawn(*argv: Any, **kw: Any) -> subprocess.Popen:
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    return subprocess.Popen([sys.executable, "-m", "generator", *map(str, argv)], cwd=REPO, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **kw)


def infra_variant(tmp_path: Path, name: str, change) -> Path:
    """A copy of the small infra spec with `change(data)` applied."""
    data = yaml.safe_load(INFRA.read_text())
    change(data)
    path = tmp_path / name
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def kube(playground):
    from generator.live.kube import Kube

    return Kube(playground.kubeconfig)
