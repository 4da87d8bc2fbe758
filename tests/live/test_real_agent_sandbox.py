"""sandbox.backend agent-sandbox on the real node: agent-sandbox's real controller (`playground up --agent-sandbox`)
claims sandboxes whose executors run for real, under runc and under gVisor.

The claims are made from inside a pod of the Ray image running as the release's Ray account, with the env the chart
renders for the GPU pods and the reference client (in_image/sandbox_client.py) driven by episode_job.py: the pod
reaches the API server as any in-cluster client does (the `kubernetes` Service, whose endpoint on the real node is
the playground's relay). The real node is the session's (conftest's `sandbox_node`: 1 GPU, the Ray image,
agent-sandbox's controller), in the real node's turn; the host is as it was after `down`.

Every address dialed is loopback (the apiserver) or inside the node's network namespace: pods, Services, the node,
and the stand-in hosts 169.254.169.254 / 10.250.9.9 that exist only as addresses of that namespace's loopback.
"""

from __future__ import annotations

import json
import re
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
import yaml
from live_helpers import cli
from real_node_pods import RECIPE, RUNTIMES, Node, episode_pod, runtime_spec, status_fields
from session_env import wait_for

from generator.playground.node import spec as S

pytestmark = pytest.mark.real_node  # the machine's one real node: hack/suite.py runs this module in a real node part

AGENT = {"backend": "agent-sandbox"}


@pytest.fixture
def node(sandbox_node: Node) -> Node:
    """This module's real node: the session's with agent-sandbox's controller (conftest's `sandbox_node`, not its
    plain `node`)."""
    return sandbox_node


def claim_env(node: Node, capsys, tmp_path: Path) -> dict[str, str]:
    """DOCKYARD_SANDBOX_* exactly as the chart renders them for the GPU pods (the last release's infra, rayjob)."""
    infra = yaml.safe_load(node.infra_path.read_text())
    infra["launch"] = {"mode": "rayjob"}
    path = tmp_path / "rayjob.infra.yaml"
    path.write_text(yaml.safe_dump(infra))
    rc, out, err = cli(capsys, "render", RECIPE, path)
    assert rc == 0, err
    job = next(d for d in yaml.safe_load_all(out) if d and d["kind"] == "RayJob")
    head = job["spec"]["rayClusterSpec"]["headGroupSpec"]["template"]["spec"]["containers"][0]
    return {e["name"]: e["value"] for e in head["env"] if e["name"].startswith("DOCKYARD_SANDBOX_")}


def ray_pod(node: Node, ns: str, env: dict[str, str], account: str = "small-ray", name: str = "ray") -> str:
    """A pod of the Ray image with a Ray pod's labels and account, the claim env, and the client beside the job."""
    node.apply(ns, *episode_pod(node.state["real_node"]["images"]["ray"], env, account, name=name))
    node.ready(ns, name, 120)
    return name


def step(node: Node, ns: str, pod: str, *args: str) -> dict:
    """One step of episode_job.py in `pod`; its JSON line."""
    rc, out = node.exec(ns, pod, "python3", "/episode/episode_job.py", *args, timeout=240)
    assert rc == 0, f"episode_job.py {' '.join(args)}: {out}"
    return json.loads(next(line for line in out.splitlines() if line.startswith("{")))


def admitted(node: Node, ns: str, pod: str, url: str) -> None:
    """Wait until the sandbox's NetworkPolicy admits `pod` (kube-router adds a new pod to the policy's sources
    within seconds of its start)."""
    wait_for(lambda: node.exec(ns, pod, "python3", "/episode/episode_job.py", "task", url, "true")[0] == 0, 30,
             f"{pod} admitted by the claimed sandbox at {url}")


def claimed_sandbox(node: Node, ns: str, claim: str) -> dict:
    """The Sandbox a claim is bound to."""
    name = node.get(ns, "sandboxclaims", claim)["status"]["sandbox"]["name"]
    return node.get(ns, "sandboxes.agents.x-k8s.io", name)


