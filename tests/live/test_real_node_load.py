"""The sandbox pool on the real node under load loses no task: through an upgrade and an eviction (and, the
negative control, loses some without the chart's knobs), and while the real HPA controller scales it up under
CPU-bound tasks and down when idle.

The real node is the session's (conftest's `node`): one start for the modules of the real node part
(test_real_node*.py, in hack/suite.py's order), downed by the last, test_real_node_teardown.py, which checks the
host is exactly as it was.

Every address dialed here is loopback (the apiserver) or inside the node's network namespace (pods, Services).
"""

from __future__ import annotations

import json
import subprocess
import time

import pytest
from real_node_pods import Node
from session_env import wait_for

pytestmark = pytest.mark.real_node  # the machine's one real node: hack/suite.py runs this module in a real node part


# `executor load` in a client pod sends tasks through the pool's Service (a connection each, counted: ok, failed,
# refused by a draining executor, lost without an answer) while the pool changes under it.

# 6 s: every replaced executor has tasks in flight, and longer than the kubelet's 2 s minimum grace period, so
# only a grace period the chart sets (300 s) lets them finish; the negative control runs the same tasks
TASK = json.dumps({"command": "sleep 6; echo done"})
LIGHT = json.dumps({"command": "sleep 2; echo done"})  # the HPA's idle-time tasks: little CPU


