"""The scanner gate: checkov (pinned, offline with --skip-download) over rendered manifests."""

from __future__ import annotations

import json
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from generator.tools import binary


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


def checkov(manifests: str) -> ScanReport:
    with tempfile.TemporaryDirectory(prefix="dockyard-scan-") as tmp:
        path = Path(tmp) / "manifests.yaml"
        path.write_text(manifests)
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
