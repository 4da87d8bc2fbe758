{{/*
GENERATED from the Python by `make schema` (generator/maint/chart_constants.py): edit the Python, not
this file. Each define prints one constant as JSON: include "dockyard.const.<name>" . | fromJson
(a mapping) or fromJsonArray (a list).
*/}}

{{/* The worker groups of the RayCluster, each a GPU fleet (models/infra.py GROUPS). */}}
{{- define "dockyard.const.workerGroups" -}}["trainer", "inference"]{{- end -}}

{{/* Every Ray group, the head first (storage_rules.py ALL_GROUPS). */}}
{{- define "dockyard.const.rayGroups" -}}["head", "trainer", "inference"]{{- end -}}

{{/* The env the chart sets in every container of the head and both fleets, which infra.env and an overlay may not set (models/env.py GPU_CHART_ENV). */}}
{{- define "dockyard.const.gpuChartEnv" -}}["RAY_ENABLE_UV_RUN_RUNTIME_ENV", "DOCKYARD_FLEET_ROLE", "DOCKYARD_SANDBOX_URLS", "DOCKYARD_SANDBOX_WARM_POOL", "DOCKYARD_SANDBOX_TEMPLATE", "DOCKYARD_SANDBOX_NAMESPACE", "DOCKYARD_SANDBOX_PORT"]{{- end -}}

{{/* The env kuberay.network owns in every container of both fleets (fabric_rules.py FABRIC_ENV). */}}
{{- define "dockyard.const.fabricEnv" -}}["NCCL_SOCKET_IFNAME", "GLOO_SOCKET_IFNAME", "NCCL_IB_HCA", "FI_PROVIDER"]{{- end -}}

{{/* Per sandbox backend, the keys only it reads, with their defaults as JSON: under the other backend each must keep its default (rules.py POOL_ONLY_KEYS, AGENT_SANDBOX_ONLY_KEYS). */}}
{{- define "dockyard.const.backendOnlyKeys" -}}{"pool": [{"key": "autoscaling.enabled", "path": ["autoscaling", "enabled"], "default": "false"}, {"key": "rollingUpdate.maxSurge", "path": ["rollingUpdate", "maxSurge"], "default": "\"25%\""}, {"key": "rollingUpdate.maxUnavailable", "path": ["rollingUpdate", "maxUnavailable"], "default": "0"}, {"key": "minReadySeconds", "path": ["minReadySeconds"], "default": "5"}, {"key": "pdb.enabled", "path": ["pdb", "enabled"], "default": "true"}, {"key": "pdb.maxUnavailable", "path": ["pdb", "maxUnavailable"], "default": "1"}], "agent-sandbox": [{"key": "warmPool.updateStrategy", "path": ["warmPool", "updateStrategy"], "default": "\"Recreate\""}]}{{- end -}}

{{/* The volumes of infra.storage, in the order they are mounted (storage_rules.py LAYOUT). */}}
{{- define "dockyard.const.storageKeys" -}}["checkpoints", "modelCache", "logs"]{{- end -}}

{{/* Per volume: its mount path, the env that names it, the suffix of a created claim's name (storage_rules.py LAYOUT). */}}
{{- define "dockyard.const.storageLayout" -}}{"checkpoints": {"path": "/dockyard/checkpoints", "env": ["DOCKYARD_CHECKPOINT_DIR"], "suffix": "checkpoints"}, "modelCache": {"path": "/dockyard/model-cache", "env": ["DOCKYARD_MODEL_CACHE_DIR", "HF_HOME"], "suffix": "model-cache"}, "logs": {"path": "/dockyard/logs", "env": ["DOCKYARD_LOG_DIR"], "suffix": "logs"}}{{- end -}}

{{/* The env set to 1 with infra.storage.modelCache.offline (storage_rules.py OFFLINE_ENV). */}}
{{- define "dockyard.const.storageOfflineEnv" -}}["HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE"]{{- end -}}

{{/* The access modes of a claim the chart creates, unless given (storage_rules.py DEFAULT_ACCESS_MODES). */}}
{{- define "dockyard.const.defaultAccessModes" -}}["ReadWriteMany"]{{- end -}}

{{/* The RayJob's default preRunningDeadlineSeconds, rendered when launch.preRunningDeadlineSeconds is unset and kuberay.version is at least `since`, the KubeRay minor that added the field (version_rules.py PRE_RUNNING_DEADLINE, PRE_RUNNING_SINCE). */}}
{{- define "dockyard.const.preRunningDeadline" -}}{"seconds": 3600, "since": "1.6"}{{- end -}}
