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


class FakeClaims:
    """Claims whose claims bind at once (or never, for the names in `stuck`), recording what was asked."""

    def __init__(self, stuck: tuple[str, ...] = ()):
        self.made, self.released, self.stuck = [], [], stuck

    def claim(self) -> str:
        self.made.append(f"c{len(self.made) + 1}")
        return self.made[-1]

    def wait_bound(self, name: str, timeout: float) -> sandbox_client.Executor:
        if name in self.stuck:
            raise sandbox_client.ClaimError(f"{name} not bound")
        return sandbox_client.Executor(name, f"http://{name}:9090")

    def release(self, name: str) -> None:
        self.released.append(name)


def test_claiming_ahead_hands_out_the_spare_and_claims_the_next_in_its_place():
    fake = FakeClaims()
    with sandbox_client.Ahead(fake) as ahead:
        name, executor = ahead.take()  # the first, claimed and bound by the thread
        assert (name, executor.url) == ("c1", "http://c1:9090")
        assert ahead.take()[0] == "c2"
        assert fake.released == []  # the episodes' claims are the caller's to release
    assert fake.made == ["c1", "c2", "c3"] and fake.released == ["c3"]  # the spare goes with the block
    with pytest.raises(sandbox_client.ClaimError, match="closed"):
        ahead.take()


def test_a_spare_that_never_binds_is_released_and_said():
    fake = FakeClaims(stuck=("c1",))
    ahead = sandbox_client.Ahead(fake)
    with pytest.raises(sandbox_client.ClaimError, match="c1 not bound"):
        ahead.take()
    assert fake.released == ["c1"]
    assert ahead.take()[0] == "c2"  # the next was started all the same
    ahead.close()
    assert fake.made == ["c1", "c2", "c3"] and fake.released == ["c1", "c3"]
