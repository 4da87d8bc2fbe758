"""The real node's typed state: its addresses stay off loopback and the machine's link, its names are per state
folder and fit the kernel's interface limits."""

from __future__ import annotations

from generator.playground.node import spec as S


def test_addresses_stay_off_loopback_and_the_machine_link():
    import ipaddress

    ranges = [ipaddress.ip_network(c) for c in (S.POD_CIDR, S.SERVICE_CIDR, S.LINK_CIDR)]
    for a, b in [(x, y) for i, x in enumerate(ranges) for y in ranges[i + 1:]]:
        assert not a.overlaps(b)
    for net in ranges:
        assert net.is_private and not net.is_loopback
    assert ipaddress.ip_address(S.NODE_IP) in ranges[2] and ipaddress.ip_address(S.HOST_IP) in ranges[2]


def test_names_are_per_state_folder_and_fit_interface_limits(tmp_path):
    a, b = S.NodeSpec(tmp_path / "a"), S.NodeSpec(tmp_path / "b")
    assert a.host_veth != b.host_veth and a.cgroup_root != b.cgroup_root
    assert len(a.host_veth) <= 15 and len(a.node_veth) <= 15
    assert a.netns_file.is_relative_to(tmp_path / "a")

