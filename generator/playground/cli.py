"""`dockyard-k8s playground up|down|status`.

Wire-up (generator/cli.py):

    from generator.playground.cli import add_parser as add_playground_parser
    add_playground_parser(subparsers)        # then: args.func(args) -> exit code

Only argparse (and the dataclass of the playground's shape, for the flags' defaults) is imported here;
the work is imported when a handler runs. Handlers return 0 or raise generator.playground.errors' errors
(exit 1, or 2 for bad usage), which generator/cli.py prints.
"""

from __future__ import annotations

import argparse
import re
from pathlib import Path
from typing import Any

_QUANTITY = re.compile(r"^[0-9]+(\.[0-9]+)?(Ki|Mi|Gi|Ti|Pi|Ei|m|k|M|G|T|P|E)?$")


def _state_dir(args: argparse.Namespace) -> Path:
    from generator.playground import default_state_dir

    return Path(args.state_dir).expanduser() if args.state_dir else default_state_dir()


def _usage_error(msg: str) -> Exception:
    from generator.playground.errors import UsageError

    return UsageError(msg)


def _up(args: argparse.Namespace) -> int:
    from generator.bundled import needs_clone
    from generator.playground.nodes import Shape

    needs_clone("`playground up`", "make playground")  # its builds and images are the clone's (hack/, tools/)

    for flag, value, minimum in (
        ("--gpu-nodes", args.gpu_nodes, 0),
        ("--gpus-per-node", args.gpus_per_node, 1),
        ("--cpu-nodes", args.cpu_nodes, 0),
    ):
        if value < minimum:
            raise _usage_error(f"{flag} must be >= {minimum}, got {value}")
    if args.gpu_nodes + args.cpu_nodes == 0 and not args.real_node:  # the real node is one
        raise _usage_error("the playground needs at least one node (--gpu-nodes, --cpu-nodes or --real-node)")
    if args.gpu_nodes + args.cpu_nodes > 1000:
        raise _usage_error("at most 1000 nodes")
    for flag, value in (("--node-cpu", args.node_cpu), ("--node-memory", args.node_memory)):
        number = re.match(r"[0-9.]+", value)
        if not _QUANTITY.match(value) or not number or float(number.group()) <= 0:
            raise _usage_error(f"{flag}: {value!r} is not a positive Kubernetes quantity (e.g. 64, 500m, 512Gi)")
    if args.timeout <= 0:
        raise _usage_error("--timeout must be positive")
    if args.real_node_gpus is not None:  # read by generator/playground/node/gpus.py
        if not args.real_node or not 0 <= args.real_node_gpus <= 64:
            raise _usage_error("--real-node-gpus needs --real-node and a count 0..64")
        import os

        os.environ["DOCKYARD_REAL_NODE_GPUS"] = str(args.real_node_gpus)
    from generator.playground.lifecycle import up

    shape = Shape(
        gpu_nodes=args.gpu_nodes,
        gpus_per_node=args.gpus_per_node,
        cpu_nodes=args.cpu_nodes,
        node_cpu=args.node_cpu,
        node_memory=args.node_memory,
        gpu_node_devices=args.gpu_node_devices,
        topology=args.topology,
    )
    try:
        shape.devices()
    except ValueError as exc:
        raise _usage_error(f"--gpu-node-devices: {exc}") from None
    try:
        shape.racks()
    except ValueError as exc:
        raise _usage_error(f"--topology: {exc}") from None
    if args.topology and not args.kueue:
        raise _usage_error("--topology needs --kueue: the Topology and its queue are Kueue's objects")
    return up(_state_dir(args), shape, timeout=args.timeout, real_node=args.real_node, kueue=args.kueue,
              agent_sandbox=args.agent_sandbox)


def _down(args: argparse.Namespace) -> int:
    from generator.playground.lifecycle import down

    return down(_state_dir(args))


def _status(args: argparse.Namespace) -> int:
    from generator.playground.lifecycle import status

    return status(_state_dir(args))


