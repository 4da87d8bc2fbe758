"""Bring the playground up, report on it, and tear it down (orchestration only).

State lives in one folder outside the repo (see `generator.playground.default_state_dir`):

    state.json        ports, options, and one record per process {pid, start_time, exe, log} (state.py)
    kubeconfig        the admin kubeconfig (token auth) printed as `export KUBECONFIG=...`
    kubeconfigs/      one kubeconfig per component identity
    pki/              CA, loopback serving certificate, service-account key pair
    tokens.csv        the apiserver's static token file
    kwok.yaml         kwok's configuration: stages and the ClusterLogs rule
    pod.log           the CRI-format log file kwok serves for `kubectl logs` of any simulated pod
    etcd/             etcd's data
    logs/<component>.log
    supervise/<component>.json   a supervised component's process now and its restarts (restarts.py)

Every component binds 127.0.0.1 on a port picked free at `up`, so playgrounds in different state
folders do not collide. The pieces: control_plane.py (command lines), files.py (configuration
files), startup.py and processes.py (processes), supervise.py and restarts.py (the controllers' restarts),
health.py, crds.py, node/ (the real node).
Failures raise errors.py's errors, which the CLI prints (exit 1, or 2 for bad usage).
"""

from __future__ import annotations

import contextlib
import sys
import time
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path
from typing import Any, TextIO

from generator import EXIT_FAILED
from generator.pinned_tools import playground_kubernetes
from generator.playground import control_plane, restarts, startup, volumes
from generator.playground import processes as procs
from generator.playground.control_plane import COMPONENTS, SERVICE_CIDR, SERVICE_IP
from generator.playground.errors import PlaygroundError, UpError, UsageError
from generator.playground.files import remove_tree
from generator.playground.health import api_for, component_health, node_summary, supervised
from generator.playground.nodes import POD_CIDR, Shape
from generator.playground.state import STATE_FILE, PlaygroundState, Ports, Process, locked, mark, removable

Say = Callable[[str], None]

__all__ = ["COMPONENTS", "api_for", "component_health", "down", "load_state", "status", "up"]


def load_state(state_dir: Path) -> dict[str, Any] | None:
    """The state file as plain JSON, as tests and older callers read it (typed: `PlaygroundState.load`)."""
    from generator.playground.state import read_json

    return read_json(state_dir)


def records(state: PlaygroundState) -> list[Process]:
    """The control plane's processes in start order (a supervised component's: its supervisor)."""
    return [state.components[c] for c in COMPONENTS if c in state.components]


def _children(state: PlaygroundState) -> list[Process]:
    """The supervisors' children as their records name them now."""
    found = (restarts.of(state.state_dir, rec) for rec in records(state))
    return [r.child for r in found if r is not None and r.child is not None]


def _stop(state: PlaygroundState) -> tuple[list[str], list[Process]]:
    """Stop the control plane, the operator first and etcd last. A supervisor stops its child before it
    exits (so it restarts nothing that is being stopped); a child left by a supervisor that died is stopped
    after them. Returns the names signalled and every process that was to stop."""
    recs, children = records(state), _children(state)
    stopped = procs.stop(list(reversed(recs)))
    procs.stop(children)
    return stopped, [*recs, *children]


# How long a supervised component's new child may take to be healthy before `up` counts it as broken: a
# restarted KubeRay operator waits out the old Lease (a full 15 s lease) before it leads (docs/playground.md).
RESTART_GRACE = 60.0


def _restarting(state: PlaygroundState, name: str) -> bool:
    """The component is its supervisor's to bring back: down while the supervisor, running, waits out its
    back-off, or its child started less than RESTART_GRACE seconds ago and not yet healthy."""
    record = supervised(state, name)
    if record is None:
        return False
    if record.child is None:
        return True
    ran = procs.age(record.child)
    return ran is None or ran < RESTART_GRACE


def _exited(state: PlaygroundState, name: str) -> str | None:
    """Why a component that was started is gone (during `up`, a supervised one's first exit is a failure)."""
    rec = state.components[name]
    record = restarts.of(state.state_dir, rec)
    if record is not None and record.exits:
        return f"{name} exited during start-up ({record.exits[-1].what()})"
    if not procs.is_running(rec):
        return f"{name} exited during start-up"
    return None


