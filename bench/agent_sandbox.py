"""`make bench`'s agent-sandbox section: what a fresh sandbox per episode costs against the Deployment pool.

On the real node (`playground up --real-node --agent-sandbox`, in the test sessions' turn), one namespace per
runtime (runc, gVisor) holds both backends' releases of the tests' small recipe: the pool (`small`, one executor
behind its Service) and agent-sandbox (`claims`, a warm pool of one). A pod of the Ray image, running as the claims
release's Ray account with the env the chart gives the GPU pods, measures from inside (tests/live/episode_job.py
with the reference client, generator/in_image/sandbox_client.py):

- a pool task's round trip through the Service (a fresh connection each, `{"command": "true"}`);
- claim -> first task answered from the warm pool (create the claim, watch it until bound, the same task; the
  release follows, outside the figure);
- the warm pool's refill: from the claim (the `kubectl exec` that makes it starting) until the pool reports its
  sandbox ready again;
- claimed ahead -> first task answered: the reference client's `Ahead`, whose thread claims the next episode's
  sandbox and waits until it is bound while the current episode (3 s here) runs, so an episode starts with no API
  call on its path;
- claim -> first task answered cold (the warm pool set to 0 after the warm rounds: the sandbox is made for the
  claim).

The runtimes are interleaved round by round, so the ratios compare figures measured side by side in one run.
Every address dialed is loopback (the apiserver) or inside the node's network namespace (pods, Services).
"""

from __future__ import annotations

import json
import statistics
import time
from pathlib import Path
from typing import Any

from real_node import RUNTIMES, Node, fmt_s, pool

WARM = 1  # the warm pool's size: one claim at a time here


def _step(node: Node, ns: str, *args: str) -> list[dict[str, Any]]:
    out = node.kubectl("-n", ns, "exec", "ray", "--", "python3", "/episode/episode_job.py", *args, timeout=300)
    return [json.loads(line) for line in out.splitlines() if line.startswith("{")]


def _warm_ready(node: Node, ns: str) -> int:
    wp = json.loads(node.kubectl("-n", ns, "get", "sandboxwarmpools", "claims-sandbox", "-o", "json"))
    return int((wp.get("status") or {}).get("readyReplicas") or 0)


def _until(check: Any, timeout: float, what: str) -> float:
    """Seconds until check() holds, polled every 0.1 s."""
    t0 = time.monotonic()
    while not check():
        if time.monotonic() - t0 > timeout:
            raise TimeoutError(f"{what}: not within {timeout:.0f} s")
        time.sleep(0.1)
    return time.monotonic() - t0


def _setup(node: Node, tmp: Path, state: dict[str, Any], runtime: str) -> tuple[str, str]:
    """The runtime's namespace with both releases and the Ray pod; the pool's Service URL."""
    from real_node_pods import episode_pod

    ns = node.namespace(f"bench-as-{runtime}")
    url = pool(node, tmp, ns, runtime, 1).removesuffix("/task/submit")
    pool(node, tmp, ns, runtime, WARM, release="claims", backend="agent-sandbox")
    _until(lambda: _warm_ready(node, ns) == WARM, 120, "the warm pool ready")
    env = {"DOCKYARD_SANDBOX_WARM_POOL": "claims-sandbox", "DOCKYARD_SANDBOX_TEMPLATE": "claims-sandbox",
           "DOCKYARD_SANDBOX_NAMESPACE": ns, "DOCKYARD_SANDBOX_PORT": "9090"}
    objs = episode_pod(state["real_node"]["images"]["ray"], env, "claims-ray", release="claims")
    node.kubectl("-n", ns, "apply", "-f", "-", stdin=json.dumps({"apiVersion": "v1", "kind": "List", "items": objs}))
    node.ready(ns, "ray")
    _step(node, ns, "pool", url, "1")  # the Ray pod's first connection (NetworkPolicy sync, DNS), not measured
    return ns, url


