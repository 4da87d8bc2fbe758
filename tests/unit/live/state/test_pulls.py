"""A pull that fails is named as soon as it is seen (the image, the pod, the node) by `status`, `run --wait` and
`smoke`, and ends a wait at once when no retry fixes it (state/pulls.py); a retryable one ends it after a bound,
and a slow pull (no error) is waited for. On the recorded playground answers (tests/unit/recorded/status_pending)
with the inference worker's container set to the kubelet's waiting states."""

from __future__ import annotations

import copy
import time

import pytest

from generator.cli import main
from generator.errors import CheckFailed
from generator.live.client.kube import Kube
from generator.live.state import follow as follow_mod
from generator.live.state import pulls
from generator.live.state.controllers import LeaderWatch
from generator.live.state.pods import fleet_of
from generator.live.state.progress import Progress
from generator.live.state.pulls import PullWatch, failed_pulls
from generator.live.state.snapshot import take
from tests.support.fake_cluster import install

RELEASE, NS = "small", "rec"
IMAGE = "ghcr.io/dockyard-rl/ubuntu-swe:2026.11-vllm"
NOT_FOUND = (f'Failed to pull image "{IMAGE}": rpc error: code = NotFound desc = failed to pull and unpack image '
             f'"{IMAGE}": failed to resolve reference "{IMAGE}": {IMAGE}: not found')
TIMEOUT = (f'Failed to pull image "{IMAGE}": rpc error: code = Unknown desc = failed to pull and unpack image: '
           'dial tcp 10.0.0.7:443: i/o timeout')


def waiting(pod: dict, reason: str, message: str, node: str = "gpu-node-0") -> dict:
    """The pod as the kubelet shows a container waiting for `reason`, scheduled on `node`."""
    pod = copy.deepcopy(pod)
    pod["spec"]["nodeName"] = node
    name = pod["spec"]["containers"][0]["name"]
    pod["status"] = {"phase": "Pending", "containerStatuses": [
        {"name": name, "ready": False, "restartCount": 0, "image": pod["spec"]["containers"][0]["image"],
         "imageID": "", "state": {"waiting": {"reason": reason, "message": message}}}]}
    return pod


@pytest.fixture
def fake(monkeypatch, tmp_path):
    return install(monkeypatch, tmp_path, "status_pending")


def _set_inference(fake, reason: str, message: str) -> str:
    """The recorded pod list with the inference worker waiting for `reason`; its name."""
    for key, answers in fake.answers.items():
        if key[1] == f"/api/v1/namespaces/{NS}/pods":
            for ex in answers:
                items = ex["body"]["items"]
                for i, pod in enumerate(items):
                    if pod["metadata"]["labels"].get("dockyard.dev/fleet") == "inference":
                        items[i] = waiting(pod, reason, message)
                        name = pod["metadata"]["name"]
    return name


def _pod(reason: str, message: str) -> dict:
    base = {"metadata": {"name": "p-0", "labels": {"dockyard.dev/fleet": "trainer"}},
            "spec": {"containers": [{"name": "ray-worker", "image": IMAGE}]}}
    return waiting(base, reason, message)


@pytest.mark.parametrize("reason, message, final", [
    ("InvalidImageName", 'couldn\'t parse image name "UPPER:x": invalid reference format', True),
    ("ErrImageNeverPull", f'Container image "{IMAGE}" is not present with pull policy of Never', True),
    ("ErrImagePull", NOT_FOUND, True),
    ("ImagePullBackOff", f'Back-off pulling image "{IMAGE}": ErrImagePull: {NOT_FOUND}', True),
    ("ErrImagePull", "failed to authorize: failed to fetch anonymous token: 401 Unauthorized", True),
    ("ErrImagePull", "dial tcp: lookup registry.example on 10.96.0.10:53: no such host", False),  # a DNS blip
    ("ErrImagePull", TIMEOUT, False),
    ("ImagePullBackOff", f'Back-off pulling image "{IMAGE}"', False),
    ("ErrImagePull", "toomanyrequests: You have reached your pull rate limit", False),
])
def test_which_pull_failures_no_retry_fixes(reason, message, final):
    [pull] = failed_pulls([_pod(reason, message)], fleet_of)
    assert (pull.image, pull.pod, pull.node, pull.fleet, pull.final) == (IMAGE, "p-0", "gpu-node-0", "trainer", final)
    assert pull.line().startswith(f"image {IMAGE} cannot be pulled for pod p-0 (trainer) on node gpu-node-0: {reason}")


def test_a_slow_pull_and_other_waits_are_no_failed_pull():
    pods = [_pod("ContainerCreating", ""), _pod("PodInitializing", ""), _pod("CrashLoopBackOff", "back-off 10s")]
    assert failed_pulls(pods, fleet_of) == []


