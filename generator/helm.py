"""The pinned helm binary, for offline rendering (`helm template`)."""

from __future__ import annotations

import json
import subprocess
import tempfile
from typing import Any

from generator.errors import CheckFailed
from generator.tools import CHART_DIR, binary, versions


class Template:
    """One `helm template` process, started at once; `result()` waits for it. Helm enforces
    values.schema.json too. `sent` is exactly what helm was given (values JSON, release, namespace)."""

    @staticmethod
    def key(values: dict[str, Any], release: str, namespace: str, tests: bool) -> tuple[str, str, str, bool]:
        # JSON is YAML that no parser reads differently (Helm's YAML 1.1 reads a bare `y` as true).
        return json.dumps(values), release, namespace, tests

    def __init__(self, values: dict[str, Any], release: str, namespace: str, *, tests: bool = False):
        self.sent = self.key(values, release, namespace, tests)
        text = self.sent[0]
        self._file = tempfile.NamedTemporaryFile("w", suffix=".json", prefix="dockyard-values-")
        self._file.write(text)
        self._file.flush()
        cmd = [
            binary("helm"), "template", release, str(CHART_DIR),
            "--namespace", namespace, "--values", self._file.name,
            "--kube-version", versions()["KUBERNETES_VERSION"],
        ]
        if not tests:
            cmd.append("--skip-tests")
        self.proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    def result(self) -> str:
        try:
            stdout, stderr = self.proc.communicate()
        finally:
            self._file.close()
        if self.proc.returncode != 0:
            raise CheckFailed(f"helm template refused the values:\n{stderr.strip()}")
        return stdout

    def cancel(self) -> None:
        self.proc.kill()
        self.proc.communicate()
        self._file.close()


def template(values: dict[str, Any], release: str, namespace: str, *, tests: bool = False) -> str:
    """Render the chart with one `helm template` process."""
    return Template(values, release, namespace, tests=tests).result()