def section(rounds: int, report: list[str], tmp: Path) -> None:
    from real_node_session import real_node_playground

    with real_node_playground("real-sandbox-", timeout=300, env={"DOCKYARD_REAL_NODE_GPUS": "1"},
                              agent_sandbox=True) as (_state_dir, state, _before):
        node = Node(state)
        spaces = {r: _setup(node, tmp, state, r) for r in RUNTIMES}
        trip: dict[str, list[float]] = {r: [] for r in RUNTIMES}
        warm: dict[str, list[float]] = {r: [] for r in RUNTIMES}
        bound: dict[str, list[float]] = {r: [] for r in RUNTIMES}
        refill: dict[str, list[float]] = {r: [] for r in RUNTIMES}
        cold: dict[str, list[float]] = {r: [] for r in RUNTIMES}
        ahead: dict[str, list[float]] = {r: [] for r in RUNTIMES}
        for i in range(rounds):  # interleaved, the first runtime alternating
            for r in (RUNTIMES if i % 2 == 0 else RUNTIMES[::-1]):
                ns, url = spaces[r]
                trip[r] += [x["round_trip_s"] for x in _step(node, ns, "pool", url, "3")]
                _until(lambda ns=ns: _warm_ready(node, ns) == WARM, 120, "the warm pool ready")
                t0 = time.monotonic()
                episode = _step(node, ns, "timed", "1")[0]
                refill[r].append(time.monotonic() - t0 + _until(lambda ns=ns: _warm_ready(node, ns) == WARM, 120,
                                                               "the warm pool refilled"))
                warm[r].append(episode["first_task_s"])
                bound[r].append(episode["bound_s"])
        for r in RUNTIMES * 2:  # claimed ahead, each episode 3 s of work; twice each, alternating
            ns = spaces[r][0]
            _until(lambda ns=ns: _warm_ready(node, ns) == WARM, 120, "the warm pool ready")
            ahead[r] += [x["first_task_s"] for x in _step(node, ns, "ahead", str(max(1, rounds // 2)), "3")]
        for r in RUNTIMES:  # an empty warm pool: every claim from here on starts cold
            ns, _url = spaces[r]
            pool(node, tmp, ns, r, 0, release="claims", backend="agent-sandbox")
            _until(lambda ns=ns: not json.loads(node.kubectl("-n", ns, "get", "sandboxes.agents.x-k8s.io", "-o",
                                                             "json"))["items"], 120, "the warm pool emptied")
        for i in range(rounds):
            for r in (RUNTIMES if i % 2 == 0 else RUNTIMES[::-1]):
                cold[r].append(_step(node, spaces[r][0], "timed", "1")[0]["first_task_s"])
        for ns, _url in spaces.values():
            node.kubectl("delete", "namespace", ns, "--wait=false")

    def ms(samples: list[float]) -> str:
        return (f"{statistics.median(samples) * 1000:.0f} ms ({min(samples) * 1000:.0f}–"
                f"{max(samples) * 1000:.0f})")

    med = {k: {r: statistics.median(v[r]) for r in RUNTIMES}
           for k, v in (("trip", trip), ("warm", warm), ("cold", cold), ("refill", refill), ("bound", bound),
                        ("ahead", ahead))}
    report += ["## agent-sandbox: a fresh sandbox per episode against the pool (real node)", "",
               (f"One `playground up --real-node --agent-sandbox` (agent-sandbox's controller v1.0.1 with "
                f"--extensions; 2 cores shared by the node, its pods, the controllers and the apiserver). A pod of "
                f"the Ray image, as the release's Ray account, measures from inside with the reference client: "
                f"{rounds} interleaved rounds per runtime, each a pool task round trip ×3 through the Service, "
                f"then one warm claim (warm pool of {WARM}); then {rounds} cold claims (warm pool 0). The claim's "
                "figure is create → watched until bound → the executor's first answer (`{\"command\": \"true\"}`); "
                "the release follows, outside it. Medians and min–max:"), "",
               ("| runtime | pool task round trip | warm claim → bound | warm claim → first task | "
                "claimed ahead → first task | cold claim → first task | warm pool refill |"),
               "| --- | --- | --- | --- | --- | --- | --- |"]
    report += [f"| {r} | {ms(trip[r])} | {ms(bound[r])} | {ms(warm[r])} | {ms(ahead[r])} | {ms(cold[r])} | "
               f"{fmt_s(refill[r])} |" for r in RUNTIMES]
    target = med["warm"]["runc"] / med["trip"]["runc"]
    early = med["ahead"]["runc"] / med["trip"]["runc"]
    report += ["", (f"Warm claim → first task / pool round trip, runc: **{target:.1f}×** (the target was ≤ 1.5×: "
                    + ("met" if target <= 1.5 else "missed") + "); gVisor: "
                    f"{med['warm']['gvisor'] / med['trip']['gvisor']:.1f}×. Claimed ahead (the reference client's "
                    f"`Ahead`: the next episode's sandbox claimed while the current one runs) / pool round trip: "
                    f"runc **{early:.1f}×** (" + ("met" if early <= 1.5 else "missed") + "), gVisor "
                    f"{med['ahead']['gvisor'] / med['trip']['gvisor']:.1f}×. Cold / warm: runc "
                    f"{med['cold']['runc'] / med['warm']['runc']:.1f}×, gVisor "
                    f"{med['cold']['gvisor'] / med['warm']['gvisor']:.1f}×. gVisor / runc, warm claim: "
                    f"{med['warm']['gvisor'] / med['warm']['runc']:.2f}×, cold: "
                    f"{med['cold']['gvisor'] / med['cold']['runc']:.2f}×, refill: "
                    f"{med['refill']['gvisor'] / med['refill']['runc']:.2f}×."), "",
               ("A pool task reuses a running executor: one HTTP exchange. A claim is two writes and a watch on the "
                "API server and a reconcile of the controller before that exchange, so its first task costs the "
                "claim's binding on top; what it buys is an executor no earlier episode has touched. Claiming ahead "
                "moves the binding off the episode's path at the price of one more sandbox held per worker."), ""]
