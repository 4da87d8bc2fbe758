"""kuberay.network: each fabric profile renders the same fields in the trainer and inference groups (none in the
head), after the overlay, valid for the apiserver's validation; what the API or PodSecurity would refuse is
refused (exit 2 with the key path; plain helm refuses the same through values.schema.json)."""

from __future__ import annotations

import subprocess
from typing import Any

import pytest

from generator.cli import main
from generator.pinned_tools import CHART_DIR, binary, versions
from generator.render import kubeconform
from generator.render.helm import values_json
from tests.conftest import RECIPE, chart_values, deep_merge, render_values, write
from tests.support.infra import GOOD_INFRA

RDMA = {"profile": "rdma", "socketInterface": "eth0",
        "rdma": {"resourceName": "rdma/ib", "perPod": 2, "hca": "mlx5", "networks": ["ib-net", "fabric/ib-b@net2"]}}
EFA = {"profile": "efa", "efa": {"perPod": 4}}
HOST = {"profile": "hostNetwork", "socketInterface": "^lo,docker"}
PROFILES = {"tcp": {"profile": "tcp", "socketInterface": "eth0"}, "rdma": RDMA, "efa": EFA, "hostNetwork": HOST}
ANTI = {"labelSelector": {"matchExpressions": [{"key": "dockyard.dev/host-network", "operator": "Exists"}]},
        "namespaceSelector": {}, "topologyKey": "kubernetes.io/hostname"}


def _fabric(group: dict[str, Any]) -> dict[str, Any]:
    """The fabric fields of one group's pod template, as the chart writes them."""
    spec = group["template"]["spec"]
    ray = spec["containers"][0]
    env = {e["name"]: e.get("value") for c in spec["containers"] for e in c.get("env", [])
           if e["name"] in ("NCCL_SOCKET_IFNAME", "GLOO_SOCKET_IFNAME", "NCCL_IB_HCA", "FI_PROVIDER")}
    devices = {side: {k: v for k, v in ray["resources"].get(side, {}).items()
                      if k not in ("cpu", "memory", "nvidia.com/gpu", "ephemeral-storage")}
               for side in ("requests", "limits")}
    return {"env": env, "devices": devices, "add": ray.get("securityContext", {}).get("capabilities", {}).get("add"),
            "annotations": group["template"].get("metadata", {}).get("annotations", {}),
            "hostNetwork": spec.get("hostNetwork"), "dnsPolicy": spec.get("dnsPolicy"),
            "anti": spec.get("affinity", {}).get("podAntiAffinity"),
            "label": group["template"]["metadata"]["labels"].get("dockyard.dev/host-network")}


EXPECTED = {
    "tcp": {"env": {"NCCL_SOCKET_IFNAME": "eth0", "GLOO_SOCKET_IFNAME": "eth0"},
            "devices": {"requests": {}, "limits": {}}, "add": None, "annotations": {}, "hostNetwork": None,
            "dnsPolicy": None, "anti": None, "label": None},
    "rdma": {"env": {"NCCL_SOCKET_IFNAME": "eth0", "GLOO_SOCKET_IFNAME": "eth0", "NCCL_IB_HCA": "mlx5"},
             "devices": {"requests": {"rdma/ib": 2}, "limits": {"rdma/ib": 2}}, "add": ["IPC_LOCK"],
             "annotations": {"k8s.v1.cni.cncf.io/networks": "ib-net,fabric/ib-b@net2"}, "hostNetwork": None,
             "dnsPolicy": None, "anti": None, "label": None},
    "efa": {"env": {"FI_PROVIDER": "efa"}, "devices": {"requests": {"vpc.amazonaws.com/efa": 4},
                                                       "limits": {"vpc.amazonaws.com/efa": 4}},
            "add": None, "annotations": {}, "hostNetwork": None, "dnsPolicy": None, "anti": None, "label": None},
    "hostNetwork": {"env": {"NCCL_SOCKET_IFNAME": "^lo,docker"},  # Gloo takes no ^: left to its default
                    "devices": {"requests": {}, "limits": {}}, "add": None, "annotations": {}, "hostNetwork": True,
                    "dnsPolicy": "ClusterFirstWithHostNet",
                    "anti": {"requiredDuringSchedulingIgnoredDuringExecution": [ANTI]}, "label": "true"},
}
NONE = {"env": {}, "devices": {"requests": {}, "limits": {}}, "add": None, "annotations": {}, "hostNetwork": None,
        "dnsPolicy": None, "anti": None, "label": None}


