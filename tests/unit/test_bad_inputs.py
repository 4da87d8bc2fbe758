"""Bad input exits 2 with file, line, key path, what was expected and a close match; never a traceback."""

from __future__ import annotations

import pytest
import yaml

from tests.conftest import RECIPE, write
from tests.support.infra import GOOD_INFRA, infra_with, infra_with_all, refused_at_input, required, run_values


def _queued(**changes) -> tuple:
    """A change for the table: launch.queue set, and `changes` (dotted path with "__" for ".")."""
    return ("infra", None, {"launch.queue": "training", **{k.replace("__", "."): v for k, v in changes.items()}})


# (id, infra-or-recipe change, expected fragments of the error output)
CASES = [
    ("unknown top key", ("infra", "sandboxx", {}), ["sandboxx: unknown key 'sandboxx'", "did you mean: sandbox"]),
    ("misspelt sandbox key", ("infra", "sandbox.replcas", 2),
     ["sandbox.replcas: unknown key", "did you mean: replicas"]),
    ("misspelt resources key", ("infra", "sandbox.resources.memroy", "2Gi"),
     ["sandbox.resources.memroy", "did you mean: memory"]),
    ("misspelt infra key", ("infra", "infra.imagePullSecret", ["x"]),
     ["infra.imagePullSecret", "did you mean: imagePullSecrets"]),
    ("negative replicas", ("infra", "sandbox.replicas", -1),
     ["sandbox.replicas: -1 is out of range", "greater than or equal to 0"]),
    ("replicas wrong type", ("infra", "sandbox.replicas", "many"),
     ["sandbox.replicas: wrong type: 'many'", "valid integer"]),
    ("bad cpu quantity", ("infra", "sandbox.resources.cpu", "lots"),
     ["sandbox.resources.cpu: 'lots' is not a Kubernetes quantity"]),
    ("bad memory quantity", ("infra", "sandbox.resources.memory", "2GB"),
     ["sandbox.resources.memory: '2GB' is not a Kubernetes quantity"]),
    ("negative quantity", ("infra", "sandbox.resources.cpu", -2),
     ["sandbox.resources.cpu: quantity must not be negative"]),
    ("bool quantity", ("infra", "sandbox.resources.cpuLimit", True),
     ["sandbox.resources.cpuLimit: expected a Kubernetes quantity"]),
    ("bad cidr", ("infra", "sandbox.networkPolicy", {"allowEgress": False, "allowedEgressCidrs": ["10.0.0.0/33"]}),
     ["sandbox.networkPolicy.allowedEgressCidrs[0]: '10.0.0.0/33' is not valid", "a CIDR block"]),
    ("cidr host bits",
     ("infra", "sandbox.networkPolicy", {"allowEgress": False, "allowedEgressCidrs": ["10.1.2.3/16"]}),
     ["has host bits set; did you mean 10.1.0.0/16?"]),
    ("cidrs with open egress", ("infra", "sandbox.networkPolicy", {"allowedEgressCidrs": ["10.0.0.0/8"]}),
     ["sandbox.networkPolicy.allowedEgressCidrs: allowedEgressCidrs only applies with allowEgress: false"]),
    ("backend contradicts image", ("infra", "infra.backend", "sglang"),
     ["infra.backend: backend is 'sglang' but the image", "is the vllm build"]),
    ("unknown backend", ("infra", "infra.backend", "vlm"),
     ["infra.backend: 'vlm' is not allowed", "one of: vllm, sglang", "did you mean: vllm"]),
    ("unknown mode", ("infra", "launch.mode", "ray-job"),
     ["launch.mode: 'ray-job' is not allowed", "did you mean: rayjob"]),
    ("attach without cluster", ("infra", "launch.mode", "attach"),
     ["launch.clusterName: launch.mode attach needs launch.clusterName"]),
    ("missing image", ("infra", "infra.image", None), ["infra.image: wrong type: None"]),
    ("missing repository", ("infra", "infra.image", {"tag": "x"}), ["infra.image.repository: required key is missing"]),
    ("bad repository", ("infra", "infra.image.repository", "GHCR.io/Org"),
     ["infra.image.repository: 'GHCR.io/Org' is not valid", "an image repository"]),
    ("bad digest", ("infra", "infra.image.digest", "sha256:abc"), ["infra.image.digest", "sha256:<64 hex digits>"]),
    ("bad namespace", ("infra", "infra.namespace", "Dockyard_NS"),
     ["infra.namespace: 'Dockyard_NS' is not valid", "DNS-1123 label"]),
    ("bad priority class", ("infra", "infra.priorityClassName", "High Priority"),
     ["infra.priorityClassName", "DNS-1123 name"]),
    ("port out of range", ("infra", "sandbox.port", 70000),
     ["sandbox.port: 70000 is out of range", "less than or equal to 65535"]),
    ("unknown profile", ("infra", "sandbox.security.profile", "strict"),
     ["sandbox.security.profile: 'strict' is not allowed", "baseline, restricted"]),
    ("rayStartParams not a mapping", ("infra", "kuberay.spec", {"headGroupSpec": {"rayStartParams": 5}}),
     ["kuberay.spec: headGroupSpec: rayStartParams must be a mapping", "got 5"]),
    ("worker resources not a mapping",
     ("infra", "kuberay.spec", {"workerGroupSpecs": [{"groupName": "trainer", "resources": "x"}]}),
     ["resources must be a mapping", "got 'x'"]),
    ("root under restricted", ("infra", "sandbox.security", {"profile": "restricted", "runAsUser": 0}),
     ["sandbox.security.runAsUser: runAsUser 0 is root, which profile restricted / runAsNonRoot forbid"]),
    ("duplicate group names",
     ("infra", "kuberay.spec", {"workerGroupSpecs": [{"groupName": "trainer"}, {"groupName": "trainer"}]}),
     ["kuberay.spec.workerGroupSpecs: duplicate groupName 'trainer'"]),
    ("unknown group name", ("infra", "kuberay.spec", {"workerGroupSpecs": [{"groupName": "critic"}]}),
     ["kuberay.spec.workerGroupSpecs[0].groupName: 'critic' is not allowed", "trainer, inference"]),
    ("ray resources twice",
     ("infra", "kuberay.spec",
      {"workerGroupSpecs": [{"groupName": "trainer", "resources": {"x": "1"}, "rayStartParams": {"num-cpus": "4"}}]}),
     ["trainer: Ray resources set both in group-level `resources` and rayStartParams ['num-cpus']"]),
    ("labels in rayStartParams", ("infra", "kuberay.spec", {"headGroupSpec": {"rayStartParams": {"labels": "a=b"}}}),
     ["headGroupSpec: rayStartParams.labels is refused by KubeRay"]),
    ("replicas in overlay",
     ("infra", "kuberay.spec", {"workerGroupSpecs": [{"groupName": "inference", "replicas": 3}]}),
     ["inference: replicas comes from the recipe's cluster.<group>.nodes"]),
    ("quota without limits", ("infra", "infra.resourceQuota", {"enabled": True}),
     ["infra.resourceQuota.hard: resourceQuota is enabled but `hard` is empty"]),
    ("bad toleration operator", ("infra", "sandbox.tolerations", [{"key": "a", "operator": "In"}]),
     ["sandbox.tolerations[0].operator: 'In' is not allowed", "Exists, Equal"]),
    ("spread without key", ("infra", "sandbox.topologySpreadConstraints", [{"maxSkew": 1}]),
     ["sandbox.topologySpreadConstraints[0].topologyKey: required key is missing"]),
    ("recipe name too long for a RayJob", ("recipe", "name", "a" * 48),
     ["name: '" + "a" * 48 + "' has 48 characters; KubeRay allows at most 47 for a RayJob",
      "did you mean: " + "a" * 47]),
    ("recipe name not DNS", ("recipe", "name", "GRPO_swe"), ["name: 'GRPO_swe' is not valid", "DNS-1035 label"]),
    ("recipe zero nodes", ("recipe", "cluster", {"trainer": {"nodes": 0, "gpusPerNode": 8}}),
     ["cluster.trainer.nodes: 0 is out of range"]),
    ("recipe misspelt group", ("recipe", "cluster", {"trainr": {"nodes": 1}}),
     ["cluster.trainr: unknown key", "did you mean: trainer"]),
    ("recipe missing entrypoint", ("recipe", "entrypoint", None), ["entrypoint: wrong type: None"]),
    # Strict types: YAML 1.1 booleans are not integers, no .inf/.nan, no quoted numbers.
    ("recipe nodes: yes", ("recipe", "cluster", {"trainer": {"nodes": True}}),
     ["cluster.trainer.nodes: wrong type: True is a boolean", "a valid integer"]),
    ("recipe nodes .inf", ("recipe", "cluster", {"inference": {"gpusPerNode": float("inf")}}),
     ["cluster.inference.gpusPerNode: .inf is not a finite number"]),
    ("recipe nodes quoted", ("recipe", "cluster", {"trainer": {"nodes": "2"}}),
     ["cluster.trainer.nodes: wrong type: '2' is a string"]),
    ("replicas: on", ("infra", "sandbox.replicas", True), ["sandbox.replicas: wrong type: True is a boolean"]),
    ("port .nan", ("infra", "sandbox.port", float("nan")), ["sandbox.port: .nan is not a finite number"]),
    ("ttl float", ("infra", "launch.ttlSecondsAfterFinished", 60.0),
     ["launch.ttlSecondsAfterFinished: wrong type: 60.0"]),
    ("uid -.inf", ("infra", "infra.security.runAsUser", float("-inf")),
     ["infra.security.runAsUser: -.inf is not a finite number"]),
    ("bool field given 1", ("infra", "sandbox.injectUrls", 1),
     ["sandbox.injectUrls: wrong type: 1", "a valid boolean"]),
    ("bool field given 'yes'", ("infra", "launch.shutdownAfterJobFinishes", "yes"),
     ["launch.shutdownAfterJobFinishes: wrong type: 'yes' is a string", "without quotes"]),
    ("quantity .inf", ("infra", "sandbox.resources.memory", float("inf")),
     ["sandbox.resources.memory: expected a Kubernetes quantity", "not .inf"]),
    ("quota .nan", ("infra", "infra.resourceQuota", {"enabled": True, "hard": {"pods": float("nan")}}),
     ["infra.resourceQuota.hard.pods: expected a Kubernetes quantity", "not .nan"]),
    ("overlay .inf", ("infra", "kuberay.spec", {"headGroupSpec": {"rayStartParams": {"num-cpus": float("inf")}}}),
     ["kuberay.spec.headGroupSpec.rayStartParams.num-cpus: .inf is not a finite number"]),
    ("worker overlay .nan",
     ("infra", "kuberay.spec", {"workerGroupSpecs": [{"groupName": "trainer", "template": {"x": float("nan")}}]}),
     ["kuberay.spec.workerGroupSpecs[0].template.x: .nan is not a finite number"]),
    ("affinity .inf", ("infra", "sandbox.affinity", {"podAntiAffinity": {
        "preferredDuringSchedulingIgnoredDuringExecution": [
            {"weight": float("inf"), "podAffinityTerm": {"topologyKey": "zone"}}]}}),
     ["sandbox.affinity.podAntiAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].weight: .inf is not a "
      + "finite number"]),
    ("spread skew true", ("infra", "sandbox.topologySpreadConstraints", [{"topologyKey": "zone", "maxSkew": True}]),
     ["sandbox.topologySpreadConstraints[0].maxSkew: wrong type: True is a boolean"]),
    ("key read as a boolean", ("infra", "sandbox.nodeSelector", {True: "gpu"}),
     ["sandbox.nodeSelector: key True is not a string", "quote it"]),
    # What once only the chart refused: exit 2 here, with the key path, before Helm runs.
    ("ray resources not JSON", ("infra", "kuberay.spec", {"headGroupSpec": {"rayStartParams": {"resources": "cpu=2"}}}),
     ["kuberay.spec.headGroupSpec.rayStartParams.resources: 'cpu=2' is not a JSON object",
      "a JSON object of Ray resource name: number in a string"]),
    ("ray resources a mapping",
     ("infra", "kuberay.spec",
      {"workerGroupSpecs": [{"groupName": "trainer", "rayStartParams": {"resources": {"a": 1}}}]}),
     ["kuberay.spec.workerGroupSpecs[0].rayStartParams.resources: {'a': 1} is not a JSON object in a string"]),
    ("ray resource not a number",
     ("infra", "kuberay.spec", {"headGroupSpec": {"rayStartParams": {"resources": '{"a": true}'}}}),
     ["rayStartParams.resources: the Ray resource 'a' is true, not a number"]),
    ("ray resource name with a quote",
     ("infra", "kuberay.spec", {"headGroupSpec": {"rayStartParams": {"resources": '{"a\'b": 1}'}}}),
     ["the Ray resource name \"a'b\" holds a single quote"]),
    ("overlay template not a mapping",
     ("infra", "kuberay.spec", {"workerGroupSpecs": [{"groupName": "inference", "template": "pod"}]}),
     ["kuberay.spec.workerGroupSpecs[0].template: template must be a mapping (a pod template), got 'pod'"]),
    ("overlay containers not a list", ("infra", "kuberay.spec", {"headGroupSpec": {"template": {"spec": {
        "containers": {"name": "ray-head"}}}}}),
     ["kuberay.spec.headGroupSpec.template.spec.containers: containers must be a list"]),
    ("overlay env not a list", ("infra", "kuberay.spec", {"headGroupSpec": {"template": {"spec": {
        "containers": [{"name": "log", "env": "A=1"}]}}}}),
     ["kuberay.spec.headGroupSpec.template.spec.containers[0].env: env must be a list of mappings, got 'A=1'"]),
    ("overlay GPU limits null", ("infra", "kuberay.spec", {"workerGroupSpecs": [{"groupName": "trainer", "template": {
        "spec": {"containers": [{"resources": {"limits": None}}]}}}]}),
     [("kuberay.spec.workerGroupSpecs[0].template.spec.containers[0].resources.limits: resources.limits must be a "
      "mapping, got None")]),
    ("merge key '<<' as a plain key", ("infra", "sandbox.podAnnotations", {"<<": "x"}),
     ["sandbox.podAnnotations.<<: the key '<<' is YAML's merge key, which Helm's toYaml writes unquoted",
      "expected: another key name"]),
    ("toYaml-dropped character", ("infra", "sandbox.nodeSelector", {"disk": "ssd\x85"}),
     ["sandbox.nodeSelector.disk: 'ssd\\x85' holds U+0085, which Helm's toYaml drops or mangles",
      "a string without U+007F to U+009F, U+2028, U+2029, U+FFFE, U+FFFF"]),
    ("toYaml-dropped character in a key", ("infra", "kuberay.spec", {"headGroupSpec": {"x\u2029": "y"}}),
     ["kuberay.spec.headGroupSpec: the key 'x\\u2029' holds U+2029"]),
    ("toYaml-dropped character in a path", ("infra", "sandbox.security", {"workDir": "/work\uffff"}),
     ["sandbox.security.workDir: '/work\\uffff' holds U+FFFF"]),
    ("toleration seconds .inf",
     ("infra", "sandbox.tolerations", [{"key": "a", "operator": "Exists", "tolerationSeconds": float("inf")}]),
     ["sandbox.tolerations[0].tolerationSeconds: .inf is not a finite number"]),
    # the sandbox pool's autoscaling, rollout and shutdown rules
    ("hpa min over max", ("infra", "sandbox.autoscaling", {"minReplicas": 5, "maxReplicas": 3}),
     ["sandbox.autoscaling.maxReplicas: minReplicas 5 is more than maxReplicas 3",
      "expected: maxReplicas of at least 5, or a lower minReplicas"]),
    ("hpa without a target", ("infra", "sandbox.autoscaling", {"enabled": True}),
     ["sandbox.autoscaling: autoscaling is enabled but sets no target",
      "expected: targetCPUUtilizationPercentage (e.g. 70) or targetMemoryUtilizationPercentage"]),
    ("hpa min 0", ("infra", "sandbox.autoscaling", {"minReplicas": 0}),
     ["sandbox.autoscaling.minReplicas: 0 is out of range", "greater than or equal to 1"]),
    ("pdb lets a drain take the hpa minimum", ("infra", "sandbox.autoscaling", {"enabled": True, "minReplicas": 1,
                                                                       "targetCPUUtilizationPercentage": 70}),
     ["sandbox.pdb.maxUnavailable: maxUnavailable 1 lets a drain evict every executor at the HPA's minimum",
      "expected: autoscaling.minReplicas of at least 2 (a maxUnavailable of 0 would block every node drain)"]),
    ("rollout neither surges nor drops", ("infra", "sandbox.rollingUpdate", {"maxSurge": "0%"}),
     ["sandbox.rollingUpdate: maxSurge and maxUnavailable are both zero", "expected: maxSurge of at least 1"]),
    ("hpa under agent-sandbox", ("infra", None, {"sandbox.backend": "agent-sandbox", "sandbox.autoscaling": {
        "enabled": True, "targetCPUUtilizationPercentage": 70}}),
     [("sandbox.autoscaling.enabled: autoscaling.enabled is a setting of the pool backend, which means nothing with "
       "backend agent-sandbox"), "expected: false (its default), or backend pool"]),
    ("rollout knob under agent-sandbox", ("infra", None, {"sandbox.backend": "agent-sandbox",
                                                          "sandbox.rollingUpdate": {"maxSurge": 1}}),
     ["sandbox.rollingUpdate.maxSurge: rollingUpdate.maxSurge is a setting of the pool backend",
      'expected: "25%" (its default), or backend pool']),
    ("minReadySeconds under agent-sandbox", ("infra", None, {"sandbox.backend": "agent-sandbox",
                                                             "sandbox.minReadySeconds": 0}),
     ["sandbox.minReadySeconds: minReadySeconds is a setting of the pool backend", "expected: 5 (its default)"]),
    ("warm pool under the pool", ("infra", "sandbox.warmPool", {"updateStrategy": "OnReplenish"}),
     [("sandbox.warmPool.updateStrategy: warmPool.updateStrategy is a setting of the agent-sandbox backend, which "
       "means nothing with backend pool"), 'expected: "Recreate" (its default), or backend agent-sandbox']),
    ("unknown backend", ("infra", "sandbox.backend", "knative"),
     ["sandbox.backend: 'knative' is not allowed", "one of: pool, agent-sandbox"]),
    ("maxSurge a bare string", ("infra", "sandbox.rollingUpdate", {"maxSurge": "1"}),
     ["sandbox.rollingUpdate.maxSurge"]),
    ("preStop eats the grace period", ("infra", "sandbox.preStopSleepSeconds", 300),
     ["sandbox.preStopSleepSeconds: preStopSleepSeconds 300 leaves no time of terminationGracePeriodSeconds 300",
      "expected: preStopSleepSeconds below 300, or a longer terminationGracePeriodSeconds"]),
    ("unknown probe type", ("infra", "sandbox.readinessProbe", {"type": "grpc"}),
     ["sandbox.readinessProbe.type: 'grpc' is not allowed", "one of: http, tcp"]),
    ("probe path not absolute", ("infra", "sandbox.readinessProbe", {"path": "health"}),
     ["sandbox.readinessProbe.path: 'health' is not valid"]),
    # kuberay.placement and every toleration: the Kubernetes API's rules, at input
    ("toleration Exists with a value", ("infra", "kuberay.placement.gpu.tolerations",
                                        [{"key": "nvidia.com/gpu", "operator": "Exists", "value": "present"}]),
     ["kuberay.placement.gpu.tolerations[0]: operator Exists takes no value (got 'present')", "operator: Equal"]),
    ("toleration without a key, Equal", ("infra", "kuberay.placement.head.tolerations", [{"effect": "NoSchedule"}]),
     ["kuberay.placement.head.tolerations[0]: a toleration without a key must have operator Exists"]),
    ("tolerationSeconds without NoExecute",
     ("infra", "sandbox.tolerations", [{"key": "a", "operator": "Exists", "tolerationSeconds": 5}]),
     ["sandbox.tolerations[0]: tolerationSeconds applies only to effect NoExecute"]),
    ("toleration effect misspelt", ("infra", "kuberay.placement.submitter.tolerations",
                                    [{"key": "a", "effect": "NoScheduled"}]),
     ["kuberay.placement.submitter.tolerations[0].effect: 'NoScheduled' is not allowed", "did you mean: NoSchedule"]),
    ("toleration operator misspelt", ("infra", "kuberay.placement.trainer.tolerations",
                                      [{"key": "nvidia.com/gpu", "operator": "Exist"}]),
     ["kuberay.placement.trainer.tolerations[0].operator: 'Exist' is not allowed", "did you mean: Exists"]),
    ("toleration key not a label key", ("infra", "kuberay.placement.gpu.tolerations", [{"key": "a b", "value": "c"}]),
     ["kuberay.placement.gpu.tolerations[0].key: 'a b' is not valid", "a taint key"]),
    ("nodeSelector key not a label key", ("infra", "kuberay.placement.gpu.nodeSelector", {"gpu type": "h100"}),
     ["kuberay.placement.gpu.nodeSelector: 'gpu type' is not valid", "expected: a label key"]),
    ("nodeSelector value not a label value", ("infra", "sandbox.nodeSelector", {"pool": "cpu pool"}),
     ["sandbox.nodeSelector.pool: 'cpu pool' is not valid", "expected: a label value"]),
    ("affinity In without values",
     ("infra", "kuberay.placement.inference.affinity", required({"key": "pool", "operator": "In"})),
     [("kuberay.placement.inference.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution"
       ".nodeSelectorTerms[0].matchExpressions[0]: operator In needs values")]),
    ("affinity Exists with values",
     ("infra", "kuberay.placement.head.affinity", required({"key": "pool", "operator": "Exists", "values": ["a"]})),
     ["matchExpressions[0]: operator Exists takes no values"]),
    ("affinity Gt not an integer",
     ("infra", "kuberay.placement.gpu.affinity", required({"key": "gpu.count", "operator": "Gt", "values": ["four"]})),
     ["matchExpressions[0]: operator Gt takes exactly one value, an integer (got ['four'])"]),
    ("affinity weight 0", ("infra", "kuberay.placement.gpu.affinity", {"nodeAffinity": {
        "preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 0, "preference": {}}]}}),
     ["preferredDuringSchedulingIgnoredDuringExecution[0].weight: 0 is out of range"]),
    ("unknown placement key", ("infra", "kuberay.placement.gpus", {}),
     ["kuberay.placement.gpus: unknown key", "did you mean: gpu"]),
    ("overlay tolerations not a list", ("infra", "kuberay.spec", {"workerGroupSpecs": [
        {"groupName": "trainer", "template": {"spec": {"tolerations": {"key": "a"}}}}]}),
     ["kuberay.spec.workerGroupSpecs[0].template.spec.tolerations: tolerations must be a list"]),
    # Kueue: the names it reads from the labels, and its webhooks' admission rules (v0.17.0)
    ("queue not a Kueue name", ("infra", "launch.queue", "Training_Q"),
     ["launch.queue: 'Training_Q' is not valid", "a DNS-1123 name"]),
    ("queue longer than a label value", ("infra", "launch.queue", "q" * 64),
     ["launch.queue: '" + "q" * 64 + "' is out of range", "at most 63 characters"]),
    ("priority class not a Kueue name", _queued(launch__priorityClass="High Priority"),
     ["launch.priorityClass: 'High Priority' is not valid", "a DNS-1123 name"]),
    ("queued rayjob keeps its cluster", _queued(launch__shutdownAfterJobFinishes=False),
     ["launch.shutdownAfterJobFinishes: Kueue refuses a queued RayJob that keeps its cluster after the job ends",
      "expected: launch.shutdownAfterJobFinishes: true (the default), or no launch.queue"]),
    ("queue in attach mode", _queued(launch__mode="attach", launch__clusterName="shared"),
     ["launch.queue: an existing cluster cannot be queued", "refuses a queued RayJob on a clusterSelector",
      "expected: no launch.queue in attach mode, or launch.mode rayjob or bringup"]),
    ("queued with in-tree autoscaling", _queued(kuberay__spec={"enableInTreeAutoscaling": True}),
     ["kuberay.spec.enableInTreeAutoscaling: Kueue refuses in-tree autoscaling on a queued RayJob or RayCluster",
      "expected: false (or unset), or no launch.queue"]),
    ("queued bringup with in-tree autoscaling",
     _queued(launch__mode="bringup", kuberay__spec={"enableInTreeAutoscaling": True}),
     ["kuberay.spec.enableInTreeAutoscaling: Kueue refuses in-tree autoscaling"]),
    # Kueue's "at most 7 worker groups, none named head": the overlay names only the chart's two groups, once each
    ("queued with a group named head", _queued(kuberay__spec={"workerGroupSpecs": [{"groupName": "head"}]}),
     ["kuberay.spec.workerGroupSpecs[0].groupName: 'head' is not allowed", "one of: trainer, inference"]),
    ("queued with 8 worker groups",
     _queued(kuberay__spec={"workerGroupSpecs": [{"groupName": g} for g in ["trainer", "inference"] * 4]}),
     ["kuberay.spec.workerGroupSpecs: duplicate groupName 'trainer'"]),
    ("priority class without a queue", ("infra", "launch.priorityClass", "high"),
     ["launch.priorityClass: a WorkloadPriorityClass without launch.queue does nothing",
      "expected: launch.queue: the LocalQueue to submit to, or no launch.priorityClass"]),
    # topology-aware placement (launch.topology): Kueue's, on the fleets the chart places
    ("topology without a queue", ("infra", "launch", {"mode": "rayjob", "topology": {"level": "example.com/rack"}}),
     ["launch.topology: topology placement is Kueue's (Topology Aware Scheduling): without launch.queue",
      "expected: launch.queue: the LocalQueue of a ClusterQueue whose flavor names a Topology, or no launch.topology"]),
    ("topology in attach mode", ("infra", "launch", {"mode": "attach", "clusterName": "shared",
                                                     "topology": {"level": "example.com/rack"}}),
     ["launch.topology: an existing cluster is not placed by this release",
      "expected: no launch.topology in attach mode, or launch.mode rayjob or bringup"]),
    ("topology level not a label key", _queued(launch__topology={"level": "rack level"}),
     ["launch.topology.level: 'rack level' is not valid", "expected: a label key"]),
    ("topology neither required nor preferred", _queued(launch__topology={"level": "a.io/rack", "mode": "both"}),
     ["launch.topology.mode: 'both' is not allowed", "expected: one of: required, preferred"]),
    ("topology without a level", _queued(launch__topology={"mode": "preferred"}),
     ["launch.topology.level: required"]),
    ("topology annotation in the overlay", _queued(launch__topology={"level": "a.io/rack"}, kuberay__spec={
        "workerGroupSpecs": [{"groupName": "inference", "template": {"metadata": {"annotations": {
            "kueue.x-k8s.io/podset-preferred-topology": "a.io/block"}}}}]}),
     [("kuberay.spec.workerGroupSpecs[0].template.metadata.annotations.kueue.x-k8s.io/podset-preferred-topology: "
       "launch.topology places the trainer and inference pods"),
      ("expected: no kueue.x-k8s.io/podset-preferred-topology in the inference overlay (launch.topology sets "
       "kueue.x-k8s.io/podset-required-topology)")]),
    # the run watcher's stall guard (launch.watch)
    ("stall timeout under the floor", ("infra", "launch.watch", {"stallTimeoutSeconds": 10}),
     ["launch.watch.stallTimeoutSeconds", "greater than or equal to 30"]),
    ("stall guard without the watcher", ("infra", "launch.watch", {"enabled": False, "stallTimeoutSeconds": 600}),
     ["launch.watch.stallTimeoutSeconds: a stall guard with launch.watch.enabled false has nothing to watch",
      "expected: launch.watch.enabled: true (the default), or no stallTimeoutSeconds"]),
    ("stall guard in attach mode", ("infra", "launch", {"mode": "attach", "clusterName": "shared",
                                                        "watch": {"stallTimeoutSeconds": 600}}),
     ["launch.watch.stallTimeoutSeconds: a stall guard in attach mode has no job of this release to end",
      "expected: no launch.watch.stallTimeoutSeconds in attach mode, or launch.mode rayjob or bringup"]),
    ("suspend in the overlay", ("infra", "kuberay.spec", {"suspend": False}),
     ["kuberay.spec.suspend: the chart never renders suspend: Kueue suspends a queued RayJob or RayCluster",
      "expected: no kuberay.spec.suspend"]),
]


@pytest.mark.parametrize("case_id, change, expected", CASES, ids=[c[0] for c in CASES])
def test_bad_input_table(tmp_path, capsys, case_id, change, expected):
    refused_at_input(tmp_path, capsys, change, expected)


def test_trainer_and_inference_together_need_a_single_node_fleet(tmp_path, capsys):
    """Kueue's PodSet group holds two pod sets of which one is a single pod: a refusal that needs both files,
    named at the infra spec's key; with one fleet of one node, the same infra passes."""
    infra = write(tmp_path, "bad.infra.yaml", infra_with_all({"launch.queue": "training", "launch.topology": {
        "level": "example.com/rack", "groups": "together"}}))
    data = yaml.safe_load(RECIPE.read_text())
    data["cluster"] = {"trainer": {"nodes": 2, "gpusPerNode": 8}, "inference": {"nodes": 2, "gpusPerNode": 8}}
    code, err = run_values(capsys, write(tmp_path, "bad.yaml", data), infra)
    assert code == 2, err
    assert f"error: {infra}:" in err and "launch.topology.groups: Kueue places two pod sets in one domain only" in err
    assert "the recipe has trainer 2 and inference 2 nodes" in err
    assert "expected: launch.topology.groups: each, or recipe.cluster.inference.nodes (or trainer.nodes) 1" in err
    data["cluster"]["inference"]["nodes"] = 1
    assert run_values(capsys, write(tmp_path, "ok.yaml", data), infra)[0] == 0


def test_errors_from_both_files_at_once(tmp_path, capsys):
    recipe = write(tmp_path, "r.yaml", {"name": "x", "entrypoint": "e", "clusterr": {}})
    infra = write(tmp_path, "i.yaml", infra_with("sandbox.replicas", -3))
    code, err = run_values(capsys, recipe, infra)
    assert code == 2 and "sandbox.replicas" in err
    assert f"error: {recipe}:3: clusterr: unknown key 'clusterr' (the launcher reads 'cluster')" in err


@pytest.mark.parametrize("override, fragment", [
    ("cluster.trainer.nodes=-1", "error: <command line>: cluster.trainer.nodes: -1 is out of range"),
    ("noequals", "bad override 'noequals'"),
    ("cluster..nodes=1", "bad override"),
    ("name.first=x", "cannot set name.first: name is a str, not a mapping"),
    ("cluster.trainer.gpusPerNode=[1", "value is not YAML"),
    ("policy.tags[0]=x", "policy.tags: cannot set policy.tags[0]: policy.tags is not set"),
    ("env.code.sandbox_urls[3]=x",
     "env.code.sandbox_urls[3]: index 3 is out of range: env.code.sandbox_urls has 1 item"),
    ("env.code.sandbox_urls.0=x", "did you mean: env.code.sandbox_urls[0]=x"),
    ('policy.x="\\ud800"', "policy.x: value is not YAML: the value holds U+D800"),
])
def test_bad_overrides(tmp_path, capsys, override, fragment):
    code, err = run_values(capsys, RECIPE, write(tmp_path, "i.yaml", GOOD_INFRA), override)
    assert code == 2 and fragment in err, err


def test_table_is_large_enough():
    assert len(CASES) >= 30
