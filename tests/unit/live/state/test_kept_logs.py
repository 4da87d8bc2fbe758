"""state/kept_logs.py (`logs --attempt N`): the reader pod is the head's rendered pod template cut down to the
logs volume, and what it prints (the run watcher's `kept` mode, run here for real on a folder laid out as the
watcher lays out the volume) becomes the attempt's log, or a plain "not kept" with exit 1."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
import yaml

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


def _groups(manifest: str) -> dict[str, dict]:
    """role -> pod spec of the release's RayJob."""
    job = next(d for d in yaml.safe_load_all(manifest) if isinstance(d, dict) and d.get("kind") == "RayJob")
    spec = job["spec"]["rayClusterSpec"]
    return {"head": spec["headGroupSpec"]["template"]["spec"],
            **{g["groupName"]: g["template"]["spec"] for g in spec["workerGroupSpecs"]}}


def _keeper(spec: dict) -> dict | None:
    return next((c for c in spec.get("initContainers") or [] if c["name"] == "dockyard-ray-logs"), None)


def test_each_ray_pod_on_the_logs_volume_keeps_its_ray_logs_through_a_native_sidecar():
    groups = _groups(_manifest(**LOGS))
    for role, spec in groups.items():
        keeper = _keeper(spec)
        assert keeper is not None, role
        assert spec["initContainers"][0] is keeper  # first: it starts before Ray and stops after it
        assert keeper["restartPolicy"] == "Always"
        assert keeper["command"] == ["python3", "/etc/dockyard/run_watch.py", "keep-ray", "--role", role,
                                     "--keep-bytes", str(64 << 20)]
        assert keeper["image"] == spec["containers"][0]["image"]
        assert keeper["securityContext"] == spec["containers"][0]["securityContext"]
        mounts = {m["mountPath"]: m for m in keeper["volumeMounts"]}
        assert mounts["/tmp/ray"]["readOnly"] and mounts["/etc/dockyard"]["readOnly"]
        assert mounts["/dockyard/logs"]["name"] == "dockyard-logs"
        ray = {m["mountPath"]: m["name"] for m in spec["containers"][0]["volumeMounts"]}
        assert ray["/tmp/ray"] == mounts["/tmp/ray"]["name"] == "dockyard-ray-logs"  # the same folder
        env = {e["name"]: e for e in keeper["env"]}
        assert env["RAY_CLUSTER_NAME"]["valueFrom"]["fieldRef"]["fieldPath"] == "metadata.labels['ray.io/cluster']"
        assert keeper["resources"]["limits"] == {"cpu": "200m", "memory": "64Mi"}


def test_no_keeper_where_nothing_would_be_kept_or_the_user_said_not_to():
    for over in ({},  # no logs volume
                 {**LOGS, "launch": {"watch": {"keepRayLogMiB": 0}}},
                 {**LOGS, "launch": {"watch": {"enabled": False}}}):
        for role, spec in _groups(_manifest(**over)).items():
            assert _keeper(spec) is None, (over, role)
            assert all(v["name"] != "dockyard-ray-logs" for v in spec.get("volumes") or []), (over, role)
    only_head = {**LOGS, "infra": {**LOGS["infra"], "storage": {"logs": {"size": "1Gi", "mountOn": ["head"]}}}}
    groups = _groups(_manifest(**only_head))
    assert _keeper(groups["head"]) is not None
    assert _keeper(groups["trainer"]) is None and _keeper(groups["inference"]) is None
    keeper = _keeper(_groups(_manifest(**{**LOGS, "launch": {"watch": {"keepRayLogMiB": 3}}}))["trainer"])
    assert keeper is not None and keeper["command"][-1] == str(3 << 20)


def test_an_overlays_ray_log_volume_is_shared_and_its_copies_of_the_keeper_are_replaced():
    """An overlay that already mounts /tmp/ray (KubeRay's pattern for a log-shipping sidecar) keeps its volume,
    which the keeper reads; an overlay's init container or volume of the keeper's names does not survive."""
    overlay = {"workerGroupSpecs": [{"groupName": "trainer", "template": {"spec": {
        "containers": [{"name": "ray-worker", "volumeMounts": [{"name": "ray-logs", "mountPath": "/tmp/ray/"}]},
                       {"name": "fluent-bit", "image": "fluent-bit",
                        "volumeMounts": [{"name": "ray-logs", "mountPath": "/tmp/ray"}]}],
        "volumes": [{"name": "ray-logs", "emptyDir": {}},
                    {"name": "dockyard-watcher", "hostPath": {"path": "/etc"}}],
        "initContainers": [{"name": "dockyard-ray-logs", "image": "evil", "command": ["sh"]}]}}}]}
    spec = _groups(_manifest(**{**LOGS, "kuberay": {**LOGS["kuberay"], "spec": overlay}}))["trainer"]
    keeper = _keeper(spec)
    assert keeper is not None and keeper["image"] != "evil"
    assert [c["name"] for c in spec["initContainers"]].count("dockyard-ray-logs") == 1
    assert {m["mountPath"]: m["name"] for m in keeper["volumeMounts"]}["/tmp/ray"] == "ray-logs"
    names = [v["name"] for v in spec["volumes"]]
    assert "dockyard-ray-logs" not in names and names.count("dockyard-watcher") == 1
    assert next(v for v in spec["volumes"] if v["name"] == "dockyard-watcher")["configMap"]["name"] == "grpo-swe-recipe"


