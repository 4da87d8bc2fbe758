"""`smoke` with `launch.queue` without a cluster: the probe's RayJob is the job's, queued
alike — the Kueue labels come through the chart values (not a patch of the YAML), the chart renders no
`suspend`, and Kueue would count the same gang for it as for the job."""

from __future__ import annotations

from pathlib import Path

import yaml

from generator.live.kueue import api as kueue_api
from generator.live.kueue import gang
from generator.live.verbs import smoke

REPO = Path(__file__).resolve().parents[4]
RECIPE = REPO / "values-examples" / "grpo_swe.yaml"
KUEUE_INFRA = REPO / "values-examples" / "grpo_swe_kueue.infra.yaml"


def _rayjobs(tmp_path, **launch):
    from generator.live.changes.plan import plan
    from generator.render.helm import template

    data = yaml.safe_load(KUEUE_INFRA.read_text())
    data["launch"].update(launch)
    infra = tmp_path / "infra.yaml"
    infra.write_text(yaml.safe_dump(data))
    p = plan(str(RECIPE), str(infra), [], None, None, mode="rayjob")
    release = p.release + smoke.SUFFIX
    probe = smoke.probe_values(p.values, release, p.namespace, wait=40)

    def rayjob(values, name):
        return next(d for d in yaml.safe_load_all(template(values, name, p.namespace)) if d and d["kind"] == "RayJob")

    return rayjob(p.values, p.release), rayjob(probe, release)


def test_the_probe_rayjob_carries_the_jobs_kueue_labels_and_no_suspend(tmp_path):
    job, probe = _rayjobs(tmp_path, priorityClass="high")
    labels = probe["metadata"]["labels"]
    assert labels[kueue_api.QUEUE_LABEL] == "training" and labels[kueue_api.PRIORITY_LABEL] == "high"
    assert {k: v for k, v in job["metadata"]["labels"].items() if k.startswith("kueue.x-k8s.io/")} == {
        kueue_api.QUEUE_LABEL: "training", kueue_api.PRIORITY_LABEL: "high"}
    assert "suspend" not in probe["spec"]  # Kueue's webhook suspends it; the chart never does
    assert probe["spec"]["shutdownAfterJobFinishes"] is True  # Kueue refuses a queued RayJob that keeps its cluster


def test_kueue_counts_the_same_gang_for_the_probe_as_for_the_job(tmp_path):
    job, probe = _rayjobs(tmp_path)
    shape = [(ps.name, ps.count, ps.per_pod) for ps in gang.pod_sets(job)]
    assert [(ps.name, ps.count, ps.per_pod) for ps in gang.pod_sets(probe)] == shape
    assert [s[0] for s in shape] == ["head", "trainer", "inference", "submitter"]


def test_without_a_queue_the_probe_has_no_kueue_label(tmp_path):
    _, probe = _rayjobs(tmp_path, queue=None)
    assert not [k for k in probe["metadata"]["labels"] if k.startswith("kueue.x-k8s.io/")]