@RUNTIMES
def test_a_ray_pod_claims_a_sandbox_that_answers_and_its_release_refills_the_pool(node, capsys, tmp_path, runtime):
    """From a pod running as the Ray pods' account, with the chart's env and nothing else: claim, bound to the warm
    pool's sandbox, the executor answers a task, release; that sandbox's pod is gone and the pool is back to its
    size. Negative control: the same client as the namespace's default account is refused, so the chart's Role is
    what lets the Ray pods claim."""
    ns = node.namespace("as")
    node.release(capsys, tmp_path, ns, **AGENT, **runtime_spec(runtime))
    warm = node.pool(ns)
    assert len(warm) == 1 and warm[0]["spec"].get("runtimeClassName") == runtime
    env = claim_env(node, capsys, tmp_path)
    assert env == {"DOCKYARD_SANDBOX_WARM_POOL": "small-sandbox", "DOCKYARD_SANDBOX_TEMPLATE": "small-sandbox",
                   "DOCKYARD_SANDBOX_NAMESPACE": ns, "DOCKYARD_SANDBOX_PORT": "9090"}
    ray = ray_pod(node, ns, env)
    got = step(node, ns, ray, "claim")
    assert got["url"] == f"http://{warm[0]['status']['podIP']}:9090", got  # the warm sandbox, not a new pod
    print(f"{runtime or 'runc'}: claim -> bound {got['bound_s']:.2f}s from the Ray pod")
    admitted(node, ns, ray, got["url"])
    answer = step(node, ns, ray, "task", got["url"], "echo $((6 * 7)); exit 3")
    assert answer["exit_code"] == 3 and answer["stdout"] == "42\n", answer
    step(node, ns, ray, "release", got["claim"])
    gone = warm[0]["metadata"]["name"]
    wait_for(lambda: gone not in {p["metadata"]["name"] for p in node.pool(ns)}, 60, "the released sandbox's pod gone")
    wait_for(lambda: node.warm_ready(ns) == 1 and len(node.pool(ns)) == 1, 90, "the warm pool back to one sandbox")
    assert node.get(ns, "sandboxclaims")["items"] == []

    stranger = ray_pod(node, ns, env, account="default", name="not-ray")
    rc, out = node.exec(ns, stranger, "python3", "/episode/episode_job.py", "claim")
    assert rc != 0 and "HTTP 403" in out, out
    node.kubectl("delete", "namespace", ns, "--wait=false")


def test_two_episodes_never_share_a_pod_and_the_next_sees_nothing_of_the_last(node, capsys, tmp_path):
    """Two claims at once on a pool of one: two pods; a file one episode writes is seen by that episode's next
    task (the control: the write happened and persists within the episode), never by the other episode or the
    next claim. Then a claim on an empty pool starts cold, answers, and status counts it."""
    ns = node.namespace("ep")
    node.release(capsys, tmp_path, ns, **AGENT)
    ray = ray_pod(node, ns, claim_env(node, capsys, tmp_path))
    with ThreadPoolExecutor(2) as pool:
        a, b = pool.map(lambda _: step(node, ns, ray, "claim"), range(2))
    assert a["url"] != b["url"]
    pods = {claimed_sandbox(node, ns, c["claim"])["metadata"]["name"] for c in (a, b)}
    assert len(pods) == 2
    admitted(node, ns, ray, a["url"])
    write = step(node, ns, ray, "task", a["url"], 'echo episode-a > "$DOCKYARD_WORK_DIR/left" && echo a > /tmp/left')
    assert write["exit_code"] == 0, write
    look = 'cat "$DOCKYARD_WORK_DIR/left" /tmp/left'
    assert step(node, ns, ray, "task", a["url"], look)["stdout"] == "episode-a\na\n"  # the control
    assert step(node, ns, ray, "task", b["url"], look)["exit_code"] != 0

    rc, out, _ = cli(capsys, "status", "small", "-n", ns, "--kubeconfig", node.kubeconfig)
    held = re.search(r"claimed 2 \(bound 2: warm (\d+), cold (\d+)\)", out)
    assert rc == 0 and held and int(held[1]) + int(held[2]) == 2, out

    step(node, ns, ray, "release", a["claim"])
    c = step(node, ns, ray, "claim")
    assert c["url"] not in (a["url"], b["url"])
    after = step(node, ns, ray, "task", c["url"], look)
    assert after["exit_code"] != 0 and "episode-a" not in after["stdout"], after
    for claim in (b, c):
        step(node, ns, ray, "release", claim["claim"])

    # a claim beyond the warm pool: an empty pool, so the sandbox is made for the claim
    node.release(capsys, tmp_path, ns, **AGENT, replicas=0)
    wait_for(lambda: not node.pool(ns), 90, "the pool's sandboxes gone")
    d = step(node, ns, ray, "claim")
    assert claimed_sandbox(node, ns, d["claim"])["metadata"]["labels"].get("agents.x-k8s.io/launch-type") == "cold"
    assert step(node, ns, ray, "task", d["url"], "echo cold")["stdout"] == "cold\n"
    rc, out, _ = cli(capsys, "status", "small", "-n", ns, "--kubeconfig", node.kubeconfig)
    assert "ready 0/0  claimed 1 (bound 1: warm 0, cold 1)" in out, out
    step(node, ns, ray, "release", d["claim"])
    print(f"warm claim -> bound {a['bound_s']:.2f}s / {b['bound_s']:.2f}s, cold {d['bound_s']:.2f}s")
    node.kubectl("delete", "namespace", ns, "--wait=false")


