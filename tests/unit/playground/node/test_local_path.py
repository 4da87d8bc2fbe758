"""The real node's dynamic provisioner (generator/playground/node/local_path.py), offline: where its volumes live,
its helper pods' image, its command line and the objects applied before it starts."""

from __future__ import annotations

import json

import yaml

from generator.live.doctor import storage_rows
from generator.playground.node import components as C
from generator.playground.node import images, local_path
from generator.playground.node import spec as S


def test_volumes_live_under_the_state_folder_that_down_removes(tmp_path):
    spec = S.NodeSpec(tmp_path / "pg")
    classes = local_path.config(spec)["storageClassConfigs"]
    node_paths = classes["local-path"]["nodePathMap"]
    assert node_paths == [{"node": S.NODE_NAME, "paths": [str(tmp_path / "pg" / "node" / "local-path")]}]
    # no DEFAULT_PATH_FOR_NON_LISTED_NODES: a claim whose pod landed on a simulated node gets no volume
    assert all(m["node"] == S.NODE_NAME for m in node_paths)
    # ReadWriteMany: the shared-filesystem mode (upstream refuses it on node paths), a directory beside them
    assert classes["local-path-rwx"] == {"sharedFileSystemPath": str(tmp_path / "pg" / "node" / "local-path-rwx")}


def test_helper_pods_use_an_image_the_node_holds_with_the_shell_tools_the_scripts_run(tmp_path):
    spec = S.NodeSpec(tmp_path / "pg")
    executor = images.refs("1")["executor"]
    cfg, pod = local_path.write_files(spec, executor)
    assert json.loads(cfg.read_text()) == local_path.config(spec)
    (container,) = yaml.safe_load(pod.read_text())["spec"]["containers"]
    assert (container["image"], container["imagePullPolicy"]) == (executor, "Never")  # nothing is pulled
    # the shared-filesystem mode names no node: the template keeps every helper pod on the real node
    assert yaml.safe_load(pod.read_text())["spec"]["nodeSelector"] == {S.NODE_LABEL: "true"}
    assert (tmp_path / "pg" / "node" / "local-path").is_dir()
    # every command the setup and teardown scripts run is a busybox applet of that image
    for script in (local_path.SETUP, local_path.TEARDOWN):
        assert script.startswith("#!/bin/sh\n")
        for line in script.splitlines()[1:]:
            assert line.split()[0] in {"set", *images.APPLETS}, line


def test_it_runs_as_the_default_storage_class_named_as_kind_names_it(tmp_path):
    spec = S.NodeSpec(tmp_path / "pg")
    args = local_path.argv(tmp_path / "bin", spec, tmp_path / "c.json", tmp_path / "p.json", "img:1")
    assert args[:2] == [str(tmp_path / "bin" / "local-path-provisioner"), "start"]
    flags = dict(a.removeprefix("--").split("=", 1) for a in args[2:])
    assert flags["kubeconfig"] == str(spec.kubeconfig(local_path.NAME)) and local_path.NAME in C.IDENTITIES
    assert (flags["namespace"], flags["service-account-name"]) == (local_path.NAMESPACE, local_path.SERVICE_ACCOUNT)
    assert flags["provisioner-name"] == "rancher.io/local-path" and flags["helper-image"] == "img:1"
    objs = {o["kind"]: o for _path, o in local_path.objects(spec)}
    classes = {o["metadata"]["name"]: o for _path, o in local_path.objects(spec) if o["kind"] == "StorageClass"}
    assert set(classes) == set(local_path.config(spec)["storageClassConfigs"]) == {"local-path", "local-path-rwx"}
    default = {n for n, sc in classes.items()
               if sc["metadata"]["annotations"]["storageclass.kubernetes.io/is-default-class"] == "true"}
    assert default == {"local-path"}
    for sc in classes.values():
        assert sc["provisioner"] == flags["provisioner-name"]
        assert sc["volumeBindingMode"] == "WaitForFirstConsumer"  # the node is known before the directory is made
    # the helper pods mount the scripts from this ConfigMap, as the provisioner's namespace's ServiceAccount
    assert set(objs["ConfigMap"]["data"]) == {"setup", "teardown", "config.json"}
    # config.json where upstream's install keeps it: doctor reads there which class is in the shared mode
    shown = json.loads(objs["ConfigMap"]["data"]["config.json"])
    assert shown == local_path.config(spec)
    assert [storage_rows.shared_mode(shown, n) for n in ("local-path", "local-path-rwx")] == [False, True]
    assert objs["ConfigMap"]["metadata"]["name"] == flags["configmap-name"]
    namespace = objs["Namespace"]["metadata"]["name"]
    assert objs["ServiceAccount"]["metadata"]["namespace"] == namespace == "local-path-storage"
