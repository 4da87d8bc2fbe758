{{/*
The RayClusterSpec shared by the RayJob (rayjob mode) and the bare RayCluster (bringup).
Per group: base spec from values -> the free-form kuberay.spec overlay merged over it ->
the runtime invariants applied last, so no overlay can remove them (ray/_group.tpl).
*/}}

{{/* A tree with its null map values dropped (Helm keeps the nulls of values.yaml and of -f files),
wrapped as {"v": …}: JSON numbers come back as float64, as everywhere fromJson is used.
{"a": null, "b": [{"c": null, "d": 1}]} -> {"v": {"b": [{"d": 1}]}} */}}
{{- define "dockyard.ray.compact" -}}
{{- $out := . -}}
{{- if kindIs "map" . -}}
{{- $out = dict -}}
{{- range $k, $v := . -}}
{{- if not (kindIs "invalid" $v) -}}{{- $_ := set $out $k (include "dockyard.ray.compact" $v | fromJson).v -}}{{- end -}}
{{- end -}}
{{- else if kindIs "slice" . -}}
{{- $out = list -}}
{{- range . -}}{{- $out = append $out (include "dockyard.ray.compact" . | fromJson).v -}}{{- end -}}
{{- end -}}
{{- toJson (dict "v" $out) -}}
{{- end -}}

{{/* Where one kind of Ray pod lands (kuberay.placement), nulls dropped: trainer and inference take
each of nodeSelector, tolerations and affinity from their own entry when set, else from `gpu`; the
head and the submitter from theirs, an empty affinity preferring CPU nodes (dockyard.preferCpuNodes).
dict "ctx" $ "role" "trainer" -> {"nodeSelector": {}, "tolerations": [{"key": "nvidia.com/gpu",
  "operator": "Exists", "effect": "NoSchedule"}], "affinity": {}}
dict "ctx" $ "role" "head" -> {"nodeSelector": {}, "tolerations": [], "affinity": <dockyard.preferCpuNodes>} */}}
{{- define "dockyard.ray.placement" -}}
{{- $all := .ctx.Values.kuberay.placement | default dict -}}
{{- $out := dict -}}
{{- if has .role (include "dockyard.const.workerGroups" . | fromJsonArray) -}}
{{- $own := index $all .role | default dict -}}
{{- $gpu := $all.gpu | default dict -}}
{{- range $key := list "nodeSelector" "tolerations" "affinity" -}}
{{- $v := index $own $key -}}
{{- if kindIs "invalid" $v -}}{{- $v = index $gpu $key -}}{{- end -}}
{{- $_ := set $out $key $v -}}
{{- end -}}
{{- else -}}
{{- $out = index $all .role | default dict -}}
{{- end -}}
{{- $out = (include "dockyard.ray.compact" $out | fromJson).v -}}
{{- if and (not (has .role (include "dockyard.const.workerGroups" . | fromJsonArray))) (not $out.affinity) -}}
{{- $_ := set $out "affinity" (include "dockyard.preferCpuNodes" .ctx | fromYaml) -}}
{{- end -}}
{{- toJson $out -}}
{{- end -}}

{{/* The placement of a pod spec as YAML keys (those set only).
dict "ctx" $ "role" "trainer" -> tolerations: [{key: nvidia.com/gpu, operator: Exists, effect: NoSchedule}] */}}
{{- define "dockyard.ray.placementYaml" -}}
{{- $place := include "dockyard.ray.placement" . | fromJson -}}
{{- range $key := list "nodeSelector" "tolerations" "affinity" -}}
{{- with index $place $key }}
{{ $key }}:
  {{- toYaml . | nindent 2 }}
{{- end -}}
{{- end -}}
{{- end -}}

{{/* The pod template of a group before any overlay: labels, priority, security, one Ray container.
dict "ctx" $ "role" "head" "container" "ray-head" "resources" {"cpu": "2", "memory": "8Gi"}
     "ports" [...] "mounts" [...] "volumes" [...]   (ports, mounts and volumes optional)
-> metadata: {labels: …}
   spec: {affinity: …, containers: [{name: ray-head, resources: {requests: …, limits: …}, …}], volumes: […]} */}}
{{- define "dockyard.ray.podBase" -}}
{{- $ctx := .ctx -}}
{{- $sec := $ctx.Values.infra.security -}}
metadata:
  labels:
    {{- include "dockyard.componentLabels" (dict "ctx" $ctx "component" "ray" "fleet" .role) | nindent 4 }}
