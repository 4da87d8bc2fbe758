"""The real node's dynamic provisioner: rancher's local-path-provisioner, the default StorageClass `local-path`.

It is what kind ships as its default StorageClass: a PVC of class `local-path` is bound, once a pod that
mounts it is scheduled (WaitForFirstConsumer), to a new hostPath PV in a directory of its own under
VOLUMES_DIR on the node. The provisioner runs on the host like the KubeRay operator (it only talks to the
apiserver), supervised (supervise.py). The directory is made and removed by short helper pods on the node:
they need a shell, and the image the node already holds with one is the playground's executor image (busybox
`sh`, `mkdir`, `rm`; images.py), used with imagePullPolicy Never: nothing is pulled.

Every volume lives under the playground's state folder (`node/local-path/`), so `playground down`, which
removes that folder, leaves no volume behind on the host, root-owned files written by containers included.
A PV of `local-path` is node-local and ReadWriteOnce (upstream refuses other modes on node paths); class
`local-path-rwx` serves ReadWriteMany through upstream's shared-filesystem mode from a directory of the real
node: shared among pods of that one node, which is every pod the playground runs (a real cluster needs a
filesystem every node mounts for it).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from generator.playground.node import spec as S
from generator.playground.state import Process

NAME = "local-path-provisioner"
NAMESPACE = "local-path-storage"
STORAGE_CLASS = "local-path"
# ReadWriteMany: upstream refuses it on node paths; its shared-filesystem mode serves it from one directory every
# node mounts. The playground's pods run on one real node, so a directory of that node is such a filesystem.
RWX_STORAGE_CLASS = "local-path-rwx"
PROVISIONER = "rancher.io/local-path"  # the provisioner's default name, as kind's StorageClass names it
SERVICE_ACCOUNT = "local-path-provisioner-service-account"  # the helper pods' (the provisioner's default)
CONFIG_MAP = "local-path-config"  # the helper pods mount its setup and teardown scripts
LABELS = {"app.kubernetes.io/name": NAME, "app.kubernetes.io/managed-by": "dockyard-playground"}
CMD_TIMEOUT_SECONDS = 60  # a helper pod's time to succeed (upstream: 120)
# The helper pods' scripts, as upstream's deploy/local-path-storage.yaml has them (busybox applets only)
SETUP = '#!/bin/sh\nset -eu\nmkdir -m 0777 -p "$VOL_DIR"\n'
TEARDOWN = '#!/bin/sh\nset -eu\nrm -rf "$VOL_DIR"\n'


def volumes_dir(spec: S.NodeSpec) -> Path:
    """Where the PVs' directories are: under the node's folder, which `down` removes."""
    return spec.root / "local-path"


def shared_dir(spec: S.NodeSpec) -> Path:
    """Where the ReadWriteMany class's PVs' directories are (beside the others)."""
    return spec.root / "local-path-rwx"


def config(spec: S.NodeSpec) -> dict[str, Any]:
    """config.json, per StorageClass. `local-path`: the real node's one path; no default for other nodes, so a
    claim whose pod landed on a simulated node fails to provision with the provisioner's own message instead of a
    volume nowhere. `local-path-rwx`: the shared-filesystem mode (any access mode, no node affinity)."""
    return {"storageClassConfigs": {
                STORAGE_CLASS: {"nodePathMap": [{"node": S.NODE_NAME, "paths": [str(volumes_dir(spec))]}]},
                RWX_STORAGE_CLASS: {"sharedFileSystemPath": str(shared_dir(spec))}},
            "cmdTimeoutSeconds": CMD_TIMEOUT_SECONDS}


def helper_pod(image: str) -> dict[str, Any]:
    """The helper pod template (the provisioner adds the command, the volumes, the env and, for a node path, the
    node). On the real node always: the shared-filesystem mode names no node, and a simulated node runs nothing."""
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "helper-pod", "labels": LABELS},
            "spec": {"nodeSelector": {S.NODE_LABEL: "true"},
                     "containers": [{"name": "helper-pod", "image": image, "imagePullPolicy": "Never"}]}}


def write_files(spec: S.NodeSpec, image: str) -> tuple[Path, Path]:
    """(config.json, helperPod.yaml) written into the node's config folder."""
    volumes_dir(spec).mkdir(parents=True, exist_ok=True)
    shared_dir(spec).mkdir(parents=True, exist_ok=True)
    spec.config_dir.mkdir(parents=True, exist_ok=True)
    cfg, pod = spec.config_dir / "local-path-config.json", spec.config_dir / "local-path-helper-pod.json"
    cfg.write_text(json.dumps(config(spec), indent=2))
    pod.write_text(json.dumps(helper_pod(image), indent=2))  # JSON is YAML: the provisioner reads either
    return cfg, pod


def argv(binary_dir: Path, spec: S.NodeSpec, cfg: Path, pod: Path, image: str) -> list[str]:
    return [str(binary_dir / NAME), "start", f"--kubeconfig={spec.kubeconfig(NAME)}", f"--config={cfg}",
            f"--helper-pod-file={pod}", f"--helper-image={image}", f"--namespace={NAMESPACE}",
            f"--configmap-name={CONFIG_MAP}", f"--service-account-name={SERVICE_ACCOUNT}",
            f"--provisioner-name={PROVISIONER}"]


def objects(spec: S.NodeSpec) -> list[tuple[str, dict[str, Any]]]:
    """(collection path, object) to apply before the provisioner starts, in order. The ConfigMap holds config.json
    too, where upstream's install (and kind's) keeps it: the provisioner reads the same from --config, and doctor
    reads a class's shared-filesystem mode there."""
    meta = {"namespace": NAMESPACE, "labels": LABELS}
    return [
        ("/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace",
                                "metadata": {"name": NAMESPACE, "labels": LABELS}}),
        (f"/api/v1/namespaces/{NAMESPACE}/serviceaccounts", {
            "apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": SERVICE_ACCOUNT, **meta}}),
        (f"/api/v1/namespaces/{NAMESPACE}/configmaps", {
            "apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": CONFIG_MAP, **meta},
            "data": {"setup": SETUP, "teardown": TEARDOWN, "config.json": json.dumps(config(spec), indent=2)}}),
        *[("/apis/storage.k8s.io/v1/storageclasses", {
            "apiVersion": "storage.k8s.io/v1", "kind": "StorageClass",
            "metadata": {"name": name, "labels": LABELS, "annotations": {
                "storageclass.kubernetes.io/is-default-class": "true" if name == STORAGE_CLASS else "false"}},
            "provisioner": PROVISIONER, "reclaimPolicy": "Delete",
            "volumeBindingMode": "WaitForFirstConsumer"}) for name in (STORAGE_CLASS, RWX_STORAGE_CLASS)],
    ]


def child_health(state_dir: Path, supervisor: Process) -> tuple[bool, str]:
    """(ok, detail) of the provisioner itself, its supervisor's record read: it runs, and how often it exited."""
    from generator.playground import processes as procs
    from generator.playground import restarts

    record = restarts.of(state_dir, supervisor)
    if record is None or record.child is None or not procs.is_running(record.child):
        last = f"; last exit: {record.exits[-1].what()}" if record and record.exits else ""
        return False, f"provisioner not running (supervisor pid {supervisor.pid}{last})"
    return True, f"provisioner pid {record.child.pid}, {record.restarts} restarts, StorageClass {STORAGE_CLASS}"
