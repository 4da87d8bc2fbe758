{{/*
infra.storage in the GPU pods (docs/storage.md): each volume set (checkpoints, modelCache, logs) is a
claim mounted into the Ray container of the groups in its mountOn, at a fixed path named by env. Applied
by dockyard.ray.group after the kuberay.spec overlay, so no overlay removes or moves them. The claims the
chart creates are ray/pvc.yaml. The table is generator/inputs/storage_rules.py's (dockyard.const.storageLayout).
*/}}

{{/* The layout: per volume key, the mount path, the env naming it, the suffix of a created claim's name
(dockyard.const.storageLayout), and the pod volume's name, dockyard-<suffix>.
$ -> {"checkpoints": {"path": "/dockyard/checkpoints", "env": ["DOCKYARD_CHECKPOINT_DIR"], "suffix": "checkpoints",
      "volume": "dockyard-checkpoints"}, "modelCache": {…}, "logs": {…}} */}}
{{- define "dockyard.storage.layout" -}}
{{- $layout := include "dockyard.const.storageLayout" . | fromJson -}}
{{- range $key, $l := $layout -}}{{- $_ := set $l "volume" (printf "dockyard-%s" $l.suffix) -}}{{- end -}}
{{- toJson $layout -}}
{{- end -}}

{{/* The claim a volume mounts: its claimName, else the one the chart creates, named after the release
(the same on every run, so a second run mounts the same claim).
dict "ctx" $ "key" "modelCache" -> grpo-swe-model-cache */}}
{{- define "dockyard.storage.claimName" -}}
{{- $vol := index .ctx.Values.infra.storage .key -}}
{{- if $vol.claimName -}}
{{- $vol.claimName -}}
{{- else -}}
{{- printf "%s-%s" (include "dockyard.fullname" .ctx) (index (include "dockyard.storage.layout" . | fromJson) .key).suffix -}}
{{- end -}}
{{- end -}}

{{/* What one group gets: its pod volumes, the Ray container's mounts and env.
dict "ctx" $ "role" "trainer" with infra.storage.checkpoints {size: 1Ti}
-> {"volumes": [{"name": "dockyard-checkpoints", "persistentVolumeClaim": {"claimName": "grpo-swe-checkpoints"}}],
    "mounts": [{"name": "dockyard-checkpoints", "mountPath": "/dockyard/checkpoints"}],
    "env": [{"name": "DOCKYARD_CHECKPOINT_DIR", "value": "/dockyard/checkpoints"}]} */}}
{{- define "dockyard.ray.storage" -}}
{{- $ctx := .ctx -}}
{{- $role := .role -}}
{{- $all := $ctx.Values.infra.storage | default dict -}}
{{- $layout := include "dockyard.storage.layout" . | fromJson -}}
{{- $volumes := list -}}
{{- $mounts := list -}}
{{- $env := list -}}
{{- range $key := include "dockyard.const.storageKeys" . | fromJsonArray -}}
{{- $vol := index $all $key -}}
{{- if and $vol (has $role ($vol.mountOn | default (include "dockyard.const.rayGroups" $ | fromJsonArray))) -}}
{{- $l := index $layout $key -}}
{{- $volumes = append $volumes (dict "name" $l.volume "persistentVolumeClaim" (dict "claimName" (include "dockyard.storage.claimName" (dict "ctx" $ctx "key" $key)))) -}}
{{- $mounts = append $mounts (dict "name" $l.volume "mountPath" $l.path) -}}
{{- range $l.env -}}{{- $env = append $env (dict "name" . "value" $l.path) -}}{{- end -}}
{{- if and (eq $key "modelCache") $vol.offline -}}
{{- range include "dockyard.const.storageOfflineEnv" $ | fromJsonArray -}}{{- $env = append $env (dict "name" . "value" "1") -}}{{- end -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- toJson (dict "volumes" $volumes "mounts" $mounts "env" $env) -}}
{{- end -}}

