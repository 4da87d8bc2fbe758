"""The configuration files `up` writes into the state folder: kubeconfigs, the token file's extra
identities, kwok's configuration and the log file kwok serves for simulated pods."""

from __future__ import annotations

import base64
import sys
import time
from pathlib import Path
from typing import Any

KWOK_STAGES = [
    "node/fast/node-initialize.yaml",
    "node/heartbeat-with-lease/node-heartbeat-with-lease.yaml",
    "pod/fast/pod-ready.yaml",
    "pod/fast/pod-delete.yaml",
    # pod/fast/pod-complete.yaml is left out on purpose: Job pods (the RayJob submitter) stay Running.
]
# user name, uid, groups of one identity in the apiserver's static token file
Identity = tuple[str, str, list[str]]


def kubeconfig(server: str, ca_file: str, token: str, user: str) -> dict[str, Any]:
    ca = base64.b64encode(Path(ca_file).read_bytes()).decode()
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "dockyard-playground", "cluster": {"server": server, "certificate-authority-data": ca}}],
        "users": [{"name": user, "user": {"token": token}}],
        "contexts": [{"name": "dockyard-playground", "context": {"cluster": "dockyard-playground", "user": user}}],
        "current-context": "dockyard-playground",
        "preferences": {},
    }


def write_yaml(path: Path, docs: list[dict[str, Any]] | dict[str, Any], private: bool = False) -> None:
    import yaml

    if isinstance(docs, dict):
        text = yaml.safe_dump(docs, sort_keys=False)
    else:
        text = yaml.safe_dump_all(docs, sort_keys=False)
    path.write_text(text)
    if private:
        path.chmod(0o600)


def token_line(token: str, identity: Identity) -> str:
    """One line of the apiserver's --token-auth-file: token,user,uid[,"group,group"]."""
    user, uid, groups = identity
    return f"{token},{user},{uid}" + (',"' + ",".join(groups) + '"' if groups else "")


def write_pod_log(path: Path, state_dir: Path) -> None:
    ts = time.strftime("%Y-%m-%dT%H:%M:%S.000000000Z", time.gmtime())
    lines = [
        "[dockyard-k8s playground] this pod runs on a simulated kwok node: it was scheduled, admitted",
        "[dockyard-k8s playground] and marked Running/Ready, but no container process exists.",
        f"[dockyard-k8s playground] these lines are served by kwok from {path}",
        f"[dockyard-k8s playground] component logs: {state_dir / 'logs'}",
    ]
    path.write_text("".join(f"{ts} stdout F {line}\n" for line in lines))


def kwok_config(state_dir: Path, kwok_dir: Path, lease_seconds: int) -> list[dict[str, Any]]:
    import yaml

    docs: list[dict[str, Any]] = [
        {
            "apiVersion": "config.kwok.x-k8s.io/v1alpha1",
            "kind": "KwokConfiguration",
            "metadata": {"name": "dockyard-playground"},
            "options": {
                "enableDebuggingHandlers": True,
                "enableProfilingHandler": False,
                "nodeLeaseDurationSeconds": lease_seconds,
                # kwok does not default these when a KwokConfiguration is given: its defaults, spelt out
                "podPlayStageParallelism": 4,
                "nodePlayStageParallelism": 4,
                "nodeLeaseParallelism": 4,
                "podsOnNodeSyncParallelism": 1,
                "enablePodsOnNodeSyncListPager": True,
                "enablePodsOnNodeSyncStreamWatch": False,
            },
        }
    ]
    for rel in KWOK_STAGES:
        src = kwok_dir / "stages" / rel
        docs.extend(d for d in yaml.safe_load_all(src.read_text()) if d)
    docs.append(
        {
            "apiVersion": "kwok.x-k8s.io/v1alpha1",
            "kind": "ClusterLogs",
            "metadata": {"name": "dockyard-playground-logs"},
            "spec": {"logs": [{"logsFile": str(state_dir / "pod.log"), "follow": False}]},
        }
    )
    # Port-forwards to the Ray dashboard and the sandbox executor reach a stub over stdin/stdout.
    stub = str(Path(__file__).with_name("forward_stub.py"))
    docs.append(
        {
            "apiVersion": "kwok.x-k8s.io/v1alpha1",
            "kind": "ClusterPortForward",
            "metadata": {"name": "dockyard-playground-forwards"},
            "spec": {"forwards": [
                {"ports": [8265], "command": [sys.executable, stub, "Ray dashboard"]},
                {"ports": [9090], "command": [sys.executable, stub, "sandbox executor"]},
            ]},
        }
    )
    return docs


def remove_tree(path: Path) -> None:
    """rmtree that also removes what overlayfs leaves unreadable to a non-root owner (its work dir's `work/` is
    mode 000: Kueue's mount namespace under --user)."""
    import os
    import shutil
    import stat

    def unlock(func: Any, target: str, _exc: Any) -> None:
        parent = os.path.dirname(target)
        os.chmod(parent, stat.S_IRWXU)
        if os.path.isdir(target) and not os.path.islink(target):
            os.chmod(target, stat.S_IRWXU)
            shutil.rmtree(target, onerror=unlock)
        else:
            func(target)

    shutil.rmtree(path, onerror=unlock)
