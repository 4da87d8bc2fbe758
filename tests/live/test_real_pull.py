"""A start that cannot hang, on the real node (containerd with its local image store; nothing can be pulled): a Ray
image tag the node does not hold ends `run --wait` with exit 1 within seconds of the first failed pull, naming the
image, the pod and the node, and KubeRay ends the RayJob `Failed` (PreRunningDeadlineExceeded) within
launch.preRunningDeadlineSeconds; the negative control, the image the node holds, is waited for and runs.

The real node is the session's (conftest's `ray_node`), shared with test_real_ray*.py in the real Ray part; its
RayJobs carry no queue label, so the node's Kueue leaves them alone.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest
import yaml
from live_helpers import cli
from real_ray_inputs import INFRA, RECIPE, SHAPE, fresh_ns, infra_file
from session_env import wait_for

pytestmark = pytest.mark.real_node  # the machine's one real node: hack/suite.py runs this module in a real node part

DEADLINE = 30  # launch.preRunningDeadlineSeconds of the job that cannot start


def _infra(tmp_path: Path, name: str, tag: str | None) -> Path:
    def lacking(doc: dict) -> None:  # the job that cannot start, with a short deadline (a real Ray head needs ~40 s)
        doc["infra"]["image"] = {**doc["infra"]["image"], "tag": tag, "pullPolicy": "Never"}
        doc.setdefault("launch", {})["preRunningDeadlineSeconds"] = DEADLINE

    return infra_file(tmp_path, name, lacking if tag is not None else None)


def test_a_tag_the_node_lacks_ends_the_wait_at_once_and_the_rayjob_at_its_deadline(ray_node, capsys, tmp_path):
    from generator.live.client.kube import Kube

    kc, ns = ray_node["kubeconfig"], fresh_ns("pull")
    image = yaml.safe_load(INFRA.read_text())["infra"]["image"]["repository"] + ":no-such-tag"
    t0 = time.monotonic()
    rc, out, err = cli(capsys, "run", RECIPE, _infra(tmp_path, "missing", "no-such-tag"), *SHAPE, "-n", ns,
                       "--create-namespace", "--wait", "--kubeconfig", kc, "--timeout", "300")
    took = time.monotonic() - t0
    assert rc == 1, out + err
    assert f"image {image} cannot be pulled for pod" in err and "on node real-node-0" in err, err
    assert "ErrImageNeverPull" in err and "no retry fixes this" in err, err
    assert "not ready after the timeout" not in err and took < 120, (took, err)  # not the 300 s --timeout
    rc, out, err = cli(capsys, "status", "grpo-swe", "-n", ns, "--kubeconfig", kc)
    assert f"pull       image {image} cannot be pulled" in out, out

    kube = Kube(kc)
    job = wait_for(lambda: (kube.get_ray("rayjobs", ns, "grpo-swe") or {}).get("status", {}).get(
        "jobDeploymentStatus") == "Failed" and kube.get_ray("rayjobs", ns, "grpo-swe"), DEADLINE + 60,
        "the RayJob Failed at its preRunningDeadlineSeconds")
    assert job["status"]["reason"] == "PreRunningDeadlineExceeded", job["status"]
    cli(capsys, "uninstall", "grpo-swe", "-n", ns, "--kubeconfig", kc, "--timeout", "120")


def test_the_image_the_node_holds_is_waited_for(ray_node, capsys, tmp_path):
    """The negative control: the same job with the node's image and the default deadline starts (no pull failure is
    reported; a start slower than 30 s is waited for)."""
    kc, ns = ray_node["kubeconfig"], fresh_ns("pull")
    rc, out, err = cli(capsys, "run", RECIPE, _infra(tmp_path, "present", None), *SHAPE, "-n", ns,
                       "--create-namespace", "--wait", "--kubeconfig", kc, "--timeout", "300")
    assert rc == 0, out + err
    assert "cannot be pulled" not in out + err
    cli(capsys, "uninstall", "grpo-swe", "-n", ns, "--kubeconfig", kc, "--timeout", "120")
