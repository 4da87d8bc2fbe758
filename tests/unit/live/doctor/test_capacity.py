"""doctor's capacity rows (generator/live/doctor/capacity.py: the room for the GPU fleets, the gang, the sandbox pool,
the ResourceQuota) on answers recorded from the playground: the cluster admin sees one 8-GPU node for two 8-GPU
workers; ServiceAccount alice may not list nodes or pods at cluster scope, so the rows say what stays unknown."""

from __future__ import annotations

from generator.live.doctor import access, admission, capacity, kuberay
from generator.live.doctor.rows import FAIL, OK, WARN, read_namespace
from tests.support.doctor import CLUSTER, NS, RELEASE, SANDBOX, marks, templates


def test_admin_room_one_gpu_node_for_two_8_gpu_workers(admin):
    room = capacity.read_room(admin, RELEASE, NS)
    assert room.alloc["gpu-node-0"]["nvidia.com/gpu"] == 8 and not (room.nodes_denied or room.pods_denied)
    assert all(not used.get("nvidia.com/gpu") for used in room.used.values())  # the release's own pods don't count
    rows = capacity.gpu_rows(room, CLUSTER)
    assert marks(rows) == {"GPU capacity: trainer": OK, "GPU capacity: inference": OK, "GPU capacity: gang": FAIL}
    assert rows[-1].detail == "1/2 worker pods fit in the free GPUs now (16 wanted, 8 allocatable on 1 node(s))"
    sandbox = capacity.sandbox_rows(room, SANDBOX, 2)
    assert [(r.mark, r.check) for r in sandbox] == [(OK, "sandbox pool fits")]
    quota = capacity.quota_rows(admin, read_namespace(admin, NS), templates(), {"sandbox": 2})
    assert [(r.mark, r.detail) for r in quota] == [(OK, f"no ResourceQuota in {NS}")]


def test_namespace_user_rows_say_what_rbac_keeps_unknown(alice):
    operator = kuberay.kuberay_operator_row(alice)
    assert (operator.mark, operator.detail) == (WARN, ("forbidden: cannot list deployments at cluster scope: "
                                                       "whether a KubeRay operator runs is unknown"))
    room = capacity.read_room(alice, RELEASE, NS)
    assert room.nodes_denied and room.pods_denied
    rows = capacity.gpu_rows(room, CLUSTER) + capacity.sandbox_rows(room, SANDBOX, 2)
    assert [r.mark for r in rows] == [WARN] * 4
    assert rows[0].detail == "forbidden: cannot list nodes at cluster scope: GPU capacity unknown"
    ns = read_namespace(alice, NS)
    assert access.namespace_row(ns).mark == OK  # the admin role reads its own namespace
    assert admission.pod_security_row(alice, ns, templates(), drop_priority_class=True).mark == OK


def test_the_run_watcher_row_names_its_cost_its_guard_and_whether_logs_are_kept():
    from generator.live.doctor.capacity import watcher_row

    row = watcher_row({"launch": {"watch": {"enabled": True, "stallTimeoutSeconds": 600, "firstReportSeconds": 1800,
                                            "keepLogMiB": 64}},
                       "infra": {"storage": {"logs": {"size": "10Gi"}}}})
    assert row.check == "run watcher" and "in the head's container, within its requests (~16 MiB" in row.detail
    assert "no RBAC" in row.detail and "stall guard 600 s (first report within 1800 s)" in row.detail
    assert "each job's driver log kept on infra.storage.logs (up to 64 MiB each)" in row.detail
    trainer_only = watcher_row({"launch": {"watch": {"enabled": True}},
                                "infra": {"storage": {"logs": {"size": "10Gi", "mountOn": ["trainer"]}}}})
    assert "no stall guard" in trainer_only.detail and "not kept after an attempt" in trainer_only.detail
    # the Ray log keeper: a sidecar in each pod that mounts the volume, its requests named for the quota
    assert ("the Ray logs of each head, trainer, inference pod kept there (up to 64 MiB a pod) by a sidecar "
            "requesting cpu 10m, memory 32Mi a pod") in row.detail
    assert "the Ray logs of each trainer pod kept there" in trainer_only.detail
    off = watcher_row({"launch": {"watch": {"enabled": True, "keepRayLogMiB": 0}},
                       "infra": {"storage": {"logs": {"size": "10Gi"}}}})
    assert "the Ray pods' own Ray logs not kept (launch.watch.keepRayLogMiB 0)" in off.detail
    assert "Ray pods' own Ray logs not kept (no infra.storage.logs)" in watcher_row({}).detail
    assert watcher_row({"launch": {"watch": {"enabled": False}}}).detail.startswith("off (launch.watch.enabled false)")
