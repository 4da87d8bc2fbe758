{{/*
The RayClusterSpec shared by the RayJob (rayjob mode) and the bare RayCluster (bringup).
Per group: base spec from values -> the free-form kuberay.spec overlay merged over it ->
the runtime invariants applied last, so no overlay can remove them.
*/}}

{{- define "dockyard.ray.podBase" -}}
{{- $ctx := .ctx -}}
{{- $sec := $ctx.Values.infra.security -}}
metadata:
  labels:
    {{- include "dockyard.componentLabels" (dict "ctx" $ctx "component" "ray" "fleet" .role) | nindent 4 }}
spec:
  {{- with $ctx.Values.infra.priorityClassName }}
  priorityClassName: {{ . | quote }}
  {{- end }}
  {{- if eq .role "head" }}
  affinity:
    {{- include "dockyard.preferCpuNodes" $ctx | nindent 4 }}
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

{{- define "dockyard.ray.workerBase" -}}
{{- $v := .ctx.Values -}}
{{- $shape := index $v.recipe.cluster .role -}}
{{- $res := dict "cpu" (include "dockyard.quantity" $v.kuberay.worker.cpu) "memory" (include "dockyard.quantity" $v.kuberay.worker.memory) "nvidia.com/gpu" (int64 $shape.gpusPerNode) -}}
groupName: {{ .role | quote }}
rayStartParams: {}
template:
  {{- include "dockyard.ray.podBase" (dict "ctx" .ctx "role" .role "container" "ray-worker" "resources" $res) | nindent 2 }}
{{- end -}}

{{/* dict "ctx" $ "role" R "base" <group dict> "overlay" <overlay dict>: the merged group. */}}
{{- define "dockyard.ray.group" -}}
{{- $ctx := .ctx -}}
{{- $role := .role -}}
{{- $base := .base -}}
{{- $ov := deepCopy (.overlay | default dict) -}}
{{- $_ := unset $ov "groupName" -}}
{{- $ovTpl := deepCopy ($ov.template | default dict) -}}
{{- $_ := unset $ov "template" -}}
{{- $ovSpec := deepCopy ($ovTpl.spec | default dict) -}}
{{- $_ := unset $ovTpl "spec" -}}
{{- $ovContainers := $ovSpec.containers | default list -}}
{{- $ovVolumes := $ovSpec.volumes | default list -}}
{{- $ovSecrets := $ovSpec.imagePullSecrets | default list -}}
{{- $ovSpec = omit $ovSpec "containers" "volumes" "imagePullSecrets" -}}
{{- $tpl := $base.template -}}
{{- $spec := $tpl.spec -}}
{{- $main := first $spec.containers -}}
{{- $group := mergeOverwrite (omit $base "template") $ov -}}
{{- $tpl = mergeOverwrite (omit $tpl "spec") $ovTpl -}}
{{- $spec = mergeOverwrite (omit $spec "containers" "volumes") $ovSpec -}}

{{- /* KubeRay's own rules (validation.go), checked here too for plain `helm install`. */ -}}
{{- $params := $group.rayStartParams | default dict -}}
{{- if hasKey $params "labels" -}}
{{- fail (printf "kuberay.spec %s: rayStartParams.labels is refused by KubeRay; use the group's labels field" $role) -}}
{{- end -}}
{{- if and $group.resources (or (hasKey $params "num-cpus") (hasKey $params "num-gpus") (hasKey $params "memory") (hasKey $params "resources")) -}}
{{- fail (printf "kuberay.spec %s: Ray resources set both in group-level resources and rayStartParams; KubeRay refuses this" $role) -}}
{{- end -}}

{{- /* Containers: an overlay container named like the Ray container (or unnamed) merges into it;
env and volumeMounts append; any other container is a sidecar. */ -}}
{{- $sidecars := list -}}
{{- range $ovContainers -}}
{{- if or (not .name) (eq .name $main.name) -}}
{{- $c := omit . "env" "volumeMounts" -}}
{{- $_ := set $main "env" (concat ($main.env | default list) (.env | default list)) -}}
{{- $mounts := concat ($main.volumeMounts | default list) (.volumeMounts | default list) -}}
{{- if $mounts -}}{{- $_ := set $main "volumeMounts" $mounts -}}{{- end -}}
{{- $main = mergeOverwrite $main $c -}}
{{- else -}}
{{- $sidecars = append $sidecars . -}}
{{- end -}}
{{- end -}}

