"""doctor's storage rows from API objects as the apiserver serves them (the playground proof is
tests/live/test_live_storage.py): a claim exists and is Bound, or the class that will provision it exists
(named with its provisioner and volumeBindingMode); the access modes fit the pods; a smaller claim is `!`."""

from __future__ import annotations

from typing import Any

from generator.live.doctor.rows import FAIL, OK, WARN
from generator.live.doctor.storage_rows import Read, volume_row

CLUSTER = {"trainer": {"nodes": 2, "gpusPerNode": 8}, "inference": {"nodes": 1, "gpusPerNode": 8}}


def _claim(phase: str = "Bound", modes: tuple[str, ...] = ("ReadWriteMany",), size: str = "1Ti") -> dict[str, Any]:
    status: dict[str, Any] = {"phase": phase}
    if phase == "Bound":
        status.update(accessModes=list(modes), capacity={"storage": size})
    return {"metadata": {"name": "c"}, "spec": {"accessModes": list(modes), "storageClassName": "nfs",
                                                 "resources": {"requests": {"storage": size}}}, "status": status}


def _class(name: str, default: bool = False, mode: str = "WaitForFirstConsumer") -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name}
    if default:
        meta["annotations"] = {"storageclass.kubernetes.io/is-default-class": "true"}
    return {"metadata": meta, "provisioner": f"{name}.csi.example", "volumeBindingMode": mode}


def _marks(rows):
    return [(r.mark, r.detail) for r in rows]


def test_an_existing_bound_claim_that_fits_is_ok():
    rows = volume_row("checkpoints", {"claimName": "ckpt"}, CLUSTER, "grpo-swe", Read("ns", _claim()))
    assert _marks(rows) == [(OK, "checkpoints: ckpt is Bound (1Ti, [ReadWriteMany], class nfs)")]


def test_a_missing_claim_fails_and_says_the_pods_would_wait():
    (row,) = volume_row("checkpoints", {"claimName": "ckpt"}, CLUSTER, "grpo-swe", Read("ns"))
    assert row.mark == FAIL and "the claim ckpt does not exist" in row.detail and "size" in row.remedy


def test_a_pending_claim_is_a_warning_naming_the_binding_mode():
    (row,) = volume_row("modelCache", {"claimName": "hf"}, CLUSTER, "grpo-swe", Read("ns", _claim("Pending")))
    assert row.mark == WARN and "hf is Pending" in row.detail and "WaitForFirstConsumer" in row.detail


def test_read_write_once_for_a_gang_warns_and_read_write_once_pod_fails():
    once = volume_row("checkpoints", {"claimName": "c"}, CLUSTER, "r", Read("ns", _claim(modes=("ReadWriteOnce",))))
    assert [r.mark for r in once] == [OK, WARN]
    assert "4 pods (head, trainer, inference) mount it" in once[1].detail and "one node" in once[1].detail
    pod = volume_row("checkpoints", {"claimName": "c"}, CLUSTER, "r", Read("ns", _claim(modes=("ReadWriteOncePod",))))
    assert [r.mark for r in pod] == [OK, FAIL]
    alone = volume_row("checkpoints", {"claimName": "c", "mountOn": ["head"]}, CLUSTER, "r",
                       Read("ns", _claim(modes=("ReadWriteOncePod",))))
    assert [r.mark for r in alone] == [OK]


def test_a_kept_claim_smaller_than_asked_warns():
    rows = volume_row("checkpoints", {"size": "2Ti"}, CLUSTER, "grpo-swe", Read("ns", _claim(size="1Ti")))
    assert [r.mark for r in rows] == [OK, WARN]
    assert "the release's own claim, kept across runs" in rows[0].detail
    assert "grpo-swe-checkpoints holds 1Ti, smaller than the 2Ti asked" in rows[1].detail


def test_a_claim_to_create_names_its_class_provisioner_and_binding_mode():
    got = Read("ns", classes=[_class("standard", default=True), _class("fast", mode="Immediate")])
    (named,) = volume_row("checkpoints", {"size": "1Ti", "storageClassName": "fast"}, CLUSTER, "grpo-swe", got)
    assert named.mark == OK and named.detail == (
        "checkpoints: grpo-swe-checkpoints will be created (1Ti) by StorageClass fast (named; provisioner "
        "fast.csi.example, volumeBindingMode Immediate: binds at once)")
    (default,) = volume_row("logs", {"size": "10Gi"}, CLUSTER, "grpo-swe", got)
    assert default.mark == OK and "StorageClass standard (the default; provisioner standard.csi.example, " \
        "volumeBindingMode WaitForFirstConsumer: binds when the first pod is scheduled)" in default.detail


def test_a_missing_class_or_no_default_class_fails():
    got = Read("ns", classes=[_class("standard")])
    (missing,) = volume_row("checkpoints", {"size": "1Ti", "storageClassName": "fast"}, CLUSTER, "r", got)
    assert missing.mark == FAIL and "StorageClass fast does not exist (classes: standard)" in missing.detail
    (nodefault,) = volume_row("checkpoints", {"size": "1Ti"}, CLUSTER, "r", got)
    assert nodefault.mark == FAIL and "no default StorageClass" in nodefault.detail


def test_what_rbac_hides_is_a_warning_not_a_failure():
    (claim,) = volume_row("checkpoints", {"claimName": "c"}, CLUSTER, "r",
                          Read("ns", denied=["get persistentvolumeclaims"]))
    assert claim.mark == WARN and "cannot get persistentvolumeclaims in namespace ns" in claim.detail
    (cls,) = volume_row("checkpoints", {"size": "1Ti"}, CLUSTER, "r",
                        Read("ns", denied=["list storageclasses.storage.k8s.io"]))
    assert cls.mark == WARN and "cannot list storageclasses.storage.k8s.io at cluster scope" in cls.detail


