"""Both Helm majors as the chart tests drive them (the pinned Helm 3 and Helm 4 from the tool cache), and the values
the chart's values.schema.json refuses (each with the key the refusal names)."""

from __future__ import annotations

import subprocess
from pathlib import Path

from generator.pinned_tools import REPO, tool_dir

HELMS = {"helm3": tool_dir("helm") / "helm", "helm4": tool_dir("helm4") / "helm"}


PLAIN_VALUES = REPO / "values-examples" / "sandbox-only.values.yaml"


def run_helm(name: str, *args: str | Path, check: bool = True) -> subprocess.CompletedProcess:
    proc = subprocess.run([str(HELMS[name]), *map(str, args)], capture_output=True, text=True, timeout=120)
    if check:
        assert proc.returncode == 0, proc.stderr
    return proc


def docs(text: str) -> list[str]:
    """helm's output split into documents, each without trailing blank lines: Helm 4 keeps the blank
    line a template file ends with, Helm 3 trims it; nothing else differs."""
    parts = text.split("\n---\n")
    return [p.rstrip("\n") for p in parts if p.strip() not in ("", "---")]



# (case, values overlay, the key Helm's schema error names)
BAD = [
    ("unknown key", {"sandbox": {"replcas": 3}}, "replcas"),
    ("negative replicas", {"sandbox": {"replicas": -1}}, "replicas"),
    ("bad quantity", {"sandbox": {"resources": {"cpu": "lots"}}}, "cpu"),
    ("bad cidr", {"sandbox": {"networkPolicy": {"allowEgress": False, "allowedEgressCidrs": ["10.0.0.0/40"]}}},
     "allowedEgressCidrs"),
    ("cidrs with open egress", {"sandbox": {"networkPolicy": {"allowedEgressCidrs": ["10.0.0.0/8"]}}},
     "allowedEgressCidrs"),
    ("unknown mode", {"launch": {"mode": "ray"}}, "mode"),
    ("attach without cluster", {"launch": {"mode": "attach"}}, "clusterName"),
    ("backend contradicts image", {"infra": {"backend": "sglang", "image": {"tag": "2026-vllm"}}}, "image"),
    ("rayjob name too long", {"recipe": {"name": "a" * 48}}, "name"),
    ("bad group name", {"kuberay": {"spec": {"workerGroupSpecs": [{"groupName": "critic"}]}}}, "groupName"),
    ("bad port", {"sandbox": {"port": 0}}, "port"),
    ("bad profile", {"sandbox": {"security": {"profile": "strict"}}}, "profile"),
    ("quota enabled without limits", {"infra": {"resourceQuota": {"enabled": True, "hard": {}}}}, "hard"),
    ("root under restricted", {"sandbox": {"security": {"profile": "restricted", "runAsUser": 0}}}, "runAsUser"),
    ("root under runAsNonRoot", {"infra": {"security": {"runAsNonRoot": True, "runAsUser": 0}}}, "runAsUser"),
    # Kueue: its names, its admission rules, suspend left to it
    ("queue not a Kueue name", {"launch": {"queue": "Training_Q"}}, "queue"),
    ("queue longer than a label value", {"launch": {"queue": "q" * 64}}, "queue"),
    ("priority class without a queue", {"launch": {"priorityClass": "high"}}, "queue"),
    ("queue in attach mode", {"launch": {"mode": "attach", "clusterName": "shared", "queue": "training"}}, "mode"),
    ("queued rayjob keeps its cluster", {"launch": {"queue": "training", "shutdownAfterJobFinishes": False}},
     "shutdownAfterJobFinishes"),
    ("queued with in-tree autoscaling",
     {"launch": {"queue": "training"}, "kuberay": {"spec": {"enableInTreeAutoscaling": True}}},
     "enableInTreeAutoscaling"),
    ("suspend in the overlay", {"kuberay": {"spec": {"suspend": False}}}, "/kuberay/spec"),
    ("topology without a queue", {"launch": {"topology": {"level": "example.com/rack"}}}, "queue"),
    ("topology in attach mode", {"launch": {"mode": "attach", "clusterName": "shared", "queue": "q",
                                            "topology": {"level": "example.com/rack"}}}, "mode"),
    ("topology level not a label key", {"launch": {"queue": "q", "topology": {"level": "rack level"}}}, "level"),
    ("topology mode both", {"launch": {"queue": "q", "topology": {"level": "a.io/rack", "mode": "both"}}}, "mode"),
    ("topology together with two multi-node fleets",
     {"launch": {"queue": "q", "topology": {"level": "a.io/rack", "groups": "together"}},
      "recipe": {"cluster": {"trainer": {"nodes": 2}, "inference": {"nodes": 3}}}}, "/recipe/cluster"),
    ("topology annotation in a placed fleet's overlay",
     {"launch": {"queue": "q", "topology": {"level": "a.io/rack"}}, "kuberay": {"spec": {"workerGroupSpecs": [
         {"groupName": "trainer", "template": {"metadata": {"annotations": {
             "kueue.x-k8s.io/podset-group-name": "g"}}}}]}}}, "podset-group-name"),
    ("multi-host placed fleet", {"launch": {"queue": "q", "topology": {"level": "a.io/rack"}}, "kuberay": {
        "spec": {"workerGroupSpecs": [{"groupName": "inference", "numOfHosts": 2}]}}}, "numOfHosts"),
    ("head in the fleets' PodSet group", {"launch": {"queue": "q", "topology": {"level": "a.io/rack"}}, "kuberay": {
        "spec": {"headGroupSpec": {"template": {"metadata": {"annotations": {
            "kueue.x-k8s.io/podset-group-name": "gpu-fleets"}}}}}}}, "podset-group-name"),
    ("stall timeout under the floor", {"launch": {"watch": {"stallTimeoutSeconds": 10}}}, "stallTimeoutSeconds"),
    ("stall guard without the watcher", {"launch": {"watch": {"enabled": False, "stallTimeoutSeconds": 600}}},
     "enabled"),
    ("stall guard in attach mode", {"launch": {"mode": "attach", "clusterName": "shared",
                                               "watch": {"stallTimeoutSeconds": 600}}}, "stallTimeoutSeconds"),
    # The API's bounds (what only `check` caught before): the schema twin refuses them too, so `helm install`
    # of a values file written by hand stops before the apiserver.
    ("maxUnavailable over 100%", {"sandbox": {"rollingUpdate": {"maxUnavailable": "101%"}}}, "maxUnavailable"),
    ("maxSurge over int32", {"sandbox": {"rollingUpdate": {"maxSurge": 2**31}}}, "maxSurge"),
    ("minReadySeconds at the progress deadline", {"sandbox": {"minReadySeconds": 600}}, "minReadySeconds"),
    ("annotation key not a qualified name", {"sandbox": {"podAnnotations": {"owner team": "x"}}}, "'owner team'"),
    # Helm names a bad mapping key by itself, not by its path
    ("label key prefix over 253", {"sandbox": {"podLabels": {"a" * 254 + "/b": "x"}}}, "a/b' does not match"),
    ("label value not a label value", {"sandbox": {"podLabels": {"team": "rl team"}}}, "podLabels"),
    ("nodeSelector key prefix over 253", {"kuberay": {"placement": {"gpu": {"nodeSelector": {"a" * 254 + "/b": "x"}}}}},
     "a/b' does not match"),
    ("toleration key prefix over 253",
     {"sandbox": {"tolerations": [{"key": "a" * 254 + "/b", "operator": "Exists"}]}}, "tolerations"),
    ("hpa policy period 0", {"sandbox": {"autoscaling": {"behavior": {"scaleDown": {
        "policies": [{"type": "Pods", "value": 1, "periodSeconds": 0}]}}}}}, "periodSeconds"),
    ("hpa policy period over 1800", {"sandbox": {"autoscaling": {"behavior": {"scaleUp": {
        "policies": [{"type": "Percent", "value": 1, "periodSeconds": 1801}]}}}}}, "periodSeconds"),
    ("hpa policy value 0", {"sandbox": {"autoscaling": {"behavior": {"scaleUp": {
        "policies": [{"type": "Pods", "value": 0, "periodSeconds": 15}]}}}}}, "value"),
    ("hpa no policies", {"sandbox": {"autoscaling": {"behavior": {"scaleUp": {"policies": []}}}}}, "policies"),
    ("hpa selectPolicy bogus", {"sandbox": {"autoscaling": {"behavior": {"scaleDown": {"selectPolicy": "Bogus"}}}}},
     "selectPolicy"),
    ("hpa window over 3600", {"sandbox": {"autoscaling": {"behavior": {"scaleDown": {
        "stabilizationWindowSeconds": 3601}}}}}, "stabilizationWindowSeconds"),
    ("minDomains with ScheduleAnyway", {"sandbox": {"topologySpreadConstraints": [
        {"topologyKey": "zone", "minDomains": 2}]}}, "whenUnsatisfiable"),
    ("spread key empty", {"sandbox": {"topologySpreadConstraints": [{"topologyKey": ""}]}}, "topologyKey"),
    ("spread selector In without values", {"sandbox": {"topologySpreadConstraints": [
        {"topologyKey": "zone", "labelSelector": {"matchExpressions": [{"key": "app", "operator": "In"}]}}]}},
     "matchExpressions"),
    ("valueFrom without a source", {"sandbox": {"extraEnv": [{"name": "T", "valueFrom": {}}]}}, "valueFrom"),
    ("valueFrom with two sources", {"sandbox": {"extraEnv": [{"name": "T", "valueFrom": {
        "secretKeyRef": {"name": "s", "key": "k"}, "fieldRef": {"fieldPath": "metadata.name"}}}]}}, "valueFrom"),
    ("valueFrom a pod field env cannot read", {"sandbox": {"extraEnv": [{"name": "T", "valueFrom": {
        "fieldRef": {"fieldPath": "spec.restartPolicy"}}}]}}, "fieldPath"),
    ("uid over int32", {"sandbox": {"security": {"runAsUser": 2**31}}}, "runAsUser"),
    ("workDir on the chart's /tmp", {"sandbox": {"security": {"workDir": "/tmp"}}}, "workDir"),
    ("quota resource not a quota resource", {"infra": {"resourceQuota": {"enabled": True, "hard": {"gpus": 8}}}},
     "'gpus'"),
    ("ttl over int32", {"launch": {"ttlSecondsAfterFinished": 2**31}}, "ttlSecondsAfterFinished"),
    ("sandbox node affinity weight", {"sandbox": {"affinity": {"nodeAffinity": {
        "preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 101, "preference": {}}]}}}}, "weight"),
    ("sandbox pod anti-affinity weight 0", {"sandbox": {"affinity": {"podAntiAffinity": {
        "preferredDuringSchedulingIgnoredDuringExecution": [
            {"weight": 0, "podAffinityTerm": {"topologyKey": "kubernetes.io/hostname"}}]}}}}, "weight"),
    ("pod affinity term without a topology key", {"kuberay": {"placement": {"gpu": {"affinity": {"podAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": [{"labelSelector": {}}]}}}}}}, "topologyKey"),
    ("pod affinity key not a label key", {"sandbox": {"affinity": {"podAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": [{"topologyKey": "not a key"}]}}}}, "topologyKey"),
    ("toleration seconds over int64", {"sandbox": {"tolerations": [
        {"key": "k", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 2**63}]}}, "tolerationSeconds"),
]

