"""A start that cannot hang, on the real node (containerd with its local image store; nothing can be pulled): a Ray
image tag the node does not hold ends `run --wait` with exit 1 within seconds of the first failed pull, naming the
image, the pod and the node, and KubeRay ends the RayJob `Failed` (PreRunningDeadlineExceeded) within
launch.preRunningDeadlineSeconds; the negative control, the image the node holds, is waited for and runs.

Run it in the real node's slot: `flock /tmp/dk/real-node.lock .venv/bin/python -m pytest tests/live/test_real_pull.py`.
"""

from __future__ import annotations

import subprocess
import time
import uuid
from pathlib import Path

import pytest
import yaml
from live_helpers import cli
from real_node_session import real_node_playground
from session_env import wait_for

pytestmark = pytest.mark.real_node  # the machine's one real node: hack/suite.py runs this module in a real node part

REPO = Path(__file__).resolve().parents[2]
RECIPE = REPO / "values-examples" / "grpo_swe.yaml"
INFRA = REPO / "values-examples" / "grpo_swe_playground.infra.yaml"
SHAPE = ["cluster.trainer.nodes=1", "cluster.trainer.gpusPerNode=1", "cluster.inference.gpusPerNode=1"]
DEADLINE = 30  # launch.preRunningDeadlineSeconds of the job that cannot start


@pytest.fixture(scope="module")
def ray_node():
    subprocess.run(["bash", str(REPO / "hack" / "tools.sh"), "ray-image", "device-plugin"], check=True)
    with real_node_playground("real-ray-", timeout=300, env={"DOCKYARD_REAL_NODE_GPUS": "2"}) as (state_dir, state, _):
        yield {"state_dir": state_dir, "state": state, "kubeconfig": str(state_dir / "kubeconfig")}


def _infra(tmp_path: Path, name: str, tag: str | None) -> Path:
    doc = yaml.safe_load(INFRA.read_text())
    if tag is not None:  # the job that cannot start, with a short deadline (a real Ray head needs ~40 s here)
        doc["infra"]["image"] = {**doc["infra"]["image"], "tag": tag, "pullPolicy": "Never"}
        doc.setdefault("launch", {})["preRunningDeadlineSeconds"] = DEADLINE
    path = tmp_path / f"{name}.infra.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


def test_a_tag_the_node_lacks_ends_the_wait_at_once_and_the_rayjob_at_its_deadline(ray_node, capsys, tmp_path):
    from generator.live.client.kube import Kube

    kc, ns = ray_node["kubeconfig"], f"pull-{uuid.uuid4().hex[:6]}"
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
    kc, ns = ray_node["kubeconfig"], f"pull-{uuid.uuid4().hex[:6]}"
    rc, out, err = cli(capsys, "run", RECIPE, _infra(tmp_path, "present", None), *SHAPE, "-n", ns,
                       "--create-namespace", "--wait", "--kubeconfig", kc, "--timeout", "300")
    assert rc == 0, out + err
    assert "cannot be pulled" not in out + err
    cli(capsys, "uninstall", "grpo-swe", "-n", ns, "--kubeconfig", kc, "--timeout", "120")
