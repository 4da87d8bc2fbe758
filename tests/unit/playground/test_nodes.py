"""Where pods land among the playground's nodes: the simulated nodes' taints against the real node's Node object,
for the chart's rendered pods."""

from __future__ import annotations

from generator.playground import nodes
from generator.playground.node import components as C
from generator.playground.node import spec as S


def _tolerated(taint: dict, tolerations: list[dict]) -> bool:
    def one(t: dict) -> bool:
        if t.get("effect") not in (None, "", taint["effect"]):
            return False
        if t.get("operator") == "Exists":
            return t.get("key") in (None, "", taint["key"])
        return t.get("key") == taint["key"] and t.get("value", "") == taint.get("value", "")

    return any(one(t) for t in tolerations)


def _admitted(pod: dict) -> dict:
    """The pod spec as the playground's apiserver stores it: ExtendedResourceToleration (its flag asserted in
    tests/unit/playground/node/test_hooks.py) adds an `nvidia.com/gpu` toleration to every pod that requests the
    resource."""
    spec = dict(pod)
    if any(_gpus(c) for c in spec.get("containers") or []):
        spec["tolerations"] = [*(spec.get("tolerations") or []),
                               {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]
    return spec


def _gpus(container: dict) -> int:
    res = container.get("resources") or {}
    return int({**(res.get("limits") or {}), **(res.get("requests") or {})}.get("nvidia.com/gpu", 0))


def _fits(pod: dict, node: dict) -> bool:
    """The scheduler's filters that tell these nodes apart: taints, nodeSelector, nvidia.com/gpu."""
    labels, spec = node["metadata"]["labels"], node.get("spec") or {}
    if any(labels.get(k) != v for k, v in (pod.get("nodeSelector") or {}).items()):
        return False
    if not all(_tolerated(t, pod.get("tolerations") or []) for t in spec.get("taints") or []
               if t["effect"] in ("NoSchedule", "NoExecute")):
        return False
    have = int(((node.get("status") or {}).get("allocatable") or {}).get("nvidia.com/gpu", 0))
    return all(_gpus(c) <= have for c in pod.get("containers") or [])


def _where(rendered, node_objects: list[dict]) -> dict[str, list[str]]:
    return {role: [n["metadata"]["name"] for n in node_objects if _fits(_admitted(pod), n)]
            for role, pod in rendered.pod_specs().items()}


def test_beside_a_real_node_pods_that_ask_for_nothing_run_on_it(tmp_path, render):
    """`up --real-node` with the default shape: the chart's sandbox pool, its `helm test` pod, the Ray
    head and the submitter fit only the real node; the GPU workers only the simulated GPU nodes. Asked
    (a toleration of the simulated taint), a pod may still go to a simulated CPU node."""
    real = C.node_object(S.NodeSpec(tmp_path / "pg"))
    kwok = nodes.manifests(nodes.Shape(), "v1.36.3", real_node=True)
    gpu_nodes = nodes.Shape().names()[0]
    where = _where(render(), [*kwok, real])
    assert where == {"sandbox": ["real-node-0"], "test": ["real-node-0"], "submitter": ["real-node-0"],
                     "head": ["real-node-0"], "trainer": gpu_nodes, "inference": gpu_nodes}, where
    asked = [{"key": nodes.SIMULATED_TAINT["key"], "operator": "Exists", "effect": "NoSchedule"}]
    where = _where(render(sandbox={"tolerations": asked, "nodeSelector": {"type": "kwok"}}), [*kwok, real])
    assert where["sandbox"] == where["test"] == ["cpu-node-0"], where
    # without a real node only the GPU nodes are tainted, as a cloud GPU pool is; the CPU nodes take anything
    alone = {n["metadata"]["name"]: n["spec"].get("taints") for n in nodes.manifests(nodes.Shape(), "v1.36.3")}
    assert alone == {**{g: [nodes.GPU_TAINT] for g in gpu_nodes}, "cpu-node-0": None}

