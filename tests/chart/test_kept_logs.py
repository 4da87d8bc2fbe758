"""state/kept_logs.py (`logs --attempt N`): the reader pod is the head's rendered pod template cut down to the
logs volume, and what it prints (the run watcher's `kept` mode, run here for real on a folder laid out as the
watcher lays out the volume) becomes the attempt's log, or a plain "not kept" with exit 1."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from generator.errors import CheckFailed
from generator.live.state import kept_logs
from tests.conftest import chart_values

LOGS = {"infra": {"storage": {"logs": {"size": "10Gi"}},
                  "security": {"enabled": True, "runAsUser": 1000, "runAsNonRoot": True}},
        "kuberay": {"placement": {"head": {"nodeSelector": {"pool": "cpu"}}}},
        "launch": {"ttlSecondsAfterFinished": 0}}


def _manifest(**over) -> str:
    from generator.render.helm import template

    return template(chart_values(**over), "grpo-swe", "dockyard", tests=False)


def test_the_reader_is_the_heads_template_with_the_logs_volume_only():
    template = kept_logs.head_template(_manifest(**LOGS))
    pod = kept_logs.reader_pod("grpo-swe", template, ["kept", "grpo-swe", "", "1", "0"])
    spec = pod["spec"]
    head = template["spec"]
    (container,) = spec["containers"]
    assert container["image"] == head["containers"][0]["image"]
    assert container["securityContext"] == head["containers"][0]["securityContext"]
    assert spec["securityContext"] == head["securityContext"] and spec["nodeSelector"] == {"pool": "cpu"}
    assert spec["volumes"] == [{"name": "dockyard-logs", "persistentVolumeClaim": {"claimName": "grpo-swe-logs"}}]
    assert container["volumeMounts"] == [{"name": "dockyard-logs", "mountPath": "/dockyard/logs", "readOnly": True}]
    assert spec["restartPolicy"] == "Never" and spec["automountServiceAccountToken"] is False
    assert container["command"][:2] == ["python3", "-c"] and container["command"][3:] == ["kept", "grpo-swe", "",
                                                                                        "1", "0"]
    assert pod["metadata"]["labels"]["app.kubernetes.io/instance"] == "grpo-swe"
    bringup = kept_logs.head_template(_manifest(**{**LOGS, "launch": {"mode": "bringup"}}))
    assert kept_logs.reader_pod("grpo-swe", bringup, []) is not None


class Kube:
    """The reader's round trip: created, Succeeded, its log is what the watcher's `kept` mode prints over the
    folder `volume` (run here), deleted."""

    def __init__(self, volume: Path, created: str = "2026-12-04T10:00:00Z"):
        self.volume, self.created, self.calls, self.pod = volume, created, [], None

    def get_ray(self, plural, ns, name):
        return {"metadata": {"name": name, "creationTimestamp": self.created}}

    def request(self, method, path, query=None, body=None):
        self.calls.append((method, path))
        if method == "POST":
            self.pod = body
        return {"status": {"phase": "Succeeded"}}

    def get_text(self, path, query):
        command = self.pod["spec"]["containers"][0]["command"]
        env = dict(os.environ, DOCKYARD_LOG_DIR=str(self.volume))
        return subprocess.run(command, env=env, capture_output=True, text=True, check=True).stdout


def _job(volume: Path, name: str, cluster: str, log: str, end: str | None) -> None:
    job = volume / "dockyard-runs" / "grpo-swe" / name
    job.mkdir(parents=True)
    (job / "started.json").write_text(json.dumps({"cluster": cluster}))
    (job / "driver.log").write_text(log)
    if end:
        (job / "end.json").write_text(json.dumps({"end": end}))


def test_an_attempts_log_is_read_through_the_reader_pod_which_is_deleted(tmp_path):
    _job(tmp_path, "20261204T095000Z-grpo-swe-old00-raysubmit_0", "grpo-swe-old00", "an earlier run\n", "succeeded")
    _job(tmp_path, "20261204T100010Z-grpo-swe-aaaaa-raysubmit_1", "grpo-swe-aaaaa", "unique line\nTraceback\n",
         "failed: exit code 1")
    _job(tmp_path, "20261204T100500Z-grpo-swe-bbbbb-raysubmit_2", "grpo-swe-bbbbb", "done\n", "succeeded")
    kube = Kube(tmp_path)
    text = kept_logs.read(kube, "grpo-swe", "ns", _manifest(**LOGS), 1, 0)
    assert text.splitlines()[0] == "--- attempt 1 of 2 kept (RayCluster grpo-swe-aaaaa)"
    assert "unique line\nTraceback" in text and "failed: exit code 1" in text and "an earlier run" not in text
    assert [m for m, _ in kube.calls] == ["POST", "GET", "DELETE"]
    with pytest.raises(CheckFailed, match="attempt 3's logs were not kept: the logs volume holds attempts 1 to 2"):
        kept_logs.read(Kube(tmp_path), "grpo-swe", "ns", _manifest(**LOGS), 3, 0)


def test_without_the_logs_volume_nothing_was_kept_and_no_pod_is_made(tmp_path):
    kube = Kube(tmp_path)
    with pytest.raises(CheckFailed, match=r"attempt 1's logs were not kept: release grpo-swe has no logs volume "
                                          r"on its head \(infra.storage.logs"):
        kept_logs.read(kube, "grpo-swe", "ns", _manifest(), 1, 0)
    assert kube.calls == []
    attach = _manifest(launch={"mode": "attach", "clusterName": "shared"})
    with pytest.raises(CheckFailed, match="has no RayJob or RayCluster"):
        kept_logs.read(kube, "grpo-swe", "ns", attach, 1, 0)


def test_since_is_the_rayjobs_creation_as_the_watchers_folder_stamp():
    assert kept_logs.since_stamp({"metadata": {"creationTimestamp": "2026-12-04T10:00:00Z"}}) == "20261204T100000Z"
    assert kept_logs.since_stamp(None) == ""
