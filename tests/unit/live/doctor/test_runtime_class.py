"""doctor's RuntimeClass row (generator.live.doctor.runtime_class) for each answer the cluster can give."""

from __future__ import annotations

from generator.live.doctor.runtime_class import Read, row, with_overhead

GVISOR = {"metadata": {"name": "gvisor"}, "handler": "runsc", "scheduling": {"nodeSelector": {"sandbox": "true"}}}
LABELS = {"cpu-1": {"sandbox": "true"}, "cpu-2": {"sandbox": "true"}, "gpu-1": {}}


def test_the_handler_reported_by_a_node_it_schedules_onto_is_ok():
    r = row(Read("gvisor", GVISOR), LABELS, {"cpu-1": {"runc", "runsc"}, "cpu-2": {"runc"}, "gpu-1": {"runsc"}}, False)
    assert r.mark == "✓" and "handler runsc on nodes sandbox=true" in r.detail
    assert r.detail.endswith("runsc reported by 1/2 node(s): cpu-1")  # gpu-1 does not match the nodeSelector


def test_nodes_that_report_other_handlers_only_fail_with_the_fix():
    r = row(Read("gvisor", GVISOR), LABELS, {"cpu-1": {"runc"}, "cpu-2": {"runc", "kata"}, "gpu-1": {"runsc"}}, False)
    assert r.mark == "✗" and "has handler runsc (they report kata, runc)" in r.detail
    assert "install runsc" in r.remedy


def test_what_cannot_be_known_is_a_warning_not_a_pass():
    assert row(Read("gvisor", GVISOR), LABELS, {}, False).mark == "!"  # kubelets before v1.30 report none
    mixed = row(Read("gvisor", GVISOR), LABELS, {"cpu-1": {"runc"}}, False)  # cpu-2 reports nothing
    assert mixed.mark == "!" and "1 of the 2 node(s) on nodes sandbox=true report no runtime handlers" in mixed.detail
    denied = row(Read("gvisor", GVISOR), {}, {}, True)
    assert denied.mark == "!" and "cannot list nodes" in denied.detail
    forbidden = row(Read("gvisor", status=403), LABELS, {}, False)
    assert forbidden.mark == "!" and "runtimeclasses.node.k8s.io" in forbidden.detail


def test_a_missing_class_or_one_that_matches_no_node_fails():
    missing = row(Read("gvisor", status=404), LABELS, {}, False)
    assert missing.mark == "✗" and "does not exist" in missing.detail
    assert "unset sandbox.runtimeClassName" in missing.remedy
    nowhere = row(Read("gvisor", GVISOR), {"gpu-1": {}}, {"gpu-1": {"runsc"}}, False)
    assert nowhere.mark == "✗" and "no schedulable node matches" in nowhere.detail


def test_the_overhead_is_added_to_the_template_as_admission_adds_it():
    tpl = {"spec": {"containers": [{"name": "executor"}]}}
    rc = Read("kata", {"handler": "kata"}, overhead={"cpu": "250m"})
    assert with_overhead(tpl, rc)["spec"]["overhead"] == {"cpu": "250m"} and "overhead" not in tpl["spec"]
    assert with_overhead(tpl, Read("gvisor", GVISOR)) is tpl