def _sayer(out: TextIO) -> Say:
    def say(msg: str) -> None:
        print(msg, file=out, flush=True)

    return say


# ---------------------------------------------------------------- up


def up(state_dir: Path, shape: Shape, timeout: float = 120.0, out: TextIO = sys.stdout, real_node: bool = False,
       kueue: bool = False, agent_sandbox: bool = False) -> int:
    """Start the playground (idempotent: a healthy one is left as it is); returns 0 or raises."""
    say = _sayer(out)
    with locked(state_dir):
        state = PlaygroundState.load(state_dir)
        if state and not state.failed:
            health = [(n, *component_health(state, n)) for n in control_plane.wanted(state)]
            restarting = [(n, d) for n, ok, d in health if not ok and _restarting(state, n)]
            unhealthy = [(n, d) for n, ok, d in health if not ok and not _restarting(state, n)]
            unhealthy += [(n, d) for n, ok, d in _node_health(state) if not ok]  # the real node, if any
            if real_node != bool(state.real_node):
                unhealthy.append(("real node", "wanted" if real_node else "not wanted"))
            if kueue and not state.kueue:  # a playground with Kueue serves an `up` without --kueue as it is
                unhealthy.append(("kueue", "wanted"))
            if agent_sandbox and not state.agent_sandbox:
                unhealthy.append(("agent-sandbox", "wanted"))
            if not unhealthy:
                say(f"playground already running ({state_dir})")
                if state.shape != shape:
                    say(f"  note: it was started with {asdict(state.shape)}; `down` first to change its shape")
                if state.kube_version != playground_kubernetes():
                    say(f"  note: it runs Kubernetes {state.kube_version}; `down` first to change it")
                if state.kueue and not kueue:
                    say("  note: it runs Kueue (started with --kueue); `down` first to drop it")
                if state.agent_sandbox and not agent_sandbox:
                    say("  note: it runs agent-sandbox (started with --agent-sandbox); `down` first to drop it")
                for name, detail in restarting:  # its supervisor starts it again: no reason to start afresh
                    say(f"  note: {name} is not healthy yet, its supervisor restarts it: {detail}")
                print_summary(state, say)
                return 0
            problems = "; ".join(f"{n}: {d}" for n, d in unhealthy)
            say(f"playground at {state_dir} is not healthy ({problems}); restarting it")
        if state:
            _node_teardown(state_dir, state, say)
            _stop(state)
        if state_dir.exists():
            if not removable(state_dir):
                raise UsageError(f"{state_dir} exists and is not a playground state folder (no {STATE_FILE}); "
                                 "pick another --state-dir")
            remove_tree(state_dir)
        bins = control_plane.ensure_binaries(say)
        return _fresh_up(state_dir, shape, bins, timeout, say, real_node, kueue, agent_sandbox)


def _new_state(state_dir: Path, shape: Shape, kube_version: str) -> PlaygroundState:
    ports = Ports(*procs.free_ports(len(Ports.names())))
    return PlaygroundState(
        state_dir=str(state_dir),
        created=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        shape=shape,
        ports=ports,
        server=f"https://127.0.0.1:{ports.apiserver}",
        service_cidr=SERVICE_CIDR,
        pod_cidr=POD_CIDR,
        kubeconfig=str(state_dir / "kubeconfig"),
        kube_version=kube_version,
    )


def _write_files(state: PlaygroundState, state_dir: Path) -> None:
    """PKI, tokens, kubeconfigs, kwok's configuration and the simulated pods' log."""
    from generator.pinned_tools import tool_dir
    from generator.playground import files, pki
    from generator.playground.node import spec as node_spec
    from generator.playground.state import Pki

    # the real node's Service range too: its pods reach the apiserver on that range's `kubernetes` ClusterIP
    state.pki = Pki(**pki.generate(state_dir / "pki", SERVICE_IP, node_spec.SERVICE_IP))
    state.tokens = pki.write_tokens(state_dir / "tokens.csv")
    for ident, token in state.tokens.items():
        doc = files.kubeconfig(state.server, state.pki.ca_crt, token, ident)
        files.write_yaml(state_dir / "kubeconfigs" / f"{ident}.kubeconfig", doc, private=True)
    admin = files.kubeconfig(state.server, state.pki.ca_crt, state.tokens["admin"], "admin")
    files.write_yaml(state_dir / "kubeconfig", admin, private=True)
    files.write_pod_log(state_dir / "pod.log", state_dir)
    lease = control_plane.KWOK_LEASE_SECONDS
    files.write_yaml(state_dir / "kwok.yaml", files.kwok_config(state_dir, tool_dir("kwok"), lease))


