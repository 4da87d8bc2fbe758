"""infra.storage on the playground: a claim the chart creates binds (a PV the playground's provisioner makes for it,
generator/playground/provisioner.py) and the gang becomes ready with it mounted; Helm keeps it through
`uninstall`, an upgrade that drops it, `rollback`, a mode switch and a plain `helm uninstall`; the next run of
the release adopts the same claim (same UID); doctor names the claim, the class, and what is missing. The
provisioner serves more claims than a fixed pool would hold, gives each volume back when its claim goes (a PV kept
with Retain aside), and provisions a claim made while it was down once it is back."""

from __future__ import annotations

import os
import signal
import subprocess
from pathlib import Path

import pytest
from kubernetes import client
from live_helpers import RECIPE, cli, infra_variant, kube

from generator.render.helm import supported_helm

pytestmark = pytest.mark.timeout(420)

CLAIM = "small-checkpoints"


@pytest.fixture
def release(playground, namespace, capsys):
    yield "small"
    from generator.live.helm.records import release_records

    if release_records(kube(playground), "small", namespace):
        cli(capsys, "uninstall", "small", "-n", namespace, "--kubeconfig", playground.kubeconfig, "--timeout", 60)


def _with_storage(data, **volumes):
    data["infra"]["storage"] = volumes


def _claim(playground, namespace):
    from kubernetes.client.exceptions import ApiException

    try:
        return client.CoreV1Api(playground.api_client()).read_namespaced_persistent_volume_claim(CLAIM, namespace)
    except ApiException as exc:
        if exc.status == 404:
            return None
        raise


def _history(capsys, kc, namespace) -> list[str]:
    rc, out, err = cli(capsys, "history", "small", "-n", namespace, "--kubeconfig", kc)
    assert rc == 0, err
    return [line for line in out.splitlines() if line.split()[:1] and line.split()[0].isdigit()]


