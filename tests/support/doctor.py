"""What doctor's row tests share: the recorded playground's namespace and release (tests/live/data/small.yaml, its
fleets and pod templates by role), the marks of a list of rows, and the Room doctor's capacity reads of Node objects."""

from __future__ import annotations

from types import SimpleNamespace

from generator import quantity
from generator.live.doctor import capacity

NS, RELEASE = "rec", "small"


CLUSTER = SimpleNamespace(trainer=SimpleNamespace(nodes=1, gpusPerNode=8),
                          inference=SimpleNamespace(nodes=1, gpusPerNode=8))  # tests/live/data/small.yaml


ROLES = ("sandbox", "submitter", "head", "trainer", "inference")


SANDBOX = {"spec": {"containers": [{"name": "executor", "resources": {
    "requests": {"cpu": "250m", "memory": "256Mi", "ephemeral-storage": "1Gi"}}}]}}


def templates() -> dict[str, dict]:
    """Pod templates by role; the recorded dry runs answered small.yaml's rendered ones (matched by role)."""
    return {role: SANDBOX if role == "sandbox" else {"spec": {"containers": [{"name": "c", "image": "i"}]}}
            for role in ROLES}


def marks(rows) -> dict[str, str]:
    return {r.check: r.mark for r in rows}



def room_of(manifests: list[dict]) -> capacity.Room:
    """The Room `capacity.read_room` makes of these Node objects (no other pod running)."""
    room = capacity.Room()
    for n in manifests:
        name = n["metadata"]["name"]
        room.alloc[name] = {k: quantity.qty(v) for k, v in n["status"]["allocatable"].items()}
        room.used[name] = {}
        room.labels[name] = dict(n["metadata"]["labels"])
        room.taints[name] = [dict(t) for t in n["spec"].get("taints") or []]
    return room

