"""The simulated nodes' storage: StorageClass `playground-static` and a pool of static PersistentVolumes the
PV controller binds claims to, so that a release with infra.storage (the README's example) runs on a playground
without a provisioner. kwok's pods mount nothing: the PVs' hostPath is never created, and their node affinity
keeps them to the simulated nodes (type=kwok), so no real pod ever mounts one on the host.

Without the real node the class is the cluster's default (a claim that names no class gets it); with the real
node, local-path (node/local_path.py) is the default and this class serves only claims that name it. Each claim
takes a PV of its own (Retain: a deleted claim's PV stays Released, not reused), POOL of them per playground.
"""

from __future__ import annotations

from typing import Any

STORAGE_CLASS = "playground-static"
POOL = 16
CAPACITY = "1Pi"  # more than any claim asks: a claim binds the smallest PV that holds it
LABELS = {"app.kubernetes.io/managed-by": "dockyard-playground"}
DEFAULT_CLASS = "storageclass.kubernetes.io/is-default-class"


def manifests(default: bool) -> list[tuple[str, dict[str, Any]]]:
    """(collection path, object): the StorageClass, then the PVs."""
    sc = {"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass",
          "metadata": {"name": STORAGE_CLASS, "labels": LABELS,
                       "annotations": {DEFAULT_CLASS: "true" if default else "false"}},
          "provisioner": "kubernetes.io/no-provisioner",  # static PVs only: the PV controller binds, none is made
          "volumeBindingMode": "Immediate", "reclaimPolicy": "Retain"}
    out: list[tuple[str, dict[str, Any]]] = [("/apis/storage.k8s.io/v1/storageclasses", sc)]
    for n in range(POOL):
        out.append(("/api/v1/persistentvolumes", {
            "apiVersion": "v1", "kind": "PersistentVolume",
            "metadata": {"name": f"{STORAGE_CLASS}-{n:02d}", "labels": LABELS},
            "spec": {"storageClassName": STORAGE_CLASS, "capacity": {"storage": CAPACITY},
                     "accessModes": ["ReadWriteOnce", "ReadOnlyMany", "ReadWriteMany"],
                     "persistentVolumeReclaimPolicy": "Retain",
                     "hostPath": {"path": f"/nonexistent/dockyard-playground/{n:02d}"},
                     "nodeAffinity": {"required": {"nodeSelectorTerms": [{"matchExpressions": [
                         {"key": "type", "operator": "In", "values": ["kwok"]}]}]}}}}))
    return out
