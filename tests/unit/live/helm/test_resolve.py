"""helm/resolve.py: which release a verb means. A named release is looked up in every namespace (or the one
given); without a name the only dockyard release in scope is used; a user who may not list other namespaces is
looked up in the kubeconfig context's namespace; not found says where it looked and whether another Helm driver
holds it. The cluster here is a few Helm records and Deployments, listed as the apiserver lists them."""

from __future__ import annotations

import pytest
from kubernetes.client.exceptions import ApiException

from generator.errors import CheckFailed
from generator.live.helm.resolve import OTHERS_FORBIDDEN, ReleaseNotFound, resolve


def record(name, namespace, version=1, kind="Secret"):
    return {"kind": kind, "metadata": {"name": f"sh.helm.release.v1.{name}.v{version}", "namespace": namespace,
                                       "labels": {"owner": "helm", "name": name, "version": str(version)}}}


def deployment(release, namespace):
    return {"metadata": {"name": f"{release}-sandbox", "namespace": namespace,
                         "labels": {"app.kubernetes.io/instance": release, "app.kubernetes.io/name": "dockyard"}}}


class Kube:
    def __init__(self, secrets=(), configmaps=(), deployments=(), context_namespace=None, forbid_all=False):
        self.objects = {"secrets": list(secrets), "configmaps": list(configmaps), "deployments": list(deployments)}
        self.context_namespace = context_namespace
        self.forbid_all = forbid_all

    def list(self, path, label_selector=None, field_selector=None):
        parts = path.strip("/").split("/")
        namespace = parts[parts.index("namespaces") + 1] if "namespaces" in parts else None
        if namespace is None and self.forbid_all:
            raise ApiException(status=403, reason="Forbidden")
        wanted = dict(kv.split("=") for kv in (label_selector or "").split(",") if kv)
        return [o for o in self.objects[parts[-1]]
                if namespace in (None, o["metadata"]["namespace"])
                and all(o["metadata"]["labels"].get(k) == v for k, v in wanted.items())]

    def namespace_deletion(self, name):
        return None


def test_a_named_release_is_found_in_its_namespace_oldest_record_first():
    kube = Kube(secrets=[record("small", "rec", 2), record("small", "rec", 1), record("other", "team")])
    release, namespace, records = resolve(kube, "small", None)
    assert (release, namespace) == ("small", "rec")
    assert [r["metadata"]["labels"]["version"] for r in records] == ["1", "2"]


def test_a_name_in_two_namespaces_takes_the_contexts_or_asks_for_n():
    secrets = [record("small", "a"), record("small", "b")]
    assert resolve(Kube(secrets=secrets, context_namespace="b"), "small", None)[1] == "b"
    with pytest.raises(CheckFailed, match="release small exists in namespaces a, b: pass -n NAMESPACE"):
        resolve(Kube(secrets=secrets), "small", None)


def test_not_found_says_where_it_looked_and_names_another_helm_driver():
    with pytest.raises(ReleaseNotFound, match="^release small not found in namespace rec$") as exc:
        resolve(Kube(), "small", "rec")
    assert exc.value.namespace == "rec"
    kube = Kube(configmaps=[record("small", "rec", kind="ConfigMap")])
    with pytest.raises(CheckFailed, match="Helm's configmap driver holds a release small in rec") as other:
        resolve(kube, "small", None)
    assert not isinstance(other.value, ReleaseNotFound)  # it exists: nothing of it may be cleared as gone


def test_a_user_of_one_namespace_is_looked_up_in_the_contexts_namespace():
    kube = Kube(secrets=[record("small", "team")], context_namespace="team", forbid_all=True)
    assert resolve(kube, "small", None)[:2] == ("small", "team")
    assert resolve(kube, None, None)[:2] == ("small", "team")
    with pytest.raises(ReleaseNotFound, match=f"not found in namespace team \\({OTHERS_FORBIDDEN}\\)"):
        resolve(kube, "gone", None)


def test_without_a_name_the_only_dockyard_release_in_scope():
    secrets = [record("small", "rec"), record("someone-elses", "rec")]
    kube = Kube(secrets=secrets, deployments=[deployment("small", "rec")])
    assert resolve(kube, None, None)[:2] == ("small", "rec")  # the other release deploys no dockyard object
    kube.objects["deployments"].append(deployment("big", "rec"))
    kube.objects["secrets"].append(record("big", "rec"))
    with pytest.raises(CheckFailed, match=r"several releases: name one of big \(-n rec\), small \(-n rec\)"):
        resolve(kube, None, None)
    with pytest.raises(CheckFailed, match="no dockyard release found in namespace empty: start one with"):
        resolve(kube, None, "empty")
