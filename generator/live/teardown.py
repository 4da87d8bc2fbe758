"""Removing a release: helm uninstall under the run lock, then waiting until none of its objects is left."""

from __future__ import annotations

import sys
import time

from generator.errors import CheckFailed
from generator.live.guard import impact, live_manifest, require_ours, require_secret_storage
from generator.live.kube import INSTANCE, Kube
from generator.live.release import Helm, RunLock, wait_until
from generator.live.resolve import resolve
from generator.live.snapshot import release_records


def leftovers(kube: Kube, release: str, ns: str) -> list[str]:
    """Every object of the release still present (by instance label), pods included."""
    from kubernetes import client

    sel = f"{INSTANCE}={release}"
    out: list[str] = []
    net = client.NetworkingV1Api(kube.api)
    pol = client.PolicyV1Api(kube.api)
    listings = {
        "deployments": lambda: kube.apps.list_namespaced_deployment(ns, label_selector=sel).items,
        "services": lambda: kube.core.list_namespaced_service(ns, label_selector=sel).items,
        "networkpolicies": lambda: net.list_namespaced_network_policy(ns, label_selector=sel).items,
        "poddisruptionbudgets": lambda: pol.list_namespaced_pod_disruption_budget(ns, label_selector=sel).items,
        "configmaps": lambda: kube.core.list_namespaced_config_map(ns, label_selector=sel).items,
        "serviceaccounts": lambda: kube.core.list_namespaced_service_account(ns, label_selector=sel).items,
        "pods": lambda: kube.core.list_namespaced_pod(ns, label_selector=sel).items,
    }
    for kind, fn in listings.items():
        out += [f"{kind}/{o.metadata.name}" for o in fn()]
    for plural in ("rayclusters", "rayjobs"):
        out += [f"{plural}/{o['metadata']['name']}" for o in kube.list_ray(plural, ns, sel)]
    return out


def held(kube: Kube, release: str, ns: str) -> list[str]:
    """The release's RayJobs and RayClusters that are being deleted but held by a finalizer, and who
    removes it: what an uninstall waits on when the KubeRay operator is not reconciling."""
    out = []
    for plural, kind in (("rayjobs", "RayJob"), ("rayclusters", "RayCluster")):
        for o in kube.list_ray(plural, ns, f"{INSTANCE}={release}"):
            meta = o["metadata"]
            for fin in meta.get("finalizers") or [] if meta.get("deletionTimestamp") else []:
                who = ("only the KubeRay operator removes: is it running and reconciling? (`dockyard-k8s doctor` "
                       "checks)") if fin.startswith("ray.io/") else "the controller that added it removes"
                out.append(f"{kind} {meta['name']} is held by the finalizer {fin} (deleted at "
                           f"{meta['deletionTimestamp']}), which {who}")
    return out


def _why_held(kube: Kube, release: str, ns: str) -> str:
    try:
        lines = held(kube, release, ns)
    except Exception as exc:  # the reason is a bonus: never hide the error it explains
        from generator.live.kube import describe_error

        return f"\n  (what holds it could not be read: {describe_error(exc) or type(exc).__name__})"
    return "".join(f"\n  {line}" for line in lines)


def uninstall(kubeconfig: str | None, context: str | None, release: str | None, namespace: str | None,
              timeout: float) -> None:
    """Uninstall the release (the only one in scope when unnamed) and wait until nothing of it is left."""
    t0 = time.monotonic()
    deadline = t0 + timeout
    kube = Kube(kubeconfig, context)
    kube.deadline = deadline
    name, ns, _ = resolve(kube, release, namespace)
    print(f"uninstall {name} from namespace {ns}, {kube.target()}", file=sys.stderr, flush=True)
    with RunLock(kube, ns, name, "uninstall", deadline=deadline):
        require_secret_storage(kube, name, ns, "uninstall")
        records = release_records(kube, name, ns)
        require_ours(records, name, ns, "uninstall")
        # uninstall is the request to remove: it never refuses, but names the running training it ends
        for line in impact(kube, ns, live_manifest(records), "").lost:
            print(f"uninstall ends running training: {line}", flush=True)
        try:
            Helm(kube, deadline=deadline).uninstall(name, ns, timeout=timeout)
        except CheckFailed as exc:
            raise CheckFailed(f"{exc}{_why_held(kube, name, ns)}") from None
        left = wait_until(lambda: not leftovers(kube, name, ns), max(1.0, deadline - time.monotonic()))
    if not left:
        raise CheckFailed(f"release {name} uninstalled, but objects remain: {', '.join(leftovers(kube, name, ns))}"
                          + _why_held(kube, name, ns))
    print(f"release {name} uninstalled from {ns}: nothing left ({time.monotonic() - t0:.1f}s)")
