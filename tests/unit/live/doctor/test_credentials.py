"""doctor's rows for the Secrets and ConfigMaps the pods read env from (generator/live/doctor/credentials.py): every
reference of the rendered pod templates, each object and key checked, `!` when RBAC forbids the read, and no
Secret value in any row. A small stand-in answers the GETs (what the apiserver answers: the object, 404, 403)."""

from __future__ import annotations

import json

from kubernetes.client.exceptions import ApiException

from generator.live.doctor import credentials
from generator.live.doctor.rows import FAIL, OK, WARN, Namespace
from generator.render.pod_templates import pod_templates
from tests.conftest import chart_values, render_values

VALUE = "hf_s3cr3t-value-never-printed"
IMAGE = {"repository": "ghcr.io/dockyard-rl/ubuntu-swe", "tag": "2026.11-vllm"}


class Cluster:
    """GET of a Secret or ConfigMap by name: the object, 404 when absent, 403 for the kinds in `forbid`."""

    def __init__(self, objects: dict[str, dict], forbid: tuple[str, ...] = ()):
        self.objects, self.forbid, self.asked = objects, forbid, []

    def request(self, method, path, query=None, body=None):
        self.asked.append((method, path))
        plural, name = path.split("/")[-2:]
        if plural in self.forbid:
            raise ApiException(status=403, reason="Forbidden")
        if f"{plural}/{name}" not in self.objects:
            raise ApiException(status=404, reason="Not Found")
        return json.loads(json.dumps(self.objects[f"{plural}/{name}"]))


def _templates(**infra) -> dict:
    values = chart_values(infra={"image": IMAGE, **infra}, sandbox={"extraEnv": [
        {"name": "DB_PASSWORD", "valueFrom": {"secretKeyRef": {"name": "db", "key": "password"}}}]})
    return pod_templates(render_values(values).docs)


ENV = [{"name": "HF_TOKEN", "valueFrom": {"secretKeyRef": {"name": "hf", "key": "token"}}},
       {"name": "MODEL", "valueFrom": {"configMapKeyRef": {"name": "run", "key": "model", "optional": True}}}]
ENV_FROM = [{"secretRef": {"name": "wandb"}}]
PRESENT = {"secrets/hf": {"data": {"token": "aGZfczNjcjN0"}, "stringData": {"x": VALUE}},
           "secrets/db": {"data": {"password": "cA=="}}, "secrets/wandb": {"data": {"WANDB_API_KEY": "eA=="}},
           "configmaps/run": {"data": {"model": VALUE}}}
NS = Namespace("dockyard", True)


def _rows(cluster, templates):
    return {r.check: r for r in credentials.rows(cluster, templates, NS)}


def test_the_references_of_every_pod_template():
    refs = credentials.references(_templates(env=ENV, envFrom=ENV_FROM))
    assert set(refs["secret"]) == {"hf", "db", "wandb"} and set(refs["configmap"]) == {"run"}
    assert refs["secret"]["hf"].roles == ["head", "trainer", "inference"]
    assert refs["secret"]["db"].roles == ["sandbox"] and refs["secret"]["wandb"].whole
    assert refs["configmap"]["run"].keys == {"model": True}


def test_every_object_and_key_present_is_ok_and_no_value_is_printed():
    rows = _rows(Cluster(PRESENT), _templates(env=ENV, envFrom=ENV_FROM))
    assert rows["env from Secrets"].mark == OK and rows["env from ConfigMaps"].mark == OK, rows
    assert "hf (token)" in rows["env from Secrets"].detail
    assert VALUE not in json.dumps([r.__dict__ for r in rows.values()])


def test_a_missing_secret_or_key_fails_naming_it_and_a_missing_optional_one_warns():
    objects = {k: v for k, v in PRESENT.items() if k not in ("secrets/wandb", "configmaps/run")}
    objects["secrets/hf"] = {"data": {"other": "eA=="}}
    rows = _rows(Cluster(objects), _templates(env=ENV, envFrom=ENV_FROM))
    bad = rows["env from Secrets"]
    assert bad.mark == FAIL and "hf lacks key token (head, trainer, inference)" in bad.detail, bad
    assert "wandb (head, trainer, inference)" in bad.detail and "CreateContainerConfigError" in bad.detail
    assert bad.remedy.startswith("kubectl -n dockyard create secret generic")
    assert rows["env from ConfigMaps"].mark == WARN and "optional" in rows["env from ConfigMaps"].detail


def test_a_read_rbac_forbids_is_a_warning():
    rows = _rows(Cluster(PRESENT, forbid=("secrets",)), _templates(env=ENV))
    row = rows["env from Secrets"]
    assert row.mark == WARN and row.detail.startswith("forbidden: cannot get secrets in namespace dockyard"), row
    assert rows["env from ConfigMaps"].mark == OK


def test_no_reference_no_row_and_no_read():
    cluster = Cluster({})
    templates = pod_templates(render_values(chart_values(infra={"image": IMAGE})).docs)
    assert credentials.rows(cluster, templates, NS) == [] and cluster.asked == []


def test_a_namespace_not_created_yet_has_none_of_them():
    cluster = Cluster(PRESENT)
    rows = {r.check: r for r in credentials.rows(cluster, _templates(env=ENV), Namespace("new", False))}
    assert rows["env from Secrets"].mark == FAIL and cluster.asked == []