@RUNTIMES
def test_a_claimed_sandbox_keeps_the_pools_boundary(node, capsys, tmp_path, runtime):
    """The pool's boundary proofs for a claimed sandbox: no capability, no new privileges, seccomp, no
    ServiceAccount token; egress to DNS and exactly the allowed CIDR (the metadata stand-in refused); ingress from
    the release's Ray pods only, not another pod of the namespace nor another namespace. Each has its control: the
    Ray pod holds capabilities and a token, an unprotected pod reaches the metadata stand-in, and the refused pods
    reach each other."""
    ns, other = node.namespace("bd"), node.namespace("bd-other")
    stand_in = node.listener(S.STAND_IN_IP, 80, "stand-in-host")
    metadata = node.listener(S.METADATA_IP, 80, "metadata-stand-in")
    try:
        locked = {"allowEgress": False, "allowedEgressCidrs": [f"{S.STAND_IN_IP}/32"]}
        node.release(capsys, tmp_path, ns, **AGENT, networkPolicy=locked, **runtime_spec(runtime))
        ray = ray_pod(node, ns, claim_env(node, capsys, tmp_path))
        got = step(node, ns, ray, "claim")
        url, ip = got["url"], got["url"].split("//")[1].rsplit(":", 1)[0]
        admitted(node, ns, ray, url)

        def run(command: str) -> dict:
            return step(node, ns, ray, "task", url, command)

        inside = status_fields(run("cat /proc/self/status")["stdout"])
        assert int(inside["CapEff"], 16) == 0 and inside["NoNewPrivs"] == "1" and inside["Seccomp"] == "2", inside
        assert run("mount -t tmpfs none /tmp")["exit_code"] != 0
        assert run("ls /var/run/secrets/kubernetes.io/serviceaccount")["exit_code"] != 0
        rc, out = node.exec(ns, ray, "cat", "/proc/self/status")
        assert rc == 0 and int(status_fields(out)["CapEff"], 16) != 0, out  # control: the Ray pod's own
        rc, out = node.exec(ns, ray, "ls", "/var/run/secrets/kubernetes.io/serviceaccount")
        assert rc == 0 and "token" in out, out

        assert "stand-in-host" in run(f"/executor get http://{S.STAND_IN_IP}/")["stdout"]
        assert run(f"/executor get http://{S.METADATA_IP}/")["exit_code"] != 0
        assert run("nslookup kubernetes.default.svc.cluster.local")["exit_code"] == 0  # DNS stays open
        client, stranger = node.client(ns), node.client(other)
        rc, out = node.exec(ns, client, "/executor", "get", f"http://{S.METADATA_IP}/")
        assert rc == 0 and "metadata-stand-in" in out, out  # control: unprotected, it answers

        assert not node.dial(ns, client, f"{ip}:9090")  # same namespace, not a Ray pod
        assert not node.dial(other, stranger, f"{ip}:9090")
        client_ip = node.get(ns, "pod", client)["status"]["podIP"]
        assert node.dial(other, stranger, f"{client_ip}:8081")  # control: the refused pods reach each other
        assert run("echo still-answers")["stdout"] == "still-answers\n"  # and the Ray pod still reaches it
        step(node, ns, ray, "release", got["claim"])
    finally:
        for proc in (stand_in, metadata):
            proc.kill()
            proc.wait()
    node.kubectl("delete", "namespace", ns, other, "--wait=false")