def _fresh_up(state_dir: Path, shape: Shape, bins: control_plane.Binaries, timeout: float, say: Say,
              real_node: bool = False, kueue: bool = False, agent_sandbox: bool = False) -> int:
    t0 = time.monotonic()
    state_dir.mkdir(parents=True, exist_ok=True)
    state_dir.chmod(0o700)
    mark(state_dir)  # marks the folder as ours before anything else
    (state_dir / "logs").mkdir()
    (state_dir / "kubeconfigs").mkdir()
    state = _new_state(state_dir, shape, bins.kube_version)
    state.kueue = kueue
    state.agent_sandbox = agent_sandbox
    try:
        _write_files(state, state_dir)
        state.save(state_dir)
        argv = control_plane.argv(state, bins, state_dir)
        if real_node:  # generator/playground/node/hooks.py: checks, identities, the control plane's flags
            from generator.playground.node import hooks as real

            real.prepare(state, state_dir, argv, say)
            state.save(state_dir)
        _start_control_plane(state, state_dir, argv, t0, t0 + timeout, say)
        if real_node:
            real.start(state, state_dir, say, time.monotonic() + max(timeout, 240.0))
        if kueue:
            _start_kueue(state, state_dir, t0, time.monotonic() + timeout, say)
        if agent_sandbox:
            _start_agent_sandbox(state, state_dir, t0, time.monotonic() + timeout, say)
    except BaseException as exc:
        _clean_up_failed(state, state_dir, exc, say)
        if not isinstance(exc, Exception):
            raise
        raise UpError(f"playground start-up failed: {exc}") from exc
    state.ready_seconds = round(time.monotonic() - t0, 1)
    state.save(state_dir)
    say(f"playground up in {state.ready_seconds} s ({state_dir})")
    print_summary(state, say)
    return 0


def _start_control_plane(state: PlaygroundState, state_dir: Path, argv: dict[str, list[str]], t0: float,
                         deadline: float, say: Say) -> None:
    """etcd, the apiserver, then the rest with the CRDs and Nodes in between; waits until all are well."""
    from generator.pinned_tools import tool_dir
    from generator.playground import crds
    from generator.playground.nodes import manifests

    def start(name: str, argv: list[str], env: dict[str, str] | None = None) -> None:
        startup.start(state, state_dir, state.components, name, name, argv, env,
                      supervised=name in control_plane.SUPERVISED)

    start("etcd", argv["etcd"])
    startup.wait("etcd", _alive_check(state, "etcd"), deadline, "etcd")
    start("kube-apiserver", argv["kube-apiserver"])
    startup.wait("kube-apiserver /readyz", _alive_check(state, "kube-apiserver"), deadline, "kube-apiserver")
    say(f"  apiserver ready on {state.server} ({time.monotonic() - t0:.1f} s)")
    for name in ("kube-controller-manager", "kube-scheduler", "kwok"):
        start(name, argv[name])

    api = api_for(state)
    names = crds.install(api, tool_dir("kuberay") / "crds")
    for node in manifests(state.shape, state.kube_version, real_node=state.real_node is not None):
        api.create("/api/v1/nodes", node)
    for path, obj in volumes.manifests(default=state.real_node is None):  # claims bind on the simulated nodes
        api.create(path, obj)
    start("volume-provisioner", argv["volume-provisioner"])
    startup.wait("KubeRay CRDs to be Established", lambda: crds.established(api, names), deadline)
    say(f"  {len(names)} KubeRay CRDs installed server-side ({time.monotonic() - t0:.1f} s)")
    op = "kuberay-operator"
    start(op, argv[op], control_plane.env(op, state_dir))
    expected = state.shape.gpu_nodes + state.shape.cpu_nodes
    startup.wait("all components healthy and nodes Ready", lambda: _cluster_ready(state, expected), deadline)


