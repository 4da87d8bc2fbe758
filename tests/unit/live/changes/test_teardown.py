"""changes/teardown.uninstall: a release that is not found may have left its run lock behind (cleared, exit 0) or
objects still going (finished: changes/remnants), but a lookup that failed for any other reason (several namespaces,
another Helm driver) clears nothing; a name with nothing of it is not found (exit 1)."""

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
    monkeypatch.setattr(teardown.remnants, "finish", lambda kube, release, ns, deadline, sweep: None)  # no object of it
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


def test_a_release_with_no_record_lock_or_object_is_not_found(monkeypatch, cleared):
    monkeypatch.setattr(teardown, "clear_left_behind", lambda *_a: [])

    def gone(*_a):
        raise ReleaseNotFound("release never not found in namespace ns", "ns")

    monkeypatch.setattr(teardown, "resolve", gone)
    with pytest.raises(ReleaseNotFound, match="release never not found"):
        teardown.uninstall(None, None, "never", "ns", 30)


def test_a_release_with_no_record_but_objects_left_is_finished(monkeypatch, cleared, capsys):
    monkeypatch.setattr(teardown, "clear_left_behind", lambda *_a: [])
    monkeypatch.setattr(teardown.remnants, "finish", lambda kube, release, ns, deadline, sweep: ["ns"])
    monkeypatch.setattr(teardown, "kept_claims", lambda *_a: [])

    def gone(*_a):
        raise ReleaseNotFound("release small not found in namespace ns", "ns")

    monkeypatch.setattr(teardown, "resolve", gone)
    teardown.uninstall(None, None, "small", "ns", 30)
    assert capsys.readouterr().out.startswith("release small uninstalled from ns: nothing left (")


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
    from generator.live.changes.teardown import warm_pools

    manifest = ("kind: SandboxWarmPool\nmetadata: {name: grpo-swe-sandbox}\n---\n"
                "kind: Deployment\nmetadata: {name: other}\n")
    assert warm_pools(manifest) == {"grpo-swe-sandbox"}
    assert warm_pools("kind: Deployment\nmetadata: {name: grpo-swe-sandbox}\n") == set()
    assert warm_pools(None) == set()


def _sandbox(owner_kind: str, owner: str, release: str) -> dict:
    return {"metadata": {"ownerReferences": [{"kind": owner_kind, "name": owner}]},
            "spec": {"podTemplate": {"metadata": {"labels": {"app.kubernetes.io/instance": release,
                                                              "app.kubernetes.io/component": "sandbox"}}}}}


class AgentSandboxApi:
    """The two lists and the delete an uninstall makes, over objects in memory; `refuse` maps a path's kind
    (sandboxclaims, sandboxes) to the status the API answers it with."""

    def __init__(self, claims: dict[str, str], sandboxes: list[dict], refuse: dict[str, int] | None = None):
        self.claims, self.sandboxes, self.refuse, self.deletes = claims, sandboxes, refuse or {}, []

    def _check(self, path: str) -> None:
        from kubernetes.client.exceptions import ApiException

        kind = path.rstrip("/").split("/")[-1] if path.endswith(("sandboxclaims", "sandboxes")) else "sandboxclaims"
        if kind in self.refuse:
            raise ApiException(status=self.refuse[kind])

    def list(self, path: str) -> list[dict]:
        self._check(path)
        if path.endswith("sandboxclaims"):
            return [{"metadata": {"name": n}, "spec": {"warmPoolRef": {"name": p}}} for n, p in self.claims.items()]
        return self.sandboxes

    def request(self, method: str, path: str) -> None:
        self.deletes.append((method, path.rsplit("/", 1)[1]))


def test_an_uninstall_finds_the_releases_claims_by_pool_and_by_the_sandboxes_they_own():
    """By the warm pool the manifest names, and by the Sandboxes made from the release's template: a claim whose
    pool only an earlier revision had (a switch back to the pool backend) is found too; another release's claims,
    and the warm pool's own unclaimed sandboxes, are not."""
    from generator.live.changes.teardown import release_claims

    api = AgentSandboxApi({"c1": "small-sandbox", "c2": "other-sandbox", "c3": "small-sandbox-of-old"},
                          [_sandbox("SandboxClaim", "c3", "small"), _sandbox("SandboxClaim", "c2", "other"),
                           _sandbox("SandboxWarmPool", "small-sandbox", "small")])
    assert release_claims(api, "ns", "small", {"small-sandbox"}) == ["c1", "c3"]
    api.sandboxes.append(_sandbox("SandboxClaim", "released-already", "small"))  # its claim gone, GC pending
    assert release_claims(api, "ns", "small", {"small-sandbox"}) == ["c1", "c3"]
    assert release_claims(api, "ns", "small", set()) == ["c3"]  # the pool backend's manifest names no pool
    # where agent-sandbox is not served there is no claim; a Sandbox list RBAC refuses leaves those found by pool
    assert release_claims(AgentSandboxApi({}, [], {"sandboxclaims": 404, "sandboxes": 404}), "ns", "small",
                          {"small-sandbox"}) == []
    assert release_claims(AgentSandboxApi({"c1": "small-sandbox"}, [], {"sandboxclaims": 403}), "ns", "small",
                          {"small-sandbox"}) == []  # RBAC hides the claims: nothing to delete here
    api.refuse = {"sandboxes": 403}
    assert release_claims(api, "ns", "small", {"small-sandbox"}) == ["c1"]
    from kubernetes.client.exceptions import ApiException

    api.refuse = {"sandboxes": 500}
    with pytest.raises(ApiException):  # any other error is not hidden
        release_claims(api, "ns", "small", {"small-sandbox"})


def test_the_sweep_deletes_a_claim_made_after_the_uninstall_and_each_claim_once(capsys):
    from generator.live.changes.teardown import ClaimSweep

    api = AgentSandboxApi({"c1": "small-sandbox"}, [])
    sweep = ClaimSweep(api, "ns", "small", {"small-sandbox"})
    assert sweep() == ["c1"] and api.deletes == [("DELETE", "c1")]
    api.claims["late"] = "small-sandbox"  # a Ray worker still running claims once more
    assert sweep() == ["c1", "late"]  # c1 is still finalizing: not deleted twice
    assert api.deletes == [("DELETE", "c1"), ("DELETE", "late")]
    api.claims.clear()
    assert sweep() == []
    err = capsys.readouterr().err
    assert err.count("deleted SandboxClaim c1") == 1 and "deleted SandboxClaim late" in err
