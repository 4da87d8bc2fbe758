"""doctor's fabric rows (generator/live/doctor/fabric.py): the profile's device beside the GPUs for the whole
gang, against the playground's own Node objects (`playground up --gpu-node-devices`); what a profile asks of
PodSecurity. The Multus rows and the admission row run against a real apiserver: tests/live/test_live_fabric.py."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from test_doctor_placement import room_of

from generator.live.doctor import fabric
from generator.live.doctor.rows import FAIL, OK, WARN
from generator.playground import nodes

POOL = room_of(nodes.manifests(nodes.Shape(gpu_nodes=2, gpu_node_devices="rdma/ib=2,vpc.amazonaws.com/efa=4"),
                               "v1.37.2"))
BARE = room_of(nodes.manifests(nodes.Shape(gpu_nodes=2), "v1.37.2"))


def _cluster(trainer=1, inference=1, gpus=8):
    return SimpleNamespace(trainer=SimpleNamespace(nodes=trainer, gpusPerNode=gpus),
                           inference=SimpleNamespace(nodes=inference, gpusPerNode=gpus))


def rdma(per_pod=2, name="rdma/ib"):
    return {"profile": "rdma", "rdma": {"resourceName": name, "perPod": per_pod}}


@pytest.mark.parametrize("network", [None, {"profile": "tcp"}, {"profile": "hostNetwork"}])
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
