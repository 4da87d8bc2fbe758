"""`rollback [REVISION]`: roll the release back, refusing to lose running training unless --replace."""

from __future__ import annotations

import sys
import time
from typing import Any

from generator.errors import EXIT_OK, CheckFailed
from generator.live.changes.guard import enforce
from generator.live.changes.teardown import queued_objects, readded_kept_claims, settle_workloads
from generator.live.client.kube import Kube, usage_error
from generator.live.helm.ownership import require_ours, require_secret_storage
from generator.live.helm.records import decode_release, end_state, labels, live_manifest, release_records
from generator.live.helm.resolve import resolve
from generator.live.helm.run_lock import RunLock
from generator.live.helm.runner import Helm


def _revision_arg(revision: int | None) -> int | None:
    if revision is not None and revision <= 0:
        raise usage_error(f"revision {revision}: revisions start at 1 (Helm reads 0 as 'the previous one': "
                          "omit REVISION for that)")
    return revision


def _target(by_version: dict[int, Any], current: int, release: str, target: int | None) -> int:
    """The revision to roll back to: the one asked for, else the last deployed or superseded before the current."""
    if target is None:
        earlier = [v for v, r in by_version.items() if v < current
                   and labels(r).get("status") in ("deployed", "superseded")]
        if not earlier:
            raise CheckFailed(f"release {release} has no earlier revision to roll back to")
        target = earlier[-1]
    if target not in by_version:
        raise CheckFailed(f"release {release} has no revision {target} (it has {', '.join(map(str, by_version))})")
    return target


def rollback(args: Any) -> int:
    target = _revision_arg(args.revision)
    deadline = time.monotonic() + (args.timeout or 600)
    kube = Kube(args.kubeconfig, args.context)
    kube.deadline = deadline
    release, ns, records = resolve(kube, args.release, args.namespace)
    print(f"rollback {release} in namespace {ns}, {kube.target()}", file=sys.stderr, flush=True)
    helm = Helm(kube, deadline=deadline)
    with RunLock(kube, ns, release, "rollback", deadline=deadline):
        require_secret_storage(kube, release, ns, "rollback")
        records = release_records(kube, release, ns)
        require_ours(records, release, ns, "rollback")
        by_version = {int(labels(r)["version"]): r for r in records}
        current = int(labels(records[-1])["version"])
        target = _target(by_version, current, release, target)
        kept = readded_kept_claims(kube, ns, live_manifest(records), decode_release(by_version[target]).get("manifest"))
        if kept:
            raise CheckFailed(
                f"rollback {release} {target} refused, nothing was changed: revision {target} has the claim "
                f"{', '.join(kept)}, which revision {current} dropped and Helm kept (resource-policy keep, its data "
                "intact); helm rollback cannot take back an object the current revision does not list and would fail "
                f"half-way. Run revision {target}'s recipe and infra spec again with `run` instead: an upgrade adopts "
                "the kept claim (docs/storage.md)")
        queued = queued_objects(kube, ns, live_manifest(records))  # Kueue's Workloads: none left behind
        enforce(kube, ns, live_manifest(records), decode_release(by_version[target]).get("manifest", ""),
                replace=args.replace, verb=f"rollback {release} {target}",
                say=lambda line: print(line, flush=True), deadline=deadline)
        try:
            helm.rollback(release, ns, target, timeout=max(5.0, deadline - time.monotonic()))
        except CheckFailed as exc:
            raise CheckFailed(f"{exc}\n  helm's end state: {end_state(kube, release, ns, current)}") from None
        unchecked = settle_workloads(kube, ns, queued, max(1.0, deadline - time.monotonic()))
    after = release_records(kube, release, ns)
    print(f"release {release} rolled back to revision {target}: now revision {labels(after[-1])['version']} "
          f"({labels(after[-1]).get('status')})" + (f"; {unchecked}" if unchecked else ""))
    return EXIT_OK
