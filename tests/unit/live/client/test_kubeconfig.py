"""client/kubeconfig.py: which kubeconfig a live verb reads and how helm is told the same, by client-go's rules
(kubectl's): --kubeconfig alone; else $KUBECONFIG's files merged with the first definition of a name winning and
the first current-context winning; relative paths resolved against the file that holds them. The live twin with
kubectl as the oracle is tests/live/test_live_kubeconfig.py."""

from __future__ import annotations

import os

import pytest
import yaml

from generator.errors import CheckFailed, InputError
from generator.live.client.kubeconfig import HELM_TARGETING, Source, helm_env, merged, overridden, source


def kubeconfig(path, current, clusters, users=(), contexts=()):
    path.parent.mkdir(parents=True, exist_ok=True)
    doc = {"apiVersion": "v1", "kind": "Config", "clusters": list(clusters), "users": list(users),
           "contexts": list(contexts)}
    if current:
        doc["current-context"] = current
    path.write_text(yaml.safe_dump(doc))
    return str(path)


def cluster(name, server, ca=None):
    body = {"server": server}
    if ca:
        body["certificate-authority"] = ca
    return {"name": name, "cluster": body}


def test_the_first_file_to_define_a_name_or_a_current_context_wins(tmp_path, monkeypatch):
    a = kubeconfig(tmp_path / "a", "ctx-a", [cluster("one", "https://127.0.0.1:1")],
                   contexts=[{"name": "ctx-a", "context": {"cluster": "one"}}])
    b = kubeconfig(tmp_path / "b", "ctx-b", [cluster("one", "https://127.0.0.1:2"), cluster("two", "https://127.0.0.1:3")])
    monkeypatch.setenv("KUBECONFIG", os.pathsep.join([a, str(tmp_path / "missing"), b, a]))
    src = source(None)
    assert src == Source([a, b], False)  # a missing file is skipped, a repeated one read once
    doc = merged(src)
    assert doc["current-context"] == "ctx-a"  # not the last file's (the Python client's merger would say ctx-b)
    assert {c["name"]: c["cluster"]["server"] for c in doc["clusters"]} == {"one": "https://127.0.0.1:1",
                                                                            "two": "https://127.0.0.1:3"}


def test_relative_paths_are_relative_to_the_file_that_holds_them(tmp_path):
    path = kubeconfig(tmp_path / "desk" / "config", "c", [cluster("one", "https://127.0.0.1:1", ca="pki/ca.crt")],
                      users=[{"name": "me", "user": {"client-key": "/abs/key", "tokenFile": "token",
                                                     "exec": {"command": "./bin/login", "apiVersion": "x"}}},
                             {"name": "path", "user": {"exec": {"command": "aws", "apiVersion": "x"}}}])
    doc = merged(Source([path], True))
    desk = (tmp_path / "desk").resolve()
    assert doc["clusters"][0]["cluster"]["certificate-authority"] == str(desk / "pki" / "ca.crt")
    me = doc["users"][0]["user"]
    assert (me["client-key"], me["tokenFile"], me["exec"]["command"]) == ("/abs/key", str(desk / "token"),
                                                                          str(desk / "bin" / "login"))
    assert doc["users"][1]["user"]["exec"]["command"] == "aws"  # a command without '/' is looked up on $PATH


def test_an_explicit_file_is_read_alone_and_a_missing_one_is_bad_input(tmp_path, monkeypatch):
    other = kubeconfig(tmp_path / "other", "x", [])
    monkeypatch.setenv("KUBECONFIG", other)
    mine = kubeconfig(tmp_path / "mine", "y", [])
    assert source(mine) == Source([mine], True)
    with pytest.raises(InputError, match="--kubeconfig .*/nope: no such file"):
        source(str(tmp_path / "nope"))
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "gone"))
    with pytest.raises(CheckFailed, match="none of its files exists"):
        source(None)


def test_helm_gets_the_same_files_and_none_of_the_helm_variables_that_would_point_it_elsewhere():
    base = {"PATH": "/bin", "KUBECONFIG": "/elsewhere", "HELM_NAMESPACE": "prod", "HELM_KUBECONTEXT": "prod-ctx",
            "HELM_DRIVER": "configmap", "HELM_CACHE_HOME": "/cache"}
    env = helm_env(Source(["/a", "/b"], False), base)
    assert env == {"PATH": "/bin", "KUBECONFIG": os.pathsep.join(["/a", "/b"]), "HELM_DRIVER": "secret",
                   "HELM_CACHE_HOME": "/cache"}
    assert "KUBECONFIG" not in helm_env(Source(["/a"], True), base)  # helm gets --kubeconfig /a instead
    assert overridden(base) == ["HELM_KUBECONTEXT=prod-ctx", "HELM_NAMESPACE=prod", "HELM_DRIVER=configmap"]
    assert {"HELM_KUBEAPISERVER", "HELM_KUBETOKEN"} <= set(HELM_TARGETING)
