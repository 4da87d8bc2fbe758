"""sandbox.backend agent-sandbox on the session playground: agent-sandbox's real controller (`playground up
--agent-sandbox`, --extensions) on loopback only; a release's warm pool fills; a SandboxClaim on it binds to one of
its sandboxes, which the pool replaces; doctor's rows, status's warm pool line; uninstall leaves no Sandbox, claim
or pod. The sandboxes' pods run on the simulated CPU node here (kwok): what the executor does in them, and the
boundaries around them, are the real node's to prove."""

from __future__ import annotations

import json
import re
import time
from pathlib import Path

import pytest
from live_helpers import RECIPE, cli, infra_variant, kube, listening_sockets
from session_env import wait_for

pytestmark = pytest.mark.timeout(240)

EXT = ("extensions.agents.x-k8s.io", "v1beta1")
CORE = ("agents.x-k8s.io", "v1beta1")


def _state(playground) -> dict:
    return json.loads((playground.state_dir / "state.json").read_text())


def _custom(playground):
    from kubernetes import client

    return client.CustomObjectsApi(playground.api_client())


def _agent_infra(tmp_path: Path, replicas: int = 2) -> Path:
    def change(data: dict) -> None:
        data["launch"] = {"mode": "attach", "clusterName": "shared"}  # the sandboxes only: no GPU fleet
        data.pop("kuberay", None)  # nor its keys (attach mode refuses them)
        data["sandbox"].update(backend="agent-sandbox", replicas=replicas)

    return infra_variant(tmp_path, "agent.infra.yaml", change)


def _pool(playground, ns: str) -> dict:
    return _custom(playground).get_namespaced_custom_object(*EXT, ns, "sandboxwarmpools", "small-sandbox")


def _claims(playground, ns: str) -> list[dict]:
    return _custom(playground).list_namespaced_custom_object(*EXT, ns, "sandboxclaims")["items"]


def _sandbox_pods(playground, ns: str) -> dict[str, dict]:
    from kubernetes import client

    pods = client.CoreV1Api(playground.api_client()).list_namespaced_pod(
        ns, label_selector="app.kubernetes.io/instance=small,app.kubernetes.io/component=sandbox").items
    return {p.metadata.name: p for p in pods if p.metadata.deletion_timestamp is None}


def _claim(playground, ns: str, name: str) -> dict:
    body = {"apiVersion": "extensions.agents.x-k8s.io/v1beta1", "kind": "SandboxClaim",
            "metadata": {"name": name}, "spec": {"warmPoolRef": {"name": "small-sandbox"}}}
    return _custom(playground).create_namespaced_custom_object(*EXT, ns, "sandboxclaims", body)


def _bound(playground, ns: str, name: str) -> dict | None:
    claim = _custom(playground).get_namespaced_custom_object(*EXT, ns, "sandboxclaims", name)
    st = claim.get("status") or {}
    ready = any(c.get("type") == "Ready" and c.get("status") == "True" for c in st.get("conditions") or [])
    return claim if ready and (st.get("sandbox") or {}).get("podIPs") else None


def test_the_controller_runs_on_loopback_only_with_its_extensions(playground):
    state = _state(playground)
    assert state.get("agent_sandbox") is True
    pid = playground.pids()["agent-sandbox"]
    cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    assert Path(f"/proc/{pid}/exe").resolve().name == "agent-sandbox-controller"
    assert b"--extensions" in cmdline
    listening = listening_sockets(pid)
    assert listening == [("127.0.0.1", state["ports"]["agent_sandbox_probe"])], listening  # no metrics server


