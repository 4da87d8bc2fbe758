"""`history`: the release's revisions."""

from __future__ import annotations

from typing import Any

from generator.errors import EXIT_OK
from generator.live.client.kube import Kube
from generator.live.helm.resolve import resolve
from generator.live.helm.runner import Helm
from generator.live.output.show import columns, emit


def history(args: Any) -> int:
    kube = Kube(args.kubeconfig, args.context)
    release, ns, _ = resolve(kube, args.release, args.namespace)
    rows_data = Helm(kube).history(release, ns)
    table = [["REVISION", "UPDATED", "STATUS", "CHART", "DESCRIPTION"]]
    for r in rows_data:
        table.append([str(r.get("revision")), str(r.get("updated", ""))[:19], r.get("status", ""), r.get("chart", ""),
                      r.get("description", "")])
    emit(rows_data, args.output, lambda: columns(table))
    return EXIT_OK
