"""The control plane's table of components: which run (the optional ones only when asked for), in what order, which
are supervised, and where each one's health is read. The components' own start-up runs for real under every live
test; the choice of control-plane version is tested in test_control_plane_kube_version.py."""

from __future__ import annotations

from dataclasses import fields
from types import SimpleNamespace

from generator.playground import control_plane
from generator.playground.state import Ports


def _state(**flags) -> SimpleNamespace:
    ports = Ports(**{f.name: 20000 + i for i, f in enumerate(fields(Ports))})
    return SimpleNamespace(ports=ports, **{"kueue": False, "agent_sandbox": False, **flags})


def test_the_optional_components_run_only_when_asked_for_and_after_the_core():
    core = ["etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kwok", "kuberay-operator",
            "volume-provisioner"]
    assert control_plane.wanted(_state()) == core
    assert control_plane.wanted(_state(kueue=True)) == [*core, "kueue"]
    assert control_plane.wanted(_state(kueue=True, agent_sandbox=True)) == [*core, "kueue", "agent-sandbox"]
    assert control_plane.wanted(_state(kueue=True, agent_sandbox=True), core_only=True) == core


def test_the_state_is_not_supervised_and_every_client_of_the_apiserver_is():
    """etcd and the apiserver hold the cluster's state: a restart would hide its loss; every other component ends by
    design when it loses the apiserver (leader election) and is restarted, as a kubelet restarts a container."""
    assert set(control_plane.SUPERVISED) == set(control_plane.COMPONENTS) - {"etcd", "kube-apiserver"}


def test_every_component_has_its_own_health_endpoint_on_loopback():
    state = _state(kueue=True, agent_sandbox=True)
    urls = {name: control_plane.health_url(state, name) for name in control_plane.COMPONENTS}
    assert all(u.split("://", 1)[1].startswith("127.0.0.1:") for u in urls.values()), urls
    ports = [u.split("127.0.0.1:", 1)[1].split("/", 1)[0] for u in urls.values()]
    assert len(set(ports)) == len(ports), urls  # one port each: no component's health read answers for another
    assert urls["kube-apiserver"].startswith("https://") and urls["kube-apiserver"].endswith("/readyz")
