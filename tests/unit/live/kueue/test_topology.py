"""Kueue's topologyAssignment decoded, and status's placement line. The Workload is the one Kueue v0.17.1
admitted on `playground up --kueue --topology 2x2 --gpu-nodes 8` for the README's example with
values-examples/grpo_swe_topology.infra.yaml (trimmed to what is read)."""

from __future__ import annotations

import copy

from generator.live.kueue import topology

RACK = "cloud.provider.com/topology-rack"
WORKLOAD = {
    "spec": {"podSets": [
        {"name": "head", "count": 1},
        {"name": "trainer", "count": 2, "topologyRequest": {"required": RACK}},
        {"name": "inference", "count": 1, "topologyRequest": {"required": RACK}},
        {"name": "submitter", "count": 1},
    ]},
    "status": {"admission": {"clusterQueue": "topology", "podSetAssignments": [
        {"name": "head", "count": 1, "flavors": {"cpu": "default-flavor", "memory": "default-flavor"}},
        {"name": "trainer", "count": 2, "topologyAssignment": {
            "levels": ["kubernetes.io/hostname"],
            "slices": [{"domainCount": 2, "podCounts": {"universal": 1},
                        "valuesPerLevel": [{"individual": {"prefix": "gpu-node-", "roots": ["0", "1"]}}]}]}},
        {"name": "inference", "count": 1, "topologyAssignment": {
            "levels": ["kubernetes.io/hostname"],
            "slices": [{"domainCount": 1, "podCounts": {"universal": 1},
                        "valuesPerLevel": [{"universal": "gpu-node-2"}]}]}},
        {"name": "submitter", "count": 1},
    ]}},
}
RACKS = {"gpu-node-0": "rack-0", "gpu-node-1": "rack-0", "gpu-node-2": "rack-1", "gpu-node-3": "rack-1"}


def test_the_compressed_slices_decode_to_domains_and_counts():
    assert topology.domains({"slices": [
        {"domainCount": 3, "podCounts": {"individual": [2, 1, 4]},
         "valuesPerLevel": [{"universal": "block-0"},
                            {"individual": {"prefix": "r", "roots": ["1", "2", "3"], "suffix": "-x"}}]}]}) == [
        (("block-0", "r1-x"), 2), (("block-0", "r2-x"), 1), (("block-0", "r3-x"), 4)]


def test_only_the_pod_sets_that_asked_for_a_level_are_placed():
    placed = topology.placements(WORKLOAD)
    assert [(p.name, p.mode, p.level) for p in placed] == [("trainer", "required", RACK),
                                                          ("inference", "required", RACK)]
    assert placed[0].domains == [(("gpu-node-0",), 1), (("gpu-node-1",), 1)]
    assert topology.hosts_level(placed) == RACK  # recorded at the hosts: the racks come from the nodes


def test_the_line_names_each_fleets_domain_and_its_hosts():
    assert topology.line(topology.placements(WORKLOAD), RACKS) == (
        f"trainer in rack-0 (gpu-node-0, gpu-node-1); inference in rack-1 (gpu-node-2) — {RACK}, required")
    assert topology.line(topology.placements(WORKLOAD), None) == (  # the nodes could not be read
        f"trainer on gpu-node-0, gpu-node-1; inference on gpu-node-2 — {RACK}, required")


def test_a_spread_fleet_is_across_domains():
    wl = copy.deepcopy(WORKLOAD)
    wl["spec"]["podSets"][1]["topologyRequest"] = {"preferred": RACK}
    wl["status"]["admission"]["podSetAssignments"][1]["topologyAssignment"]["slices"][0]["valuesPerLevel"] = [
        {"individual": {"prefix": "gpu-node-", "roots": ["1", "3"]}}]
    text = topology.line(topology.placements(wl), RACKS)
    assert text.startswith("trainer across 2 domains: rack-0, rack-1 (gpu-node-1, gpu-node-3); inference in rack-1")
    assert text.endswith(f"{RACK}, preferred; {RACK}, required")


def test_an_assignment_at_the_level_itself_needs_no_nodes_and_none_yet_is_no_line():
    wl = copy.deepcopy(WORKLOAD)
    for psa in wl["status"]["admission"]["podSetAssignments"][1:3]:
        psa["topologyAssignment"] = {"levels": [RACK], "slices": [
            {"domainCount": 1, "podCounts": {"universal": psa["count"]}, "valuesPerLevel": [{"universal": "rack-1"}]}]}
    placed = topology.placements(wl)
    assert topology.hosts_level(placed) is None
    assert topology.line(placed, None) == f"trainer in rack-1; inference in rack-1 — {RACK}, required"
    del wl["status"]
    assert topology.line(topology.placements(wl), RACKS) is None  # queued: not placed yet


def test_a_fleet_placed_at_the_hosts_level_names_its_hosts_once():
    wl = copy.deepcopy(WORKLOAD)
    for ps in wl["spec"]["podSets"][1:3]:
        ps["topologyRequest"] = {"required": "kubernetes.io/hostname"}
    placed = topology.placements(wl)
    assert topology.hosts_level(placed) is None  # the assignment names the level itself: no nodes to read
    assert topology.line(placed, None) == ("trainer across 2 domains: gpu-node-0, gpu-node-1; inference in gpu-node-2"
                                           " — kubernetes.io/hostname, required")
