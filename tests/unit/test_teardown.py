"""changes/teardown.uninstall: a release that is not found may have left its run lock behind (cleared, exit 0),
but a lookup that failed for any other reason (several namespaces, another Helm driver) clears nothing."""

from __future__ import annotations

import pytest

from generator.errors import CheckFailed
from generator.live.changes import teardown
from generator.live.helm.resolve import ReleaseNotFound


class NoCluster:
    deadline = None

    def __init__(self, *_a):
        pass

    def target(self) -> str:
        return "test"


@pytest.fixture
def cleared(monkeypatch):
    calls: list = []
    monkeypatch.setattr(teardown, "Kube", NoCluster)
    monkeypatch.setattr(teardown, "clear_left_behind",
                        lambda kube, release, ns, verb: calls.append((release, ns)) or [f"removed its run lock {ns}"])
    return calls


def test_a_release_not_found_clears_its_left_behind_lock(monkeypatch, cleared, capsys):
    def gone(*_a):
        raise ReleaseNotFound("release small not found in namespace ns", "ns")

    monkeypatch.setattr(teardown, "resolve", gone)
    teardown.uninstall(None, None, "small", "ns", 30)
    assert cleared == [("small", "ns")]
    assert capsys.readouterr().out == "release small is already uninstalled; removed its run lock ns\n"


@pytest.mark.parametrize("why", ["release small exists in namespaces a, b: pass -n NAMESPACE",
                                 "release small not found in namespace ns (Helm's configmap driver holds a release"])
def test_any_other_failed_lookup_clears_nothing(monkeypatch, cleared, why):
    def refused(*_a):
        raise CheckFailed(why)

    monkeypatch.setattr(teardown, "resolve", refused)
    with pytest.raises(CheckFailed, match="small"):
        teardown.uninstall(None, None, "small", None, 30)
    assert cleared == []


class ClaimsRefused:
    """A cluster whose PVC list answers `status` (the call kept_claims makes)."""

    def __init__(self, status: int) -> None:
        from kubernetes.client.exceptions import ApiException

        def refuse(*_a, **_kw):
            raise ApiException(status=status, reason="Forbidden" if status == 403 else "Error")

        self.core = type("Core", (), {"list_namespaced_persistent_volume_claim": staticmethod(refuse)})()


def test_kept_claims_that_rbac_hides_are_a_note_not_a_failure(capsys):
    """The release is gone either way: a user who may not list claims gets the uninstall's success and a note."""
    assert teardown.kept_claims(ClaimsRefused(403), "small", "ns") == []
    assert "listing PersistentVolumeClaims in ns is forbidden for you" in capsys.readouterr().err
    from kubernetes.client.exceptions import ApiException

    with pytest.raises(ApiException):  # any other error is not hidden
        teardown.kept_claims(ClaimsRefused(500), "small", "ns")


def test_the_warm_pools_whose_claims_an_uninstall_deletes_are_read_from_the_manifest():
    from generator.live.changes.teardown import pool_claims, warm_pools

    manifest = ("kind: SandboxWarmPool\nmetadata: {name: grpo-swe-sandbox}\n---\n"
                "kind: Deployment\nmetadata: {name: other}\n")
    assert warm_pools(manifest) == {"grpo-swe-sandbox"}
    assert warm_pools("kind: Deployment\nmetadata: {name: grpo-swe-sandbox}\n") == set()
    assert warm_pools(None) == set()
    assert pool_claims(None, "dockyard", set()) == []  # no pool: no read at all (kube is never touched)