{{/* The head's init container that fills the model cache (infra.storage.modelCache.fill): it runs before
the head's Ray starts, and KubeRay's workers wait for the head, so the gang starts on a filled cache. Online
(no HF_HUB_OFFLINE), with the cache mounted and HF_HOME set, infra.env and infra.envFrom (a gated model's
token reaches it from its Secret), the head's resources and security.
$ -> {"name": "model-cache-fill", "image": "…", "command": […], "env": […], "volumeMounts": […], …} */}}
{{- define "dockyard.ray.fillContainer" -}}
{{- $v := .Values -}}
{{- $mc := $v.infra.storage.modelCache -}}
{{- $sec := $v.infra.security -}}
{{- $l := (include "dockyard.storage.layout" . | fromJson).modelCache -}}
{{- $img := $mc.fill.image | default dict -}}
{{- $res := dict "cpu" (include "dockyard.quantity" $v.kuberay.head.cpu) "memory" (include "dockyard.quantity" $v.kuberay.head.memory) -}}
{{- $env := list -}}
{{- /* infra.env first (a gated model's token, by secretKeyRef), the cache's own names after it (they win) */ -}}
{{- $cache := dict -}}
{{- range $l.env -}}{{- $_ := set $cache . true -}}{{- end -}}
{{- range ($v.infra.env | default list) -}}
{{- if not (hasKey $cache .name) -}}{{- $env = append $env . -}}{{- end -}}
{{- end -}}
{{- range $l.env -}}{{- $env = append $env (dict "name" . "value" $l.path) -}}{{- end -}}
{{- $mounts := list (dict "name" $l.volume "mountPath" $l.path) -}}
{{- if include "dockyard.readOnlyRoot" $sec -}}
{{- $mounts = concat $mounts (include "dockyard.scratchMounts" $sec | fromYamlArray) -}}
{{- end -}}
{{- $c := dict "name" "model-cache-fill"
  "image" (include "dockyard.image" (dict "img" $img "fallback" $v.infra.image))
  "imagePullPolicy" ($img.pullPolicy | default $v.infra.image.pullPolicy)
  "command" $mc.fill.command "env" $env "volumeMounts" $mounts
  "resources" (dict "requests" $res "limits" $res) -}}
{{- with $v.infra.envFrom -}}{{- $_ := set $c "envFrom" . -}}{{- end -}}
{{- if $sec.enabled -}}
{{- $_ := set $c "securityContext" (include "dockyard.containerSecurityContext" $sec | fromYaml) -}}
{{- end -}}
{{- toJson $c -}}
{{- end -}}

{{/* A group's pod spec with its storage pinned: the overlay's volumes of the storage names, the Ray
container's mounts of those names or paths and its env of the storage names are replaced by the chart's;
the head gets the fill init container (an overlay's of the same name is replaced).
dict "ctx" $ "role" "head" "spec" {…} -> {…, "volumes": [… storage], "containers": [ray container with mounts, env], "initContainers": [… fill]} */}}
{{- define "dockyard.ray.pinStorage" -}}
{{- $spec := .spec -}}
{{- $st := include "dockyard.ray.storage" . | fromJson -}}
{{- if $st.volumes -}}
{{- $names := list -}}
{{- $paths := list -}}
{{- range $st.mounts -}}{{- $names = append $names .name -}}{{- $paths = append $paths .mountPath -}}{{- end -}}
{{- $envNames := list -}}
{{- range $st.env -}}{{- $envNames = append $envNames .name -}}{{- end -}}
{{- $volumes := list -}}
{{- range ($spec.volumes | default list) -}}
{{- if not (has .name $names) -}}{{- $volumes = append $volumes . -}}{{- end -}}
{{- end -}}
{{- $_ := set $spec "volumes" (concat $volumes $st.volumes) -}}
{{- $main := first $spec.containers -}}
{{- $mounts := list -}}
{{- range ($main.volumeMounts | default list) -}}
{{- if not (or (has .name $names) (has (trimSuffix "/" .mountPath) $paths)) -}}{{- $mounts = append $mounts . -}}{{- end -}}
{{- end -}}
{{- $_ := set $main "volumeMounts" (concat $mounts $st.mounts) -}}
{{- $env := list -}}
{{- range ($main.env | default list) -}}
{{- if not (has .name $envNames) -}}{{- $env = append $env . -}}{{- end -}}
{{- end -}}
{{- $_ := set $main "env" (concat $env $st.env) -}}
{{- $mc := .ctx.Values.infra.storage.modelCache -}}
{{- if and (eq .role "head") $mc $mc.fill -}}
{{- $inits := list -}}
{{- range ($spec.initContainers | default list) -}}
{{- if ne .name "model-cache-fill" -}}{{- $inits = append $inits . -}}{{- end -}}
{{- end -}}
{{- $_ := set $spec "initContainers" (append $inits (include "dockyard.ray.fillContainer" .ctx | fromJson)) -}}
{{- end -}}
{{- end -}}
{{- toJson $spec -}}
{{- end -}}

