"""The scanner gate: checkov (pinned, offline with --skip-download) over rendered manifests."""

from __future__ import annotations

import json
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from generator.pinned_tools import binary


@dataclass
class Finding:
    check_id: str
    name: str
    resource: str
    reason: str = ""  # for skipped checks: the chart's annotation text


@dataclass
class ScanReport:
    passed: int
    failed: list[Finding]
    skipped: list[Finding]


def scannable(manifests: str) -> str:
    """`manifests` with, after them, each SandboxTemplate's pod as the Pod every sandbox of it becomes: checkov
    knows no custom kind, so without this it would never read the pod agent-sandbox runs. The Pod takes the
    template's name and annotations (the chart's reasoned skips are there, as on the pool's Deployment)."""
    import yaml

    pods = []
    for doc in yaml.safe_load_all(manifests):
        if isinstance(doc, dict) and doc.get("kind") == "SandboxTemplate":
            meta, template = doc.get("metadata") or {}, (doc.get("spec") or {}).get("podTemplate") or {}
            pods.append({"apiVersion": "v1", "kind": "Pod", "metadata": {
                "name": meta.get("name"), "namespace": meta.get("namespace"),
                "labels": (template.get("metadata") or {}).get("labels") or {},
                "annotations": meta.get("annotations") or {}}, "spec": template.get("spec") or {}})
    if not pods:
        return manifests
    return manifests.rstrip("\n") + "\n---\n" + yaml.safe_dump_all(pods, sort_keys=False)


def checkov(manifests: str) -> ScanReport:
    with tempfile.TemporaryDirectory(prefix="dockyard-scan-") as tmp:
        path = Path(tmp) / "manifests.yaml"
        path.write_text(scannable(manifests))
        proc = subprocess.run(
            [binary("checkov"), "-f", str(path), "--framework", "kubernetes", "--skip-download", "-o", "json"],
            capture_output=True, text=True, check=False,
        )
    try:
        report = json.loads(proc.stdout)
    except json.JSONDecodeError:
        raise RuntimeError(f"checkov failed: {proc.stderr.strip()[-2000:]}") from None
    results = report.get("results", {})

    def findings(key: str) -> list[Finding]:
        return [Finding(c["check_id"], c.get("check_name", ""), c.get("resource", ""),
                        (c.get("check_result") or {}).get("suppress_comment", "") or "")
                for c in results.get(key, [])]

    return ScanReport(report.get("summary", {}).get("passed", 0), findings("failed_checks"), findings("skipped_checks"))
