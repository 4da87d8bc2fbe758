"""The playground without a cluster: its typed state reads the state file every earlier version wrote
(a playground started by one is still stopped by `down`), and its errors reach the CLI's exit codes."""

from __future__ import annotations

import copy
import io
import json
import subprocess
import sys
from pathlib import Path

import pytest

from generator.playground import processes as procs
from generator.playground.state import STATE_FILE, PlaygroundState, Process
from tests.support.playground_state import old_state

REPO = Path(__file__).resolve().parents[3]
COMPONENTS = ["etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kwok", "kuberay-operator"]


def old_real_node(state_dir: Path) -> dict:
    node = state_dir / "node"
    rec = {"name": "node/kubelet", "pid": 1, "start_time": 1, "exe": "nsenter", "log": str(state_dir / "logs/x.log")}
    return {
        "name": "real-node-0", "node_ip": "10.250.0.2", "pod_cidr": "10.244.0.0/24", "service_cidr": "10.96.0.0/16",
        "dns_ip": "10.250.0.2", "netns": str(node / "ns/net"), "mntns": str(node / "ns/mnt"),
        "cgroup_root": "/dockyard-abc123", "host_link": "dykabc123h", "label": "playground.dockyard.dev/real-node",
        "stand_ins": {"metadata": "169.254.169.254", "host": "10.250.9.9"},
        "serving": [str(node / "pki/kubelet-serving.crt"), str(node / "pki/kubelet-serving.key")],
        "components": {"kubelet": rec}, "gpus": 2,
        "images": {"pause": "dockyard.local/pause:1", "executor": "dockyard.local/playground-executor:1"},
        "ready_seconds": 40.2,
    }


def sleeper(tmp_path: Path, name: str) -> tuple[subprocess.Popen, dict]:
    proc = subprocess.Popen(["sleep", "120"], start_new_session=True)
    st = None
    while st is None:
        st = procs.start_time(proc.pid)
    return proc, {"name": name, "pid": proc.pid, "start_time": st, "exe": "sleep", "log": str(tmp_path / "x.log")}


def test_the_state_file_reads_and_writes_as_before(tmp_path):
    plain = old_state(tmp_path, {"etcd": {"name": "etcd", "pid": 7, "start_time": 9, "exe": "etcd", "log": "l"}})
    with_node = {**copy.deepcopy(plain), "service_cidr": "10.96.0.0/16", "real_node": old_real_node(tmp_path)}
    failed = {k: v for k, v in plain.items() if k not in ("pki", "tokens", "ready_seconds")} | {"failed": True}
    with_kueue = {**copy.deepcopy(plain), "kueue": True}
    with_kueue["ports"].update(kueue_probe=4711, kueue_webhook=4712)
    with_agent_sandbox = {**copy.deepcopy(plain), "agent_sandbox": True}
    with_agent_sandbox["ports"].update(agent_sandbox_probe=4713)
    for doc in (plain, with_node, failed, with_kueue, with_agent_sandbox):
        state = PlaygroundState.from_dict(copy.deepcopy(doc))
        assert json.loads(json.dumps(state.to_dict())) == doc
    assert PlaygroundState.from_dict(with_kueue).kueue and not PlaygroundState.from_dict(plain).kueue
    assert PlaygroundState.from_dict(with_agent_sandbox).agent_sandbox
    assert not PlaygroundState.from_dict(plain).agent_sandbox
    typed = PlaygroundState.from_dict(with_node)
    assert typed.components["etcd"] == Process("etcd", 7, 9, "etcd", "l")
    assert typed.real_node and typed.real_node.serving[0].endswith("kubelet-serving.crt") and typed.real_node.gpus == 2
    assert PlaygroundState.from_dict(failed).failed and PlaygroundState.from_dict(failed).pki is None


def test_save_and_load(tmp_path):
    state = PlaygroundState.from_dict(old_state(tmp_path))
    state.save(tmp_path)
    assert PlaygroundState.load(tmp_path) == state
    (tmp_path / STATE_FILE).write_text("{}")  # the marker a start-up writes first
    assert PlaygroundState.load(tmp_path) is None


def test_down_stops_a_playground_an_older_version_started(tmp_path):
    state_dir = tmp_path / "pg"
    state_dir.mkdir()
    proc, rec = sleeper(tmp_path, "kuberay-operator")
    dead = {"name": "etcd", "pid": rec["pid"], "start_time": rec["start_time"] + 1, "exe": "etcd", "log": "l"}
    (state_dir / STATE_FILE).write_text(json.dumps(old_state(state_dir, {"kuberay-operator": rec, "etcd": dead})))
    from generator.playground.lifecycle import down

    out = io.StringIO()
    try:
        assert down(state_dir, out=out) == 0
        proc.wait(timeout=5)  # SIGTERM'd by `down`; only the recorded (pid, start time) was signalled
    finally:
        proc.kill()
    assert proc.returncode == -15
    assert out.getvalue() == f"playground down: stopped 1 processes (kuberay-operator); removed {state_dir}\n"
    assert not state_dir.exists()


def test_status_reports_an_older_playground_whose_processes_are_gone(tmp_path):
    recs = {"etcd": {"name": "etcd", "pid": 2 ** 22 + 1, "start_time": 1, "exe": "etcd", "log": "/x/etcd.log"}}
    (tmp_path / STATE_FILE).write_text(json.dumps(old_state(tmp_path, recs)))
    from generator.playground.lifecycle import status

    out = io.StringIO()
    assert status(tmp_path, out=out) == 1
    lines = out.getvalue().splitlines()
    assert lines[0] == f"playground {tmp_path}"
    assert lines[1].split() == ["etcd", "DOWN", "process", str(2 ** 22 + 1), "is", "not", "running", "(log:",
                                "/x/etcd.log)"]
    assert lines[2].split()[:4] == ["kube-apiserver", "DOWN", "not", "started"]


