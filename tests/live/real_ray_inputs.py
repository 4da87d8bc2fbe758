"""What the real Ray tests (test_real_ray*.py, test_real_pull.py) run: the recipe, the playground's infra for the
real node (values-examples/grpo_swe_playground.infra.yaml) and the test shape (1 trainer + 1 inference worker, 1 GPU
each, small object store, HTTPMode submission), a fresh namespace per test, and that infra as one test changes it.

Where they run: the session's real node (conftest's `ray_node`: 2 GPUs from the device plugin, the project's Ray
image, Kueue), one start for the modules of the real Ray part, in hack/suite.py's order; the host is compared before
its `up` and after its `down`. Every address dialed is loopback (the apiserver) or inside the node's network
namespace (pods and Services, reached by the operator and the CLI through the apiserver's service proxy)."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

REPO = Path(__file__).resolve().parents[2]
RECIPE = REPO / "values-examples" / "grpo_swe.yaml"
INFRA = REPO / "values-examples" / "grpo_swe_playground.infra.yaml"
SHAPE = ["cluster.trainer.nodes=1", "cluster.trainer.gpusPerNode=1", "cluster.inference.gpusPerNode=1"]


def fresh_ns(prefix: str = "ray") -> str:
    return f"{prefix}-{uuid.uuid4().hex[:6]}"


def infra_file(tmp_path: Path, name: str, change: Callable[[dict[str, Any]], Any] | None = None) -> Path:
    """The playground infra, changed in place by `change`, written as <tmp_path>/<name>.infra.yaml."""
    doc = yaml.safe_load(INFRA.read_text())
    if change:
        change(doc)
    path = tmp_path / f"{name}.infra.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path