{{- /* Invariants. */ -}}
{{- $v := $ctx.Values -}}
{{- $_ := set $main "image" (include "dockyard.image" (dict "img" $v.infra.image)) -}}
{{- $_ := set $main "imagePullPolicy" $v.infra.image.pullPolicy -}}
{{- if ne $role "head" -}}
{{- $gpus := int64 (index $v.recipe.cluster $role).gpusPerNode -}}
{{- $_ := set $main.resources.limits "nvidia.com/gpu" $gpus -}}
{{- $_ := set $main.resources.requests "nvidia.com/gpu" $gpus -}}
{{- $nodes := int64 (index $v.recipe.cluster $role).nodes -}}
{{- $_ := set $group "replicas" $nodes -}}
{{- $_ := set $group "minReplicas" $nodes -}}
{{- $_ := set $group "maxReplicas" $nodes -}}
{{- end -}}
{{- $inv := list (dict "name" "RAY_ENABLE_UV_RUN_RUNTIME_ENV" "value" "0") (dict "name" "DOCKYARD_FLEET_ROLE" "value" $role) -}}
{{- if $v.sandbox.injectUrls -}}
{{- $inv = append $inv (dict "name" "DOCKYARD_SANDBOX_URLS" "value" (include "dockyard.sandbox.url" $ctx)) -}}
{{- end -}}
{{- $invNames := list "RAY_ENABLE_UV_RUN_RUNTIME_ENV" "DOCKYARD_FLEET_ROLE" "DOCKYARD_SANDBOX_URLS" -}}
{{- $containers := list -}}
{{- range $c := prepend $sidecars $main -}}
{{- $env := list -}}
{{- range ($c.env | default list) -}}
{{- if not (has .name $invNames) -}}{{- $env = append $env . -}}{{- end -}}
{{- end -}}
{{- $_ := set $c "env" (concat $env $inv) -}}
{{- $containers = append $containers $c -}}
{{- end -}}
{{- $_ := set $spec "containers" $containers -}}
{{- $volumes := concat ($base.template.spec.volumes | default list) $ovVolumes -}}
{{- with $volumes -}}{{- $_ := set $spec "volumes" . -}}{{- end -}}
{{- $secrets := list -}}
{{- range $v.infra.imagePullSecrets -}}{{- $secrets = append $secrets (dict "name" .) -}}{{- end -}}
{{- range $ovSecrets -}}
{{- if not (has . $secrets) -}}{{- $secrets = append $secrets . -}}{{- end -}}
{{- end -}}
{{- with $secrets -}}{{- $_ := set $spec "imagePullSecrets" . -}}{{- end -}}
{{- /* The fleet's Ray resource: group-level resources when the overlay uses them, else rayStartParams. */ -}}
{{- $tag := printf "dockyard_fleet_%s" $role -}}
{{- if $group.resources -}}
{{- $_ := set $group.resources $tag "1" -}}
{{- else -}}
{{- $res := dict -}}
{{- with $params.resources -}}
{{- $res = . | trimAll "\"'" | replace "\\\"" "\"" | fromJson -}}
{{- if hasKey $res "Error" -}}
{{- fail (printf "kuberay.spec %s: rayStartParams.resources is not a JSON object: %s" $role $params.resources) -}}
{{- end -}}
{{- end -}}
{{- $_ := set $res $tag 1 -}}
{{- /* Single-quoted JSON: one shell word for `ray start --resources=...`, and what KubeRay parses
(it trims the outer quotes and reads JSON: a backslash-escaped form fails there, and KubeRay then
drops the group's num-gpus — seen by `dockyard-k8s smoke` as a fleet with 0 GPUs). */ -}}
{{- $json := toJson $res -}}
{{- if contains "'" $json -}}
{{- fail (printf "kuberay.spec %s: a Ray resource name holds a single quote: %s" $role $json) -}}
{{- end -}}
{{- $_ := set $params "resources" (printf "'%s'" $json) -}}
{{- $_ := set $group "rayStartParams" $params -}}
{{- end -}}
{{- $_ := set $tpl "spec" $spec -}}
{{- $_ := set $group "template" $tpl -}}
{{- /* JSON, not YAML: Helm's toYaml trims the final newline, so a string ending in one, last in
the group, lost it on the way back. */ -}}
{{- toJson $group -}}
{{- end -}}

{{- define "dockyard.ray.clusterSpec" -}}
{{- $overlay := deepCopy .Values.kuberay.spec -}}
{{- $headOv := $overlay.headGroupSpec | default dict -}}
{{- $workerOvs := dict -}}
{{- range ($overlay.workerGroupSpecs | default list) -}}
{{- if not (has .groupName (list "trainer" "inference")) -}}
{{- fail (printf "kuberay.spec.workerGroupSpecs: unknown groupName %q (expected trainer or inference)" (toString .groupName)) -}}
{{- end -}}
{{- if hasKey $workerOvs .groupName -}}
{{- fail (printf "kuberay.spec.workerGroupSpecs: duplicate groupName %q" .groupName) -}}
{{- end -}}
{{- $_ := set $workerOvs .groupName . -}}
{{- end -}}
{{- $rest := omit $overlay "headGroupSpec" "workerGroupSpecs" -}}
{{- $head := include "dockyard.ray.headBase" . | fromYaml -}}
{{- $spec := dict "rayVersion" .Values.kuberay.rayVersion -}}
{{- $spec = mergeOverwrite $spec $rest -}}
{{- $_ := set $spec "headGroupSpec" (include "dockyard.ray.group" (dict "ctx" . "role" "head" "base" $head "overlay" $headOv) | fromJson) -}}
{{- $workers := list -}}
{{- range $role := list "trainer" "inference" -}}
{{- $base := include "dockyard.ray.workerBase" (dict "ctx" $ "role" $role) | fromYaml -}}
{{- $workers = append $workers (include "dockyard.ray.group" (dict "ctx" $ "role" $role "base" $base "overlay" (get $workerOvs $role)) | fromJson) -}}
{{- end -}}
{{- $_ := set $spec "workerGroupSpecs" $workers -}}
{{- toYaml $spec -}}
{{- end -}}
