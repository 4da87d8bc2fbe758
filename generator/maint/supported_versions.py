"""README.md's "Supported versions" table, generated from the table of tools (generator/tool_table.toml) by
`make schema`: the supported ranges are the minors the table pins, the tested versions its pins.

Reads the committed table (never $DOCKYARD_TOOLS_TABLE's): the README describes what is committed.
"""

from __future__ import annotations

from generator import tool_table
from generator.render.helm import SUPPORTED as HELM_SUPPORTED

BEGIN = "<!-- supported-versions:begin (generated from generator/tool_table.toml by `make schema`; do not edit) -->"
END = "<!-- supported-versions:end -->"


def _minor(version: str) -> str:
    return ".".join(version.lstrip("v").split(".")[:2])


def _key(version: str) -> tuple[int, ...]:
    return tuple(int(p) if p.isdigit() else 0 for p in _minor(version).split("."))


def _and(items: list[str]) -> str:
    return ", ".join(items[:-1]) + " and " + items[-1] if len(items) > 1 else "".join(items)


def markdown(table: tool_table.Table) -> str:
    tools = table.tools
    kuberay, kube = tools["kuberay"].version, tools["kubernetes"].version
    crds = sorted(table.versions_of("kuberay-crds").values(), key=_key)
    planes = sorted(table.versions_of("kubernetes").values(), key=_key)
    older_kuberay = [t.version for t in tools.values() if t.entry == "kuberay" and "matrix" in t.needed_by]
    older_kube = [t.version for t in tools.values() if t.entry == "kubernetes" and "matrix" in t.needed_by]
    kueue = tools["kueue"].version
    rows = [
        "| | supported | pinned and tested |",
        "|---|---|---|",
        (f"| KubeRay (operator and CRDs) | v{_minor(crds[0])} – v{_minor(crds[-1])} | {kuberay} (`make test`); "
         f"{_and(older_kuberay)}, the newest patches the Go module proxy serves (`make test-matrix`) |"),
        (f"| Kubernetes | v{_minor(planes[0])} – v{_minor(planes[-1])} | live: {kube} (`make test`) and "
         f"{_and(older_kube)} (`make test-matrix`); every minor offline (`check --kube-version`) |"),
        f"| Helm | {HELM_SUPPORTED} | {tools['helm'].version} and {tools['helm4'].version} |",
        (f"| Kueue (optional: `launch.queue`; `launch.topology` uses its Topology Aware Scheduling) | "
         f"v{_minor(kueue)} | {kueue} (`make test`, the playground's `--kueue` and `--topology`) |"),
    ]
    return "\n".join(rows)


def readme_with_versions(text: str) -> str:
    """`text` (README.md) with the block between the markers replaced by the table; unchanged without them."""
    out = tool_table.between_markers(text, BEGIN, END, markdown(tool_table.load(tool_table.TABLE)))
    return text if out is None else out
