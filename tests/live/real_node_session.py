"""The machine's one real node for the live tests that need it (the modules marked `real_node`: test_real_node*,
test_real_ray*, test_real_pull, test_real_agent_sandbox).

Its address ranges are fixed, so sessions take turns; a killed session's node is removed at the
next turn; and the host must look, after `down`, as it did before `up`.

A test session holds one real-node playground at a time, in the SLOT: the conftest's fixtures `node`, `ray_node` and
`sandbox_node` ask it for their KIND of node, which it starts at the first test that asks and keeps for every later
one of that kind, so the modules of one of hack/suite.py's real node parts share one start (~40 s and more each). A
test that asks for another kind downs the one held first; a test that is not the real node's releases it (its env
and its turn end with it). A test that downs the node itself is marked `downs_real_node`: hack/suite.py runs its
module last in its part, and a later test of that kind would pay a second start (said when it happens).
"""

from __future__ import annotations

import io
import os
import subprocess
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

from session_env import exit_code, reap_dead_sessions, sessions_root, wait_for

PREFIXES = ("real-node-", "real-ray-", "real-sandbox-")  # <prefix><pid>: the folders of the modules' playgrounds
SYSCTLS = ["kernel/panic", "kernel/panic_on_oops", "kernel/keys/root_maxkeys", "kernel/keys/root_maxbytes",
           "vm/overcommit_memory", "vm/panic_on_oom", "net/ipv4/ip_forward", "net/ipv4/conf/all/route_localnet",
           "net/bridge/bridge-nf-call-iptables", "net/netfilter/nf_conntrack_max"]


def host_snapshot() -> dict:
    from generator.pinned_tools import cache_dir

    def out(*argv):
        return subprocess.run(argv, capture_output=True, text=True).stdout

    return {
        "sysctls": {k: Path("/proc/sys", k).read_text() for k in SYSCTLS if Path("/proc/sys", k).exists()},
        "iptables": sorted(line for line in out("iptables-save").splitlines() if line.startswith("-A")),
        "ipsets": out("ipset", "list", "-n").split(),
        "netns": out("ip", "netns", "list").split(),
        "links": sorted(line.split(":")[1].strip() for line in out("ip", "-o", "link").splitlines()),
        "routes": sorted(out("ip", "route").splitlines()),
        # (mounts under the tool cache belong to image builds that may run beside this session)
        "mounts": sorted(m for m in (line.split()[4] for line in Path("/proc/self/mountinfo").read_text().splitlines())
                         if not m.startswith(str(cache_dir()) + "/")),
        "cgroups": sorted(str(p) for p in Path("/sys/fs/cgroup").glob("*/*") if p.is_dir()),
        # paths the components write whatever their configuration says (kept in the node's mount namespace)
        "paths": {p: Path(p).exists() for p in ("/run/containerd", "/run/xtables.lock", "/var/lib/cni",
                                                 "/var/lib/kubelet", "/opt/containerd", "/run/netns")},
    }


def host_added(before: dict, after: dict) -> list[str]:
    """What `after` holds that `before` did not (other sessions may remove things meanwhile, never add ours)."""
    out = [f"sysctl {k}: {before['sysctls'].get(k)!r} -> {v!r}" for k, v in after["sysctls"].items()
           if before["sysctls"].get(k) != v]
    out += [f"path {p}" for p, there in after["paths"].items() if there and not before["paths"].get(p)]
    for key in ("iptables", "ipsets", "netns", "links", "routes", "mounts", "cgroups"):
        out += [f"{key}: {x}" for x in after[key] if x not in before[key]]
    return out


@contextmanager
def real_node_turn(timeout: float = 1800) -> Iterator[None]:
    """This session's turn at the real node: waits for other live sessions' real nodes, removes those
    of killed sessions, then waits until no real node (a user's included) holds the ranges. The turn
    ends with the block, however it ends."""
    import fcntl

    from generator.playground.node import host

    root = sessions_root()
    root.mkdir(parents=True, exist_ok=True)

    def locked(fh: Any) -> bool:
        try:
            fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return True
        except BlockingIOError:
            return False

    with open(root / ".real-node.lock", "w") as lock:  # closing it ends the turn
        wait_for(lambda: locked(lock), timeout, "another test session's real node to go down", interval=2)
        reap_dead_sessions(root, PREFIXES)
        holder = host.range_in_use()  # a route to the node's pod range: a user's real node, say
        wait_for(lambda: not host.range_in_use(), min(timeout, 600),
                 f"the real node routed by `{holder}` to go down (`playground down` in its folder stops it)",
                 interval=5)
        yield


@contextmanager
def real_node_playground(prefix: str, timeout: float, env: dict[str, str] | None = None,
                         kueue: bool = False, agent_sandbox: bool = False) -> Iterator[tuple]:
    """In this session's turn, a playground with one real node (and a kwok GPU node, Kueue if `kueue`,
    agent-sandbox's controller if `agent_sandbox`) in
    <sessions root>/<prefix><pid>, with its own Helm homes and `env` set meanwhile: yields (its
    folder, its state, the host before it). Afterwards it is down and the host holds nothing new."""
    with real_node_turn(), playground_in_turn(prefix, timeout, env, kueue, agent_sandbox) as got:
        yield got


