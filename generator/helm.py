"""The pinned helm binary, for offline rendering (`helm template`)."""

from __future__ import annotations

import json
import subprocess
import tempfile
from typing import Any

from generator.errors import CheckFailed
from generator.tools import CHART_DIR, binary, versions


def template(values: dict[str, Any], release: str, namespace: str, *, tests: bool = False) -> str:
    """Render the chart with one `helm template` process; Helm enforces values.schema.json too."""
    # JSON is YAML that no parser reads differently (Helm's YAML 1.1 reads a bare `y` as true).
    with tempfile.NamedTemporaryFile("w", suffix=".json", prefix="dockyard-values-") as f:
        json.dump(values, f)
        f.flush()
        cmd = [
            binary("helm"), "template", release, str(CHART_DIR),
            "--namespace", namespace, "--values", f.name,
            "--kube-version", versions()["KUBERNETES_VERSION"],
        ]
        if not tests:
            cmd.append("--skip-tests")
        proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        raise CheckFailed(f"helm template refused the values:\n{proc.stderr.strip()}")
    return proc.stdout
