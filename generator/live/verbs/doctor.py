"""`doctor RECIPE INFRA`: preflight checks on the target cluster, each a row ✓ / ✗ / ! with a remedy.

The rows are made by the modules of `generator.live.doctor`, which checks() calls in this order: access (helm,
the API server, namespace, release, RBAC, PriorityClass, pull secrets), versions, kuberay, kueue_rows (Kueue's
queues and quota, only when launch.queue is set), credentials (the Secrets and ConfigMaps the pods read env from),
capacity (the room for the GPU fleets, the sandbox pool and the quotas), fabric (the profile's devices beside the
GPUs, its Multus networks), placement, topology_rows (launch.topology's Topology and the domains that hold
the gang), storage (infra.storage's claims and classes), runtime_class and admission
(PodSecurity by a server-side dry run, NetworkPolicy).
Exit 1 when a row is ✗.
"""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

import yaml

from generator.errors import EXIT_FAILED, EXIT_OK
from generator.live.changes.plan import plan
from generator.live.client.api_errors import describe_error, is_forbidden
from generator.live.client.kube import Kube
from generator.live.doctor import (
    access,
    admission,
    agent_sandbox,
    capacity,
    credentials,
    fabric,
    kuberay,
    kueue_rows,
    placement,
    runtime_class,
    topology_rows,
    versions,
)
from generator.live.doctor.rows import FAIL, OK, WARN, Row, read_namespace
from generator.live.doctor.storage_rows import rows as storage_rows
from generator.live.output.show import emit
from generator.render.pod_templates import pod_templates


def checks(kube: Kube, inputs: Any, values: dict[str, Any], release: str, namespace: str,
           rows: list[Row] | None = None) -> list[Row]:
    """The rows, appended to `rows` as they are made (the caller keeps them if a check raises)."""
    from generator.render.helm import template

    rows = [] if rows is None else rows
    for first in (access.helm_row, lambda: access.api_server_row(kube)):
        rows.append(first())
        if rows[-1].mark == FAIL:
            return rows  # nothing else can be checked
    rows.append(versions.kubernetes_version_row(kube))
    ns = read_namespace(kube, namespace)
    rows.append(access.namespace_row(ns))
    rows.append(access.release_row(kube, release, namespace))
    autoscaling = (values.get("sandbox") or {}).get("autoscaling") or {}
    rows += access.rbac_rows(kube, namespace, hpa=bool(autoscaling.get("enabled")),
                             agent_sandbox=(values.get("sandbox") or {}).get("backend") == "agent-sandbox")
    rows.append(kuberay.kuberay_crds_row(kube))
    rows.append(kuberay.kuberay_operator_row(kube))
    rows.append(kuberay.kuberay_reconciling_row(kube))
    rows += agent_sandbox.rows(kube, values)  # only with sandbox.backend agent-sandbox
    infra = values.get("infra") or {}
    priority_class = access.priority_class_row(kube, infra.get("priorityClassName"))
    rows.append(priority_class)
    rows.append(access.pull_secrets_row(kube, infra.get("imagePullSecrets") or [], ns))

    docs = [d for d in yaml.safe_load_all(template(values, release, namespace)) if isinstance(d, dict)]
    rows += versions.kuberay_fields_rows(kube, docs, namespace, values, lambda again: [
        d for d in yaml.safe_load_all(template(again, release, namespace)) if isinstance(d, dict)])
    kueue_seen: dict[str, Any] = {}  # the ClusterQueue and flavors the Kueue rows read, for the topology rows
    rows += kueue_rows.doctor_rows(kube, values, docs, ns, kueue_seen)  # only when launch.queue is set
    templates = pod_templates(docs)
    rows += credentials.rows(kube, templates, ns)  # the Secrets and ConfigMaps the pods read env from
    room = capacity.read_room(kube, release, namespace)
    cluster = inputs.recipe.cluster
    network = (values.get("kuberay") or {}).get("network")
    if inputs.infra.launch.mode != "attach":
        rows += capacity.gpu_rows(room, cluster)
        rows += fabric.device_rows(room, cluster, network)  # the profile's device beside the GPUs
        rows += fabric.networks_rows(kube, namespace, network)  # Multus' NetworkAttachmentDefinitions
        rows += placement.placement_rows(room, templates)
        rows += topology_rows.rows(kube, values, ns, room, cluster, kueue_seen)  # only with launch.topology
        rows += storage_rows(kube, values, release, namespace)  # infra.storage: claims, classes, access modes
        rows.append(capacity.watcher_row(values))  # the run watcher's cost in the head, its guard, its kept logs
    replicas = int((values.get("sandbox") or {}).get("replicas", 0))
    if autoscaling.get("enabled"):
        replicas = int(autoscaling.get("minReplicas", 1))  # what the HPA keeps; its maximum is a warning row
    sandbox = templates.get("sandbox")
    admitted = dict(templates)  # as the API server admits them: with the RuntimeClass's overhead (not dry-run)
    class_name = (values.get("sandbox") or {}).get("runtimeClassName")
    if sandbox and class_name:  # read only when set: the row, and the overhead the sandbox pods get
        rc = runtime_class.read(kube, class_name)
        rows.append(runtime_class.row(rc, room.labels, room.handlers, room.nodes_denied))
        sandbox = admitted["sandbox"] = runtime_class.with_overhead(sandbox, rc)  # room and quotas count it
    rows += capacity.sandbox_rows(room, sandbox, replicas, autoscaling)
    counts = {"sandbox": replicas, "head": 1, "trainer": cluster.trainer.nodes, "inference": cluster.inference.nodes,
              "submitter": 1}
    rows += capacity.quota_rows(kube, ns, admitted, counts)
    rows.append(admission.pod_security_row(kube, ns, templates, drop_priority_class=priority_class.mark != OK,
                                           fabric=fabric.admission_remedy(network)))
    rows += admission.network_policy_rows(values)
    rows += fabric.network_policy_rows(values)  # hostNetwork beside the sandbox's NetworkPolicy
    return rows


def table(rows: list[Row]) -> str:
    lines = []
    for r in rows:
        lines.append(f"{r.mark} {r.check:<24} {r.detail}")
        if r.remedy and r.mark != OK:
            lines.append(f"  {'':<24} → {r.remedy}")
    failed = [r for r in rows if r.mark == FAIL]
    lines.append("")
    lines.append(f"{len(failed)} blocking problem(s)" if failed else "ready to run")
    return "\n".join(lines)


def doctor(args: Any) -> int:
    from generator.inputs.compose import load_inputs

    p = plan(args.recipe, args.infra, args.overrides, args.release, args.namespace)
    inputs = load_inputs(args.recipe, args.infra, args.overrides)
    kube = Kube(args.kubeconfig, args.context)
    rows: list[Row] = []
    try:
        checks(kube, inputs, p.values, p.release, p.namespace, rows)
    except Exception as exc:
        if not is_forbidden(exc):
            raise
        rows.append(Row(WARN, "other checks", f"skipped: {describe_error(exc, kube.server)}",
                        "ask a cluster admin for the permission named here"))
    failed = [r for r in rows if r.mark == FAIL]
    emit({"release": p.release, "namespace": p.namespace, "ok": not failed, "checks": [asdict(r) for r in rows]},
         args.output, lambda: table(rows))
    return EXIT_FAILED if failed else EXIT_OK