def add_parser(subparsers: Any, only: str | None = None) -> None:
    """Register `playground` with its `up`, `down` and `status` actions on an argparse subparsers (`only`: the
    verb the CLI runs, `playground` itself: the group's one verb)."""
    pg = subparsers.add_parser(
        "playground",
        help="the local playground cluster (real control plane, simulated GPU nodes, KubeRay)",
        description="A local Kubernetes control plane with kwok-simulated GPU and CPU nodes and the "
        "KubeRay operator, all as processes bound to 127.0.0.1. State: $DOCKYARD_PLAYGROUND_DIR or "
        "${XDG_STATE_HOME:-~/.local/state}/dockyard-k8s/playground.",
    )
    actions = pg.add_subparsers(dest="playground_action", metavar="{up,down,status}", required=True)

    def common(p: argparse.ArgumentParser) -> None:
        p.add_argument("--state-dir", metavar="DIR", default=None, help="state folder (default: "
                       "$DOCKYARD_PLAYGROUND_DIR or ~/.local/state/dockyard-k8s/playground)")

    up = actions.add_parser("up", help="start the playground (idempotent) and print `export KUBECONFIG=...`")
    from generator.playground.nodes import Shape  # its defaults are the flags' (a light module: no client)

    d = Shape()
    up.add_argument("--gpu-nodes", type=int, default=d.gpu_nodes, metavar="N",
                    help=f"simulated GPU nodes (default {d.gpu_nodes}: the README's example job fills them)")
    up.add_argument("--gpus-per-node", type=int, default=d.gpus_per_node, metavar="G",
                    help=f"nvidia.com/gpu per GPU node (default {d.gpus_per_node})")
    up.add_argument("--cpu-nodes", type=int, default=d.cpu_nodes, metavar="M",
                    help=f"simulated CPU-only nodes (default {d.cpu_nodes})")
    up.add_argument("--node-cpu", default=d.node_cpu, metavar="C",
                    help=f"cpu capacity of every node (default {d.node_cpu})")
    up.add_argument("--node-memory", default=d.node_memory, metavar="X",
                    help=f"memory capacity of every node (default {d.node_memory})")
    up.add_argument("--gpu-node-devices", default=d.gpu_node_devices, metavar="R=N[,R=N]",
                    help="fabric devices every GPU node advertises beside its GPUs, as a device plugin would, e.g. "
                         "rdma/ib=2,vpc.amazonaws.com/efa=4 (kuberay.network's rdma and efa profiles; default none)")
    up.add_argument("--timeout", type=float, default=120.0, metavar="S", help="give up after S seconds (default 120)")
    up.add_argument("--real-node", action="store_true",
                    help="add one real CPU node (kubelet, containerd, CNI, kube-proxy, CoreDNS, kube-router) in "
                         "namespaces of its own; needs root, cgroup v1 and `bash hack/tools.sh node`")
    up.add_argument("--real-node-gpus", type=int, default=None, metavar="G",
                    help="fake nvidia.com/gpu the real node advertises through the kubelet's device-plugin API "
                         "(default 0), so the chart's GPU worker groups run there as real containers")
    up.add_argument("--kueue", action="store_true",
                    help="also run the Kueue controller (sigs.k8s.io/kueue) with its webhooks, a ClusterQueue "
                         "`playground` over the nodes' capacity and LocalQueue `training` in namespace `dockyard`")
    up.add_argument("--topology", default="", metavar="BxR",
                    help="label the GPU nodes with a network topology of B blocks of R racks "
                         "(cloud.provider.com/topology-block, -rack) and, with --kueue, make Kueue's Topology over "
                         "them, a flavor naming it and LocalQueue `topology` in namespace `dockyard` (launch.topology)")
    up.add_argument("--agent-sandbox", action="store_true",
                    help="also run agent-sandbox's controller (sigs.k8s.io/agent-sandbox, --extensions) with its CRDs, "
                         "for sandbox.backend agent-sandbox")
    common(up)
    up.set_defaults(func=_up)

    down = actions.add_parser("down", help="stop exactly the processes `up` started and remove the state folder")
    common(down)
    down.set_defaults(func=_down)

    st = actions.add_parser("status", help="health of each component, node count and GPU capacity")
    common(st)
    st.set_defaults(func=_status)
