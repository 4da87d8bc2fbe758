"""The simulated nodes' volume provisioner: a PersistentVolume on demand for each claim of StorageClass
`playground-hostpath` (volumes.py), deleted with its directory when the claim goes. A playground process of its own,
supervised like the controllers (control_plane.SUPERVISED):

    python -m generator.playground.provisioner --state-dir DIR --port P

It talks to the playground's apiserver on 127.0.0.1 as `admin` (state.json's token and CA), and serves /healthz on
127.0.0.1:P once it has reconciled. It is level-triggered: each pass lists every claim and PV and makes what is
missing, so a claim made while it was down is provisioned when it starts again. A pass runs at start, whenever its
watches of claims and PVs see an event, and every RESYNC seconds.

- A claim of the class, Pending, with no volume, not being deleted and with no PV of ours naming it gets PV
  `pvc-<claim uid>`: bound to it in advance (claimRef with the UID: the PV controller binds the pair), its size and
  access modes, reclaim policy Delete (the class's), a hostPath directory `<state dir>/volumes/<PV name>` and node
  affinity type=kwok, so no real pod ever mounts one (kwok's pods mount nothing; the directory stays empty).
- A PV this provisioner made (annotation pv.kubernetes.io/provisioned-by) that is Released with reclaim policy
  Delete is deleted, its directory first. Released with Retain (patched by someone who wants the data kept), or a
  PV anyone else made, is left alone.
"""

from __future__ import annotations

import argparse
import http.client
import json
import shutil
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from generator.playground.volumes import LABELS, PROVISIONER, RECLAIM, STORAGE_CLASS

PROVISIONED_BY = "pv.kubernetes.io/provisioned-by"
RESYNC = 30.0  # seconds between passes with no event (a watch that broke without saying so)
WATCHED = ("/api/v1/persistentvolumeclaims", "/api/v1/persistentvolumes")


def volume_dir(root: Path, pv_name: str) -> Path:
    return root / "volumes" / pv_name


def pv_for(claim: dict[str, Any], root: Path, provisioned: set[str]) -> dict[str, Any] | None:
    """The PV to make for `claim`, or None when it needs none from us: another class, already bound or named a
    volume, being deleted, or one of ours already names it (`provisioned`: the claim UIDs of our PVs)."""
    meta, spec = claim.get("metadata") or {}, claim.get("spec") or {}
    if (spec.get("storageClassName") != STORAGE_CLASS or spec.get("volumeName") or meta.get("deletionTimestamp")
            or (claim.get("status") or {}).get("phase", "Pending") != "Pending" or meta.get("uid") in provisioned):
        return None
    name = f"pvc-{meta['uid']}"
    size = ((spec.get("resources") or {}).get("requests") or {}).get("storage") or "1Gi"
    return {
        "apiVersion": "v1", "kind": "PersistentVolume",
        "metadata": {"name": name, "labels": dict(LABELS), "annotations": {PROVISIONED_BY: PROVISIONER}},
        "spec": {"storageClassName": STORAGE_CLASS, "capacity": {"storage": size},
                 "accessModes": list(spec.get("accessModes") or ["ReadWriteOnce"]),
                 "volumeMode": spec.get("volumeMode") or "Filesystem",
                 "persistentVolumeReclaimPolicy": RECLAIM,
                 "claimRef": {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "namespace": meta["namespace"],
                              "name": meta["name"], "uid": meta["uid"]},
                 "hostPath": {"path": str(volume_dir(root, name)), "type": "DirectoryOrCreate"},
                 "nodeAffinity": {"required": {"nodeSelectorTerms": [{"matchExpressions": [
                     {"key": "type", "operator": "In", "values": ["kwok"]}]}]}}},
    }


def ours(pv: dict[str, Any]) -> bool:
    return ((pv.get("metadata") or {}).get("annotations") or {}).get(PROVISIONED_BY) == PROVISIONER


def to_delete(pv: dict[str, Any]) -> bool:
    """A PV of ours whose claim is gone (Released) and whose policy says delete."""
    return (ours(pv) and (pv.get("status") or {}).get("phase") == "Released"
            and (pv.get("spec") or {}).get("persistentVolumeReclaimPolicy") == "Delete")


