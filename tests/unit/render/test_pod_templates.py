"""render/pod_templates.py: the one reading of "which pod is which fleet" in rendered objects. The sandbox is the
Deployment's template, the test the `helm test` Pod, the submitter a RayJob's submitterPodTemplate, the head and
each worker group (by groupName) from the RayJob's rayClusterSpec or the RayCluster's spec; other kinds are
no pods."""

from __future__ import annotations

from generator.render.pod_templates import pod_specs, pod_templates


def template(name):
    return {"metadata": {"labels": {"role": name}}, "spec": {"containers": [{"name": name}]}}


def cluster_spec():
    return {"headGroupSpec": {"template": template("head")},
            "workerGroupSpecs": [{"groupName": "trainer", "template": template("trainer")},
                                 {"groupName": "inference", "template": template("inference")}]}


def test_every_role_of_a_rayjob_release():
    docs = [{"kind": "Service", "spec": {"ports": []}},
            {"kind": "Deployment", "spec": {"template": template("sandbox")}},
            {"kind": "RayJob", "spec": {"submitterPodTemplate": template("submitter"),
                                        "rayClusterSpec": cluster_spec()}},
            {"kind": "Pod", "metadata": {"name": "t"}, "spec": template("test")["spec"]}]
    found = pod_templates(docs)
    assert list(found) == ["sandbox", "submitter", "head", "trainer", "inference", "test"]
    assert {role: t["metadata"].get("labels", {}).get("role") for role, t in found.items()} == {
        "sandbox": "sandbox", "submitter": "submitter", "head": "head", "trainer": "trainer",
        "inference": "inference", "test": None}
    assert found["test"]["metadata"] == {"name": "t"}
    assert pod_specs(docs)["trainer"] == {"containers": [{"name": "trainer"}]}


def test_a_bringup_raycluster_and_a_rayjob_without_a_submitter():
    assert list(pod_templates([{"kind": "RayCluster", "spec": cluster_spec()}])) == ["head", "trainer", "inference"]
    assert "submitter" not in pod_templates([{"kind": "RayJob", "spec": {"rayClusterSpec": cluster_spec()}}])


def test_the_charts_render_gives_every_fleet(render):
    specs = render().pod_specs()
    assert {"sandbox", "head", "trainer", "inference", "test"} <= set(specs)
    assert all(spec["containers"] for spec in specs.values())