def test_warm_pool_fills_a_claim_binds_and_uninstall_leaves_nothing(playground, namespace, capsys, tmp_path):
    kc = playground.kubeconfig
    infra = _agent_infra(tmp_path)
    rc, out, err = cli(capsys, "doctor", RECIPE, infra, "-n", namespace, "--kubeconfig", kc)
    assert "✓ agent-sandbox CRDs" in out and "✓ agent-sandbox controller" in out, out + err

    rc, out, err = cli(capsys, "run", RECIPE, infra, "-n", namespace, "--kubeconfig", kc, "--wait", "--timeout", 120)
    assert rc == 0, out + err
    t0 = time.monotonic()
    wait_for(lambda: (_pool(playground, namespace).get("status") or {}).get("readyReplicas") == 2, 60,
             "the warm pool's 2 sandboxes ready")
    warm = _sandbox_pods(playground, namespace)
    assert len(warm) == 2, list(warm)

    _claim(playground, namespace, "episode-1")
    claim = wait_for(lambda: _bound(playground, namespace, "episode-1"), 60, "the claim bound")
    print(f"warm pool full to a claim bound: {time.monotonic() - t0:.1f}s")
    sandbox = claim["status"]["sandbox"]["name"]
    taken = [p for p in warm.values() if p.status.pod_ip in claim["status"]["sandbox"]["podIPs"]]
    assert len(taken) == 1, (claim["status"], [p.status.pod_ip for p in warm.values()])  # a warm one, not a new pod
    sb = _custom(playground).get_namespaced_custom_object(*CORE, namespace, "sandboxes", sandbox)
    assert sb["metadata"]["labels"].get("agents.x-k8s.io/launch-type") == "warm"
    # the pool makes a new sandbox in its place
    wait_for(lambda: (_pool(playground, namespace).get("status") or {}).get("readyReplicas") == 2
             and len(_sandbox_pods(playground, namespace)) == 3, 60, "the warm pool refilled beside the claimed one")

    rc, out, err = cli(capsys, "status", "small", "-n", namespace, "--kubeconfig", kc)
    assert rc == 0, err
    assert "warm pool  small-sandbox  ready 2/2  claimed 1 (bound 1: warm 1, cold 0)" in out, out

    rc, out, err = cli(capsys, "uninstall", "small", "-n", namespace, "--kubeconfig", kc, "--timeout", 90)
    assert rc == 0, out + err
    assert "deleted SandboxClaim episode-1" in err and "nothing left" in out
    assert _claims(playground, namespace) == []
    assert _custom(playground).list_namespaced_custom_object(*CORE, namespace, "sandboxes")["items"] == []
    assert _sandbox_pods(playground, namespace) == {}
    from generator.live.changes.teardown import leftovers

    assert leftovers(kube(playground), "small", namespace) == []


def _launch_types(playground, ns: str, claims: dict[str, dict]) -> list[str]:
    names = [c["status"]["sandbox"]["name"] for c in claims.values()]
    return sorted(_custom(playground).get_namespaced_custom_object(*CORE, ns, "sandboxes", n)["metadata"]["labels"]
                  .get("agents.x-k8s.io/launch-type") for n in names)


def test_claims_beyond_the_warm_pool_bind_to_pods_of_their_own(playground, namespace, capsys, tmp_path):
    """Three claims at once on a pool of one: each binds, no two to one sandbox or pod. The controller adopts a
    refill sandbox of the pool as soon as it exists (labelled warm), so which claims start cold depends on timing;
    with an empty pool (replicas 0) every claim starts cold, and status says so."""
    kc = playground.kubeconfig
    rc, out, err = cli(capsys, "run", RECIPE, _agent_infra(tmp_path, replicas=1), "-n", namespace,
                       "--kubeconfig", kc, "--wait", "--timeout", 120)
    assert rc == 0, out + err
    wait_for(lambda: (_pool(playground, namespace).get("status") or {}).get("readyReplicas") == 1, 60, "pool ready")
    for name in ("a", "b", "c"):
        _claim(playground, namespace, name)
    claims = {n: wait_for(lambda n=n: _bound(playground, namespace, n), 90, f"claim {n} bound") for n in "abc"}
    assert len({c["status"]["sandbox"]["name"] for c in claims.values()}) == 3
    assert len({c["status"]["sandbox"]["podIPs"][0] for c in claims.values()}) == 3
    assert len(_launch_types(playground, namespace, claims)) == 3
    rc, out, _ = cli(capsys, "status", "small", "-n", namespace, "--kubeconfig", kc)
    assert "claimed 3 (bound 3: " in out, out

    rc, out, err = cli(capsys, "run", RECIPE, _agent_infra(tmp_path, replicas=0), "-n", namespace,
                       "--kubeconfig", kc, "--wait", "--timeout", 120)
    assert rc == 0, out + err
    _claim(playground, namespace, "d")
    cold = {"d": wait_for(lambda: _bound(playground, namespace, "d"), 90, "claim d bound")}
    assert _launch_types(playground, namespace, cold) == ["cold"]
    rc, out, _ = cli(capsys, "status", "small", "-n", namespace, "--kubeconfig", kc)
    found = re.search(r"ready 0/0  claimed 4 \(bound 4: warm (\d+), cold (\d+)\)", out)
    assert found and int(found[1]) + int(found[2]) == 4 and int(found[2]) >= 1, out

    # negative control of the binding: a claim on a pool that does not exist never binds
    _custom(playground).create_namespaced_custom_object(*EXT, namespace, "sandboxclaims", {
        "apiVersion": "extensions.agents.x-k8s.io/v1beta1", "kind": "SandboxClaim", "metadata": {"name": "nowhere"},
        "spec": {"warmPoolRef": {"name": "no-such-pool"}}})
    time.sleep(5)
    assert _bound(playground, namespace, "nowhere") is None
    rc, out, err = cli(capsys, "uninstall", "small", "-n", namespace, "--kubeconfig", kc, "--timeout", 90)
    assert rc == 0, out + err
    assert {c["metadata"]["name"] for c in _claims(playground, namespace)} == {"nowhere"}  # not the release's