spec:
  {{- if eq $ctx.Values.sandbox.backend "agent-sandbox" }}
  # The release's own account, the one the sandbox claims' RoleBinding names (an overlay may name another).
  serviceAccountName: {{ include "dockyard.ray.serviceAccountName" $ctx | quote }}
  {{- end }}
  {{- with $ctx.Values.infra.priorityClassName }}
  priorityClassName: {{ . | quote }}
  {{- end }}
  {{- with include "dockyard.ray.placementYaml" (dict "ctx" $ctx "role" .role) | trimPrefix "\n" }}
  {{- . | nindent 2 }}
  {{- end }}
  {{- if $sec.enabled }}
  securityContext:
    {{- include "dockyard.podSecurityContext" $sec | nindent 4 }}
  {{- end }}
  containers:
    - name: {{ .container | quote }}
      {{- with .ports }}
      ports:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      resources:
        requests:
          {{- toYaml .resources | nindent 10 }}
        limits:
          {{- toYaml .resources | nindent 10 }}
      {{- if $sec.enabled }}
      securityContext:
        {{- include "dockyard.containerSecurityContext" $sec | nindent 8 }}
      {{- end }}
      {{- $mounts := .mounts | default list }}
      {{- if include "dockyard.readOnlyRoot" $sec }}
      {{- $mounts = concat $mounts (include "dockyard.scratchMounts" $sec | fromYamlArray) }}
      {{- end }}
      {{- with $mounts }}
      volumeMounts:
        {{- toYaml . | nindent 8 }}
      {{- end }}
  {{- $volumes := .volumes | default list }}
  {{- if include "dockyard.readOnlyRoot" $sec }}
  {{- $volumes = concat $volumes (include "dockyard.scratchVolumes" $sec | fromYamlArray) }}
  {{- end }}
  {{- with $volumes }}
  volumes:
    {{- toYaml . | nindent 4 }}
  {{- end }}
{{- end -}}

{{/* The head group before any overlay: the dashboard on all interfaces, the recipe mounted.
$ -> rayStartParams: {dashboard-host: "0.0.0.0"}
     template: <dockyard.ray.podBase of role head, ports gcs 6379, dashboard 8265, client 10001> */}}
{{- define "dockyard.ray.headBase" -}}
{{- $v := .Values -}}
{{- $res := dict "cpu" (include "dockyard.quantity" $v.kuberay.head.cpu) "memory" (include "dockyard.quantity" $v.kuberay.head.memory) -}}
{{- $ports := list (dict "name" "gcs" "containerPort" 6379) (dict "name" "dashboard" "containerPort" 8265) (dict "name" "client" "containerPort" 10001) -}}
{{- $mounts := list (dict "name" "recipe" "mountPath" $v.launch.configMountPath "readOnly" true) -}}
{{- $volumes := list (dict "name" "recipe" "configMap" (dict "name" (include "dockyard.recipe.name" .))) -}}
rayStartParams:
  dashboard-host: "0.0.0.0"
template:
  {{- include "dockyard.ray.podBase" (dict "ctx" . "role" "head" "container" "ray-head" "resources" $res "ports" $ports "mounts" $mounts "volumes" $volumes) | nindent 2 }}
{{- end -}}

{{/* A worker group before any overlay: the GPUs of the recipe's cluster.<role>.
dict "ctx" $ "role" "trainer" -> groupName: "trainer"
                                 rayStartParams: {}
                                 template: <dockyard.ray.podBase, resources cpu, memory, nvidia.com/gpu> */}}
{{- define "dockyard.ray.workerBase" -}}
{{- $v := .ctx.Values -}}
{{- $shape := index $v.recipe.cluster .role -}}
{{- $res := dict "cpu" (include "dockyard.quantity" $v.kuberay.worker.cpu) "memory" (include "dockyard.quantity" $v.kuberay.worker.memory) "nvidia.com/gpu" (int64 $shape.gpusPerNode) -}}
groupName: {{ .role | quote }}
rayStartParams: {}
template:
  {{- include "dockyard.ray.podBase" (dict "ctx" .ctx "role" .role "container" "ray-worker" "resources" $res) | nindent 2 }}
{{- end -}}

{{/* The RayClusterSpec: kuberay.spec's cluster-level keys over rayVersion, then the head and the
trainer and inference worker groups, each merged with its overlay (matched by groupName; the
overlay's names are checked in dockyard.validateValues).
$ -> rayVersion: 2.52.0
     headGroupSpec: <dockyard.ray.group head>
     workerGroupSpecs: [<dockyard.ray.group trainer>, <dockyard.ray.group inference>] */}}
{{- define "dockyard.ray.clusterSpec" -}}
{{- $overlay := deepCopy .Values.kuberay.spec -}}
{{- $workerOvs := dict -}}
{{- $roles := include "dockyard.const.workerGroups" . | fromJsonArray -}}
{{- range ($overlay.workerGroupSpecs | default list) -}}
{{- if has .groupName $roles -}}{{- $_ := set $workerOvs .groupName . -}}{{- end -}}
{{- end -}}
{{- /* suspend is Kueue's (a set one is refused, dockyard.validate.kueue): not even a null of it is rendered */ -}}
{{- $spec := mergeOverwrite (dict "rayVersion" .Values.kuberay.rayVersion) (omit $overlay "headGroupSpec" "workerGroupSpecs" "suspend") -}}
{{- $head := include "dockyard.ray.headBase" . | fromYaml -}}
{{- $_ := set $spec "headGroupSpec" (include "dockyard.ray.group" (dict "ctx" . "role" "head" "base" $head "overlay" $overlay.headGroupSpec) | fromJson) -}}
{{- $workers := list -}}
{{- range $role := $roles -}}
{{- $base := include "dockyard.ray.workerBase" (dict "ctx" $ "role" $role) | fromYaml -}}
{{- $workers = append $workers (include "dockyard.ray.group" (dict "ctx" $ "role" $role "base" $base "overlay" (get $workerOvs $role)) | fromJson) -}}
{{- end -}}
{{- $_ := set $spec "workerGroupSpecs" $workers -}}
{{- toYaml $spec -}}
{{- end -}}
