"""doctor's fabric rows (generator/live/doctor/fabric.py): the profile's device beside the GPUs for the whole
gang, against the playground's own Node objects (`playground up --gpu-node-devices`); what a profile asks of
PodSecurity. The Multus rows and the admission row run against a real apiserver: tests/live/test_live_fabric.py."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from generator.live.doctor import fabric
from generator.live.doctor.rows import FAIL, OK, WARN
from generator.playground import nodes
from tests.support.doctor import room_of

POOL = room_of(nodes.manifests(nodes.Shape(gpu_nodes=2, gpu_node_devices="rdma/ib=2,vpc.amazonaws.com/efa=4"),
                               "v1.37.2"))
BARE = room_of(nodes.manifests(nodes.Shape(gpu_nodes=2), "v1.37.2"))


def _cluster(trainer=1, inference=1, gpus=8):
    return SimpleNamespace(trainer=SimpleNamespace(nodes=trainer, gpusPerNode=gpus),
                           inference=SimpleNamespace(nodes=inference, gpusPerNode=gpus))


def rdma(per_pod=2, name="rdma/ib"):
    return {"profile": "rdma", "rdma": {"resourceName": name, "perPod": per_pod}}


@pytest.mark.parametrize("network", [None, {"profile": "tcp"}])
def test_no_row_without_a_device(network):
    assert fabric.device_rows(POOL, _cluster(), network) == []


def test_the_gang_finds_its_devices():
    (row,) = fabric.device_rows(POOL, _cluster(), rdma())
    assert (row.mark, row.check) == (OK, "fabric devices")
    assert row.detail == "2/2 worker pods find 2 rdma/ib beside their GPUs (free); 2 of 2 GPU node(s) advertise rdma/ib"
    (row,) = fabric.device_rows(POOL, _cluster(), {"profile": "efa", "efa": {"perPod": 4}})
    assert (row.mark, row.check) == (OK, "fabric devices")


@pytest.mark.parametrize("room, network, placed", [
    (BARE, rdma(1), 0),  # no node advertises it
    (POOL, rdma(3), 0),  # more per pod than a node has
    (POOL, rdma(1, "rdma/shared_device_a"), 0),  # another device plugin's resource
])
def test_a_gang_without_its_devices_is_refused_with_the_shortfall(room, network, placed):
    (row,) = fabric.device_rows(room, _cluster(), network)
    assert row.mark == FAIL and row.detail.startswith(f"{placed}/2 worker pods"), row
    assert row.remedy.startswith("2 worker pod(s) short: run the fabric's device plugin on the GPU nodes"), row


def test_devices_are_counted_with_the_gpus_a_node_has_left():
    """Two 4-GPU pods share an 8-GPU node with 2 rdma/ib when each asks for 1, not when each asks for 2."""
    assert fabric.place_pairs({"n": (8.0, 2.0)}, [(4.0, 1.0), (4.0, 1.0)]) == 2
    assert fabric.place_pairs({"n": (8.0, 2.0)}, [(4.0, 2.0), (4.0, 2.0)]) == 1
    (row,) = fabric.device_rows(POOL, _cluster(trainer=2, inference=2, gpus=4), rdma(1))
    assert row.mark == OK and row.detail.startswith("4/4"), row
    (row,) = fabric.device_rows(POOL, _cluster(trainer=2, inference=2, gpus=4), rdma(2))
    assert row.mark == FAIL and row.detail.startswith("2/4"), row


def test_a_fit_first_fit_misses_is_found():
    """First fit, biggest first, puts the 8-GPU pod on A and then cannot place both 4-GPU pods; B takes the 8 and A
    the two 4s. Refusing that gang would make `run --wait` refuse a job that runs."""
    free = {"A": (8.0, 2.0), "B": (12.0, 1.0)}
    assert fabric.place_pairs(free, [(8.0, 1.0), (4.0, 1.0), (4.0, 1.0)]) == 3
    assert fabric.place_pairs(free, [(8.0, 1.0), (8.0, 1.0), (4.0, 1.0)]) == 2  # the control: this one cannot fit
    assert fabric.place_pairs({f"n{i}": (8.0, 1.0) for i in range(40)}, [(8.0, 2.0)] * 30, budget=50) is not None


def test_host_network_takes_a_gpu_node_per_pod():
    """One 16-GPU node holds two 8-GPU pods on the pod network, never under hostNetwork (one pod per node)."""
    big = room_of(nodes.manifests(nodes.Shape(gpu_nodes=1, gpus_per_node=16), "v1.37.2"))
    (row,) = fabric.device_rows(big, _cluster(), {"profile": "hostNetwork"})
    assert (row.mark, row.check) == (FAIL, "fabric: host network") and row.detail.startswith("1/2"), row
    assert row.remedy.startswith("1 pod(s) short"), row
    (row,) = fabric.device_rows(POOL, _cluster(), {"profile": "hostNetwork"})
    assert row.mark == OK and row.detail.startswith("2/2"), row


def test_host_network_beside_the_sandbox_policy_is_a_warning():
    values = {"kuberay": {"network": {"profile": "hostNetwork"}}, "sandbox": {"networkPolicy": {"enabled": True}}}
    (row,) = fabric.network_policy_rows(values)
    assert row.mark == WARN and "sandbox.networkPolicy.enabled: false" in row.remedy
    assert fabric.network_policy_rows({**values, "sandbox": {"networkPolicy": {"enabled": False}}}) == []
    assert fabric.network_policy_rows({**values, "kuberay": {"network": {"profile": "rdma"}}}) == []


def test_devices_other_pods_use_are_not_free():
    room = room_of(nodes.manifests(nodes.Shape(gpu_nodes=2, gpu_node_devices="rdma/ib=2"), "v1.37.2"))
    room.used["gpu-node-0"]["rdma/ib"] = 2.0
    (row,) = fabric.device_rows(room, _cluster(), rdma(2))
    assert row.mark == FAIL and row.detail.startswith("1/2"), row
    (row,) = fabric.device_rows(room, _cluster(), rdma(2), empty=True)  # what `run --wait` refuses: never fits
    assert row.mark == OK, row


def test_nodes_rbac_forbids_listing_is_a_warning():
    room = room_of([])
    room.nodes_denied = True
    (row,) = fabric.device_rows(room, _cluster(), rdma())
    assert row.mark == WARN and "cannot list nodes" in row.detail


def test_the_admission_remedy_names_what_the_profile_asks():
    remedy = fabric.admission_remedy(rdma())
    assert "adds IPC_LOCK" in remedy and "enforce=privileged" in remedy
    assert "host's network" in fabric.admission_remedy({"profile": "hostNetwork"})
    assert fabric.admission_remedy({"profile": "efa", "efa": {"perPod": 1}}) == ""
    assert fabric.admission_remedy(None) == ""