def _start_kueue(state: PlaygroundState, state_dir: Path, t0: float, deadline: float, say: Say) -> None:
    """Kueue's CRDs, the controller (generator/playground/kueue.py), its webhooks once it serves, the queues."""
    from generator.playground import crds
    from generator.playground import kueue as kq

    kdir = control_plane.ensure_kueue(say)
    api = api_for(state)
    names = crds.install(api, kdir / "crds")
    startup.wait("Kueue CRDs to be Established", lambda: crds.established(api, names), deadline, "kueue")
    config = kq.write_files(state_dir, (state.pki_files.serving_crt, state.pki_files.serving_key),
                            state.ports.kueue_webhook, state.ports.kueue_probe)
    startup.start(state, state_dir, state.components, "kueue", "kueue", kq.argv(str(kdir / "kueue"), config, state_dir),
                  control_plane.env("kueue", state_dir), supervised="kueue" in control_plane.SUPERVISED)
    startup.wait("Kueue /readyz", _alive_check(state, "kueue"), deadline, "kueue")
    kq.register_webhooks(api, kq.webhook_configurations(kdir / "webhook.yaml", state.ports.kueue_webhook,
                                                         state.ca_file))
    topology = bool(state.shape.topology)
    nominal = kq.create_queues(api, deadline, topology)
    say(f"  Kueue ready: ClusterQueue {kq.CLUSTER_QUEUE} ({', '.join(f'{k} {v}' for k, v in nominal.items())}), "
        f"LocalQueue {kq.NAMESPACE}/{kq.LOCAL_QUEUE} ({time.monotonic() - t0:.1f} s)")
    if topology:
        say(f"  Kueue topology: Topology {kq.TOPOLOGY} ({state.shape.topology} blocks x racks of the GPU nodes), "
            f"ResourceFlavor {kq.TOPOLOGY_FLAVOR}, LocalQueue {kq.NAMESPACE}/{kq.TOPOLOGY_QUEUE}")


def _start_agent_sandbox(state: PlaygroundState, state_dir: Path, t0: float, deadline: float, say: Say) -> None:
    """agent-sandbox's CRDs (Sandbox; SandboxTemplate, SandboxClaim, SandboxWarmPool), then its controller with
    --extensions, supervised like the operator. It needs no webhook and no certificate."""
    from generator.playground import crds

    adir = control_plane.ensure_agent_sandbox(say)
    api = api_for(state)
    names = crds.install(api, adir / "crds")
    startup.wait("agent-sandbox CRDs to be Established", lambda: crds.established(api, names), deadline,
                 "agent-sandbox")
    name = "agent-sandbox"
    startup.start(state, state_dir, state.components, name, name,
                  control_plane.agent_sandbox_argv(str(adir / "agent-sandbox-controller"), state),
                  control_plane.env(name, state_dir), supervised=name in control_plane.SUPERVISED)
    startup.wait("agent-sandbox /readyz", _alive_check(state, name), deadline, name)
    say(f"  agent-sandbox ready: {len(names)} CRDs, its controller with --extensions ({time.monotonic() - t0:.1f} s)")


def _alive_check(state: PlaygroundState, name: str) -> startup.Check:
    def check() -> tuple[bool, str]:
        if why := _exited(state, name):
            raise UpError(why, name)
        return component_health(state, name)

    return check


def _cluster_ready(state: PlaygroundState, expected_nodes: int) -> tuple[bool, str]:
    from generator.playground.kubeapi import ApiError

    for name in control_plane.wanted(state, core_only=True):
        ok, detail = component_health(state, name)
        if not ok:
            if why := _exited(state, name):
                raise UpError(why, name)
            return False, f"{name}: {detail}"
    try:
        summary = node_summary(state)
        api_for(state).get("/api/v1/namespaces/default/serviceaccounts/default")
    except (ApiError, OSError) as exc:
        return False, str(exc)
    if summary.ready < expected_nodes:
        return False, f"{summary.ready}/{expected_nodes} nodes Ready"
    return True, "ready"


