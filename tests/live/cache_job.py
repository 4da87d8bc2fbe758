"""The job of the model-cache proof (tests/live/test_real_ray_storage.py): a small file made by the fill stands in for
weights (no hub is reachable here). The fill (the head's init container) appends a line to fill.log on every run
and writes model.bin when it is missing; the driver asks a task on each worker fleet what it finds in $HF_HOME,
then counts the fills. With the cache empty and HF_HUB_OFFLINE=1 the driver stops at once, as a hub client in
offline mode does, naming what is missing instead of fetching it."""

from __future__ import annotations

import base64
from typing import Any

FILL_SCRIPT = ('echo fill >> "$HF_HOME/fill.log"; '
               'test -f "$HF_HOME/model.bin" || echo dockyard-weights > "$HF_HOME/model.bin"')
FILL = ["sh", "-c", FILL_SCRIPT]
CODE = """
import os, sys, time
home = os.environ.get("HF_HOME", "")
model = os.path.join(home, "model.bin")
if os.environ.get("HF_HUB_OFFLINE") == "1" and not os.path.exists(model):
    why = "dockyard-cache: model.bin is not in the model cache HF_HOME=%s and HF_HUB_OFFLINE=1: not fetching it"
    sys.exit(why % home)
import ray
ray.init()
def look():
    import os
    h = os.environ.get("HF_HOME", "")
    p = os.path.join(h, "model.bin")
    found = open(p).read().strip() if os.path.exists(p) else "missing"
    return os.environ.get("DOCKYARD_FLEET_ROLE"), h, os.environ.get("HF_HUB_OFFLINE"), found
for fleet in ("trainer", "inference"):
    task = ray.remote(resources={"dockyard_fleet_%s" % fleet: 0.001})(look)
    print("dockyard-cache: %s HF_HOME=%s offline=%s model=%s" % ray.get(task.remote()), flush=True)
log = os.path.join(home, "fill.log")
print("dockyard-cache: fills", len(open(log).read().splitlines()) if os.path.exists(log) else 0, flush=True)
"""


def entrypoint_override() -> str:
    code = base64.b64encode(CODE.encode()).decode()
    return f"""entrypoint=python3 -c "import base64; exec(base64.b64decode('{code}'))\""""


def cached(doc: dict[str, Any], fill: bool) -> None:
    """A model cache on the head and both worker groups (ReadWriteMany: local-path-rwx), read offline; `fill`: the
    head's init container fills it."""
    cache: dict[str, Any] = {"size": "1Gi", "storageClassName": "local-path-rwx", "accessModes": ["ReadWriteMany"],
                             "offline": True}
    if fill:
        cache["fill"] = {"command": FILL}
    doc["infra"]["storage"] = {"modelCache": cache}
