"""launch.topology's annotations and cross-model rules, as data (the models, the fast path and the schema twins
use them; tests/chart/test_kueue_chart.py checks the chart renders the same)."""

from __future__ import annotations

import pytest

from generator.inputs import schema_check, topology_rules


@pytest.mark.parametrize("topology, expected", [
    (None, {}),
    ({"level": "a.io/rack"}, {topology_rules.REQUIRED: "a.io/rack"}),
    ({"level": "a.io/rack", "mode": "preferred"}, {topology_rules.PREFERRED: "a.io/rack"}),
    ({"level": "a.io/rack", "groups": "together"}, {topology_rules.REQUIRED: "a.io/rack",
                                                    topology_rules.GROUP: topology_rules.FLEETS_GROUP}),
])
def test_pod_annotations(topology, expected):
    assert topology_rules.pod_annotations(topology) == expected


@pytest.mark.parametrize("trainer, inference, refused", [(1, 1, False), (4, 1, False), (1, 4, False),
                                                         (2, 2, True), (8, 3, True)])
def test_together_needs_a_single_node_fleet(trainer, inference, refused):
    cluster = {"trainer": {"nodes": trainer}, "inference": {"nodes": inference}}
    together = {"level": "a.io/rack", "groups": "together"}
    assert (topology_rules.together_problem(together, cluster) is not None) is refused
    assert topology_rules.together_problem({"level": "a.io/rack", "groups": "each"}, cluster) is None
    assert topology_rules.together_problem(None, cluster) is None


def test_an_overlay_sets_no_podset_annotation_of_a_placed_fleet():
    overlay = [{"groupName": "trainer", "template": {"metadata": {"annotations": {"team": "rl"}}}},
               {"groupName": "inference", "template": {"metadata": {"annotations": {
                   "kueue.x-k8s.io/podset-slice-size": "2"}}}}]
    where, message, expected = topology_rules.overlay_problem({"level": "a.io/rack"}, overlay)
    assert where == ("workerGroupSpecs", 1, "template", "metadata", "annotations", "kueue.x-k8s.io/podset-slice-size")
    assert message == topology_rules.OVERLAY_OWNED and "inference overlay" in expected
    assert topology_rules.overlay_problem(None, overlay) is None  # without launch.topology they are the overlay's
    assert topology_rules.overlay_problem({"level": "a.io/rack"}, overlay[:1]) is None


def test_the_schema_twins_refuse_what_the_functions_refuse():
    """The fast path's validator (generator.inputs.schema_check) says the same of the twins."""
    def values(topology, trainer=2, inference=2, annotations=None):
        out = {"launch": {"queue": "q", "topology": topology},
               "recipe": {"cluster": {"trainer": {"nodes": trainer}, "inference": {"nodes": inference}}}}
        if annotations:
            out["kuberay"] = {"spec": {"workerGroupSpecs": [{"groupName": "trainer", "template": {
                "metadata": {"annotations": annotations}}}]}}
        return out

    def refuses(data):
        checker = schema_check._checker("values")
        return not checker.ok(data, {"allOf": [topology_rules.TOGETHER_RULE, topology_rules.OVERLAY_RULE]})

    assert refuses(values({"level": "a.io/rack", "groups": "together"}))
    assert not refuses(values({"level": "a.io/rack", "groups": "together"}, inference=1))
    assert not refuses(values({"level": "a.io/rack", "groups": "each"}))
    assert refuses(values({"level": "a.io/rack"}, annotations={topology_rules.GROUP: "g"}))
    assert not refuses(values({"level": "a.io/rack"}, annotations={"team": "rl"}))


def test_a_multi_host_fleet_or_a_grouped_head_undoes_the_placement():
    topology = {"level": "a.io/rack", "groups": "together"}
    where, message, _ = topology_rules.overlay_problem(topology, [{"groupName": "trainer", "numOfHosts": 2}])
    assert where == ("workerGroupSpecs", 0, "numOfHosts") and message == topology_rules.MULTI_HOST
    assert topology_rules.overlay_problem(topology, [{"groupName": "trainer", "numOfHosts": 1}]) is None
    head = {"template": {"metadata": {"annotations": {topology_rules.GROUP: topology_rules.FLEETS_GROUP}}}}
    where, message, _ = topology_rules.overlay_problem(topology, [], head)
    assert where[0] == "headGroupSpec" and message == topology_rules.HEAD_GROUPED
    assert topology_rules.overlay_problem(None, [{"groupName": "trainer", "numOfHosts": 2}], head) is None