def test_no_class_is_a_warning_that_a_pre_made_volume_must_exist():
    got = Read("ns", classes=[_class("standard", default=True)])
    (row,) = volume_row("checkpoints", {"size": "1Ti", "storageClassName": ""}, CLUSTER, "r", got)
    assert row.mark == WARN and 'asks for no StorageClass (storageClassName "")' in row.detail
    assert "binds a PersistentVolume of no class with 1Ti or more" in row.detail


# A claim a well-known provisioner will not make as asked (its access modes). ------------------------------------

# local-path-provisioner's config.json as kind ships it (node paths only), and as the playground's real node sets
# it up (generator/playground/node/local_path.py: a second class in the shared-filesystem mode).
KIND_CONFIG = {"nodePathMap": [{"node": "DEFAULT_PATH_FOR_NON_LISTED_NODES", "paths": ["/var/local-path-provisioner"]}]}
PLAYGROUND_CONFIG = {"storageClassConfigs": {"local-path": {"nodePathMap": [{"node": "n", "paths": ["/v"]}]},
                                             "local-path-rwx": {"sharedFileSystemPath": "/shared"}}}


def _sc(name: str, provisioner: str, default: bool = False) -> dict[str, Any]:
    return {**_class(name, default), "provisioner": provisioner}


def test_read_write_many_on_local_path_fails_naming_the_class_that_would_serve_it():
    """kind's default class: local-path refuses ReadWriteMany (ProvisioningFailed), so doctor says so up front."""
    got = Read("ns", classes=[_sc("standard", "rancher.io/local-path", default=True), _sc("efs", "efs.csi.aws.com")],
               local_path=KIND_CONFIG)
    (row,) = volume_row("checkpoints", {"size": "1Ti"}, CLUSTER, "grpo-swe", got)  # the chart's ReadWriteMany
    assert row.mark == FAIL
    assert row.detail.startswith("checkpoints: grpo-swe-checkpoints asks for [ReadWriteMany] but StorageClass "
                                 "standard's provisioner rancher.io/local-path serves only ReadWriteOnce, "
                                 "ReadWriteOncePod")
    assert row.remedy.startswith("set infra.storage.checkpoints.storageClassName: efs (it serves ReadWriteMany")
    assert "sharedFileSystemPath" in row.remedy


def test_with_no_class_that_serves_it_the_remedy_is_a_shared_file_system():
    got = Read("ns", classes=[_sc("gp3", "ebs.csi.aws.com", default=True), _sc("pd", "pd.csi.storage.gke.io"),
                              _sc("other", "example.com/unknown")])
    (row,) = volume_row("logs", {"size": "10Gi", "storageClassName": "gp3"}, CLUSTER, "grpo-swe", got)
    assert row.mark == FAIL and "provisioner ebs.csi.aws.com serves only" in row.detail
    assert row.remedy.startswith("a StorageClass of a shared file system")
    assert "other" not in row.remedy  # an unknown provisioner is never offered as one that serves it


def test_negative_controls_read_write_once_on_local_path_and_many_on_efs_are_ok():
    local = Read("ns", classes=[_sc("standard", "rancher.io/local-path", default=True)])
    rows = volume_row("logs", {"size": "10Gi", "accessModes": ["ReadWriteOnce"], "mountOn": ["head"]}, CLUSTER,
                      "grpo-swe", local)
    assert _marks(rows) == [(OK, ("logs: grpo-swe-logs will be created (10Gi) by StorageClass standard (the default; "
                                 "provisioner rancher.io/local-path, volumeBindingMode WaitForFirstConsumer: binds "
                                 "when the first pod is scheduled)"))]
    efs = Read("ns", classes=[_sc("efs", "efs.csi.aws.com", default=True)])
    (row,) = volume_row("checkpoints", {"size": "1Ti"}, CLUSTER, "grpo-swe", efs)
    assert row.mark == OK and "provisioner efs.csi.aws.com" in row.detail


def test_an_unknown_provisioner_is_not_judged():
    got = Read("ns", classes=[_sc("mine", "storage.example.com/fancy", default=True)])
    (row,) = volume_row("checkpoints", {"size": "1Ti"}, CLUSTER, "grpo-swe", got)
    assert row.mark == OK and "will be created" in row.detail


def test_a_local_path_class_in_its_shared_filesystem_mode_serves_read_write_many():
    classes = [_sc("local-path", "rancher.io/local-path", default=True), _sc("local-path-rwx", "rancher.io/local-path")]
    got = Read("ns", classes=classes, local_path=PLAYGROUND_CONFIG)
    (row,) = volume_row("checkpoints", {"size": "1Ti", "storageClassName": "local-path-rwx"}, CLUSTER, "r", got)
    assert row.mark == OK and "StorageClass local-path-rwx" in row.detail
    (row,) = volume_row("checkpoints", {"size": "1Ti"}, CLUSTER, "r", got)  # the default, node paths only
    assert row.mark == FAIL and row.remedy.startswith("set infra.storage.checkpoints.storageClassName: local-path-rwx")


def test_a_local_path_class_whose_config_cannot_be_read_is_a_warning():
    got = Read("ns", classes=[_sc("standard", "rancher.io/local-path", default=True)], local_path=None)
    (row,) = volume_row("checkpoints", {"size": "1Ti"}, CLUSTER, "r", got)
    assert row.mark == WARN and "shared-filesystem mode" in row.detail
