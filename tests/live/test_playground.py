"""The playground itself, through the official kubernetes client: nodes, controllers, scheduler,
admission, KubeRay, logs and the network rule (its `up`/`status`/`down`: test_playground_lifecycle.py)."""

from __future__ import annotations

import ipaddress
import json
import subprocess
import time
from pathlib import Path

import pytest
from kubernetes import client
from kubernetes.client.exceptions import ApiException
from live_helpers import listening_sockets

LOOPBACK = ipaddress.ip_network("127.0.0.0/8")
PLAYGROUND_POD_CIDR = ipaddress.ip_network("127.64.0.0/10")
REPO = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.timeout(240)


def _container(name="app", image="registry.invalid/dockyard/test:1", requests=None, limits=None, **kw):
    return client.V1Container(
        name=name,
        image=image,
        resources=client.V1ResourceRequirements(requests=requests, limits=limits),
        **kw,
    )


def _pod(name, ns, containers, **spec):
    return client.V1Pod(
        metadata=client.V1ObjectMeta(name=name, namespace=ns, labels={"app": name}),
        spec=client.V1PodSpec(containers=containers, **spec),
    )


# The simulated GPU nodes' taint (generator/playground/nodes.py), as a cloud GPU pool carries it: a pod
# asking for GPUs tolerates it itself (no admission plugin adds it), as the chart's GPU fleets do.
GPU_TOLERATION = client.V1Toleration(key="nvidia.com/gpu", operator="Exists", effect="NoSchedule")


def _ready(pod) -> bool:
    conds = {c.type: c.status for c in (pod.status.conditions or [])}
    return pod.status.phase == "Running" and conds.get("Ready") == "True"


# ------------------------------------------------------------------ nodes


def test_nodes_ready_with_requested_gpu_capacity(playground, k8s):
    core = client.CoreV1Api(k8s)
    nodes = {n.metadata.name: n for n in core.list_node().items}
    assert set(playground.gpu_node_names) | set(playground.cpu_node_names) <= set(nodes)
    assert playground.gpu_node_names and playground.cpu_node_names
    for name in playground.gpu_node_names + playground.cpu_node_names:
        node = nodes[name]
        conds = {c.type: c.status for c in node.status.conditions}
        assert conds.get("Ready") == "True", (name, conds)
        for addr in node.status.addresses:
            if addr.type == "InternalIP":
                assert ipaddress.ip_address(addr.address) in LOOPBACK, (name, addr.address)
        assert ipaddress.ip_network(node.spec.pod_cidr) .subnet_of(PLAYGROUND_POD_CIDR), node.spec.pod_cidr
    for name in playground.gpu_node_names:
        node = nodes[name]
        assert node.status.capacity["nvidia.com/gpu"] == str(playground.gpus_per_node)
        assert node.status.allocatable["nvidia.com/gpu"] == str(playground.gpus_per_node)
        labels = node.metadata.labels
        assert labels["nvidia.com/gpu.present"] == "true"
        assert labels["nvidia.com/gpu.count"] == str(playground.gpus_per_node)
        assert labels["nvidia.com/gpu.product"]
    for name in playground.cpu_node_names:
        node = nodes[name]
        assert "nvidia.com/gpu" not in (node.status.capacity or {})
        assert "nvidia.com/gpu.present" not in node.metadata.labels


# ------------------------------------------------------------------ controllers and scheduler


def test_deployment_rolls_out_on_loopback_pod_ips(k8s, namespace, wait):
    apps = client.AppsV1Api(k8s)
    core = client.CoreV1Api(k8s)
    dep = client.V1Deployment(
        metadata=client.V1ObjectMeta(name="web", namespace=namespace),
        spec=client.V1DeploymentSpec(
            replicas=3,
            selector=client.V1LabelSelector(match_labels={"app": "web"}),
            template=client.V1PodTemplateSpec(
                metadata=client.V1ObjectMeta(labels={"app": "web"}),
                spec=client.V1PodSpec(containers=[_container(requests={"cpu": "100m", "memory": "64Mi"})]),
            ),
        ),
    )
    apps.create_namespaced_deployment(namespace, dep)

    def rolled_out():
        d = apps.read_namespaced_deployment_status("web", namespace)
        s = d.status
        return ((s.observed_generation or 0) >= d.metadata.generation and s.updated_replicas == 3
                and s.available_replicas == 3 and s.ready_replicas == 3)

    wait(rolled_out, 60, "deployment web to roll out 3/3")
    pods = core.list_namespaced_pod(namespace, label_selector="app=web").items
    assert len(pods) == 3
    for pod in pods:
        assert _ready(pod), pod.status
        assert ipaddress.ip_address(pod.status.pod_ip) in PLAYGROUND_POD_CIDR, pod.status.pod_ip
        assert ipaddress.ip_address(pod.status.host_ip) in LOOPBACK, pod.status.host_ip


