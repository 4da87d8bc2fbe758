"""A playground state file exactly as an older version of the launcher wrote it (what an upgrade must still read)."""

from __future__ import annotations

from pathlib import Path


def old_state(state_dir: Path, components: dict[str, dict] | None = None) -> dict:
    """A state file exactly as the previous version (nested dicts in what is now lifecycle.py) wrote it."""
    pki = state_dir / "pki"
    return {
        "version": 1,
        "state_dir": str(state_dir),
        "created": "2026-11-30T10:00:00Z",
        "shape": {"gpu_nodes": 2, "gpus_per_node": 8, "cpu_nodes": 1, "node_cpu": "64", "node_memory": "512Gi"},
        "ports": {"etcd": 40001, "etcd_peer": 40002, "apiserver": 40003, "controller_manager": 40004,
                  "scheduler": 40005, "kwok": 40006, "kuberay_probe": 40007},
        "server": "https://127.0.0.1:40003",
        "service_cidr": "127.32.0.0/16",
        "pod_cidr": "127.64.0.0/10",
        "kubeconfig": str(state_dir / "kubeconfig"),
        "kube_version": "v1.36.3",
        "components": components or {},
        "pki": {k: str(pki / f) for k, f in [
            ("ca_crt", "ca.crt"), ("ca_key", "ca.key"), ("serving_crt", "serving.crt"), ("serving_key", "serving.key"),
            ("sa_key", "sa.key"), ("sa_pub", "sa.pub"), ("front_proxy_crt", "front-proxy-client.crt"),
            ("front_proxy_key", "front-proxy-client.key")]},
        "tokens": {"admin": "a" * 48, "kube-controller-manager": "b" * 48, "kube-scheduler": "c" * 48,
                   "kwok": "d" * 48, "kuberay-operator": "e" * 48},
        "ready_seconds": 13.1,
    }

