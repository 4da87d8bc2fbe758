"""The simulated nodes' storage: StorageClass `playground-hostpath`, whose claims the playground's own provisioner
(provisioner.py, a supervised playground process) gives a PersistentVolume each on demand and deletes it when the
claim goes (reclaim policy Delete), so that a release with infra.storage (the README's example) runs on a
playground, and a playground used all day never runs out of volumes. kwok's pods mount nothing: a PV's hostPath
directory stays empty, and its node affinity keeps it to the simulated nodes (type=kwok), so no real pod ever
mounts one.

Without the real node the class is the cluster's default (a claim that names no class gets it); with the real
node, local-path (node/local_path.py) is the default and this class serves only claims that name it.
"""

from __future__ import annotations

from typing import Any

STORAGE_CLASS = "playground-hostpath"
PROVISIONER = "playground.dockyard.dev/hostpath"
RECLAIM = "Delete"
LABELS = {"app.kubernetes.io/managed-by": "dockyard-playground"}
DEFAULT_CLASS = "storageclass.kubernetes.io/is-default-class"


def manifests(default: bool) -> list[tuple[str, dict[str, Any]]]:
    """(collection path, object): the StorageClass. Immediate binding: a claim gets its PV when it is made (a
    simulated node's pods wait for nothing else; the PV's node affinity then sends them to a simulated node)."""
    sc = {"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass",
          "metadata": {"name": STORAGE_CLASS, "labels": LABELS,
                       "annotations": {DEFAULT_CLASS: "true" if default else "false"}},
          "provisioner": PROVISIONER, "volumeBindingMode": "Immediate", "reclaimPolicy": RECLAIM}
    return [("/apis/storage.k8s.io/v1/storageclasses", sc)]
