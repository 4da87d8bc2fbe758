"""Small truths of generator/live/client/kube.py: a cluster failure names the server of the Kube whose request
failed (not whichever Kube was made last: no module-global server), every typed API handle a Kube offers
is used, no live module keeps state in a module global, and RFC 3339 stamps are read by fromisoformat
itself (Python 3.11 reads `Z`)."""

from __future__ import annotations

import ast
import re
from datetime import UTC, datetime
from pathlib import Path

import pytest

from generator.errors import CheckFailed
from generator.live.client.api_errors import cluster_errors, server_of
from generator.live.client.kube import Kube
from tests.support.fake_cluster import SERVER, install, write_kubeconfig

PACKAGE = Path(__file__).resolve().parents[4] / "generator"
OTHER = "https://127.0.0.1:7443"  # never dialed


def _other_kubeconfig(tmp_path: Path) -> str:
    folder = tmp_path / "other"
    folder.mkdir()
    path = write_kubeconfig(folder)
    path.write_text(path.read_text().replace(SERVER, OTHER))
    return str(path)


def test_a_failure_names_the_server_of_its_own_kube(monkeypatch, tmp_path):
    install(monkeypatch, tmp_path, "errors")
    first = Kube()
    second = Kube(_other_kubeconfig(tmp_path))  # made later, for another cluster
    assert (first.server, second.server) == (SERVER, OTHER)

    @cluster_errors
    def verb() -> int:
        first.request("GET", "/version")
        return 0

    with pytest.raises(CheckFailed) as exc:
        verb()
    assert str(exc.value) == (f"cannot reach the Kubernetes API at {SERVER}: Connection refused "
                              "(check --kubeconfig / --context, or start the playground)")


def test_a_failure_of_no_kube_names_no_server(monkeypatch, tmp_path):
    install(monkeypatch, tmp_path, "errors")
    with pytest.raises(Exception) as exc:
        Kube().request("GET", "/version")
    assert server_of(exc.value) == SERVER
    assert server_of(ValueError("not a request")) is None


def _live_modules() -> list[Path]:
    return sorted((PACKAGE / "live").rglob("*.py"))


def test_every_typed_api_handle_is_used():
    tree = ast.parse((PACKAGE / "live" / "client" / "kube.py").read_text())
    kube = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "Kube")
    handles = [f.name for f in kube.body if isinstance(f, ast.FunctionDef)
               and any(isinstance(d, ast.Attribute) and d.attr == "cached_property" for d in f.decorator_list)]
    assert "core" in handles
    users = "\n".join(p.read_text() for p in PACKAGE.rglob("*.py") if p.name != "kube.py")
    unused = [h for h in handles if not re.search(rf"\bkube\.{h}\.", users)]
    assert not unused, f"Kube offers typed API handles nothing uses: {unused}"


@pytest.mark.parametrize("path", _live_modules(), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_no_live_module_keeps_state_in_a_global(path):
    hits = [n.lineno for n in ast.walk(ast.parse(path.read_text())) if isinstance(n, ast.Global)]
    assert not hits, f"{path.name}:{hits}: `global` — keep the state on an instance, or pass it"


def _z_replaced(path: Path) -> list[int]:
    """Lines of `x.replace("Z", "+00:00")`: needed before Python 3.11's fromisoformat, not since."""
    return [n.lineno for n in ast.walk(ast.parse(path.read_text()))
            if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "replace"
            and [a.value for a in n.args if isinstance(a, ast.Constant)] == ["Z", "+00:00"]]


@pytest.mark.parametrize("path", sorted(PACKAGE.rglob("*.py")), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_rfc3339_stamps_need_no_z_replaced(path):
    assert not _z_replaced(path), f"{path.name}:{_z_replaced(path)}: fromisoformat reads `Z` since Python 3.11"


def test_fromisoformat_reads_the_stamps_the_apiserver_writes():
    for stamp in ("2026-03-01T12:00:00Z", "2026-03-01T12:00:00.123456Z"):
        assert datetime.fromisoformat(stamp).tzinfo == UTC
        assert str(datetime.fromisoformat(stamp)) == str(datetime.fromisoformat(stamp[:-1] + "+00:00"))