@pytest.mark.parametrize("mode", ["rayjob", "bringup"])
@pytest.mark.parametrize("profile", PROFILES)
def test_each_profile_gives_both_worker_groups_the_same_fabric_and_the_head_none(profile, mode):
    security = {"enabled": True} if profile != "tcp" else {}  # the baseline drops ALL: IPC_LOCK is added back
    out = render_values(chart_values(launch={"mode": mode}, kuberay={"network": PROFILES[profile]},
                                     infra={"security": security}))
    groups = out.groups()
    assert _fabric(groups["trainer"]) == _fabric(groups["inference"]) == EXPECTED[profile]
    assert _fabric(groups["head"]) == NONE
    results = kubeconform.validate(out.text)
    assert results and all(r.status == "valid" for r in results), [r for r in results if r.status != "valid"]


def test_the_api_validation_accepts_every_profile(tmp_path, capsys):
    """`check` (kubeconform and the apiserver's own validation, kube-validate) passes each profile's pods."""
    for profile, network in PROFILES.items():
        infra = write(tmp_path, f"{profile}.infra.yaml", deep_merge(GOOD_INFRA, {"kuberay": {"network": network}}))
        assert main(["check", str(RECIPE), str(infra)]) == 0, (profile, capsys.readouterr())


# What an overlay tries against the fabric that the models let through (they refuse hostNetwork, the Multus
# annotation and the fabric's env in an overlay): a capability dropped, the device at 0, a sidecar first.
ATTACK = {"template": {"spec": {"containers": [
    {"name": "log", "image": "fluent-bit"},
    {"name": "ray-worker", "securityContext": {"capabilities": {"drop": ["IPC_LOCK", "ALL"], "add": ["NET_RAW"]}},
     "resources": {"limits": {"rdma/ib": 0}, "requests": {"rdma/ib": 0}}}]}}}


def test_no_overlay_drops_ipc_lock_or_the_device_or_moves_the_ray_container():
    values = chart_values(kuberay={"network": RDMA, "spec": {"workerGroupSpecs": [{"groupName": "trainer", **ATTACK}]}})
    groups = render_values(values).groups()
    trainer = groups["trainer"]["template"]["spec"]
    assert [c["name"] for c in trainer["containers"]] == ["ray-worker", "log"]  # KubeRay's /dev/shm and ports: index 0
    caps = trainer["containers"][0]["securityContext"]["capabilities"]
    assert caps == {"drop": ["ALL"], "add": ["NET_RAW", "IPC_LOCK"]}
    assert trainer["containers"][0]["resources"]["limits"]["rdma/ib"] == 2
    assert _fabric(groups["trainer"])["devices"] == _fabric(groups["inference"])["devices"]


def test_plain_helm_pins_what_the_models_refuse_in_an_overlay():
    """Without the generator (hand-written values), the chart still gives both groups the profile's fabric: an
    overlay's hostNetwork, Multus annotation and NCCL env are replaced, in one group as in the other."""
    overlay = {"groupName": "inference", "template": {
        "metadata": {"annotations": {"k8s.v1.cni.cncf.io/networks": "other", "keep": "me"}},
        "spec": {"hostNetwork": True, "containers": [{"name": "ray-worker", "env": [
            {"name": "NCCL_SOCKET_IFNAME", "value": "wrong"}, {"name": "NCCL_IB_HCA", "value": "wrong"}]}]}}}
    for network in (PROFILES["tcp"], RDMA):
        values = deep_merge(chart_values(kuberay={"network": network}), {"kuberay": {"spec": {
            "workerGroupSpecs": [overlay]}}})
        groups = render_values(values).groups()
        trainer, inference = _fabric(groups["trainer"]), _fabric(groups["inference"])
        assert inference["annotations"].pop("keep") == "me"
        assert trainer == inference == EXPECTED[network["profile"]]