{{/* The Ray log keeper (docs/run-watch.md): in each group whose pods mount the logs volume, with the run watcher
on and launch.watch.keepRayLogMiB above 0, a native sidecar (an init container that restarts Always: it starts
before Ray and stops after it) runs the watcher's keep-ray mode. It reads the Ray container's /tmp/ray (through
the Ray container's own mount of /tmp/ray or /tmp, else an emptyDir the chart adds at /tmp/ray) and copies every Ray process's stdout and stderr to
dockyard-pods/<RayCluster>/<pod>/ on the logs volume, so `logs --attempt N --role R` reads them after the
RayCluster is gone. It has no service account token need and no port; its cost is in doctor's run watcher row.
Applied after the overlay and the storage pins: an overlay's init container or volume of its names is replaced.
dict "ctx" $ "role" "trainer" "spec" {…, "volumes": [… dockyard-logs]} -> {…, "initContainers": [{"name": "dockyard-ray-logs", …}, …]} */}}
{{- define "dockyard.ray.pinRayLogKeeper" -}}
{{- $spec := .spec -}}
{{- $v := .ctx.Values -}}
{{- $w := $v.launch.watch -}}
{{- $l := (include "dockyard.storage.layout" .ctx | fromJson).logs -}}
{{- $mounted := false -}}
{{- range ($spec.volumes | default list) -}}{{- if eq .name $l.volume -}}{{- $mounted = true -}}{{- end -}}{{- end -}}
{{- if and $w.enabled (gt (int64 $w.keepRayLogMiB) 0) $mounted -}}
{{- $main := first $spec.containers -}}
{{- $ours := list "dockyard-ray-logs" "dockyard-watcher" -}}
{{- /* The Ray container's own mount of /tmp/ray, else of /tmp (the chart's scratch /tmp under a read-only root,
or an overlay's): the keeper mounts the same (subPath and all), read-only; else an emptyDir at /tmp/ray. */ -}}
{{- $rayMount := dict -}}
{{- $tmpMount := dict -}}
{{- $mainMounts := list -}}
{{- range ($main.volumeMounts | default list) -}}
{{- if not (has .name $ours) -}}
{{- $mainMounts = append $mainMounts . -}}
{{- if eq (trimSuffix "/" .mountPath) "/tmp/ray" -}}{{- $rayMount = . -}}{{- end -}}
{{- if eq (trimSuffix "/" .mountPath) "/tmp" -}}{{- $tmpMount = . -}}{{- end -}}
{{- end -}}
{{- end -}}
{{- $_ := set $main "volumeMounts" $mainMounts -}}
{{- $shared := $rayMount | default $tmpMount -}}
{{- $volumes := list -}}
{{- range $spec.volumes -}}
{{- if not (has .name $ours) -}}{{- $volumes = append $volumes . -}}{{- end -}}
{{- end -}}
{{- if not $shared -}}
{{- $shared = dict "name" "dockyard-ray-logs" "mountPath" "/tmp/ray" -}}
{{- $volumes = append $volumes (dict "name" "dockyard-ray-logs" "emptyDir" dict) -}}
{{- $_ := set $main "volumeMounts" (append $mainMounts $shared) -}}
{{- end -}}
{{- $keeperMount := merge (dict "readOnly" true "mountPath" (trimSuffix "/" $shared.mountPath)) (omit $shared "readOnly" "mountPath") -}}
{{- $volumes = append $volumes (dict "name" "dockyard-watcher" "configMap" (dict "name" (include "dockyard.recipe.name" .ctx) "items" (list (dict "key" "run_watch.py" "path" "run_watch.py")))) -}}
{{- $_ := set $spec "volumes" $volumes -}}
{{- $cap := mul (int64 $w.keepRayLogMiB) 1048576 -}}
{{- $res := dict "cpu" "10m" "memory" "32Mi" -}}
{{- $c := dict "name" "dockyard-ray-logs" "image" $main.image "imagePullPolicy" $main.imagePullPolicy
  "restartPolicy" "Always"
  "command" (list "python3" (printf "%s/run_watch.py" $v.launch.configMountPath) "keep-ray" "--role" .role "--keep-bytes" (toString $cap))
  "env" (list
    (dict "name" "POD_NAME" "valueFrom" (dict "fieldRef" (dict "fieldPath" "metadata.name")))
    (dict "name" "RAY_CLUSTER_NAME" "valueFrom" (dict "fieldRef" (dict "fieldPath" "metadata.labels['ray.io/cluster']")))
    (dict "name" "DOCKYARD_LOG_DIR" "value" $l.path))
  "volumeMounts" (list
    (dict "name" $l.volume "mountPath" $l.path)
    $keeperMount
    (dict "name" "dockyard-watcher" "mountPath" $v.launch.configMountPath "readOnly" true))
  "resources" (dict "requests" $res "limits" (dict "cpu" "200m" "memory" "64Mi")) -}}
{{- if $v.infra.security.enabled -}}
{{- $_ := set $c "securityContext" (include "dockyard.containerSecurityContext" $v.infra.security | fromYaml) -}}
{{- end -}}
{{- $inits := list $c -}}
{{- range ($spec.initContainers | default list) -}}
{{- if ne .name "dockyard-ray-logs" -}}{{- $inits = append $inits . -}}{{- end -}}
{{- end -}}
{{- $_ := set $spec "initContainers" $inits -}}
{{- end -}}
{{- toJson $spec -}}
{{- end -}}