def _token(playground, ns: str, account: str) -> str:
    from kubernetes import client

    req = client.AuthenticationV1TokenRequest(spec=client.V1TokenRequestSpec(audiences=[], expiration_seconds=600))
    return client.CoreV1Api(playground.api_client()).create_namespaced_service_account_token(account, ns, req) \
        .status.token


def test_the_reference_client_claims_with_the_ray_account_and_nothing_more(playground, namespace, capsys, tmp_path):
    """in_image/sandbox_client.py with the token of the Ray pods' account (<release>-ray) and the chart's Role:
    claim, bound, release. Negative controls: the sandbox pods' account cannot claim, and the Ray account cannot
    list claims (the Role grants create, get, watch and delete only). The executor's answer is the real node's
    to prove: the simulated node runs no process."""
    from generator.in_image.sandbox_client import ClaimError, Claims

    rc, out, err = cli(capsys, "run", RECIPE, _agent_infra(tmp_path), "-n", namespace, "--kubeconfig",
                       playground.kubeconfig, "--wait", "--timeout", 120)
    assert rc == 0, out + err
    ca = _state(playground)["pki"]["ca_crt"]
    claims = Claims("small-sandbox", namespace, 9090, playground.server, _token(playground, namespace, "small-ray"), ca)
    name = claims.claim()
    executor = claims.wait_bound(name, 60)
    assert executor.url.startswith("http://127.") and executor.url.endswith(":9090")
    claims.release(name)
    wait_for(lambda: name not in {c["metadata"]["name"] for c in _claims(playground, namespace)}, 30, "claim gone")
    sandbox = Claims("small-sandbox", namespace, 9090, playground.server,
                     _token(playground, namespace, "small-sandbox"), ca)
    with pytest.raises(ClaimError, match="HTTP 403"):
        sandbox.claim()
    with pytest.raises(ClaimError, match="HTTP 403"):
        claims._call("GET", f"/apis/extensions.agents.x-k8s.io/v1beta1/namespaces/{namespace}/sandboxclaims")
    rc, out, err = cli(capsys, "uninstall", "small", "-n", namespace, "--kubeconfig", playground.kubeconfig,
                       "--timeout", 90)
    assert rc == 0, out + err


def test_a_claim_nobody_releases_ends_at_its_lease(playground, namespace, capsys, tmp_path):
    """A Ray worker killed mid-episode never releases its claim: the reference client's lease (spec.lifecycle,
    policy Delete) ends it anyway, and its sandbox's pod with it. The control, made at the same moment: a claim
    with the default hour's lease is still bound."""
    from generator.in_image.sandbox_client import Claims

    rc, out, err = cli(capsys, "run", RECIPE, _agent_infra(tmp_path, replicas=2), "-n", namespace, "--kubeconfig",
                       playground.kubeconfig, "--wait", "--timeout", 120)
    assert rc == 0, out + err
    ca, token = _state(playground)["pki"]["ca_crt"], _token(playground, namespace, "small-ray")
    short = Claims("small-sandbox", namespace, 9090, playground.server, token, ca, lease=15)
    hour = Claims("small-sandbox", namespace, 9090, playground.server, token, ca)
    names = {"short": short.claim(), "hour": hour.claim()}
    made = _custom(playground).get_namespaced_custom_object(*EXT, namespace, "sandboxclaims", names["short"])
    assert made["spec"]["lifecycle"]["shutdownPolicy"] == "Delete"
    bound = {k: _bound_ip(playground, namespace, n) for k, n in names.items()}  # both bind well within 15 s
    wait_for(lambda: names["short"] not in {c["metadata"]["name"] for c in _claims(playground, namespace)}, 60,
             "the short lease's claim deleted by the controller")
    wait_for(lambda: bound["short"] not in {p.status.pod_ip for p in _sandbox_pods(playground, namespace).values()},
             60, "the expired claim's pod gone")
    assert _bound(playground, namespace, names["hour"]) is not None
    assert bound["hour"] in {p.status.pod_ip for p in _sandbox_pods(playground, namespace).values()}
    hour.release(names["hour"])
    rc, out, err = cli(capsys, "uninstall", "small", "-n", namespace, "--kubeconfig", playground.kubeconfig,
                       "--timeout", 90)
    assert rc == 0, out + err


def _bound_ip(playground, ns: str, name: str) -> str:
    return wait_for(lambda: _bound(playground, ns, name), 60, f"claim {name} bound")["status"]["sandbox"]["podIPs"][0]