def test_down_of_a_start_that_recorded_nothing(tmp_path):
    from generator.playground.lifecycle import down

    (tmp_path / "pg").mkdir()
    (tmp_path / "pg" / STATE_FILE).write_text("{}")
    out = io.StringIO()
    assert down(tmp_path / "pg", out=out) == 0
    assert out.getvalue() == f"removed {tmp_path / 'pg'} (no process was recorded)\n"
    assert down(tmp_path / "pg", out=out) == 0 and out.getvalue().endswith(f"no playground at {tmp_path / 'pg'}\n")


def test_a_process_that_will_not_stop_is_an_error_exit_1(tmp_path, monkeypatch, capsys):
    from generator.cli import main

    state_dir = tmp_path / "pg"
    state_dir.mkdir()
    proc, rec = sleeper(tmp_path, "etcd")
    (state_dir / STATE_FILE).write_text(json.dumps(old_state(state_dir, {"etcd": rec})))
    monkeypatch.setattr(procs, "stop", lambda records, timeout=10.0: [])  # as if SIGTERM and SIGKILL did nothing
    try:
        assert main(["playground", "down", "--state-dir", str(state_dir)]) == 1
    finally:
        proc.kill()
        proc.wait()
    assert capsys.readouterr().err == f"error: still running: etcd (pid {proc.pid})\n"
    assert state_dir.exists()


def test_a_folder_that_is_not_a_playground_is_refused_exit_2(tmp_path, capsys):
    from generator.cli import main

    (tmp_path / "keep.txt").write_text("mine")
    assert main(["playground", "up", "--state-dir", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err == (f"error: {tmp_path} exists and is not a playground state folder (no {STATE_FILE}); "
                   "pick another --state-dir\n")
    assert (tmp_path / "keep.txt").read_text() == "mine"


@pytest.mark.parametrize("argv,message", [
    (["--gpu-nodes", "-1"], "--gpu-nodes must be >= 0, got -1"),
    (["--gpu-nodes", "0", "--cpu-nodes", "0"],
     "the playground needs at least one node (--gpu-nodes, --cpu-nodes or --real-node)"),
    (["--node-memory", "lots"], "--node-memory: 'lots' is not a positive Kubernetes quantity (e.g. 64, 500m, 512Gi)"),
    (["--timeout", "0"], "--timeout must be positive"),
])
def test_bad_usage_is_one_line_exit_2(tmp_path, capsys, argv, message):
    from generator.cli import main

    assert main(["playground", "up", "--state-dir", str(tmp_path / "pg"), *argv]) == 2
    assert capsys.readouterr().err == f"error: {message}\n"
    assert not (tmp_path / "pg").exists()


def test_python_m_generator_playground_maps_errors_like_the_cli(tmp_path):
    (tmp_path / "keep.txt").write_text("mine")
    out = subprocess.run([sys.executable, "-m", "generator.playground", "up", "--state-dir", str(tmp_path)],
                         cwd=REPO, capture_output=True, text=True, timeout=60)
    assert out.returncode == 2 and out.stderr.startswith(f"error: {tmp_path} exists and is not a playground")
    assert "Traceback" not in out.stderr


# ---------------------------------------------------------------- make demo


def _recipe(target: str) -> tuple[list[str], list[str]]:
    """(prerequisites, recipe lines) of a Makefile target."""
    lines = (REPO / "Makefile").read_text().splitlines()
    head = next(i for i, line in enumerate(lines) if line.startswith(f"{target}:"))
    prereqs = lines[head].split(":", 1)[1].split("##")[0].split()
    body = []
    for line in lines[head + 1:]:
        if not line.startswith("\t"):
            break
        body.append(line.strip())
    return prereqs, body


def _reached(*modules: str) -> set[str]:
    """The generator modules `modules` import, transitively (lazy imports inside functions too)."""
    import ast

    seen: set[str] = set()
    todo = list(modules)
    while todo:
        mod = todo.pop()
        path = REPO / Path(*mod.split("."))
        path = path / "__init__.py" if path.is_dir() else path.with_suffix(".py")
        if mod in seen or not path.is_file():
            continue
        seen.add(mod)
        package = mod if path.name == "__init__.py" else mod.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                todo += [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    parts = package.split(".")
                    base = ".".join(parts[: len(parts) - node.level + 1] + ([base] if base else []))
                todo += [base, *(f"{base}.{a.name}" for a in node.names)]
    return seen


def test_make_demo_builds_only_what_the_demo_runs():
    """`make demo` runs `playground up` (the control plane's tools), `run --wait` and `status` (helm): it
    builds those, not `make tools` (the real node, the Ray image, checkov, kubeconform, ...)."""
    from generator.playground.control_plane import TOOLS

    prereqs, body = _recipe("demo")
    assert "tools" not in prereqs, prereqs
    builds = [line.split()[2:] for line in body if line.startswith("bash hack/tools.sh")]
    assert len(builds) == 1 and sorted(builds[0]) == sorted(["helm", *TOOLS]), builds
    verbs = [line.split()[3] for line in body if line.startswith("$(PY) -m generator ")]
    assert verbs == ["playground", "run", "status"], body
    assert "--real-node" not in " ".join(body)
    # `run` and `status` reach helm and no other tool: no kubeconform, kube-validate or checkov
    reached = _reached("generator.live.verbs.run", "generator.live.verbs.status")
    assert "generator.render.helm" in reached
    tools = {"generator.render.kubeconform", "generator.render.apivalidate", "generator.render.scan",
             "generator.render.check", "generator.playground.node"}
    assert not reached & tools, sorted(reached & tools)
