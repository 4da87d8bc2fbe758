"""The reference claim client (generator/sandbox_client.py): a file a runtime copies into any image, so the
standard library only, and what it says when it is not in a pod that may claim. Its claims against agent-sandbox's
real controller: tests/live/test_live_agent_sandbox.py."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

from generator import sandbox_client

SOURCE = Path(sandbox_client.__file__)


def test_it_imports_the_standard_library_only():
    tree = ast.parse(SOURCE.read_text())
    names = {a.name.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    names |= {n.module.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.level == 0}
    assert names - {"__future__"} <= set(sys.stdlib_module_names), names


def test_outside_a_claiming_pod_it_names_what_is_missing(tmp_path):
    with pytest.raises(sandbox_client.ClaimError, match="not set: DOCKYARD_SANDBOX_WARM_POOL, .*KUBERNETES"):
        sandbox_client.Claims.from_env({}, str(tmp_path))
    env = {"DOCKYARD_SANDBOX_WARM_POOL": "p", "DOCKYARD_SANDBOX_NAMESPACE": "n", "DOCKYARD_SANDBOX_PORT": "9090",
           "KUBERNETES_SERVICE_HOST": "127.32.0.1"}
    with pytest.raises(sandbox_client.ClaimError, match="no ServiceAccount token at"):
        sandbox_client.Claims.from_env(env, str(tmp_path))
    (tmp_path / "token").write_text("t\n")
    with pytest.raises(sandbox_client.ClaimError, match="no cluster CA at"):
        sandbox_client.Claims.from_env(env, str(tmp_path))
