"""`doctor`'s storage rows (infra.storage): per volume, the claim it names exists and is Bound, or, for a claim
the chart will create, its StorageClass (or the cluster's default one) exists, named with its provisioner and
volumeBindingMode; the claim's access modes fit the pods that mount it; a claim smaller than asked is `!`.
The reads (`read`) are apart from the rows (`volume_row`), which take plain API objects."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from generator.inputs.storage_rules import ALL_GROUPS, DEFAULT_ACCESS_MODES, LAYOUT, writers
from generator.live.client.kube import Kube
from generator.live.client.pod_requests import qty
from generator.live.doctor.rows import FAIL, OK, WARN, Row, forbidden

CHECK = "storage"
HOWTO = "docs/storage.md"
DEFAULT_CLASS = "storageclass.kubernetes.io/is-default-class"


@dataclass
class Read:
    """What the cluster said about one volume's claim and class: an object, None (404), or 403 as `denied`."""

    namespace: str
    claim: dict[str, Any] | None = None
    classes: list[dict[str, Any]] = field(default_factory=list)  # every StorageClass (to find the default)
    denied: list[str] = field(default_factory=list)  # "get persistentvolumeclaims", "list storageclasses"
    # rancher.io/local-path's config.json (its ConfigMap), read only beside a class of it: whether a class is in
    # its shared-filesystem mode (ReadWriteMany); None when it could not be read
    local_path: dict[str, Any] | None = None


def claim_name(key: str, volume: dict[str, Any], release: str) -> str:
    """The claim a volume mounts: its claimName, else the one the chart creates (pvc.yaml's name)."""
    return volume.get("claimName") or f"{release}-{LAYOUT[key]['suffix']}"


def read(kube: Kube, ns: str, name: str, need_classes: bool) -> Read:
    from kubernetes import client
    from kubernetes.client.exceptions import ApiException

    out = Read(ns)
    try:
        out.claim = kube.api.sanitize_for_serialization(kube.core.read_namespaced_persistent_volume_claim(name, ns))
    except ApiException as exc:
        if exc.status == 403:
            out.denied.append("get persistentvolumeclaims")
        elif exc.status != 404:
            raise
    if need_classes:
        try:
            listed = client.StorageV1Api(kube.api).list_storage_class().items
            out.classes = [kube.api.sanitize_for_serialization(c) for c in listed]
        except ApiException as exc:
            if exc.status != 403:
                raise
            out.denied.append("list storageclasses.storage.k8s.io")
        if any(c.get("provisioner") == LOCAL_PATH for c in out.classes):
            out.local_path = _local_path_config(kube)
    return out


def _local_path_config(kube: Kube) -> dict[str, Any] | None:
    """local-path-provisioner's config.json from its ConfigMap where upstream (and kind) install it; None when it
    is not there or may not be read."""
    import json

    from kubernetes.client.exceptions import ApiException

    try:
        cm = kube.core.read_namespaced_config_map(*LOCAL_PATH_CONFIG)
    except ApiException as exc:
        if exc.status in (403, 404):
            return None
        raise
    try:
        found = json.loads((cm.data or {}).get("config.json") or "null")
    except ValueError:
        return None
    return found if isinstance(found, dict) else None


def _modes_row(where: str, modes: list[str], count: int, groups: str) -> Row | None:
    """The claim's access modes against the pods that mount it, or None when they fit."""
    if count <= 1 or "ReadWriteMany" in modes:
        return None
    said = f"{where} has access modes [{' '.join(modes)}] but {count} pods ({groups}) mount it and write"
    if "ReadWriteOnce" in modes:
        return Row(WARN, CHECK, f"{said}: ReadWriteOnce holds only while every one of them runs on one node "
                   "(a pod on another node fails to attach it: Multi-Attach)",
                   "a ReadWriteMany claim (a shared filesystem: NFS, CephFS, a cloud file store), or mountOn one pod")
    return Row(FAIL, CHECK, f"{said}: {' '.join(modes)} lets only one pod write",
               "a ReadWriteMany claim, or mountOn one pod")


