"""The CRDs of the older KubeRay minors, fetched once a test module: a module that checks values against them
imports `older_crds` (an autouse fixture, so importing it is using it)."""

from __future__ import annotations

import subprocess

import pytest

from generator.pinned_tools import REPO


@pytest.fixture(scope="module", autouse=True)
def older_crds():
    """The CRDs of the older KubeRay minors (no build, ~1 s each from the Go module cache or proxy)."""
    subprocess.run(["bash", str(REPO / "hack" / "tools.sh"), "kuberay-crds-1.4", "kuberay-crds-1.5"], check=True,
                   capture_output=True)