def test_an_init_container_pull_is_named_with_its_own_image():
    pod = _pod("ContainerCreating", "")
    pod["spec"]["initContainers"] = [{"name": "fill", "image": "busybox:nope"}]
    pod["status"]["initContainerStatuses"] = [{"name": "fill", "state": {"waiting": {
        "reason": "ErrImagePull", "message": "busybox:nope: not found"}}}]
    [pull] = failed_pulls([pod], fleet_of)
    assert (pull.container, pull.image, pull.final) == ("fill", "busybox:nope", True)


def test_a_retryable_pull_error_ends_the_wait_after_the_bound_and_a_recovered_one_is_forgotten():
    now = [100.0]
    watch = PullWatch(grace=90.0, clock=lambda: now[0])
    failing = failed_pulls([_pod("ErrImagePull", TIMEOUT)], fleet_of)
    assert watch.new(failing) == failing and watch.verdict(failing) is None
    now[0] = 150.0
    assert watch.new(failing) == [] and watch.verdict(failing) is None  # said once; 50 s < 90 s
    now[0] = 191.0
    assert "still failing after 91s of retries" in watch.verdict(failing)
    assert watch.new([]) == [] and watch.first_seen == {}  # pulled at last: forgotten
    assert watch.new(failing) == failing and watch.verdict(failing) is None  # a new failure starts a new bound


def test_status_names_the_failed_pull(fake, capsys):
    pod = _set_inference(fake, "ErrImagePull", NOT_FOUND)
    assert main(["status"]) == 0
    out = capsys.readouterr().out
    line = next(x for x in out.splitlines() if x.startswith("pull "))
    assert f"image {IMAGE} cannot be pulled for pod {pod} (inference) on node gpu-node-0" in line
    assert "not found" in line and "no retry fixes this" in line


def test_status_json_carries_the_failed_pull(fake, capsys):
    _set_inference(fake, "ImagePullBackOff", TIMEOUT)
    snap = take(Kube(), RELEASE, NS)
    assert snap.calls == 5  # no extra call: the pods are read anyway
    [pull] = snap.to_dict()["pulls"]
    assert (pull["image"], pull["reason"], pull["node"]) == (IMAGE, "ImagePullBackOff", "gpu-node-0")


def test_run_wait_ends_at_once_on_a_pull_no_retry_fixes(fake, monkeypatch):
    monkeypatch.setattr(follow_mod, "LeaderWatch", lambda kube: LeaderWatch(kube, leaders=()))
    pod = _set_inference(fake, "ErrImagePull", NOT_FOUND)
    progress = Progress(quiet=True)
    said: list[str] = []
    monkeypatch.setattr(progress, "say", said.append)
    t0 = time.monotonic()
    with pytest.raises(CheckFailed) as exc:
        follow_mod.follow(Kube(), RELEASE, NS, time.monotonic() + 600, progress)
    assert time.monotonic() - t0 < 5  # not the 600 s timeout
    assert f"image {IMAGE} cannot be pulled for pod {pod} (inference) on node gpu-node-0" in str(exc.value)
    assert "no retry fixes this" in str(exc.value)
    assert said and said[0].startswith(f"{RELEASE}: image {IMAGE} cannot be pulled")  # said when seen


def test_run_wait_keeps_waiting_on_a_retryable_pull_until_the_bound(fake, monkeypatch):
    monkeypatch.setattr(follow_mod, "LeaderWatch", lambda kube: LeaderWatch(kube, leaders=()))
    _set_inference(fake, "ErrImagePull", TIMEOUT)
    with pytest.raises(CheckFailed) as exc:  # the deadline has passed: the wait ends as a timeout, not on the pull
        follow_mod.follow(Kube(), RELEASE, NS, time.monotonic() - 1, Progress(quiet=True))
    assert str(exc.value).startswith(f"{RELEASE} not ready after the timeout")
    monkeypatch.setattr(pulls, "PULL_GRACE", 0.0)  # the bound reached: the pull ends the wait
    with pytest.raises(CheckFailed) as exc:
        follow_mod.follow(Kube(), RELEASE, NS, time.monotonic() + 600, Progress(quiet=True))
    assert "still failing after" in str(exc.value) and "i/o timeout" in str(exc.value)


def test_smoke_ends_at_once_on_a_pull_no_retry_fixes():
    from generator.live.verbs import smoke

    class Cluster:
        def list(self, path, label_selector=None):
            return [_pod("InvalidImageName", 'couldn\'t parse image name "UPPER:x"')]

        def get_ray(self, *args):
            raise AssertionError("the pull is judged first")

    said: list[str] = []
    t0 = time.monotonic()
    with pytest.raises(CheckFailed) as exc:
        smoke._wait_for_probe(Cluster(), "r", "ns", smoke.Steps(time.monotonic() + 600), said.append, t0)
    assert time.monotonic() - t0 < 5
    assert f"image {IMAGE} cannot be pulled for pod p-0 (trainer) on node gpu-node-0" in str(exc.value)
    assert len(said) == 1 and said[0].startswith(f"smoke: image {IMAGE} cannot be pulled") and "Invalid" in said[0]
