"""state/job_progress.py: the run watcher's records turned into `status`'s progress lines, and the one read that
fetches them (its refusals said as the reason progress is unknown)."""

from __future__ import annotations

import json

from generator.live.state import job_progress
from generator.live.state.job_progress import lines, parse, read, seconds_per_step

T0 = 1_800_000_000.0


def records(*recs: dict) -> str:
    return "\n".join(json.dumps(r) for r in recs) + "\n"


def test_step_rate_eta_metrics_and_checkpoint():
    text = records({"t": T0, "event": "started", "cluster": "c1", "stallTimeout": 600},
                   *({"t": T0 + 60 + 30 * s, "step": s, "total": 100} for s in range(5)),
                   {"t": T0 + 200, "step": 5, "total": 100, "metrics": {"reward": 0.4},
                    "newestCheckpoint": {"step": 4, "t": T0 + 150}})
    p = parse(text)
    assert p.cluster == "c1" and p.stall_timeout == 600 and len(p.reports) == 6
    (line,) = lines(p, now=T0 + 210)
    assert line.startswith("step 5 of 100 (5%), last report 10 s ago, 28.0 s/step, ETA 44 min; reward=0.4")
    assert line.endswith("; checkpoint step 4 (60 s ago)")


def test_a_resumed_job_rates_only_the_steps_since_it_resumed():
    reports = [{"t": T0 + s, "step": s} for s in (7, 8, 9)] + [{"t": T0 + 100, "step": 3}, {"t": T0 + 110, "step": 4}]
    assert seconds_per_step(reports) == 10.0
    assert seconds_per_step(reports[:1]) is None


def test_no_report_yet_stalled_and_what_ended_before():
    started = {"t": T0, "event": "started", "cluster": "c2", "stallTimeout": 60}
    assert lines(parse(records(started)), now=T0 + 30) == [
        "no report yet, job started 30 s ago (stall guard: first report within its grace)"]
    stalled = parse(records(started, {"t": T0 + 5, "step": 2},
                            {"t": T0 + 66, "event": "stalled", "reason": "stalled: no progress for 60 s after step 2"}))
    assert lines(stalled, now=T0 + 70)[1] == \
        "stalled: the run watcher ended this job: no progress for 60 s after step 2"
    before = {"t": T0, "event": "previous", "cluster": "c1", "end": "stalled: no progress for 60 s after step 2"}
    assert lines(parse(records(started, before)), now=T0)[1] == \
        "before:   the previous attempt's job ended: stalled: no progress for 60 s after step 2"
    same = {**before, "cluster": "c2", "end": "unknown: it left no end record (its head pod was killed)"}
    assert lines(parse(records(started, same)), now=T0)[1].startswith(
        "restarted: the job was submitted again on the same RayCluster (its head was replaced)")


class Kube:
    """Answers get_answer as the cluster would: text (200), (status, text), or an exception (no answer)."""

    def __init__(self, answer):
        self.answer, self.asked = answer, []

    def get_answer(self, path, query):
        self.asked.append((path, query))
        if isinstance(self.answer, Exception):
            raise self.answer
        return self.answer if isinstance(self.answer, tuple) else (200, self.answer)


def test_one_read_through_the_heads_dashboard():
    kube = Kube(records({"t": T0, "step": 1}))
    p = read(kube, "ns", "grpo-swe-abc-head-svc", "10.244.0.7", "raysubmit_x")
    assert p.reports[0]["step"] == 1 and len(kube.asked) == 1
    path, query = kube.asked[0]
    assert path == "/api/v1/namespaces/ns/services/grpo-swe-abc-head-svc:8265/proxy/api/v0/logs/file"
    assert query == {"node_ip": "10.244.0.7", "filename": "dockyard/progress-raysubmit_x.jsonl",
                     "lines": str(job_progress.LINES)}


def test_why_progress_is_unknown():
    assert read(Kube(""), "ns", "svc", "ip", None).unknown == "no job submitted yet"
    assert read(Kube(""), "ns", "svc", None, "j").unknown == "no running head pod"
    forbidden = read(Kube((403, "forbidden")), "ns", "svc", "ip", "j").unknown
    assert forbidden == "forbidden: reading it needs get on services/proxy in the namespace"
    missing = read(Kube((500, "A file is not found at: /tmp/ray/x")), "ns", "svc", "ip", "j").unknown
    assert missing.startswith("no records of the run watcher for this job yet: the job is starting, or runs")
    ray_no = read(Kube('{"result": false, "msg": "Cannot find matching node_id"}'), "ns", "svc", "ip", "j").unknown
    assert ray_no == "Ray's log API: Cannot find matching node_id"
    no_endpoints = json.dumps({"kind": "Status", "code": 503, "message": 'no endpoints available for service "s"'})
    assert read(Kube((503, no_endpoints)), "ns", "svc", "ip", "j").unknown == \
        'the head\'s dashboard answered 503: no endpoints available for service "s"'
    down = read(Kube(ConnectionError("refused")), "ns", "svc", "ip", "j").unknown
    assert down == "the head's dashboard did not answer (ConnectionError)"
    assert lines(read(Kube(ConnectionError()), "ns", "svc", "ip", "j"))[0].startswith("unknown (")


def test_the_newest_report_carries_what_the_cut_off_first_records_said():
    context = {"cluster": "c2", "stallTimeout": 600, "previous": {"cluster": "c1", "end": "failed: exit code 1"}}
    p = parse(records(*({"t": T0 + s, "step": s, "context": context} for s in range(40))))
    assert p.stall_timeout == 600 and p.cluster == "c2"
    assert lines(p, now=T0 + 40)[1] == "before:   the previous attempt's job ended: failed: exit code 1"


def test_the_latest_file_of_a_bringup_head_shows_the_newest_job_by_name():
    """`progress-latest.jsonl` starts over with each job, but a job still running after a newer one started
    appends there too: only the newest job's records count, and the line names it."""
    old = {"t": T0, "event": "started", "run": "eval-a", "submission": "raysubmit_a", "cluster": "grpo-swe"}
    new = {"t": T0 + 10, "event": "started", "run": "train-b", "submission": "raysubmit_b", "cluster": "grpo-swe"}
    text = records(old, new, {"t": T0 + 20, "step": 900, "submission": "raysubmit_a"},
                   {"t": T0 + 30, "step": 4, "total": 8, "submission": "raysubmit_b"})
    kube = Kube(text)
    p = read(kube, "ns", "grpo-swe-head-svc", "10.244.0.9", job_progress.LATEST)
    assert kube.asked[0][1]["filename"] == "dockyard/progress-latest.jsonl"
    assert [r["step"] for r in p.reports] == [4]
    assert lines(p, now=T0 + 31)[0] == "job train-b (raysubmit_b): step 4 of 8 (50%), last report 1 s ago"
    # a rayjob's own file: the line is the job's, unnamed
    assert lines(parse(text), now=T0 + 31)[0].startswith("step 4 of 8")
    assert read(Kube((404, "file not found")), "ns", "s", "10.244.0.9", job_progress.LATEST).unknown.startswith(
        "no job has run under the run watcher on this cluster yet")