class Load:
    """`executor load` running in the background in a client pod; .result() waits and parses its counts."""

    def __init__(self, node: Node, ns: str, client: str, url: str, seconds: float, workers: int = 4,
                 task: str = TASK):
        self.t0, self.seconds = time.monotonic(), seconds
        self.proc = subprocess.Popen([node.kubectl_bin, f"--kubeconfig={node.kubeconfig}", "-n", ns, "exec", client,
                                      "--", "/executor", "load", url, str(workers), str(seconds), task],
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    def left(self) -> float:
        return self.seconds - (time.monotonic() - self.t0)

    def result(self) -> dict:
        out, err = self.proc.communicate(timeout=self.seconds + 120)
        assert self.proc.returncode == 0, out + err
        return json.loads(out)


def test_the_pool_loses_no_task_through_an_upgrade_and_an_eviction_and_does_without_its_knobs(node, capsys, tmp_path):
    ns = node.namespace("roll")
    node.release(capsys, tmp_path, ns, replicas=2)
    client = node.client(ns)
    url = f"http://small-sandbox.{ns}.svc.cluster.local:9090/task/submit"
    old = {p["metadata"]["name"] for p in node.pool(ns)}

    # 1. `run` changes the pool (an env var: a rolling update) under load, with the chart's defaults
    load = Load(node, ns, client, url, 60)
    time.sleep(7)
    t0 = time.monotonic()
    node.release(capsys, tmp_path, ns, replicas=2, extraEnv=[{"name": "ROUND", "value": "2"}])
    rolled, left = time.monotonic() - t0, load.left()
    got = load.result()
    seen = [f"upgrade under load: rollout {rolled:.1f} s, {got}"]  # printed at the end (cli's capsys reads prints)
    assert not old & {p["metadata"]["name"] for p in node.pool(ns)}, "every executor was replaced"
    assert left > 0, f"the rollout ({rolled:.0f} s) outlasted the load: lengthen it"
    assert got["lost"] == got["refused"] == got["failed"] == 0 and got["ok"] > 16, got

    # 2. an eviction (drain-style, the eviction API) under load: the PDB allows one, the executor drains
    from kubernetes import client as k8s
    from kubernetes import config

    api = config.new_client_from_config(config_file=node.kubeconfig)
    wait_for(lambda: node.get(ns, "pdb", "small-sandbox").get("status", {}).get("disruptionsAllowed") == 1, 30,
             "the PDB to allow one disruption")
    victim = node.pool(ns)[0]["metadata"]["name"]
    load = Load(node, ns, client, url, 30)
    time.sleep(7)
    k8s.CoreV1Api(api).create_namespaced_pod_eviction(
        victim, ns, k8s.V1Eviction(metadata=k8s.V1ObjectMeta(name=victim, namespace=ns)))
    got = load.result()
    seen.append(f"eviction under load: {got}")
    assert victim not in {p["metadata"]["name"] for p in node.pool(ns)}
    assert got["lost"] == got["refused"] == got["failed"] == 0 and got["ok"] > 8, got
    api.close()

    # 3. negative control: the knobs off (no preStop pause, a grace period shorter than a task, maxUnavailable 1,
    # a TCP probe, no minReadySeconds): the same upgrade under the same tasks loses some, so the counts above can tell
    off = {"rollingUpdate": {"maxSurge": 0, "maxUnavailable": 1}, "preStopSleepSeconds": 0,
           "terminationGracePeriodSeconds": 1, "readinessProbe": {"type": "tcp"}, "minReadySeconds": 0}
    node.release(capsys, tmp_path, ns, replicas=2, **off)
    wait_for(lambda: len(node.pool(ns)) == 2 and all(c.get("ready") for p in node.pool(ns)
                                                    for c in p["status"].get("containerStatuses", [])), 60,
             "the knobs-off pool")
    # (each executor is killed while the tasks in flight may all be on the other one: rarely, by chance, a rollout
    # loses nothing, so a second rollout is made before the control counts as failed)
    for round_ in ("3", "4"):
        load = Load(node, ns, client, url, 30)
        time.sleep(7)
        node.release(capsys, tmp_path, ns, replicas=2, extraEnv=[{"name": "ROUND", "value": round_}], **off)
        got = load.result()
        seen.append(f"upgrade under load without the knobs: {got}")
        if got["lost"] + got["refused"]:
            break
    print("\n" + "\n".join(seen))
    assert got["lost"] + got["refused"] > 0, seen
    node.kubectl("delete", "namespace", ns, "--wait=false")


BUSY = json.dumps({"command": "i=0; while [ $i -lt 60000 ]; do i=$((i+1)); done"})  # ~CPU-bound for its limit


def test_the_hpa_scales_the_pool_up_under_load_and_down_when_idle_losing_no_task(node, capsys, tmp_path):
    """The real HPA controller on metrics-server's figures (the real node's resource metrics API): CPU-bound tasks
    push the pool over its target and it grows; light tasks let it shrink back, and none of them is lost."""
    ns = node.namespace("hpa")
    behavior = {"scaleUp": {"stabilizationWindowSeconds": 0},
                "scaleDown": {"stabilizationWindowSeconds": 10,
                              "policies": [{"type": "Percent", "value": 100, "periodSeconds": 10}]}}
    node.release(capsys, tmp_path, ns, autoscaling={"enabled": True, "minReplicas": 2, "maxReplicas": 4,
                                                    "targetCPUUtilizationPercentage": 50, "behavior": behavior})
    client = node.client(ns)
    url = f"http://small-sandbox.{ns}.svc.cluster.local:9090/task/submit"

    def hpa() -> dict:
        return node.get(ns, "hpa", "small-sandbox")

    wait_for(lambda: (hpa().get("status", {}).get("currentMetrics") or [None])[0], 90,
             "the HPA to read the pool's CPU from metrics-server")
    t0 = time.monotonic()
    # time-boxed: killing `kubectl exec` would leave the load running in the pod
    heavy = Load(node, ns, client, url, 60, workers=6, task=BUSY)
    grown = wait_for(lambda: (lambda h: h if h["status"].get("desiredReplicas", 0) > 2 else None)(hpa()), 58,
                     "the HPA to scale the pool up under load")
    added = time.monotonic() - t0
    wait_for(lambda: len([p for p in node.pool(ns) if all(c.get("ready") for c in
                                                          p["status"].get("containerStatuses", []))]) > 2,
             60, "the added executors to be ready")
    print(f"\nHPA: load started -> desiredReplicas {grown['status']['desiredReplicas']} in {added:.1f} s "
          f"({grown['status']['currentMetrics']})")
    heavy_got = heavy.result()
    print(f"CPU-bound load: {heavy_got}")
    assert heavy_got["lost"] == heavy_got["refused"] == 0, heavy_got  # scaling up loses nothing either
    # idle but for light tasks: the pool shrinks back to its minimum, and the light tasks all complete
    light = Load(node, ns, client, url, 80, workers=2, task=LIGHT)
    wait_for(lambda: hpa()["status"].get("desiredReplicas") == 2 and len(node.pool(ns)) == 2, 70,
             "the HPA to scale the pool back down")
    # the removed executors drained (5 s pause, tasks of 2 s) while light tasks were still being sent
    assert light.left() > 8, f"the scale-down came {80 - light.left():.0f} s into an 80 s load: too late to count"
    got = light.result()
    print(f"scale-down under light load: {got}")
    assert got["lost"] == got["refused"] == got["failed"] == 0 and got["ok"] > 10, got
    node.kubectl("delete", "namespace", ns, "--wait=false")
