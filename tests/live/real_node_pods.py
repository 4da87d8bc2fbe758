"""The real node's pods for the tests that run on it (test_real_node*, test_real_agent_sandbox): a harness over
kubectl and helm with the module's kubeconfig, pods pinned to the real node, stand-in hosts inside the node's
network namespace, and a release of the small recipe's sandbox only (attach mode).

Every address dialed is loopback (the apiserver) or inside the node's network namespace.
"""

from __future__ import annotations

import json
import subprocess
import time
import uuid
from pathlib import Path

import pytest
import yaml
from session_env import wait_for

from generator.playground.node import components as C
from generator.playground.node import spec as S

REAL = {S.NODE_LABEL: "true"}
TOLERATE = [{"key": S.NODE_LABEL, "operator": "Exists", "effect": "NoSchedule"}]
LIVE = Path(__file__).resolve().parent
DATA = LIVE / "data"
RECIPE = DATA / "small.yaml"
CLIENT = LIVE.parents[1] / "generator" / "in_image" / "sandbox_client.py"  # the reference claim client
EPISODE_JOB = LIVE / "episode_job.py"
# The pool's proofs run under both runtimes: runc (the host kernel) and gVisor (RuntimeClass gvisor)
RUNTIMES = pytest.mark.parametrize("runtime", [None, C.RUNTIME_CLASS], ids=["runc", "gvisor"])


def runtime_spec(runtime: str | None) -> dict:
    return {"runtimeClassName": runtime} if runtime else {}


# ---------------------------------------------------------------- the module's playground


