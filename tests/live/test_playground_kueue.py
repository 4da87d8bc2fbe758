"""The session playground's Kueue (generator/playground/kueue.py): the real controller manager, its
webhooks registered by URL on 127.0.0.1, loopback listeners only, its fixed metrics-certificate path provided in
a mount namespace of its own (the host's /etc untouched), and the playground's queue Active."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from live_helpers import listening_sockets

from generator.playground import kueue as kq

pytestmark = pytest.mark.timeout(60)


def _state(playground) -> dict:
    return json.loads((playground.state_dir / "state.json").read_text())


def test_kueue_runs_on_loopback_only_with_its_webhooks_by_url(playground, k8s):
    from kubernetes import client

    state = _state(playground)
    assert state.get("kueue") is True
    pid = playground.pids()["kueue"]  # the process now (state.json records its supervisor)
    assert Path(f"/proc/{pid}/exe").resolve().name == "kueue"
    ports = state["ports"]
    listening = listening_sockets(pid)
    assert sorted(p for _, p in listening) == sorted([ports["kueue_webhook"], ports["kueue_probe"]]), listening
    assert {a for a, _ in listening} == {"127.0.0.1"}, listening  # nothing else

    adm = client.AdmissionregistrationV1Api(k8s)
    hooks = [*adm.read_mutating_webhook_configuration(kq.WEBHOOKS[0]).webhooks,
             *adm.read_validating_webhook_configuration(kq.WEBHOOKS[1]).webhooks]
    prefix = f"https://127.0.0.1:{ports['kueue_webhook']}/"
    assert hooks and all(h.client_config.url.startswith(prefix) and h.client_config.service is None
                         and h.client_config.ca_bundle for h in hooks)
    resources = {r for h in hooks for rule in h.rules for r in rule.resources}
    assert {"rayjobs", "rayclusters", "clusterqueues", "workloads", "resourceflavors"} <= resources
    assert not resources & {"pods", "jobs", "deployments", "statefulsets", "rayservices"}, resources


def test_the_metrics_certificates_live_in_kueues_own_mount_namespace(playground):
    """The host's /etc has no kueue folder, while the process sees the playground's certificate at the fixed path;
    negative control: the same binary and configuration outside that namespace exits on the missing path."""
    state = _state(playground)
    pid = playground.pids()["kueue"]
    assert not Path("/etc/kueue").exists()
    inside = Path(f"/proc/{pid}/root/etc/kueue/metrics/certs/tls.crt")
    assert inside.read_bytes() == Path(state["pki"]["serving_crt"]).read_bytes()
    assert os.readlink(f"/proc/{pid}/ns/mnt") != os.readlink("/proc/self/ns/mnt")

    binary = Path(f"/proc/{pid}/exe").resolve()
    bare = subprocess.run([str(binary), f"--config={kq.folder(playground.state_dir) / 'config.yaml'}"],
                          env={"KUBECONFIG": str(playground.state_dir / "kubeconfigs" / "kueue.kubeconfig")},
                          capture_output=True, text=True, timeout=30)
    assert bare.returncode != 0
    assert "Unable to initialize metrics certificate watcher" in bare.stdout + bare.stderr
    assert not Path("/etc/kueue").exists()


def test_the_playground_queue_covers_the_nodes(playground, k8s):
    from kubernetes import client

    api = client.CustomObjectsApi(k8s)
    cq = api.get_cluster_custom_object("kueue.x-k8s.io", "v1beta2", "clusterqueues", kq.CLUSTER_QUEUE)
    lq = api.get_namespaced_custom_object("kueue.x-k8s.io", "v1beta2", kq.NAMESPACE, "localqueues", kq.LOCAL_QUEUE)
    for obj in (cq, lq):
        assert {c["type"]: c["status"] for c in obj["status"]["conditions"]}["Active"] == "True"
    quota = {r["name"]: r["nominalQuota"] for r in cq["spec"]["resourceGroups"][0]["flavors"][0]["resources"]}
    gpus = playground.shape["gpu_nodes"] * playground.gpus_per_node
    assert quota["nvidia.com/gpu"] == str(gpus)
    assert lq["spec"]["clusterQueue"] == kq.CLUSTER_QUEUE
