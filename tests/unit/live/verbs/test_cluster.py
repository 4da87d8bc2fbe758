"""verbs/cluster.py (`cluster list`): every RayCluster in one namespace or all, dockyard's and others', each with
its release, mode (a RayJob's or a bringup's), state, ready workers, GPUs its worker groups hold, and age; a
cluster without KubeRay's CRD is a failed check that says so."""

from __future__ import annotations

import json
from argparse import Namespace
from types import SimpleNamespace

import pytest
from kubernetes.client.exceptions import ApiException

from generator.errors import CheckFailed
from generator.live.verbs import cluster as cluster_mod


def raycluster(name, namespace, release=None, owner=None, replicas=2, gpus=8, ready=1):
    labels = {"app.kubernetes.io/instance": release, "app.kubernetes.io/name": "dockyard"} if release else {}
    template = {"spec": {"containers": [{"name": "ray-worker", "resources": {"limits": {"nvidia.com/gpu": gpus}}}]}}
    meta = {"name": name, "namespace": namespace, "labels": labels}
    if owner:
        meta["ownerReferences"] = [{"kind": owner, "name": release}]
    return {"metadata": meta, "spec": {"workerGroupSpecs": [{"groupName": "trainer", "replicas": replicas,
                                                             "template": template}]},
            "status": {"state": "ready", "readyWorkerReplicas": ready}}


class Custom:
    def __init__(self, items=None, status=None):
        self.items, self.status = items, status

    def list_cluster_custom_object(self, group, version, plural):
        if self.status:
            raise ApiException(status=self.status, reason="Not Found")
        return {"items": self.items}


def run(monkeypatch, custom, namespace=None, output="json", in_namespace=()):
    kube = SimpleNamespace(custom=custom, list_ray=lambda plural, ns: [c for c in in_namespace
                                                                        if c["metadata"]["namespace"] == ns])
    monkeypatch.setattr(cluster_mod, "Kube", lambda kubeconfig, context: kube)
    return cluster_mod.cluster_list(Namespace(kubeconfig=None, context=None, namespace=namespace, output=output))


def test_every_cluster_of_every_namespace_dockyards_and_others(monkeypatch, capsys):
    items = [raycluster("small-raycluster-x", "rec", release="small", owner="RayJob"),
             raycluster("theirs", "team", replicas=3, gpus=0, ready=3)]
    assert run(monkeypatch, Custom(items)) == 0
    rows = json.loads(capsys.readouterr().out)
    assert [{k: r[k] for k in ("name", "release", "mode", "workers", "gpus", "dockyard")} for r in rows] == [
        {"name": "small-raycluster-x", "release": "small", "mode": "rayjob", "workers": "1/2", "gpus": 16,
         "dockyard": True},
        {"name": "theirs", "release": "", "mode": "bringup", "workers": "3/3", "gpus": 0, "dockyard": False}]


def test_one_namespace_and_the_table(monkeypatch, capsys):
    mine = [raycluster("small", "rec", release="small"), raycluster("other", "elsewhere")]
    run(monkeypatch, Custom(status=500), namespace="rec", output="table", in_namespace=mine)
    header, row = capsys.readouterr().out.splitlines()
    assert header.split() == ["NAMESPACE", "NAME", "RELEASE", "MODE", "STATE", "WORKERS", "GPUS", "AGE"]
    assert row.split() == ["rec", "small", "small", "bringup", "ready", "1/2", "16", "-"]
    run(monkeypatch, Custom(status=500), namespace="empty", output="table", in_namespace=mine)
    assert capsys.readouterr().out == "no RayClusters\n"


def test_without_kuberays_crd_the_check_fails_saying_so(monkeypatch):
    with pytest.raises(CheckFailed, match="rayclusters"):
        run(monkeypatch, Custom(status=404))
