"""playground/provisioner: the decision functions (claim -> PV, which PV to delete) and one pass over recorded
claims and PVs: a PV per claim that needs one, none twice, and only its own Released PVs with policy Delete go."""

from __future__ import annotations

from pathlib import Path

from generator.playground import provisioner as prov
from generator.playground.volumes import PROVISIONER, STORAGE_CLASS, manifests


def _claim(name="data", uid="u-1", cls=STORAGE_CLASS, phase="Pending", **spec):
    return {"metadata": {"name": name, "namespace": "ns", "uid": uid},
            "spec": {"storageClassName": cls, "accessModes": ["ReadWriteMany"],
                     "resources": {"requests": {"storage": "10Gi"}}, **spec},
            "status": {"phase": phase}}


def _pv(name, phase, policy="Delete", by=PROVISIONER, uid="u-9"):
    return {"metadata": {"name": name, "annotations": {prov.PROVISIONED_BY: by} if by else {}},
            "spec": {"persistentVolumeReclaimPolicy": policy, "claimRef": {"uid": uid}}, "status": {"phase": phase}}


def test_a_pending_claim_of_the_class_gets_a_pv_bound_to_it_with_its_size_and_modes(tmp_path):
    pv = prov.pv_for(_claim(), tmp_path, set())
    assert pv["metadata"]["name"] == "pvc-u-1" and pv["metadata"]["annotations"] == {prov.PROVISIONED_BY: PROVISIONER}
    spec = pv["spec"]
    assert spec["claimRef"] == {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "namespace": "ns", "name": "data",
                                "uid": "u-1"}
    assert spec["capacity"] == {"storage": "10Gi"} and spec["accessModes"] == ["ReadWriteMany"]
    assert spec["persistentVolumeReclaimPolicy"] == "Delete" and spec["storageClassName"] == STORAGE_CLASS
    assert spec["hostPath"]["path"] == str(tmp_path / "volumes" / "pvc-u-1")
    term = spec["nodeAffinity"]["required"]["nodeSelectorTerms"][0]["matchExpressions"][0]
    assert term == {"key": "type", "operator": "In", "values": ["kwok"]}


def test_claims_that_need_no_pv_from_it_get_none(tmp_path):
    assert prov.pv_for(_claim(cls="local-path"), tmp_path, set()) is None  # another class
    assert prov.pv_for(_claim(phase="Bound"), tmp_path, set()) is None
    assert prov.pv_for(_claim(volumeName="pv-x"), tmp_path, set()) is None
    assert prov.pv_for(_claim(), tmp_path, {"u-1"}) is None  # one of ours names it already
    deleting = _claim()
    deleting["metadata"]["deletionTimestamp"] = "t"
    assert prov.pv_for(deleting, tmp_path, set()) is None


def test_only_its_own_released_pvs_with_policy_delete_are_deleted():
    assert prov.to_delete(_pv("a", "Released"))
    assert not prov.to_delete(_pv("b", "Released", policy="Retain"))  # kept on purpose: left alone
    assert not prov.to_delete(_pv("c", "Bound"))
    assert not prov.to_delete(_pv("d", "Released", by="rancher.io/local-path"))  # someone else's
    assert not prov.to_delete(_pv("e", "Released", by=None))


def test_the_class_names_the_provisioner_and_deletes_what_it_made():
    [(_, sc)] = manifests(default=True)
    assert sc["provisioner"] == PROVISIONER and sc["reclaimPolicy"] == "Delete"
    assert sc["volumeBindingMode"] == "Immediate"


class Recorded:
    def __init__(self, claims, pvs):
        self.claims, self.pvs, self.created, self.deleted = claims, pvs, [], []

    def get(self, path):
        return {"items": self.claims if path.endswith("persistentvolumeclaims") else self.pvs}

    def create(self, path, obj):
        self.created.append(obj["metadata"]["name"])
        return True

    def request(self, method, path):
        self.deleted.append(path.rsplit("/", 1)[1])
        return 200, {}


def test_a_pass_provisions_each_claim_once_and_deletes_only_released_pvs_with_delete(tmp_path: Path):
    (tmp_path / "volumes" / "pvc-old").mkdir(parents=True)
    (tmp_path / "volumes" / "pvc-kept").mkdir(parents=True)
    api = Recorded([_claim("a", "u-a"), _claim("b", "u-b"), _claim("c", "u-c", phase="Bound", volumeName="pvc-u-c")],
                   [_pv("pvc-u-b", "Bound", uid="u-b"), _pv("pvc-old", "Released"),
                    _pv("pvc-kept", "Released", policy="Retain")])
    p = prov.Provisioner(api, tmp_path, say=lambda _line: None)
    p.reconcile()
    assert api.created == ["pvc-u-a"] and (tmp_path / "volumes" / "pvc-u-a").is_dir()
    assert api.deleted == ["pvc-old"] and not (tmp_path / "volumes" / "pvc-old").exists()
    assert (tmp_path / "volumes" / "pvc-kept").is_dir() and p.synced