# What well-known provisioners serve, for a claim of the chart's (volumeMode Filesystem). Only ReadWriteMany is
# judged: the one the chart asks by default, and the one a provisioner of node-local or block storage refuses
# (rancher.io/local-path: "NodePath only supports ReadWriteOnce and ReadWriteOncePod access modes"). Sources: the
# drivers' own docs (the CSI drivers list, Ceph's CSI page, OpenEBS' conformance matrix, TopoLVM's maintainers),
# OpenShift's access-mode table for the in-tree plugins. A provisioner not named here is not judged.
RWO = ("ReadWriteOnce", "ReadWriteOncePod")
RWX = ("ReadWriteOnce", "ReadWriteMany", "ReadOnlyMany")
PROVISIONER_MODES: dict[str, tuple[str, ...]] = {
    "rancher.io/local-path": RWO,  # unless the provisioner is set up with a sharedFileSystemPath
    "ebs.csi.aws.com": RWO, "kubernetes.io/aws-ebs": RWO,
    "pd.csi.storage.gke.io": RWO, "kubernetes.io/gce-pd": RWO,
    "disk.csi.azure.com": RWO, "kubernetes.io/azure-disk": RWO,
    "rbd.csi.ceph.com": RWO,  # ReadWriteMany only as a raw block device, not the chart's file system
    "openebs.io/local": RWO, "topolvm.io": RWO,  # node-local: a second node cannot reach the volume
    "efs.csi.aws.com": RWX, "filestore.csi.storage.gke.io": RWX, "file.csi.azure.com": RWX,
    "kubernetes.io/azure-file": RWX, "nfs.csi.k8s.io": RWX, "cephfs.csi.ceph.com": RWX,
}
JUDGED = ("ReadWriteMany",)
LOCAL_PATH = "rancher.io/local-path"
LOCAL_PATH_CONFIG = ("local-path-config", "local-path-storage")  # its ConfigMap (name, namespace), upstream's
SHARED = "a StorageClass of a shared file system (EFS, Filestore, Azure Files, NFS, CephFS)"


def unserved(provisioner: str | None, modes: list[str]) -> list[str]:
    """The judged access modes a well-known provisioner does not serve ([] when it does, or is not known)."""
    served = PROVISIONER_MODES.get(provisioner or "")
    return [] if served is None else [m for m in modes if m in JUDGED and m not in served]


def shared_mode(config: dict[str, Any] | None, name: str) -> bool | None:
    """Whether local-path serves class `name` from a shared file system (any access mode): its own
    storageClassConfigs entry, else the config's top level; None when the config is unknown."""
    if config is None:
        return None
    own = (config.get("storageClassConfigs") or {}).get(name)
    return bool((own if isinstance(own, dict) else config).get("sharedFileSystemPath"))


def _missing(sc: dict[str, Any], modes: list[str], got: Read) -> list[str] | None:
    """The judged modes the class's provisioner will not serve; None when that is unknown (a local-path class
    whose config could not be read)."""
    missing = unserved(sc.get("provisioner"), modes)
    if missing and sc.get("provisioner") == LOCAL_PATH:
        shared = shared_mode(got.local_path, sc["metadata"]["name"])
        return None if shared is None else ([] if shared else missing)
    return missing


def _modes_served_row(key: str, name: str, sc: dict[str, Any], modes: list[str], got: Read) -> Row | None:
    """A claim whose class's provisioner will not make it with these access modes: the class that would, if any."""
    missing = _missing(sc, modes, got)
    if missing is None:
        return Row(WARN, CHECK, f"{key}: {name} asks for [{' '.join(modes)}] and StorageClass "
                   f"{sc['metadata']['name']}'s provisioner {LOCAL_PATH} serves ReadWriteMany only in its "
                   "shared-filesystem mode, which its config (ConfigMap "
                   f"{'/'.join(reversed(LOCAL_PATH_CONFIG))}) does not show",
                   f"check that the class has a sharedFileSystemPath, else use {SHARED}")
    if not missing:
        return None
    others = [c["metadata"]["name"] + f" (provisioner {c.get('provisioner')})" for c in got.classes
              if c.get("provisioner") in PROVISIONER_MODES and _missing(c, modes, got) == []]
    remedy = (f"set infra.storage.{key}.storageClassName: {others[0].split(' ')[0]}" + (
        f" (it serves {' '.join(missing)}; {len(others)} such class(es): {', '.join(others)})") if others else
              f"{SHARED}, or infra.storage.{key}.accessModes [ReadWriteOnce] with mountOn one pod ({HOWTO})")
    if sc.get("provisioner") == LOCAL_PATH:
        remedy += "; or a local-path class with a sharedFileSystemPath"
    return Row(FAIL, CHECK, f"{key}: {name} asks for [{' '.join(modes)}] but StorageClass {sc['metadata']['name']}'s "
               f"provisioner {sc.get('provisioner')} serves only {', '.join(PROVISIONER_MODES[sc['provisioner']])}: "
               "it refuses the claim (ProvisioningFailed), which stays Pending and the GPU pods with it", remedy)