def test_pod_asking_for_too_many_gpus_stays_pending_with_scheduler_reason(playground, k8s, namespace, wait):
    core = client.CoreV1Api(k8s)
    too_many = str(playground.gpus_per_node + 1)
    core.create_namespaced_pod(
        namespace,
        _pod("greedy", namespace,
             [_container(requests={"nvidia.com/gpu": too_many}, limits={"nvidia.com/gpu": too_many})],
             tolerations=[GPU_TOLERATION]),
    )

    def unschedulable():
        pod = core.read_namespaced_pod("greedy", namespace)
        for c in pod.status.conditions or []:
            if c.type == "PodScheduled" and c.status == "False" and c.reason == "Unschedulable":
                return c
        return None

    cond = wait(unschedulable, 30, "PodScheduled=False/Unschedulable")
    assert "Insufficient nvidia.com/gpu" in cond.message, cond.message
    total = len(playground.gpu_node_names) + len(playground.cpu_node_names)
    assert f"0/{total} nodes are available" in cond.message, cond.message
    time.sleep(2)
    pod = core.read_namespaced_pod("greedy", namespace)
    assert pod.status.phase == "Pending" and not pod.spec.node_name


def test_gpu_pod_lands_on_a_gpu_node_and_job_pod_keeps_running(playground, k8s, namespace, wait):
    core = client.CoreV1Api(k8s)
    batch = client.BatchV1Api(k8s)
    core.create_namespaced_pod(
        namespace,
        _pod("one-gpu", namespace, [_container(limits={"nvidia.com/gpu": "1"})], tolerations=[GPU_TOLERATION]),
    )
    wait(lambda: _ready(core.read_namespaced_pod("one-gpu", namespace)), 30, "one-gpu pod Ready")
    assert core.read_namespaced_pod("one-gpu", namespace).spec.node_name in playground.gpu_node_names

    job = client.V1Job(
        metadata=client.V1ObjectMeta(name="submitter", namespace=namespace),
        spec=client.V1JobSpec(
            backoff_limit=0,
            template=client.V1PodTemplateSpec(
                spec=client.V1PodSpec(restart_policy="Never", containers=[_container()])
            ),
        ),
    )
    batch.create_namespaced_job(namespace, job)

    def job_pod_running():
        pods = core.list_namespaced_pod(namespace, label_selector="job-name=submitter").items
        return pods and _ready(pods[0]) and pods[0]

    wait(job_pod_running, 30, "the Job's pod Running")
    time.sleep(3)  # the pod-complete stage is not loaded: it must still be Running, the Job active
    pods = core.list_namespaced_pod(namespace, label_selector="job-name=submitter").items
    assert [p.status.phase for p in pods] == ["Running"]
    assert (batch.read_namespaced_job_status("submitter", namespace).status.active or 0) == 1


def test_kubectl_logs_of_a_simulated_pod(playground, k8s, namespace, wait):
    core = client.CoreV1Api(k8s)
    core.create_namespaced_pod(namespace, _pod("talker", namespace, [_container(name="main")]))
    wait(lambda: _ready(core.read_namespaced_pod("talker", namespace)), 30, "talker Ready")
    text = core.read_namespaced_pod_log("talker", namespace, container="main")
    assert "simulated kwok node" in text, text
    # and through the pinned kubectl, as a user would
    from generator.pinned_tools import binary

    out = subprocess.run(
        [binary("kubectl", "kubernetes"), "--kubeconfig", playground.kubeconfig, "logs", "-n", namespace, "talker"],
        capture_output=True, text=True, timeout=30,
    )
    assert out.returncode == 0, out.stderr
    assert "no container process exists" in out.stdout


# ------------------------------------------------------------------ admission


def test_restricted_namespace_rejects_a_root_pod(k8s, make_namespace):
    core = client.CoreV1Api(k8s)
    ns = make_namespace({"pod-security.kubernetes.io/enforce": "restricted"})
    root = _pod("root", ns, [_container(security_context=client.V1SecurityContext(run_as_user=0))])
    with pytest.raises(ApiException) as err:
        core.create_namespaced_pod(ns, root)
    assert err.value.status == 403
    message = json.loads(err.value.body)["message"]
    assert 'violates PodSecurity "restricted:latest"' in message, message
    assert "runAsUser=0" in message, message

    compliant = _pod(
        "compliant",
        ns,
        [
            _container(
                security_context=client.V1SecurityContext(
                    run_as_non_root=True,
                    run_as_user=1000,
                    allow_privilege_escalation=False,
                    capabilities=client.V1Capabilities(drop=["ALL"]),
                    seccomp_profile=client.V1SeccompProfile(type="RuntimeDefault"),
                )
            )
        ],
    )
    core.create_namespaced_pod(ns, compliant)  # the same namespace admits a compliant pod