def test_a_created_claim_is_mounted_kept_through_every_removal_and_adopted_again(playground, namespace, release,
                                                                                capsys, tmp_path):
    kc = playground.kubeconfig
    stored = infra_variant(tmp_path, "stored.yaml", lambda d: _with_storage(d, checkpoints={"size": "10Gi"}))
    rc, out, err = cli(capsys, "run", RECIPE, stored, "-n", namespace, "--wait", "--kubeconfig", kc, "--timeout", 120)
    assert rc == 0, out + err  # the gang is ready with the claim bound and mounted (what `make demo` runs)
    claim = _claim(playground, namespace)
    assert claim.status.phase == "Bound" and claim.metadata.annotations["helm.sh/resource-policy"] == "keep"
    uid = claim.metadata.uid
    pods = client.CoreV1Api(playground.api_client()).list_namespaced_pod(
        namespace, label_selector="app.kubernetes.io/component=ray").items
    fleets = {p.metadata.labels["dockyard.dev/fleet"] for p in pods if any(
        v.persistent_volume_claim and v.persistent_volume_claim.claim_name == CLAIM for v in p.spec.volumes)}
    assert {"head", "trainer", "inference"} <= fleets

    # `uninstall`: the claim stays, and the output says so and how to delete it
    rc, out, err = cli(capsys, "uninstall", "small", "-n", namespace, "--kubeconfig", kc, "--timeout", 60)
    assert rc == 0, err
    assert "nothing left but the kept claims" in out
    assert f"kept PersistentVolumeClaim {CLAIM} (10Gi, Bound; helm.sh/resource-policy: keep)" in out  # the PV's size
    assert f"kubectl delete pvc {CLAIM} -n {namespace}" in out
    assert _claim(playground, namespace).metadata.uid == uid

    # a second run of the release installs afresh and adopts the same claim (Helm's ownership annotations match)
    rc, out, err = cli(capsys, "run", RECIPE, stored, "-n", namespace, "--kubeconfig", kc, "--timeout", 120)
    assert rc == 0, out + err
    assert _claim(playground, namespace).metadata.uid == uid

    # an upgrade that drops storage and switches mode: the claim stays; storage back (an upgrade adopts the kept
    # claim); a rollback to the revision without it: the claim stays
    bare = infra_variant(tmp_path, "bare.yaml", lambda d: d["launch"].update(mode="bringup"))
    rc, out, err = cli(capsys, "run", RECIPE, bare, "-n", namespace, "--kubeconfig", kc, "--timeout", 120, "--replace")
    assert rc == 0, out + err
    assert _claim(playground, namespace).metadata.uid == uid
    rc, out, err = cli(capsys, "run", RECIPE, stored, "-n", namespace, "--kubeconfig", kc, "--timeout", 120,
                       "--replace")
    assert rc == 0, out + err
    assert _claim(playground, namespace).metadata.uid == uid
    rc, out, err = cli(capsys, "rollback", "small", "-n", namespace, "--kubeconfig", kc, "--timeout", 120,
                       "--replace")
    assert rc == 0, out + err
    assert _claim(playground, namespace).metadata.uid == uid

    # a rollback that would take the kept claim back (Helm's rollback cannot adopt it) is refused before helm runs
    revision = len(_history(capsys, kc, namespace))
    assert revision == 4, revision  # after the uninstall: the install, the upgrades to bare and back, the rollback
    rc, out, err = cli(capsys, "rollback", "small", "-n", namespace, "--kubeconfig", kc, "--timeout", 120,
                       "--replace")
    assert rc == 1 and "refused, nothing was changed" in err and f"the claim {CLAIM}, which revision" in err, err
    assert "with `run` instead: an upgrade adopts the kept claim" in err, err
    assert len(_history(capsys, kc, namespace)) == revision and _claim(playground, namespace).metadata.uid == uid

    # plain `helm uninstall`, then `run` again: kept, and adopted once more
    done = subprocess.run([str(supported_helm().path), "uninstall", "small", "-n", namespace, "--kubeconfig", kc,
                           "--wait", "--timeout", "60s"], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert _claim(playground, namespace).metadata.uid == uid
    rc, out, err = cli(capsys, "run", RECIPE, stored, "-n", namespace, "--kubeconfig", kc, "--timeout", 120)
    assert rc == 0, out + err
    assert _claim(playground, namespace).metadata.uid == uid


def test_doctor_names_the_claim_the_class_and_what_is_missing(playground, namespace, capsys, tmp_path):
    kc = playground.kubeconfig

    def doctor(**volumes) -> str:
        infra = infra_variant(tmp_path, "d.yaml", lambda d: _with_storage(d, **volumes))
        _, out, err = cli(capsys, "doctor", RECIPE, infra, "-n", namespace, "--kubeconfig", kc)
        return "\n".join(line for line in out.splitlines() if "storage" in line or "→" in line)

    out = doctor(checkpoints={"size": "10Gi"}, logs={"size": "1Gi", "storageClassName": "fast"},
                 modelCache={"claimName": "hf"})
    assert ("✓ storage" in out and "checkpoints: small-checkpoints will be created (10Gi) by StorageClass "
            "playground-hostpath (the default; provisioner playground.dockyard.dev/hostpath, volumeBindingMode "
            "Immediate: binds at once)") in out, out
    assert "✗ storage" in out and "logs: StorageClass fast does not exist" in out, out
    assert "modelCache: the claim hf does not exist" in out, out

    core = client.CoreV1Api(playground.api_client())
    core.create_namespaced_persistent_volume_claim(namespace, {
        "metadata": {"name": "hf"},
        "spec": {"accessModes": ["ReadWriteOnce"], "storageClassName": "none-such",
                 "resources": {"requests": {"storage": "1Gi"}}}})
    out = doctor(modelCache={"claimName": "hf"})
    assert "! storage" in out and "modelCache: hf is Pending" in out, out
    assert "has access modes [ReadWriteOnce] but 3 pods (head, trainer, inference) mount it" in out, out


def test_the_provisioner_gives_each_claim_a_volume_and_takes_it_back_when_the_claim_goes(playground, namespace, wait):
    core = client.CoreV1Api(playground.api_client())
    root = Path(playground.state_dir) / "volumes"

    def make(name: str) -> None:  # no class: the playground's default, playground-hostpath
        core.create_namespaced_persistent_volume_claim(namespace, {
            "metadata": {"name": name}, "spec": {"accessModes": ["ReadWriteOnce"],
                                                 "resources": {"requests": {"storage": "1Gi"}}}})

    def bound(names: list[str]) -> dict[str, str]:
        claims = {c.metadata.name: c for c in core.list_namespaced_persistent_volume_claim(namespace).items}
        return {n: claims[n].spec.volume_name for n in names if n in claims and claims[n].status.phase == "Bound"}

    def pv_names() -> set[str]:
        return {pv.metadata.name for pv in core.list_persistent_volume().items}

    # 3 waves of 8: 24 claims, more than the 16 static PVs the playground once had, each with a volume of its own
    for wave in range(3):
        names = [f"w{wave}-{i}" for i in range(8)]
        for name in names:
            make(name)
        wait(lambda names=names: len(bound(names)) == len(names), 30, f"wave {wave}'s claims to bind")
        pvs = set(bound(names).values())
        assert len(pvs) == 8 and all((root / pv).is_dir() for pv in pvs), pvs
        assert {core.read_persistent_volume(pv).spec.capacity["storage"] for pv in pvs} == {"1Gi"}
        for name in names:
            core.delete_namespaced_persistent_volume_claim(name, namespace)
        wait(lambda pvs=pvs: not pvs & pv_names(), 30, f"wave {wave}'s PVs to be deleted")
        assert not any((root / pv).exists() for pv in pvs)

    # the negative control: a PV patched to Retain stays Released, directory and all
    make("kept")
    wait(lambda: bound(["kept"]), 30, "claim kept to bind")
    kept = bound(["kept"])["kept"]
    core.patch_persistent_volume(kept, {"spec": {"persistentVolumeReclaimPolicy": "Retain"}})
    core.delete_namespaced_persistent_volume_claim("kept", namespace)
    wait(lambda: core.read_persistent_volume(kept).status.phase == "Released", 30, f"{kept} to be Released")
    try:
        # a claim made while the provisioner is down binds once its supervisor has started it again; that pass
        # looks at every PV, the Released one too
        os.kill(playground.pids()["volume-provisioner"], signal.SIGKILL)
        make("late")
        assert core.read_namespaced_persistent_volume_claim("late", namespace).status.phase == "Pending"
        wait(lambda: bound(["late"]), 60, "claim late to bind after the provisioner's restart")
        assert core.read_persistent_volume(kept).status.phase == "Released" and (root / kept).is_dir()
    finally:
        core.delete_persistent_volume(kept)
        (root / kept).rmdir()
