"""`cluster list`: RayClusters in one namespace or all, dockyard's and others'.

(`cluster up` is `run` in bringup mode, `cluster down` is `uninstall`.)
"""

from __future__ import annotations

from typing import Any

from generator.errors import EXIT_OK, CheckFailed
from generator.live.client.kube import GPU, INSTANCE, RAY_GROUP, RAY_VERSION, Kube, crd_missing
from generator.live.output.show import age, columns, emit


def _clusters(kube: Kube, namespace: str | None) -> list[dict[str, Any]]:
    if namespace:
        return kube.list_ray("rayclusters", namespace)
    from kubernetes.client.exceptions import ApiException

    try:
        return kube.custom.list_cluster_custom_object(RAY_GROUP, RAY_VERSION, "rayclusters")["items"]
    except ApiException as exc:
        if exc.status == 404:
            raise CheckFailed(crd_missing("rayclusters")) from None
        raise


def _row(c: dict[str, Any]) -> dict[str, Any]:
    lab = c["metadata"].get("labels") or {}
    spec, st = c.get("spec") or {}, c.get("status") or {}
    groups = spec.get("workerGroupSpecs") or []
    workers = sum(int(g.get("replicas", 0) or 0) for g in groups)
    gpus = 0
    for g in groups:
        for ctr in ((g.get("template") or {}).get("spec") or {}).get("containers") or []:
            limits = (ctr.get("resources") or {}).get("limits") or {}
            gpus += int(g.get("replicas", 0) or 0) * int(limits.get(GPU, 0))
    owner = next((o["kind"] for o in c["metadata"].get("ownerReferences") or []), None)
    return {
        "namespace": c["metadata"]["namespace"], "name": c["metadata"]["name"],
        "release": lab.get(INSTANCE, ""), "mode": "rayjob" if owner == "RayJob" else "bringup",
        "state": st.get("state") or "pending", "workers": f"{st.get('readyWorkerReplicas', 0)}/{workers}",
        "gpus": gpus, "dockyard": lab.get("app.kubernetes.io/name") == "dockyard",
        "age": age(c["metadata"].get("creationTimestamp")),
    }


def cluster_list(args: Any) -> int:
    kube = Kube(args.kubeconfig, args.context)
    data = [_row(c) for c in _clusters(kube, args.namespace)]
    rows = [["NAMESPACE", "NAME", "RELEASE", "MODE", "STATE", "WORKERS", "GPUS", "AGE"]]
    rows += [[d["namespace"], d["name"], d["release"] or "-", d["mode"], d["state"], d["workers"], str(d["gpus"]),
              d["age"]] for d in data]
    emit(data, args.output, lambda: columns(rows) if data else "no RayClusters")
    return EXIT_OK