def _clean_up_failed(state: PlaygroundState, state_dir: Path, exc: BaseException, say: Say) -> None:
    """After a failed start: say what helps (traceback of a bug, the failing component's log tail),
    stop everything that was started, and keep the folder (marked failed) for its logs."""
    component = getattr(exc, "component", None)
    if not isinstance(exc, (UpError, KeyboardInterrupt)):
        import traceback

        say(traceback.format_exc().rstrip())
    if component and component in state.components:
        log = state.components[component].log
        say(f"--- last lines of {log}:\n{procs.tail(log)}")
    _node_teardown(state_dir, state, say)
    _stop(state)
    state.failed = True
    with contextlib.suppress(OSError):
        state.save(state_dir)
    say(f"logs kept in {state_dir / 'logs'}; `down` removes them")


def print_summary(state: PlaygroundState, say: Say) -> None:
    try:
        s = node_summary(state)
        say(f"  nodes: {s.total} ({s.ready} Ready): {s.gpu_nodes} GPU with {s.gpus} nvidia.com/gpu in all, "
            f"{s.cpu_nodes} CPU")
    except Exception as exc:
        say(f"  nodes: unknown ({exc})")
    say(f"export KUBECONFIG={state.kubeconfig}")


# ---------------------------------------------------------------- status, down


def status(state_dir: Path, out: TextIO = sys.stdout) -> int:
    """Print each component's health; 0 when all are well, 1 otherwise (a report, not an error)."""
    say = _sayer(out)
    state = PlaygroundState.load(state_dir)
    if not state:
        say(f"no playground at {state_dir} (start one with `dockyard-k8s playground up`)")
        return EXIT_FAILED
    say(f"playground {state_dir}" + (" (last start-up FAILED)" if state.failed else ""))
    healthy = True
    rows = [(n, *component_health(state, n)) for n in control_plane.wanted(state)]
    for name, ok, detail in [*rows, *_node_health(state)]:
        healthy &= ok
        say(f"  {name:<25} {'ok  ' if ok else 'DOWN'} {detail}")
    if healthy:
        print_summary(state, say)
    return 0 if healthy and not state.failed else 1


def down(state_dir: Path, out: TextIO = sys.stdout) -> int:
    """Stop exactly the recorded processes (and the real node), then remove the folder; 0 or raises."""
    say = _sayer(out)
    with locked(state_dir):
        state = PlaygroundState.load(state_dir)
        if not state:
            if state_dir.exists() and (state_dir / STATE_FILE).exists():
                if _node_teardown(state_dir, None, say):
                    raise PlaygroundError("the real node could not be removed completely (see above); "
                                          "run `down` again")
                remove_tree(state_dir)  # a start-up that died before recording any process
                say(f"removed {state_dir} (no process was recorded)")
            else:
                say(f"no playground at {state_dir}")
            return 0
        if _node_teardown(state_dir, state, say):
            raise PlaygroundError("the real node could not be removed completely (see above); run `down` again")
        stopped, recs = _stop(state)
        left = [r for r in recs if procs.is_running(r)]
        if left:
            raise PlaygroundError("still running: " + ", ".join(f"{r.name} (pid {r.pid})" for r in left))
        remove_tree(state_dir)
        say(f"playground down: stopped {len(stopped)} processes ({', '.join(stopped) or 'none running'}); "
            f"removed {state_dir}")
        return 0


# ---------------------------------------------------------------- the real node's hooks


def _node_health(state: PlaygroundState) -> list[tuple[str, bool, str]]:
    if not state.real_node:
        return []
    from generator.playground.node import hooks

    return hooks.health(state)


def _node_teardown(state_dir: Path, state: PlaygroundState | None, say: Say) -> list[str]:
    """Remove the real node (generator/playground/node) when this playground has or had one."""
    if not (state and state.real_node) and not (state_dir / "node").exists():
        return []
    from generator.playground.node import hooks

    return hooks.teardown(state_dir, state, say)
