"""The local playground cluster: a real control plane with simulated (kwok) GPU and CPU nodes.

etcd, kube-apiserver, kube-controller-manager, kube-scheduler, kwok and the KubeRay operator run
as local processes bound to 127.0.0.1, and the simulated nodes run no container (kwok only marks their
pods running). With `--real-node` the playground also grows a real node (kubelet, containerd, runc, CNI,
`node`) where CPU pods run as real containers from images the project builds. See
docs/playground.md.

May import render, inputs and the layers below them, never `generator.live` beside it (the product it is a cluster
for: the live verbs find its kubeconfig through `generator.pinned_tools`) nor `generator.cli` above it but from
`__main__`, the `python -m generator.playground` entry point (package-layers). Nothing heavy is imported here:
`generator.playground.cli` is loaded at CLI start-up.
"""

from __future__ import annotations

# The state folder's path lives in generator.pinned_tools: the live verbs find the playground's kubeconfig there
# without importing this package.
from generator.pinned_tools import PLAYGROUND_DIR_ENV as STATE_ENV
from generator.pinned_tools import playground_state_dir as default_state_dir

__all__ = ["STATE_ENV", "default_state_dir"]
