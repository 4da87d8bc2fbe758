"""The machine's one real node for the live tests that need it (test_real_node, test_real_ray,
test_real_agent_sandbox).

Its address ranges are fixed, so sessions take turns; a killed session's node is removed at the
next turn; and the host must look, after `down`, as it did before `up`.
"""

from __future__ import annotations

import io
import os
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
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
    from generator.playground.lifecycle import down, load_state, up
    from generator.playground.nodes import Shape

    assert prefix in PREFIXES, f"{prefix}: a killed session's folder would never be reaped"
    with real_node_turn():
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