class Node:
    def __init__(self, state_dir: Path, state: dict):
        from generator.pinned_tools import tool_dir

        self.state_dir, self.state = state_dir, state
        self.kubeconfig = state["kubeconfig"]
        self.kubectl_bin = str(tool_dir("kubernetes") / "kubectl")
        self.helm_bin = str(tool_dir("helm") / "helm")
        self.spec = S.NodeSpec(state_dir)
        self.executor_bin = str(self._images_dir() / "executor")
        self.image = state["real_node"]["images"]["executor"]

    def _images_dir(self) -> Path:
        from generator.playground.node.hooks import _tool_dirs

        return _tool_dirs()["node-images"]

    def kubectl(self, *args, check: bool = True, timeout: float = 60) -> subprocess.CompletedProcess:
        proc = subprocess.run([self.kubectl_bin, f"--kubeconfig={self.kubeconfig}", *map(str, args)],
                              capture_output=True, text=True, timeout=timeout)
        if check and proc.returncode != 0:
            raise AssertionError(f"kubectl {' '.join(map(str, args))}: exit {proc.returncode}: {proc.stderr}")
        return proc

    def apply(self, ns: str, *docs: dict) -> None:
        proc = subprocess.run([self.kubectl_bin, f"--kubeconfig={self.kubeconfig}", "-n", ns, "apply", "-f", "-"],
                              input=yaml.safe_dump_all(docs), capture_output=True, text=True, timeout=60)
        assert proc.returncode == 0, proc.stderr

    def get(self, ns: str, *what) -> dict:
        return json.loads(self.kubectl("-n", ns, "get", *what, "-o", "json").stdout)

    def namespace(self, prefix: str = "rn") -> str:
        name = f"{prefix}-{uuid.uuid4().hex[:6]}"
        self.kubectl("create", "namespace", name)
        wait_for(lambda: self.kubectl("-n", name, "get", "serviceaccount", "default", check=False).returncode == 0,
                 30, f"the default ServiceAccount of {name}")
        return name

    def pod(self, ns: str, name: str, command: list[str] | None = None, labels: dict | None = None, **spec) -> dict:
        container = {"name": "main", "image": self.image, "imagePullPolicy": "Never",
                     "resources": {"limits": {"cpu": "50m", "memory": "64Mi"}}}
        if command:
            container["command"] = command
        return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "labels": labels or {}},
                "spec": {"terminationGracePeriodSeconds": 0, "nodeSelector": REAL, "tolerations": TOLERATE,
                         "automountServiceAccountToken": False, "containers": [container], **spec}}

    def client(self, ns: str, name: str = "client") -> str:
        """A long-running client pod on the real node (it listens on 8081 itself, unprotected)."""
        self.apply(ns, self.pod(ns, name, ["/executor", "listen", ":8081", "client"], {"role": "client"}))
        self.ready(ns, name)
        return name

    def ready(self, ns: str, name: str, timeout: float = 60) -> dict:
        def ok():
            pod = self.get(ns, "pod", name)
            conds = {c["type"]: c["status"] for c in pod.get("status", {}).get("conditions", [])}
            return pod if conds.get("Ready") == "True" else None

        return wait_for(ok, timeout, f"pod {ns}/{name} Ready")

    def exec(self, ns: str, pod: str, *cmd, timeout: float = 90) -> tuple[int, str]:
        proc = self.kubectl("-n", ns, "exec", pod, "--", *cmd, check=False, timeout=timeout)
        return proc.returncode, proc.stdout + proc.stderr

    def dial(self, ns: str, pod: str, target: str, seconds: float = 3) -> bool:
        return self.exec(ns, pod, "/executor", "dial", target, str(seconds))[0] == 0

    def task(self, ns: str, client: str, url: str, command: str, timeout: float = 60) -> dict:
        body = json.dumps({"command": command, "timeout": timeout})
        rc, out = self.exec(ns, client, "/executor", "post", url, body, timeout=timeout + 30)
        assert rc == 0, f"POST {url} from {ns}/{client} failed: {out}"
        return json.loads(out)

    def pool(self, ns: str) -> list[dict]:
        items = self.get(ns, "pods", "-l", "app.kubernetes.io/component=sandbox")["items"]
        return [p for p in items if not p["metadata"].get("deletionTimestamp")]

    def release(self, capsys, tmp_path: Path, ns: str, name: str = "rel", **sandbox) -> None:
        """`dockyard-k8s run` of the small recipe in attach mode: only the sandbox pool, on the real node."""
        from live_helpers import cli

        infra = {
            "infra": {"namespace": ns, "image": {"repository": self.image.rsplit(":", 1)[0],
                                                 "tag": self.image.rsplit(":", 1)[1], "pullPolicy": "Never"}},
            "launch": {"mode": "attach", "clusterName": "shared-gpu-cluster"},
            "sandbox": {"replicas": 1, "resources": {"cpu": "100m", "memory": "128Mi", "ephemeralStorage": "256Mi"},
                        "nodeSelector": REAL, "tolerations": TOLERATE, **sandbox},
        }
        if sandbox.get("autoscaling", {}).get("enabled"):  # the HPA sets the replicas (a count is refused then)
            infra["sandbox"].pop("replicas")
        path = tmp_path / f"{name}.infra.yaml"
        path.write_text(yaml.safe_dump(infra, sort_keys=False))
        self.infra_path = path
        rc, out, err = cli(capsys, "run", RECIPE, path, "--kubeconfig", self.kubeconfig, "--create-namespace",
                           "--wait", "-q", "--timeout", "120")
        assert rc == 0, f"run failed: {out}\n{err}"
        runtime = sandbox.get("runtimeClassName")
        if sandbox.get("backend") == "agent-sandbox":  # `run --wait` waits for the objects, not the warm pool
            wait_for(lambda: self.warm_ready(ns) == sandbox.get("replicas", 1), 120, "the warm pool ready")
        runtimes = {p["spec"].get("runtimeClassName") for p in self.pool(ns)}
        # (agent-sandbox: a pool of 0 has no pod, a claimed sandbox stays on when the pool shrinks)
        assert runtimes <= {runtime} if sandbox.get("backend") == "agent-sandbox" else runtimes == {runtime}, runtimes

    def warm_ready(self, ns: str, name: str = "small-sandbox") -> int:
        """The warm pool's ready sandboxes (status.readyReplicas)."""
        return (self.get(ns, "sandboxwarmpools", name).get("status") or {}).get("readyReplicas") or 0

    def listener(self, ip: str, port: int, text: str) -> subprocess.Popen:
        """A stand-in host: an HTTP listener on `ip` inside the node's network namespace."""
        proc = subprocess.Popen(["nsenter", f"--net={self.spec.netns_file}", "--", self.executor_bin, "listen",
                                 f"{ip}:{port}", text], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(0.5)
        assert proc.poll() is None, f"the stand-in listener on {ip}:{port} did not start"
        return proc


def executor_url(pod: dict) -> str:
    return f"http://{pod['status']['podIP']}:9090/task/submit"


def status_fields(text: str) -> dict:
    return {k.strip(): v.strip() for k, _, v in (line.partition(":") for line in text.splitlines()) if v}


def episode_pod(image: str, env: dict[str, str], account: str, release: str = "small",
                name: str = "ray") -> list[dict]:
    """What claims sandboxes on the real node (test_real_agent_sandbox, the bench): a ConfigMap with the reference
    client beside episode_job.py, and a pod of the Ray image with a Ray pod's labels of `release`, its account
    `account` and the claim env `env`, idle until a step is exec'd in it."""
    configmap = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "episode"},
                 "data": {"sandbox_client.py": CLIENT.read_text(), "episode_job.py": EPISODE_JOB.read_text()}}
    pod = {"apiVersion": "v1", "kind": "Pod",
           "metadata": {"name": name, "labels": {"app.kubernetes.io/instance": release,
                                                 "app.kubernetes.io/component": "ray"}},
           "spec": {"serviceAccountName": account, "automountServiceAccountToken": True,
                    "terminationGracePeriodSeconds": 0, "nodeSelector": REAL, "tolerations": TOLERATE,
                    "containers": [{"name": "ray", "image": image, "imagePullPolicy": "Never",
                                    "command": ["python3", "-c", "import time; time.sleep(1e6)"],
                                    "env": [{"name": k, "value": v} for k, v in env.items()],
                                    "volumeMounts": [{"name": "episode", "mountPath": "/episode", "readOnly": True}],
                                    "resources": {"limits": {"cpu": "200m", "memory": "256Mi"}}}],
                    "volumes": [{"name": "episode", "configMap": {"name": "episode"}}]}}
    return [configmap, pod]