def _class_row(key: str, name: str, volume: dict[str, Any], got: Read) -> Row:
    """A claim the chart will create: the class it names, or the cluster's default class, exists."""
    wanted = volume.get("storageClassName")
    if wanted == "":
        return Row(WARN, CHECK, f"{key}: {name} asks for no StorageClass (storageClassName \"\"): nothing provisions "
                   f"it; it binds a PersistentVolume of no class with {volume.get('size')} or more and its access "
                   "modes that an admin made, and stays Pending (the GPU pods with it) until one exists",
                   "make sure such a PersistentVolume exists (kubectl get pv), or name a StorageClass")
    if "list storageclasses.storage.k8s.io" in got.denied:
        return Row(WARN, CHECK, f"{key}: " + forbidden("list", "storageclasses.storage.k8s.io", None,
                                                       f"whether {name}'s StorageClass exists is unknown"),
                   "ask a cluster admin which StorageClasses exist")
    if wanted:
        found = [c for c in got.classes if c["metadata"]["name"] == wanted]
        if not found:
            names = ", ".join(c["metadata"]["name"] for c in got.classes) or "none"
            return Row(FAIL, CHECK, f"{key}: StorageClass {wanted} does not exist (classes: {names}): the claim {name} "
                       "would stay Pending and the GPU pods with it",
                       f"set infra.storage.{key}.storageClassName to one that exists, or use claimName ({HOWTO})")
        sc, how = found[0], "named"
    else:
        defaults = [c for c in got.classes
                    if (c["metadata"].get("annotations") or {}).get(DEFAULT_CLASS) == "true"]
        if not defaults:
            return Row(FAIL, CHECK, f"{key}: no storageClassName and the cluster has no default StorageClass: the "
                       f"claim {name} would stay Pending and the GPU pods with it",
                       f"set infra.storage.{key}.storageClassName, or use claimName ({HOWTO})")
        sc, how = sorted(defaults, key=lambda c: c["metadata"].get("creationTimestamp") or "")[-1], "the default"
    refused = _modes_served_row(key, name, sc, list(volume.get("accessModes") or DEFAULT_ACCESS_MODES), got)
    if refused:
        return refused
    mode = sc.get("volumeBindingMode") or "Immediate"
    when = ("binds when the first pod is scheduled" if mode == "WaitForFirstConsumer" else "binds at once")
    return Row(OK, CHECK, f"{key}: {name} will be created ({volume.get('size')}) by StorageClass "
               f"{sc['metadata']['name']} ({how}; provisioner {sc.get('provisioner')}, volumeBindingMode {mode}: "
               f"{when})")


def volume_row(key: str, volume: dict[str, Any], cluster: dict[str, Any], release: str, got: Read) -> list[Row]:
    """The rows of one volume of infra.storage (chart-values form) from what `read` found."""
    name = claim_name(key, volume, release)
    groups = ", ".join(volume.get("mountOn") or ALL_GROUPS)
    count = writers(volume, cluster)
    existing = volume.get("claimName") is not None
    if "get persistentvolumeclaims" in got.denied:
        return [Row(WARN, CHECK, f"{key}: " + forbidden("get", "persistentvolumeclaims", got.namespace,
                                                        f"whether {name} exists and is Bound is unknown"),
                    "ask for get on persistentvolumeclaims in the namespace")]
    claim = got.claim
    if claim is None:
        if existing:
            return [Row(FAIL, CHECK, f"{key}: the claim {name} does not exist: the GPU pods that mount it stay Pending",
                        f"create it, or replace claimName with size to have the chart create it ({HOWTO})")]
        planned = _modes_row(f"{key}: {name}", list(volume.get("accessModes") or DEFAULT_ACCESS_MODES), count, groups)
        return [_class_row(key, name, volume, got)] + ([planned] if planned else [])
    spec, status = claim.get("spec") or {}, claim.get("status") or {}
    phase = status.get("phase") or "Pending"
    modes = list(status.get("accessModes") or spec.get("accessModes") or [])
    capacity = (status.get("capacity") or {}).get("storage")
    requested = ((spec.get("resources") or {}).get("requests") or {}).get("storage")
    kept = "" if existing else " (the release's own claim, kept across runs)"
    detail = (f"{key}: {name}{kept} is {phase} ({capacity or requested}, [{' '.join(modes)}], class "
              f"{spec.get('storageClassName') or 'none'})")
    rows: list[Row] = []
    if phase == "Bound":
        rows.append(Row(OK, CHECK, detail))
    elif phase == "Lost":
        rows.append(Row(FAIL, CHECK, f"{detail}: its volume is gone",
                        "restore the PersistentVolume or delete the claim"))
    else:
        rows.append(Row(WARN, CHECK, f"{detail}: not bound yet (a WaitForFirstConsumer class binds when the first "
                        "pod is scheduled; else no volume or provisioner answers it)",
                        f"kubectl describe pvc {name} names what it waits for"))
    asked = volume.get("size")
    if asked is not None and (capacity or requested) and qty(capacity or requested) < qty(asked):
        rows.append(Row(WARN, CHECK, f"{key}: {name} holds {capacity or requested}, smaller than the {asked} asked: "
                        "the upgrade asks to grow it, which only a StorageClass with allowVolumeExpansion does",
                        f"expand the claim, or delete it (its data with it) to have it created at {asked}"))
    fit = _modes_row(f"{key}: {name}", modes, count, groups)
    return rows + ([fit] if fit else [])


def rows(kube: Kube, values: dict[str, Any], release: str, ns: str) -> list[Row]:
    """A row (or a few) per volume of infra.storage; none when it sets none."""
    storage = (values.get("infra") or {}).get("storage") or {}
    cluster = (values.get("recipe") or {}).get("cluster") or {}
    out: list[Row] = []
    for key in LAYOUT:
        volume = storage.get(key)
        if not volume:
            continue
        got = read(kube, ns, claim_name(key, volume, release), need_classes=volume.get("claimName") is None)
        out += volume_row(key, volume, cluster, release, got)
    return out