@contextmanager
def playground_in_turn(prefix: str, timeout: float, env: dict[str, str] | None = None,
                       kueue: bool = False, agent_sandbox: bool = False) -> Iterator[tuple]:
    """real_node_playground's playground, in a turn the caller holds already."""
    from generator.playground.lifecycle import down, load_state, up
    from generator.playground.nodes import Shape

    assert prefix in PREFIXES, f"{prefix}: a killed session's folder would never be reaped"
    before = host_snapshot()
    state_dir = sessions_root() / f"{prefix}{os.getpid()}"
    exit_code(down, state_dir, out=io.StringIO())
    env = {**{k: str(state_dir / "helm" / k.split("_")[1].lower())
              for k in ("HELM_CONFIG_HOME", "HELM_CACHE_HOME", "HELM_DATA_HOME")}, **(env or {})}
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    out = io.StringIO()
    t0 = time.monotonic()
    try:
        rc = exit_code(up, state_dir, Shape(gpu_nodes=1, gpus_per_node=8, cpu_nodes=0), timeout=timeout, out=out,
                       real_node=True, kueue=kueue, agent_sandbox=agent_sandbox)
        assert rc == 0, f"playground up --real-node failed (exit {rc}):\n{out.getvalue()}"
        print(f"\nplayground with a real node up in {time.monotonic() - t0:.1f} s\n{out.getvalue()}")
        yield state_dir, load_state(state_dir), before
    finally:
        exit_code(down, state_dir, out=io.StringIO())
        (state_dir.parent / f".{state_dir.name}.lock").unlink(missing_ok=True)  # state.locked's file
        for k, v in saved.items():
            os.environ.pop(k, None) if v is None else os.environ.__setitem__(k, v)
        added = host_added(before, host_snapshot())
        assert not added, f"left on the host after `down`: {added}"


# The kinds of real node the tests ask for: (folder prefix, `up` timeout, env, Kueue, agent-sandbox, the tools
# to build first). `node`: the node alone; `ray`: 2 GPUs (the device plugin), the Ray image and Kueue (a queued
# smoke; unlabelled jobs pass Kueue's webhooks untouched); `sandbox`: 1 GPU, the Ray image (a pod of it claims) and
# agent-sandbox's controller.
KINDS: dict[str, dict[str, Any]] = {
    "node": {"prefix": "real-node-", "timeout": 240, "tools": []},
    "ray": {"prefix": "real-ray-", "timeout": 300, "env": {"DOCKYARD_REAL_NODE_GPUS": "2"}, "kueue": True,
            "tools": ["ray-image", "device-plugin"]},
    "sandbox": {"prefix": "real-sandbox-", "timeout": 300, "env": {"DOCKYARD_REAL_NODE_GPUS": "1"},
                "agent_sandbox": True, "tools": ["ray-image", "device-plugin", "agent-sandbox"]},
}


class Slot:
    """This session's real-node playground (at most one; the module docstring says how it is shared)."""

    def __init__(self) -> None:
        self._turn: ExitStack | None = None  # this session's turn at the real node, while held
        self._held: ExitStack | None = None  # the playground's context, while up
        self.kind: str | None = None
        self.state_dir: Path | None = None
        self.value: Any = None  # what the kind's fixture made of the playground
        self.starts: list[tuple[str, float]] = []  # (kind, seconds to start) of each start this session
        self.failed: dict[str, str] = {}  # kind -> why its start failed: not tried again for each later test

    def get(self, kind: str, make: Any) -> Any:
        """The playground of `kind` (make(state_dir, state, before) of it), started unless held and still up."""
        if self.kind == kind and self.state_dir is not None and self.state_dir.exists():
            return self.value
        if kind in self.failed:
            raise AssertionError(f"the real node ({kind}) failed to start earlier in this session: {self.failed[kind]}")
        spec = KINDS[kind]
        self.down()  # another kind's, or this one's downed by a test (its host check still runs)
        try:
            if spec["tools"]:  # cached by version (a cold Ray image build is ~3 min)
                from generator.pinned_tools import REPO

                subprocess.run(["bash", str(REPO / "hack" / "tools.sh"), *spec["tools"]], check=True)
            if any(k == kind for k, _ in self.starts):
                print(f"\nreal node: {kind} starts a second time in this session (a test downed it before a test "
                      "that needs it: tests marked downs_real_node run last in their part, hack/suite.py)")
            self._take_turn()
            held = ExitStack()
            t0 = time.monotonic()
            state_dir, state, before = held.enter_context(playground_in_turn(
                spec["prefix"], spec["timeout"], spec.get("env"), spec.get("kueue", False),
                spec.get("agent_sandbox", False)))
        except Exception as exc:
            self.failed[kind] = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            raise
        self._held, self.kind, self.state_dir = held, kind, state_dir
        self.starts.append((kind, time.monotonic() - t0))
        self.value = make(state_dir, state, before)
        return self.value

    def downed(self) -> bool:
        """Whether the playground held was downed behind the slot's back (by a test)."""
        return self.state_dir is not None and not self.state_dir.exists()

    def free(self) -> dict:
        """No real-node playground up, in this session's turn: the host as it is then (what a test that starts
        one of its own compares with)."""
        self.down()
        self._take_turn()
        return host_snapshot()

    def down(self) -> None:
        """Down the playground held, if any (the host is checked as it goes); the turn stays."""
        held, self._held, self.kind, self.state_dir, self.value = self._held, None, None, None, None
        if held is not None:
            held.close()

    def release(self) -> None:
        """Down the playground held and end the turn (the session's end, or a test that needs no real node)."""
        try:
            self.down()
        finally:
            turn, self._turn = self._turn, None
            if turn is not None:
                turn.close()
                print("\nreal node: " + (", ".join(f"{k} started in {t:.1f} s" for k, t in self.starts)
                                         or "no start") + " this session")

    def _take_turn(self) -> None:
        if self._turn is None:
            turn = ExitStack()
            turn.enter_context(real_node_turn())
            self._turn = turn


SLOT = Slot()  # the session's (conftest.py's fixtures and hooks)
