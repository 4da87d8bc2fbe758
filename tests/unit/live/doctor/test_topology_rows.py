"""doctor's launch.topology rows against Kueue's objects and a cluster's nodes, as data: a ClusterQueue whose flavor
names a Topology, the level among its levels, and whether a domain of the level holds the gang (ever, and now)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from kubernetes.client.exceptions import ApiException

from generator.live.doctor import topology_rows
from generator.live.doctor.capacity import Room
from generator.live.doctor.rows import FAIL, OK, WARN, Namespace

API = "/apis/kueue.x-k8s.io/v1beta2"
BLOCK, RACK, HOST = "cloud.provider.com/topology-block", "cloud.provider.com/topology-rack", "kubernetes.io/hostname"
FLAVOR = {"metadata": {"name": "gpu-topology"},
          "spec": {"nodeLabels": {"nvidia.com/gpu.present": "true"}, "topologyName": "net"}}
TOPOLOGY = {"metadata": {"name": "net"}, "spec": {"levels": [{"nodeLabel": BLOCK}, {"nodeLabel": RACK},
                                                             {"nodeLabel": HOST}]}}


def objects(**over):
    out = {
        f"{API}/namespaces/ns/localqueues/q": {"spec": {"clusterQueue": "cq"}},
        f"{API}/clusterqueues/cq": {"metadata": {"name": "cq"}, "spec": {"resourceGroups": [
            {"flavors": [{"name": "gpu-topology"}, {"name": "default-flavor"}]}]}},
        f"{API}/resourceflavors/gpu-topology": FLAVOR,
        f"{API}/resourceflavors/default-flavor": {"metadata": {"name": "default-flavor"}},
        f"{API}/topologies/net": TOPOLOGY,
    }
    out.update(over)
    return out


class FakeKube:
    """GET by path: the object, or a status (403, 404) the apiserver answers."""

    def __init__(self, objs):
        self.objs = objs

    def request(self, method, path, **_):
        found = self.objs.get(path, 404)
        if isinstance(found, int):
            raise ApiException(status=found)
        return found


def room(racks: dict[str, tuple[str, str]], gpus: int = 8, used: dict[str, float] | None = None) -> Room:
    """GPU nodes by name: (block, rack), `gpus` each, `used` GPUs taken by other pods."""
    r = Room()
    for node, (block, rack) in racks.items():
        r.alloc[node] = {"nvidia.com/gpu": float(gpus), "rdma/ib": 2.0}
        r.used[node] = {"nvidia.com/gpu": (used or {}).get(node, 0.0)}
        r.labels[node] = {"nvidia.com/gpu.present": "true", BLOCK: block, RACK: rack, HOST: node}
    r.alloc["cpu-0"], r.used["cpu-0"], r.labels["cpu-0"] = {"cpu": 64.0}, {}, {HOST: "cpu-0"}  # not the flavor's
    return r


TWO_BY_TWO = {f"n{i}": (f"block-{i // 4}", f"rack-{i // 2}") for i in range(8)}  # 4 racks of 2 nodes


def cluster(trainer=(2, 8), inference=(1, 8)):
    return SimpleNamespace(trainer=SimpleNamespace(nodes=trainer[0], gpusPerNode=trainer[1]),
                           inference=SimpleNamespace(nodes=inference[0], gpusPerNode=inference[1]))


def values(**topology):
    return {"launch": {"queue": "q", "topology": {"level": RACK, "mode": "required", "groups": "each", **topology}}}


def seen_of(objs):
    """What kueue_rows.doctor_rows leaves for the topology rows: the ClusterQueue and its flavors as read (None:
    a flavor read refused)."""
    cq = objs.get(f"{API}/clusterqueues/cq")
    lq = objs.get(f"{API}/namespaces/ns/localqueues/q")
    if not isinstance(cq, dict) or not isinstance(lq, dict):
        return {}
    names = [f["name"] for g in cq["spec"]["resourceGroups"] for f in g["flavors"]]
    got = {n: objs.get(f"{API}/resourceflavors/{n}") for n in names}
    flavors = None if 403 in got.values() else {n: (v if isinstance(v, dict) else None) for n, v in got.items()}
    return {"cq": cq, "flavors": flavors}


def run(objs=None, r=None, shape=None, **topology):
    objs = objs or objects()
    return topology_rows.rows(FakeKube(objs), values(**topology), Namespace("ns", True), r or room(TWO_BY_TWO),
                              shape or cluster(), seen_of(objs))


def test_a_gang_that_fits_a_rack_each():
    head, fit = run()
    assert head.mark == OK and "flavor gpu-topology → Topology net" in head.detail and "level 2 of 3" in head.detail
    assert fit.mark == OK and fit.detail.startswith(
        "the trainer (2 pod(s) × 8 nvidia.com/gpu) in block-0/rack-0; the inference (1 pod(s) × 8 nvidia.com/gpu) in "
        "block-0/rack-1 now (12 way(s) to place them among 4 domain(s)")


def test_a_fleet_no_rack_can_hold_is_a_failure_when_required_and_a_warning_when_preferred():
    head, fit = run(shape=cluster(trainer=(3, 8)))
    assert fit.mark == FAIL and "no cloud.provider.com/topology-rack domain can ever hold the trainer (3 pod(s)" \
        in fit.detail and "the largest domain is block-1/rack-3: 2 node(s), 16 nvidia.com/gpu allocatable" in fit.detail
    assert "mode preferred" in fit.remedy
    _, fit = run(shape=cluster(trainer=(3, 8)), mode="preferred")
    assert fit.mark == WARN and "Kueue spreads it over several domains" in fit.detail
    _, fit = run(shape=cluster(trainer=(3, 8)), level=BLOCK)  # a block of 4 nodes holds it
    assert fit.mark == OK


@pytest.mark.parametrize("racks, shape", [
    ({"n0": ("b", "r0"), "n1": ("b", "r0")}, cluster(trainer=(2, 8), inference=(1, 8))),  # one rack of 2 nodes
    ({"n0": ("b", "r0"), "n1": ("b", "r0"), "n2": ("b", "r0"), "n3": ("b", "r1")},  # racks of 3 nodes and 1
     cluster(trainer=(2, 8), inference=(2, 8))),
])
def test_each_fleet_fitting_a_domain_alone_is_not_enough_when_they_must_share_it(racks, shape):
    """Each fleet fits some rack, but no choice of racks holds both at once: Kueue never admits it."""
    _, fit = run(r=room(racks), shape=shape)
    assert fit.mark == FAIL and "at once (each fits a domain, but no two domains, nor one, hold both)" in fit.detail


def test_together_counts_both_fleets_in_one_domain():
    _, each = run(shape=cluster(trainer=(1, 8), inference=(1, 8)))
    _, together = run(shape=cluster(trainer=(1, 8), inference=(1, 8)), groups="together")
    assert each.mark == OK and together.mark == OK  # a rack of two 8-GPU nodes holds both
    _, together = run(shape=cluster(trainer=(2, 8), inference=(1, 8)), groups="together")
    assert together.mark == FAIL and "trainer and inference (3 pod(s)" in together.detail


def test_room_now_is_a_warning_naming_the_largest_domain():
    busy = dict.fromkeys(("n0", "n2", "n4", "n6"), 8.0)  # one node of each rack taken
    _, fit = run(r=room(TWO_BY_TWO, used=busy))
    assert fit.mark == WARN and "could hold the trainer (2 pod(s)" in fit.detail and "none has room now" in fit.detail
    assert "16 nvidia.com/gpu allocatable, 8 free" in fit.detail


def test_the_same_rack_name_in_two_blocks_is_two_domains():
    racks = {"n0": ("block-0", "rack-a"), "n1": ("block-1", "rack-a")}
    _, fit = run(r=room(racks), shape=cluster(trainer=(2, 8), inference=(1, 1)))
    assert fit.mark == FAIL  # two racks of one node each, not one rack of two


def test_the_fabric_device_counts_too():
    _, fit = run(shape=cluster(trainer=(2, 4)))
    assert fit.mark == OK
    v = values()
    v["kuberay"] = {"network": {"profile": "rdma", "rdma": {"resourceName": "rdma/ib", "perPod": 2}}}
    # 4 pods of 4 GPUs fit a rack's GPUs, not its rdma/ib
    rows = topology_rows.rows(FakeKube(objects()), v, Namespace("ns", True), room(TWO_BY_TWO),
                              cluster(trainer=(4, 4)), seen_of(objects()))
    assert rows[1].mark == FAIL and "2 rdma/ib" in rows[1].detail


@pytest.mark.parametrize("over, mark, fragment", [
    ({f"{API}/resourceflavors/gpu-topology": {"metadata": {"name": "gpu-topology"}, "spec": {}}}, FAIL,
     "no flavor of ClusterQueue cq (default-flavor, gpu-topology) names a Topology"),
    ({f"{API}/resourceflavors/gpu-topology": 403}, WARN, "cannot get resourceflavors.kueue.x-k8s.io"),
    ({f"{API}/topologies/net": 403}, WARN, "cannot get topologies.kueue.x-k8s.io"),
    ({f"{API}/topologies/net": 404}, FAIL, "Topology net (flavor gpu-topology's topologyName) does not exist"),
    ({f"{API}/topologies/net": {"spec": {"levels": [{"nodeLabel": BLOCK}, {"nodeLabel": HOST}]}}}, FAIL,
     f"{RACK} (launch.topology.level) is not a level of Topology net ({BLOCK}, {HOST})"),
    ({f"{API}/namespaces/ns/localqueues/q": 403}, WARN, "whether it places by topology is unknown"),
    ({f"{API}/clusterqueues/cq": 403}, WARN, "could not be read (see the Kueue rows)"),
])
def test_what_kueue_lacks_or_hides_is_one_row(over, mark, fragment):
    (row,) = run(objects(**over))
    assert row.mark == mark and fragment in row.detail, row


def test_hidden_nodes_are_a_warning_and_no_topology_no_rows():
    r = room(TWO_BY_TWO)
    r.nodes_denied, r.labels = True, {}
    assert run(r=r)[1].mark == WARN
    assert topology_rows.rows(FakeKube({}), {"launch": {"queue": "q"}}, Namespace("ns", True), room({}),
                              cluster(), {}) == []
