"""Helpers of the live-path tests: run the CLI in-process or as a subprocess, write infra variants."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml

from generator.pinned_tools import REPO

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
    from generator.live.client.kube import Kube

    return Kube(playground.kubeconfig)


def listening_sockets(pid: int) -> list[tuple[str, int]]:
    """(address, port) of every TCP socket process `pid` listens on (its /proc fds and net tables)."""
    import ipaddress

    inodes = set()
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        try:
            target = os.readlink(fd)
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.add(target[8:-1])
    out = []
    for table, width in (("tcp", 8), ("tcp6", 32)):
        for line in Path(f"/proc/{pid}/net/{table}").read_text().splitlines()[1:]:
            cols = line.split()
            local, state, inode = cols[1], cols[3], cols[9]
            if state != "0A" or inode not in inodes:  # 0A = LISTEN
                continue
            hexip, hexport = local.split(":")
            raw = bytes.fromhex(hexip)
            if width == 8:
                ip = ipaddress.ip_address(raw[::-1])
            else:  # four little-endian 32-bit words
                ip = ipaddress.ip_address(b"".join(raw[i : i + 4][::-1] for i in range(0, 16, 4)))
            out.append((str(ip), int(hexport, 16)))
    return out


KUEUE = ("kueue.x-k8s.io", "v1beta2")


def create_custom_object(api: Any, made: list, group: tuple[str, str], plural: str, ns: str | None,
                         body: dict) -> None:
    """Create one custom object (namespaced when `ns`) and record it in `made` for delete_custom_objects."""
    body["apiVersion"] = "/".join(group)
    if ns:
        api.create_namespaced_custom_object(*group, ns, plural, body)
    else:
        api.create_cluster_custom_object(*group, plural, body)
    made.append((group, plural, ns, body["metadata"]["name"]))


def delete_custom_objects(api: Any, made: list[tuple[tuple[str, str], str, str | None, str]]) -> None:
    """Delete what a test made, last first: (group+version, plural, namespace or None, name); gone already is fine."""
    from kubernetes import client
    from kubernetes.client.exceptions import ApiException

    objects = client.CustomObjectsApi(api) if not isinstance(api, client.CustomObjectsApi) else api
    for group, plural, ns, name in reversed(made):
        try:
            if ns:
                objects.delete_namespaced_custom_object(*group, ns, plural, name)
            else:
                objects.delete_cluster_custom_object(*group, plural, name)
        except ApiException as exc:
            if exc.status != 404:
                raise


def doctor_rows(out: str) -> dict[str, str]:
    """doctor's table: check name -> its line and the remedy line under it."""
    lines = out.splitlines()
    rows = {}
    for i, line in enumerate(lines):
        if line[:1] in "✓✗!" and line[1:2] == " ":
            remedy = lines[i + 1] if i + 1 < len(lines) and "→" in lines[i + 1] else ""
            rows[line[2:26].strip()] = line + "\n" + remedy
    return rows
