"""snapshot.take and `status` on answers recorded from the playground (tests/unit/recorded, `make record`):
release small in namespace rec, head, sandbox and the trainer running, the inference worker Pending because
the one GPU node's 8 GPUs are taken."""

from __future__ import annotations

import json

import pytest

from generator.cli import main
from generator.live.client.kube import Kube
from generator.live.helm.records import release_records
from generator.live.state.pods import pod_reason
from generator.live.state.snapshot import take
from tests.support.fake_cluster import install

RELEASE, NS = "small", "rec"
UNSCHEDULABLE = "Unschedulable: 0/2 nodes are available: 1 Insufficient nvidia.com/gpu"


@pytest.fixture
def fake(monkeypatch, tmp_path):
    return install(monkeypatch, tmp_path, "status_pending")


def test_snapshot_fleets_and_reasons(fake):
    kube = Kube()
    snap = take(kube, RELEASE, NS)
    # the fixed cost the module promises, whatever the pod count: every fleet has its pods (the pending inference
    # worker says why it is not ready), so neither the Warning events nor the ReplicaSets are read
    assert snap.calls == 5 == kube.calls
    assert not [r for r in fake.requests if r[1].endswith(("/events", "/replicasets"))]
    assert (snap.revision, snap.release_status, snap.mode) == (1, "deployed", "rayjob")
    assert snap.rayjob["deploymentStatus"] == "Initializing" and snap.rayjob["cluster"] == snap.raycluster["name"]
    fleets = {f.fleet: (f.ready, f.desired, f.gpus_requested, f.gpus_allocated) for f in snap.fleets.values()}
    assert fleets == {"head": (1, 1, 0, 0), "trainer": (1, 1, 8, 8), "inference": (0, 1, 8, 0),
                      "sandbox": (2, 2, 0, 0), "submitter": (0, 0, 0, 0)}
    assert snap.fleets["trainer"].nodes == ["gpu-node-0"] and snap.fleets["inference"].nodes == []
    assert snap.fleets["inference"].reason.startswith(UNSCHEDULABLE)
    assert "preemption" not in snap.fleets["inference"].reason  # the scheduler's preemption tail is cut
    assert not snap.ready() and snap.failure() is None
    assert snap.not_ready_reasons() == [f"inference 0/1: {snap.fleets['inference'].reason}"]
    assert f"inference 0/1 ({UNSCHEDULABLE}" in snap.summary_line()


def _answer(fake, path: str) -> list[dict]:
    """The recorded answers to GET `path` (each answer's body, to edit in place)."""
    return [ex["body"] for key, answers in fake.answers.items() if key[1] == path for ex in answers]


def test_a_fleet_missing_pods_costs_the_events_and_the_replicasets_that_say_why(fake):
    """A sandbox replica the ReplicaSet could not create (no pod to explain it): the Warning events are read, and
    the ReplicaSets that name the sandbox's owner; the newest Warning event of that owner is the fleet's reason."""
    for body in _answer(fake, f"/api/v1/namespaces/{NS}/pods"):
        sandbox = [p for p in body["items"] if p["metadata"]["labels"].get("dockyard.dev/fleet") == "sandbox"]
        body["items"].remove(sandbox[0])
    [rs] = _answer(fake, f"/apis/apps/v1/namespaces/{NS}/replicasets")[0]["items"]
    quota = {"metadata": {"name": "q", "creationTimestamp": "2026-12-04T22:43:00Z"}, "type": "Warning",
             "reason": "FailedCreate", "message": 'pods "x" is forbidden: exceeded quota: hard',
             "lastTimestamp": "2026-12-04T22:43:00Z",
             "involvedObject": {"kind": "ReplicaSet", "name": rs["metadata"]["name"]}}
    for body in _answer(fake, f"/api/v1/namespaces/{NS}/events"):
        body["items"].append(quota)
    kube = Kube()
    snap = take(kube, RELEASE, NS)
    assert snap.calls == 7 == kube.calls
    assert snap.fleets["sandbox"].reason == 'FailedCreate: pods "x" is forbidden: exceeded quota: hard'
    asked = [r[1] for r in fake.requests]
    assert asked[-2:] == [f"/apis/apps/v1/namespaces/{NS}/replicasets", f"/api/v1/namespaces/{NS}/events"]


def test_a_ray_fleet_missing_pods_costs_the_events_alone(fake):
    """A worker KubeRay did not create: the RayCluster's Warning events say why; no ReplicaSet is asked for."""
    for body in _answer(fake, f"/api/v1/namespaces/{NS}/pods"):
        body["items"] = [p for p in body["items"] if p["metadata"]["labels"].get("dockyard.dev/fleet") != "inference"]
    kube = Kube()
    snap = take(kube, RELEASE, NS)
    assert snap.calls == 6 == kube.calls
    assert not [r for r in fake.requests if r[1].endswith("/replicasets")]
    assert snap.fleets["inference"].reason == "1 pod(s) not created yet"  # the recording has no event of it