class Provisioner:
    def __init__(self, api: Any, root: Path, say: Any = print) -> None:
        self.api, self.root, self.say = api, root, say
        self.synced = False

    def reconcile(self) -> None:
        """One pass: a PV for each claim that needs one, and away with each Released PV of ours."""
        claims = self.api.get("/api/v1/persistentvolumeclaims")["items"]
        pvs = self.api.get("/api/v1/persistentvolumes")["items"]
        provisioned = {str(((pv.get("spec") or {}).get("claimRef") or {}).get("uid")) for pv in pvs if ours(pv)}
        for claim in claims:
            pv = pv_for(claim, self.root, provisioned)
            if pv is None:
                continue
            volume_dir(self.root, pv["metadata"]["name"]).mkdir(parents=True, exist_ok=True)
            if self.api.create("/api/v1/persistentvolumes", pv):
                self.say(f"provisioned {pv['metadata']['name']} ({pv['spec']['capacity']['storage']}) for claim "
                         f"{claim['metadata']['namespace']}/{claim['metadata']['name']}")
        for pv in pvs:
            if to_delete(pv):
                name = pv["metadata"]["name"]
                shutil.rmtree(volume_dir(self.root, name), ignore_errors=True)
                status, body = self.api.request("DELETE", f"/api/v1/persistentvolumes/{name}")
                if status not in (200, 202, 404):
                    self.say(f"deleting {name}: HTTP {status} {body}")
                else:
                    self.say(f"deleted {name} and its directory (its claim is gone; reclaim policy Delete)")
        self.synced = True


def _watch(api: Any, path: str, wake: threading.Event) -> None:
    """Set `wake` on every event of a watch of `path`, for ever (a broken watch is opened again)."""
    while True:
        try:
            conn = http.client.HTTPSConnection(api.host, api.port, timeout=90, context=api.ctx)
            conn.request("GET", f"{path}?watch=true&timeoutSeconds=60",
                         headers={"Authorization": f"Bearer {api.token}", "Accept": "application/json"})
            resp = conn.getresponse()
            if resp.status != 200:
                time.sleep(2)
            for _ in resp:  # one JSON event a line
                wake.set()
            conn.close()
        except OSError:
            time.sleep(1)
        wake.set()


def _serve_health(port: int, prov: Provisioner) -> None:
    class Health(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # the stdlib's name
            ok = prov.synced and self.path == "/healthz"
            body = b"ok" if ok else b"not synced yet"
            self.send_response(200 if ok else 503)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *_a: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", port), Health)
    threading.Thread(target=server.serve_forever, daemon=True).start()


def main(args: list[str] | None = None) -> int:
    from generator.playground.health import api_for
    from generator.playground.state import PlaygroundState

    p = argparse.ArgumentParser(prog="python -m generator.playground.provisioner", description=__doc__.split("\n")[0])
    p.add_argument("--state-dir", required=True, type=Path)
    p.add_argument("--port", required=True, type=int, help="the /healthz port on 127.0.0.1")
    opts = p.parse_args(args)
    state = PlaygroundState.load(opts.state_dir)
    if state is None:
        print(f"no playground state in {opts.state_dir}", file=sys.stderr)
        return 1
    api = api_for(state)
    prov = Provisioner(api, opts.state_dir, say=lambda line: print(line, flush=True))
    _serve_health(opts.port, prov)
    wake = threading.Event()
    for path in WATCHED:
        threading.Thread(target=_watch, args=(api, path, wake), daemon=True).start()
    print(f"provisioner {PROVISIONER} for StorageClass {STORAGE_CLASS}: volumes under {opts.state_dir / 'volumes'}",
          flush=True)
    while True:
        wake.clear()
        try:
            prov.reconcile()
        except Exception as exc:  # the apiserver away for a moment: the next pass tries again
            print(f"error: reconcile failed: {type(exc).__name__}: {json.dumps(str(exc))[:300]}", flush=True)
            time.sleep(1)
        wake.wait(RESYNC)
        time.sleep(0.1)  # let a burst of events come in: one pass for them all


if __name__ == "__main__":
    sys.exit(main())