def test_an_attempts_ray_logs_of_a_role_are_read_back_or_said_not_kept(tmp_path):
    _job(tmp_path, "20261204T100010Z-grpo-swe-aaaaa-raysubmit_1", "grpo-swe-aaaaa", "driver\n", "failed: exit code 1")
    pod = tmp_path / "dockyard-pods" / "grpo-swe-aaaaa" / "grpo-swe-aaaaa-trainer-worker-q"
    (pod / "session_1").mkdir(parents=True)
    (pod / "pod.json").write_text(json.dumps({"role": "trainer"}))
    (pod / "session_1" / "worker-1.err").write_text("the trainer's traceback\n")
    text = kept_logs.read(Kube(tmp_path), "grpo-swe", "ns", _manifest(**LOGS), 1, 0, role="trainer")
    assert "--- pod grpo-swe-aaaaa-trainer-worker-q (trainer) session_1/worker-1.err\nthe trainer's traceback" in text
    with pytest.raises(CheckFailed, match="attempt 1's inference Ray logs were not kept: no inference pod of "
                                          "RayCluster grpo-swe-aaaaa kept any"):
        kept_logs.read(Kube(tmp_path), "grpo-swe", "ns", _manifest(**LOGS), 1, 0, role="inference")


def test_an_output_the_kubelet_cut_at_its_start_is_read_by_the_index_printed_last_too(tmp_path):
    _job(tmp_path, "20261204T100010Z-grpo-swe-aaaaa-raysubmit_1", "grpo-swe-aaaaa", "driver line\n", "succeeded")

    class Cut(Kube):
        def get_text(self, path, query):
            return super().get_text(path, query).split("\n", 2)[2]  # the index and the job line rotated away

    text = kept_logs.read(Cut(tmp_path), "grpo-swe", "ns", _manifest(**LOGS), 1, 0)
    assert text.splitlines()[:2] == ["--- attempt 1 of 1 kept (RayCluster grpo-swe-aaaaa)",
                                     "(the start of this output was cut by the kubelet: use --tail)"]
    assert "driver line" in text and "DOCKYARD_KEPT" not in text


def test_the_keeper_reads_ray_logs_through_the_ray_containers_own_tmp_mount_subpath_and_all():
    """A read-only root gives the Ray container a scratch /tmp (the chart's `tmp` emptyDir): Ray writes /tmp/ray
    there, and the keeper mounts that volume at /tmp, read-only, instead of hiding it under a new one. An overlay's
    mount of /tmp/ray with a subPath is copied with its subPath."""
    hardened = {**LOGS, "infra": {**LOGS["infra"], "security": {**LOGS["infra"]["security"],
                                                                "readOnlyRootFilesystem": True}}}
    spec = _groups(_manifest(**hardened))["trainer"]
    keeper = _keeper(spec)
    ray = {m["mountPath"]: m for m in spec["containers"][0]["volumeMounts"]}
    assert "/tmp/ray" not in ray and ray["/tmp"]["name"] == "tmp"
    assert {m["mountPath"]: m for m in keeper["volumeMounts"]}["/tmp"] == {"name": "tmp", "mountPath": "/tmp",
                                                                           "readOnly": True}
    assert all(v["name"] != "dockyard-ray-logs" for v in spec["volumes"])
    overlay = {"workerGroupSpecs": [{"groupName": "trainer", "template": {"spec": {
        "containers": [{"name": "ray-worker", "volumeMounts": [{"name": "shared", "mountPath": "/tmp/ray",
                                                                "subPath": "ray"}]}],
        "volumes": [{"name": "shared", "emptyDir": {}}]}}}]}
    keeper = _keeper(_groups(_manifest(**{**LOGS, "kuberay": {**LOGS["kuberay"], "spec": overlay}}))["trainer"])
    assert {m["mountPath"]: m for m in keeper["volumeMounts"]}["/tmp/ray"] == {
        "name": "shared", "mountPath": "/tmp/ray", "subPath": "ray", "readOnly": True}


def test_a_log_that_ends_mid_line_leaves_the_last_index_on_its_own_line(tmp_path):
    _job(tmp_path, "20261204T100010Z-grpo-swe-aaaaa-raysubmit_1", "grpo-swe-aaaaa", "crashed mid-li", None)
    text = kept_logs.read(Kube(tmp_path), "grpo-swe", "ns", _manifest(**LOGS), 1, 0)
    assert text.splitlines()[0] == "--- attempt 1 of 1 kept (RayCluster grpo-swe-aaaaa)"
    assert text.rstrip("\n").endswith("crashed mid-li") and "DOCKYARD_KEPT" not in text