def test_plain_helm_without_per_pod_asks_for_one_device(tmp_path):
    """values.yaml ships rdma: null; a hand-written rdma block without perPod gets the models' default, 1."""
    bare = {"profile": "rdma", "rdma": {"resourceName": "rdma/ib"}}
    values = deep_merge(chart_values(), {"kuberay": {"network": bare}})
    for group in ("trainer", "inference"):
        assert _fabric(render_values(values).groups()[group])["devices"]["limits"] == {"rdma/ib": 1}


def test_gloo_gets_the_interface_only_as_exact_names():
    """NCCL reads prefixes, ^ (exclude) and = (exact); Gloo only exact names: `=eth0` is eth0 to it, `^lo` nothing."""
    for given, gloo in (("eth0,eth1", "eth0,eth1"), ("=eth0", "eth0"), ("^lo", None), ("^=docker0", None)):
        env = _fabric(render_values(chart_values(kuberay={"network": {"socketInterface": given}})).groups()["trainer"])
        assert env["env"].get("NCCL_SOCKET_IFNAME") == given and env["env"].get("GLOO_SOCKET_IFNAME") == gloo, given


def test_the_heads_own_nccl_env_is_kept():
    """The fabric owns the worker groups' NCCL env only: the head's overlay may set its own (the models accept it,
    and the chart keeps it)."""
    env = [{"name": "NCCL_SOCKET_IFNAME", "value": "eth9"}]
    values = chart_values(kuberay={"network": RDMA, "spec": {"headGroupSpec": {"template": {"spec": {"containers": [
        {"name": "ray-head", "env": env}]}}}}})
    head = render_values(values).groups()["head"]["template"]["spec"]["containers"][0]
    assert {"name": "NCCL_SOCKET_IFNAME", "value": "eth9"} in head["env"]


def test_host_network_keeps_the_placements_anti_affinity_and_adds_its_own():
    own = {"labelSelector": {"matchLabels": {"team": "a"}}, "topologyKey": "topology.kubernetes.io/zone"}
    values = chart_values(kuberay={"network": HOST, "placement": {"gpu": {"affinity": {"podAntiAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": [own]}}}}})
    for role in ("trainer", "inference"):
        anti = render_values(values).groups()[role]["template"]["spec"]["affinity"]["podAntiAffinity"]
        assert anti["requiredDuringSchedulingIgnoredDuringExecution"] == [own, ANTI]