def test_resource_quota_is_enforced(k8s, namespace, wait):
    core = client.CoreV1Api(k8s)
    core.create_namespaced_resource_quota(
        namespace,
        client.V1ResourceQuota(
            metadata=client.V1ObjectMeta(name="gpus"),
            spec=client.V1ResourceQuotaSpec(hard={"requests.nvidia.com/gpu": "1"}),
        ),
    )
    # the quota controller must have computed status.hard before admission enforces it
    wait(lambda: (core.read_namespaced_resource_quota("gpus", namespace).status.hard or {})
         .get("requests.nvidia.com/gpu"), 30, "quota status")
    with pytest.raises(ApiException) as err:
        core.create_namespaced_pod(namespace, _pod("two", namespace, [_container(limits={"nvidia.com/gpu": "2"})]))
    assert err.value.status == 403
    message = json.loads(err.value.body)["message"]
    assert "exceeded quota: gpus" in message, message


# ------------------------------------------------------------------ KubeRay


def test_raycluster_reaches_ready_with_pods_on_the_right_nodes(playground, k8s, namespace, wait):
    custom = client.CustomObjectsApi(k8s)
    core = client.CoreV1Api(k8s)
    workers = min(2, len(playground.gpu_node_names))
    gpus = str(playground.gpus_per_node)  # a whole node each: two workers must use two GPU nodes
    image = "rayproject/ray:2.49.0"
    body = {
        "apiVersion": "ray.io/v1",
        "kind": "RayCluster",
        "metadata": {"name": "mini", "namespace": namespace},
        "spec": {
            "headGroupSpec": {
                "rayStartParams": {},
                "template": {
                    "spec": {
                        "affinity": {
                            "nodeAffinity": {
                                "requiredDuringSchedulingIgnoredDuringExecution": {
                                    "nodeSelectorTerms": [
                                        {"matchExpressions": [{"key": "nvidia.com/gpu.present",
                                                               "operator": "DoesNotExist"}]}
                                    ]
                                }
                            }
                        },
                        "containers": [
                            {"name": "ray-head", "image": image,
                             "resources": {"limits": {"cpu": "2", "memory": "8Gi"}}}
                        ],
                    }
                },
            },
            "workerGroupSpecs": [
                {
                    "groupName": "gpu",
                    "replicas": workers,
                    "minReplicas": 0,
                    "maxReplicas": workers,
                    "rayStartParams": {},
                    "template": {
                        "spec": {
                            "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}],
                            "containers": [
                                {"name": "ray-worker", "image": image,
                                 "resources": {"limits": {"cpu": "8", "memory": "64Gi", "nvidia.com/gpu": gpus}}}
                            ]
                        }
                    },
                }
            ],
        },
    }
    custom.create_namespaced_custom_object("ray.io", "v1", namespace, "rayclusters", body)

    def ready():
        rc = custom.get_namespaced_custom_object("ray.io", "v1", namespace, "rayclusters", "mini")
        return rc.get("status", {}).get("state") == "ready" and rc

    rc = wait(ready, 90, "RayCluster mini state=ready")
    assert rc["status"].get("readyWorkerReplicas") == workers
    pods = core.list_namespaced_pod(namespace, label_selector="ray.io/cluster=mini").items
    heads = [p for p in pods if p.metadata.labels.get("ray.io/node-type") == "head"]
    wrk = [p for p in pods if p.metadata.labels.get("ray.io/node-type") == "worker"]
    assert len(heads) == 1 and len(wrk) == workers, [(p.metadata.name, p.metadata.labels) for p in pods]
    assert heads[0].spec.node_name in playground.cpu_node_names
    assert {p.spec.node_name for p in wrk} <= set(playground.gpu_node_names)
    assert len({p.spec.node_name for p in wrk}) == workers  # a full node's GPUs each
    assert all(_ready(p) for p in pods)


# ------------------------------------------------------------------ network rule


def test_every_component_listens_on_loopback_only(playground):
    seen = {}
    for name, pid in playground.pids().items():
        socks = listening_sockets(pid)
        seen[name] = socks
        for ip, port in socks:
            assert ipaddress.ip_address(ip).is_loopback, f"{name} listens on {ip}:{port}"
    # each component serves at least its health endpoint (the operator: probes only, metrics off)
    assert all(seen.values()), seen


def test_service_ips_are_loopback_and_never_routed(k8s, namespace):
    core = client.CoreV1Api(k8s)
    kube = core.read_namespaced_service("kubernetes", "default")
    assert ipaddress.ip_address(kube.spec.cluster_ip) in LOOPBACK, kube.spec.cluster_ip
    svc = core.create_namespaced_service(
        namespace,
        client.V1Service(
            metadata=client.V1ObjectMeta(name="svc"),
            spec=client.V1ServiceSpec(selector={"app": "x"}, ports=[client.V1ServicePort(port=80)]),
        ),
    )
    assert ipaddress.ip_address(svc.spec.cluster_ip) in LOOPBACK, svc.spec.cluster_ip