def test_pod_reason_of_each_recorded_pod(fake):
    pods = Kube().list(f"/api/v1/namespaces/{NS}/pods", label_selector=f"app.kubernetes.io/instance={RELEASE}")
    reasons = {p["metadata"]["labels"]["dockyard.dev/fleet"]: pod_reason(p) for p in pods}
    assert reasons["inference"].startswith(UNSCHEDULABLE)
    assert reasons["trainer"] == reasons["head"] == reasons["sandbox"] == "Running"


def test_release_records_read_the_helm_secret(fake):
    from generator.live.helm.ownership import foreign_chart

    records = release_records(Kube(), RELEASE, NS)
    assert [r["metadata"]["labels"]["version"] for r in records] == ["1"]
    assert foreign_chart(records[-1]) is None  # made by this chart (the trimmed record keeps chart.metadata)


def test_status_finds_the_only_release_and_prints_the_reason(fake, capsys):
    assert main(["status"]) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert lines[0].startswith(f"release    {RELEASE}  namespace {NS}  revision 1  deployed")
    assert "mode       rayjob  ready: no" in lines
    # the pool's rollout counts: ready, not yet available (minReadySeconds); no HPA rendered, so none read
    assert "pool       sandbox  desired 2  updated 2  ready 2  available 0" in lines
    assert not [r for r in fake.requests if "horizontalpodautoscalers" in r[1]] and "hpa " not in out
    row = next(line for line in lines if line.startswith("inference"))
    assert row.split()[1:3] == ["0/1", "8/0"] and UNSCHEDULABLE in row
    assert next(line for line in lines if line.startswith("trainer")).split()[1:4] == ["1/1", "8/8", "gpu-node-0"]
    assert ("GET", "/api/v1/secrets", {"labelSelector": "owner=helm"}) in fake.requests  # looked everywhere


def test_status_json(fake, capsys):
    assert main(["status", RELEASE, "-n", NS, "-o", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["ready"] is False and doc["namespace_deleting"] is None
    inference = next(f for f in doc["fleets"] if f["fleet"] == "inference")
    assert inference["ready_all"] is False and inference["reason"].startswith(UNSCHEDULABLE)
    assert not fake.unmatched


def test_status_in_a_namespace_being_deleted_says_what_holds_it(monkeypatch, tmp_path, capsys):
    install(monkeypatch, tmp_path, "terminating")
    why = Kube().namespace_deletion("rec-gone")
    assert why.startswith("being deleted (since 20") and why.endswith(
        "Some content in the namespace has finalizers remaining: dockyard.dev/hold in 1 resource instances")
    assert main(["status", RELEASE, "-n", "rec-gone"]) == 1
    err = capsys.readouterr().err
    assert err == f"error: release {RELEASE} not found in namespace rec-gone; namespace rec-gone is {why}\n"


def test_status_with_plain_credentials_never_imports_the_kubernetes_client(tmp_path):
    """The client's import alone (~0.26 s) is most of what `status` used to cost: with a kubeconfig of plain
    credentials (the fake's: a token) the whole verb runs on the standard library's transport, and the table of
    tools (the build pins, ~10 ms of imports) is not read either. In a process of
    its own, with only Transport.send answered by the recording (the fake's own module imports urllib3, not
    the client)."""
    import subprocess
    import sys
    from pathlib import Path

    script = f"""
import sys
sys.path.insert(0, {str(Path(__file__).resolve().parents[4])!r})  # the clone: tests.support
import os
from tests.support.fake_cluster import FakeCluster, write_kubeconfig
from pathlib import Path
from generator.live.client.transport import Transport
fake = FakeCluster("status_pending")
Transport.send = lambda self, *a: fake.send(*a)
os.environ["KUBECONFIG"] = str(write_kubeconfig(Path({str(tmp_path)!r})))
from generator.cli import main
code = main(["status", "{RELEASE}", "-n", "{NS}", *sys.argv[1:]])
print("exit", code, "client imported", "kubernetes" in sys.modules, "requests", len(fake.requests),
      "tool table imported", "generator.pinned_tools" in sys.modules)
"""

    def run(*flags: str) -> str:
        out = subprocess.run([sys.executable, "-c", script, *flags], capture_output=True, text=True, timeout=60)
        return out.stdout.strip().splitlines()[-1] + out.stderr

    # the recording's head has no endpoints yet: the progress read answers 503, which is a reason to say, not an
    # error to build (a refusal elsewhere would import the client's ApiException, on that path only)
    # the release record, the snapshot's five lists (every fleet has its pods: no events, no ReplicaSets), the
    # namespace, and the progress line's one
    assert run("--no-progress") == "exit 0 client imported False requests 6 tool table imported False"
    assert run() == "exit 0 client imported False requests 7 tool table imported False"