# (id, kuberay.network or other change, the models' words with the key path)
REFUSED = [
    ("rdma without its block", {"kuberay": {"network": {"profile": "rdma"}}},
     "kuberay.network.rdma: profile rdma needs kuberay.network.rdma"),
    ("efa without its block", {"kuberay": {"network": {"profile": "efa"}}},
     "kuberay.network.efa: profile efa needs kuberay.network.efa"),
    ("an rdma block under tcp", {"kuberay": {"network": {"rdma": {"resourceName": "rdma/ib"}}}},
     "kuberay.network.rdma: kuberay.network.rdma means nothing under profile tcp"),
    ("IPC_LOCK under restricted", {"kuberay": {"network": RDMA},
                                   "infra": {"security": {"enabled": True, "profile": "restricted"}}},
     "kuberay.network.profile: profile rdma needs adding IPC_LOCK, which infra.security.profile restricted"),
    ("hostNetwork under restricted", {"kuberay": {"network": HOST},
                                      "infra": {"security": {"enabled": True, "profile": "restricted"}}},
     "kuberay.network.profile: profile hostNetwork needs the host's network namespace"),
    ("more devices than a node carries", {"kuberay": {"network": {"profile": "efa", "efa": {"perPod": 33}}}},
     "kuberay.network.efa.perPod: 33 is out of range"),
    ("the GPU as the RDMA device", {"kuberay": {"network": {"profile": "rdma",
                                                            "rdma": {"resourceName": "nvidia.com/gpu"}}}},
     "kuberay.network.rdma.resourceName: nvidia.com/gpu is not an RDMA device"),
    ("a resource without a domain", {"kuberay": {"network": {"profile": "rdma", "rdma": {"resourceName": "ib"}}}},
     "kuberay.network.rdma.resourceName"),
    ("a network that is no NAD name", {"kuberay": {"network": {"profile": "rdma", "rdma": {
        "resourceName": "rdma/ib", "networks": ["IB Net"]}}}}, "kuberay.network.rdma.networks[0]"),
    ("the fabric's env in infra.env", {"infra": {"env": [{"name": "NCCL_IB_HCA", "value": "mlx5"}]}},
     "infra.env[0].name: NCCL_IB_HCA is the fabric's"),
]
OVERLAY_REFUSED = [
    ("the host-network label in one group",
     {"template": {"metadata": {"labels": {"dockyard.dev/host-network": "false"}}}},
     "kuberay.spec.workerGroupSpecs[0].template.metadata.labels.dockyard.dev/host-network"),
    ("hostNetwork in one group", {"template": {"spec": {"hostNetwork": True}}},
     "kuberay.spec.workerGroupSpecs[0].template.spec.hostNetwork: hostNetwork in one group's overlay"),
    ("the Multus annotation in one group",
     {"template": {"metadata": {"annotations": {"k8s.v1.cni.cncf.io/networks": "x"}}}},
     "kuberay.spec.workerGroupSpecs[0].template.metadata.annotations.k8s.v1.cni.cncf.io/networks"),
    ("the fabric's env in one group",
     {"template": {"spec": {"containers": [{"name": "ray-worker", "env": [{"name": "FI_PROVIDER", "value": "x"}]}]}}},
     "kuberay.spec.workerGroupSpecs[0].template.spec.containers[0].env[0].name: FI_PROVIDER is the fabric's"),
]
REFUSED += [(f"overlay: {name}", {"kuberay": {"spec": {"workerGroupSpecs": [{"groupName": "trainer", **over}]}}},
             words) for name, over, words in OVERLAY_REFUSED]


@pytest.mark.parametrize("over, words", [c[1:] for c in REFUSED], ids=[c[0] for c in REFUSED])
def test_the_models_refuse_it_with_the_key_path(tmp_path, capsys, over, words):
    infra = write(tmp_path, "i.yaml", deep_merge(GOOD_INFRA, over))
    assert main(["values", str(RECIPE), str(infra)]) == 2
    err = capsys.readouterr().err
    assert f"error: {infra}:" in err and words in err, err
    assert "Traceback" not in err


# The refusals values.schema.json holds (the overlay's are the models' and the chart's pinning): plain helm refuses.
SCHEMA_REFUSED = [c for c in REFUSED if not c[0].startswith("overlay:")]


@pytest.mark.parametrize("over", [c[1] for c in SCHEMA_REFUSED], ids=[c[0] for c in SCHEMA_REFUSED])
def test_plain_helm_refuses_the_same(tmp_path, over):
    values = deep_merge(chart_values(), over)
    path = tmp_path / "values.json"
    path.write_text(values_json(values))
    done = subprocess.run([binary("helm"), "template", "grpo-swe", str(CHART_DIR), "-f", str(path),
                           "--kube-version", versions()["KUBERNETES_VERSION"]], capture_output=True, text=True)
    assert done.returncode == 1 and "values don't meet the specifications of the schema" in done.stderr, done.stderr
