"""The API's bounds on every key that lands in a Kubernetes field (Deployment, HPA, pod metadata, tolerations, env,
quota; generator/inputs/api_rules.py and the models' types): what `check` alone caught (exit 1, the apiserver's
validation) is refused at input (exit 2) with the key path."""

from __future__ import annotations

import pytest

from tests.support.infra import refused_at_input, required

# (id, infra-or-recipe change, expected fragments of the error output)
CASES = [
    ("maxUnavailable over 100%", ("infra", "sandbox.rollingUpdate.maxUnavailable", "101%"),
     ["sandbox.rollingUpdate.maxUnavailable: 101% is over 100%: the API refuses a maxUnavailable of more than 100%"]),
    ("maxSurge over int32", ("infra", "sandbox.rollingUpdate.maxSurge", 2**31),
     ["sandbox.rollingUpdate.maxSurge: 2147483648 is out of range: a count from 0 to 2147483647"]),
    ("maxUnavailable a bare number string", ("infra", "sandbox.rollingUpdate.maxUnavailable", "5"),
     ["sandbox.rollingUpdate.maxUnavailable: '5' is neither a count nor a percentage such as 25%"]),
    ("minReadySeconds at the progress deadline", ("infra", "sandbox.minReadySeconds", 600),
     ["sandbox.minReadySeconds: 600 is out of range", "less than or equal to 599"]),
    ("annotation key not a qualified name", ("infra", "sandbox.podAnnotations", {"owner team": "x"}),
     ["sandbox.podAnnotations: 'owner team' is not valid", "expected: an annotation key"]),
    ("annotation prefix not a DNS name", ("infra", "sandbox.podAnnotations", {"a_b.com/x": "x"}),
     ["sandbox.podAnnotations: 'a_b.com/x' is not valid", "expected: an annotation key"]),
    ("annotations over 256 KiB", ("infra", "sandbox.podAnnotations", {"a": "x" * (256 * 1024)}),
     ["sandbox.podAnnotations: the annotations hold 262145 bytes (keys and values); the API refuses more than 262144",
      "expected: annotations of at most 256 KiB in all"]),
    ("label key prefix over 253", ("infra", "sandbox.podLabels", {"a" * 254 + "/b": "x"}),
     ["sandbox.podLabels: the prefix of 'aaaa",
      "has 254 characters; a key's prefix (before '/') is a DNS-1123 subdomain of at most 253"]),
    ("label key prefix of 253 is fine but its name over 63", ("infra", "sandbox.podLabels", {"a/" + "b" * 64: "x"}),
     ["sandbox.podLabels: 'a/" + "b" * 64 + "' is not valid", "expected: a label key"]),
    ("label value not a label value", ("infra", "sandbox.podLabels", {"team": "rl team"}),
     ["sandbox.podLabels.team: 'rl team' is not valid", "expected: a label value"]),
    ("nodeSelector key prefix over 253", ("infra", "kuberay.placement.gpu.nodeSelector", {"a" * 254 + "/b": "x"}),
     ["kuberay.placement.gpu.nodeSelector: the prefix of 'aaaa", "has 254 characters"]),
    ("pod anti-affinity weight 0", ("infra", "sandbox.affinity", {"podAntiAffinity": {
        "preferredDuringSchedulingIgnoredDuringExecution": [
            {"weight": 0, "podAffinityTerm": {"topologyKey": "kubernetes.io/hostname"}}]}}),
     ["sandbox.affinity.podAntiAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].weight: 0 is out of range"]),
    ("cpu divisor 3", ("infra", "sandbox.extraEnv", [{"name": "CPUS", "valueFrom": {
        "resourceFieldRef": {"resource": "limits.cpu", "divisor": "3"}}}]),
     ["sandbox.extraEnv[0].valueFrom.resourceFieldRef: divisor '3' is not one the API takes for limits.cpu",
      "expected 1m or 1"]),
    ("toleration key prefix over 253",
     ("infra", "sandbox.tolerations", [{"key": "a" * 254 + "/b", "operator": "Exists"}]),
     ["sandbox.tolerations[0].key: the prefix of 'aaaa", "has 254 characters"]),
    ("affinity key prefix over 253",
     ("infra", "kuberay.placement.head.affinity", required({"key": "a" * 254 + "/b", "operator": "Exists"})),
     ["matchExpressions[0].key: the prefix of 'aaaa", "has 254 characters"]),
    ("hpa policy period 0", ("infra", "sandbox.autoscaling.behavior",
                             {"scaleDown": {"policies": [{"type": "Pods", "value": 1, "periodSeconds": 0}]}}),
     ["sandbox.autoscaling.behavior.scaleDown.policies[0].periodSeconds: 0 is out of range",
      "greater than or equal to 1"]),
    ("hpa policy period over 1800", ("infra", "sandbox.autoscaling.behavior", {"scaleUp": {
        "policies": [{"type": "Percent", "value": 50, "periodSeconds": 1801}]}}),
     ["sandbox.autoscaling.behavior.scaleUp.policies[0].periodSeconds: 1801 is out of range",
      "less than or equal to 1800"]),
    ("hpa policy value 0", ("infra", "sandbox.autoscaling.behavior",
                            {"scaleUp": {"policies": [{"type": "Pods", "value": 0, "periodSeconds": 15}]}}),
     ["sandbox.autoscaling.behavior.scaleUp.policies[0].value: 0 is out of range"]),
    ("hpa policy type misspelt", ("infra", "sandbox.autoscaling.behavior",
                                  {"scaleUp": {"policies": [{"type": "Pod", "value": 1, "periodSeconds": 15}]}}),
     ["sandbox.autoscaling.behavior.scaleUp.policies[0].type: 'Pod' is not allowed", "did you mean: Pods"]),
    ("hpa no policies", ("infra", "sandbox.autoscaling.behavior", {"scaleUp": {"policies": []}}),
     ["sandbox.autoscaling.behavior.scaleUp.policies: [] is out of range", "at least 1 item"]),
    ("hpa selectPolicy bogus", ("infra", "sandbox.autoscaling.behavior", {"scaleDown": {"selectPolicy": "Bogus"}}),
     ["sandbox.autoscaling.behavior.scaleDown.selectPolicy: 'Bogus' is not allowed", "one of: Max, Min, Disabled"]),
    ("hpa window over 3600",
     ("infra", "sandbox.autoscaling.behavior", {"scaleDown": {"stabilizationWindowSeconds": 3601}}),
     ["sandbox.autoscaling.behavior.scaleDown.stabilizationWindowSeconds: 3601 is out of range"]),
    ("hpa behavior unknown key", ("infra", "sandbox.autoscaling.behavior", {"scaleDwon": {}}),
     ["sandbox.autoscaling.behavior.scaleDwon: unknown key", "did you mean: scaleDown"]),
    ("hpa tolerance negative", ("infra", "sandbox.autoscaling.behavior", {"scaleUp": {"tolerance": -0.1}}),
     ["sandbox.autoscaling.behavior.scaleUp.tolerance: quantity must not be negative"]),
    ("hpa target over int32", ("infra", "sandbox.autoscaling.targetCPUUtilizationPercentage", 2**31),
     ["sandbox.autoscaling.targetCPUUtilizationPercentage: 2147483648 is out of range"]),
    ("cpu limit below the request", ("infra", "sandbox.resources", {"cpu": "2", "cpuLimit": "1500m"}),
     ["sandbox.resources.cpuLimit: cpuLimit 1500m is below the cpu request 2;",
      "the API refuses a request above its limit", "expected: cpuLimit of at least 2, or a lower cpu"]),
    ("memory limit below the request", ("infra", "sandbox.resources", {"memory": "2Gi", "memoryLimit": "2G"}),
     ["sandbox.resources.memoryLimit: memoryLimit 2G is below the memory request 2Gi"]),
    ("minDomains with ScheduleAnyway", ("infra", "sandbox.topologySpreadConstraints",
                                        [{"topologyKey": "topology.kubernetes.io/zone", "minDomains": 2}]),
     ["sandbox.topologySpreadConstraints[0]: minDomains applies only with whenUnsatisfiable: DoNotSchedule"]),
    ("spread constraint twice", ("infra", "sandbox.topologySpreadConstraints",
                                 [{"topologyKey": "zone"}, {"topologyKey": "zone", "maxSkew": 2}]),
     [("sandbox.topologySpreadConstraints[1]: constraint 1 repeats constraint 0's topologyKey 'zone' and "
       "whenUnsatisfiable ScheduleAnyway")]),
    ("spread key empty", ("infra", "sandbox.topologySpreadConstraints", [{"topologyKey": ""}]),
     ["sandbox.topologySpreadConstraints[0].topologyKey: '' is not valid", "expected: a label key"]),
    ("spread selector In without values", ("infra", "sandbox.topologySpreadConstraints", [
        {"topologyKey": "zone", "labelSelector": {"matchExpressions": [{"key": "app", "operator": "In"}]}}]),
     ["sandbox.topologySpreadConstraints[0].labelSelector.matchExpressions[0]: operator In needs values"]),
    ("spread selector label value", ("infra", "sandbox.topologySpreadConstraints", [
        {"topologyKey": "zone", "labelSelector": {"matchLabels": {"app": "a b"}}}]),
     ["sandbox.topologySpreadConstraints[0].labelSelector.matchLabels.app: 'a b' is not valid"]),
    ("valueFrom without a source", ("infra", "sandbox.extraEnv", [{"name": "TOKEN", "valueFrom": {}}]),
     ["sandbox.extraEnv[0].valueFrom: valueFrom takes exactly one source, got 0"]),
    ("valueFrom with two sources", ("infra", "sandbox.extraEnv", [{"name": "TOKEN", "valueFrom": {
        "secretKeyRef": {"name": "s", "key": "k"}, "configMapKeyRef": {"name": "c", "key": "k"}}}]),
     ["sandbox.extraEnv[0].valueFrom: valueFrom takes exactly one source, got 2: secretKeyRef, configMapKeyRef"]),
    ("valueFrom secret key '..'", ("infra", "sandbox.extraEnv", [{"name": "TOKEN", "valueFrom": {
        "secretKeyRef": {"name": "s", "key": ".."}}}]),
     ["sandbox.extraEnv[0].valueFrom.secretKeyRef.key: '..' is not valid", "a key of a Secret or ConfigMap"]),
    ("valueFrom secret without a name", ("infra", "sandbox.extraEnv", [{"name": "TOKEN", "valueFrom": {
        "secretKeyRef": {"key": "token"}}}]),
     ["sandbox.extraEnv[0].valueFrom.secretKeyRef.name: required key is missing"]),
    ("valueFrom a pod field env cannot read", ("infra", "sandbox.extraEnv", [{"name": "P", "valueFrom": {
        "fieldRef": {"fieldPath": "spec.restartPolicy"}}}]),
     ["sandbox.extraEnv[0].valueFrom.fieldRef.fieldPath: 'spec.restartPolicy' is not valid", "expected: a pod field"]),
    ("valueFrom a resource env cannot read", ("infra", "sandbox.extraEnv", [{"name": "P", "valueFrom": {
        "resourceFieldRef": {"resource": "limits.gpu"}}}]),
     ["sandbox.extraEnv[0].valueFrom.resourceFieldRef.resource: 'limits.gpu' is not valid"]),
    ("uid over int32", ("infra", "sandbox.security.runAsUser", 2**31),
     ["sandbox.security.runAsUser: 2147483648 is out of range", "less than or equal to 2147483647"]),
    ("fsGroup over int32", ("infra", "infra.security.fsGroup", 2**31), ["infra.security.fsGroup: 2147483648 is out"]),
    ("workDir on the chart's /tmp", ("infra", "sandbox.security.workDir", "/tmp"),
     ["sandbox.security.workDir: workDir /tmp is the chart's own scratch mount"]),
    ("quota resource not a quota resource", ("infra", "infra.resourceQuota", {"enabled": True, "hard": {"gpus": 8}}),
     ["infra.resourceQuota.hard: 'gpus' is not valid", "expected: a quota resource"]),
    ("quota count not whole", ("infra", "infra.resourceQuota", {"enabled": True, "hard": {"pods": "1.5"}}),
     ["infra.resourceQuota.hard.pods: pods counts whole units: 1.5 is not a whole number"]),
    ("quota device not whole", ("infra", "infra.resourceQuota", {"enabled": True, "hard": {"nvidia.com/gpu": 0.5}}),
     ["infra.resourceQuota.hard.nvidia.com/gpu: nvidia.com/gpu counts whole units: 0.5 is not a whole number"]),
    ("limitRange default above max", ("infra", "infra.limitRange",
                                      {"enabled": True, "default": {"cpu": "4"}, "max": {"cpu": "2"}}),
     ["infra.limitRange.default.cpu: default 4 is above max 2 for cpu; the API wants min ≤ defaultRequest ≤ default"]),
    ("limitRange min above the default request", ("infra", "infra.limitRange",
                                                  {"min": {"memory": "1Gi"}, "defaultRequest": {"memory": "512Mi"}}),
     ["infra.limitRange.defaultRequest.memory: min 1Gi is above defaultRequest 512Mi for memory"]),
    ("ttl over int32", ("infra", "launch.ttlSecondsAfterFinished", 2**31),
     ["launch.ttlSecondsAfterFinished: 2147483648 is out of range"]),
    ("gpu pdb over int32", ("infra", "kuberay.pdb.minAvailable", 2**31), ["kuberay.pdb.minAvailable: 2147483648"]),
    ("sandbox node affinity weight", ("infra", "sandbox.affinity", {"nodeAffinity": {
        "preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 101, "preference": {}}]}}),
     ["sandbox.affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].weight: 101 is out of range"]),
    ("sandbox affinity unknown key", ("infra", "sandbox.affinity", {"podAntiAfinity": {}}),
     ["sandbox.affinity.podAntiAfinity: unknown key", "did you mean: podAntiAffinity"]),
]


@pytest.mark.parametrize("case_id, change, expected", CASES, ids=[c[0] for c in CASES])
def test_api_bound_refused_at_input(tmp_path, capsys, case_id, change, expected):
    refused_at_input(tmp_path, capsys, change, expected)
