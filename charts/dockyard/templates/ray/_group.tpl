{{/*
One Ray group (head, trainer or inference): the base built from values, the group's free-form
kuberay.spec overlay merged over it, then the invariants applied last, so no overlay removes them.
Each step below takes plain data and prints JSON; `dockyard.ray.group` chains them.
*/}}

{{/* The overlay of one group cut along the merge rules: the group's own keys, the pod template's
(but spec), the pod spec's (but the four lists), and the lists merged item by item.
{"groupName": "trainer", "rayStartParams": {"a": "1"}, "template": {"metadata": {"labels": {"x": "y"}},
 "spec": {"nodeSelector": {"p": "q"}, "containers": [{"name": "log"}]}}}
-> {"group": {"rayStartParams": {"a": "1"}}, "template": {"metadata": {"labels": {"x": "y"}}},
    "spec": {"nodeSelector": {"p": "q"}}, "containers": [{"name": "log"}], "volumes": [], "imagePullSecrets": [],
    "tolerations": []} */}}
{{- define "dockyard.ray.overlayParts" -}}
{{- $ov := . | default dict -}}
{{- $tpl := $ov.template | default dict -}}
{{- $spec := $tpl.spec | default dict -}}
{{- toJson (dict
  "group" (omit $ov "groupName" "template")
  "template" (omit $tpl "spec")
  "spec" (omit $spec "containers" "volumes" "imagePullSecrets" "tolerations")
  "containers" ($spec.containers | default list)
  "volumes" ($spec.volumes | default list)
  "imagePullSecrets" ($spec.imagePullSecrets | default list)
  "tolerations" ($spec.tolerations | default list)) -}}
{{- end -}}

{{/* The group's containers: an overlay container named like the Ray container (or unnamed) merges
into it, its env and volumeMounts appended; any other is a sidecar, after it.
dict "main" {"name": "ray-worker", "env": [{"name": "A"}]}
     "overlay" [{"name": "ray-worker", "env": [{"name": "B"}]}, {"name": "log", "image": "fluent-bit"}]
-> [{"name": "ray-worker", "env": [{"name": "A"}, {"name": "B"}]}, {"name": "log", "image": "fluent-bit"}] */}}
{{- define "dockyard.ray.mergeContainers" -}}
{{- $main := deepCopy .main -}}
{{- $sidecars := list -}}
{{- range .overlay -}}
{{- if or (not .name) (eq .name $main.name) -}}
{{- $_ := set $main "env" (concat ($main.env | default list) (.env | default list)) -}}
{{- $mounts := concat ($main.volumeMounts | default list) (.volumeMounts | default list) -}}
{{- if $mounts -}}{{- $_ := set $main "volumeMounts" $mounts -}}{{- end -}}
{{- $main = mergeOverwrite $main (omit . "env" "volumeMounts") -}}
{{- else -}}
{{- $sidecars = append $sidecars . -}}
{{- end -}}
{{- end -}}
{{- toJson (prepend $sidecars $main) -}}
{{- end -}}

{{/* The env every container of a GPU group ends with.
dict "ctx" $ "role" "trainer" -> [{"name": "RAY_ENABLE_UV_RUN_RUNTIME_ENV", "value": "0"},
  {"name": "DOCKYARD_FLEET_ROLE", "value": "trainer"}, {"name": "DOCKYARD_SANDBOX_URLS", "value": "http://…:9090"}]
(the last with sandbox.injectUrls only: dockyard.sandbox.gpuEnv, the agent-sandbox backend's names instead) */}}
{{- define "dockyard.ray.invariantEnv" -}}
{{- $env := list (dict "name" "RAY_ENABLE_UV_RUN_RUNTIME_ENV" "value" "0") (dict "name" "DOCKYARD_FLEET_ROLE" "value" .role) -}}
{{- if .ctx.Values.sandbox.injectUrls -}}
{{- $env = concat $env (include "dockyard.sandbox.gpuEnv" .ctx | fromJsonArray) -}}
{{- end -}}
{{- $env = concat $env (include "dockyard.ray.fabricEnv" . | fromJsonArray) -}}{{- /* the fabric's last (ray/_fabric.tpl) */ -}}
{{- toJson $env -}}
{{- end -}}

{{/* The invariants of a group's containers: the first (the Ray container) runs the infra image
with the recipe's GPU count (workers) and takes infra.env and infra.envFrom after the overlay's; every
container's env drops the invariant names the overlay set and ends with `dockyard.ray.invariantEnv`.
dict "ctx" $ "role" "trainer" "containers" [{"name": "ray-worker", "image": "evil", "env": [{"name": "DOCKYARD_FLEET_ROLE", "value": "x"}], …}]
-> [{"name": "ray-worker", "image": "<infra image>", "imagePullPolicy": "IfNotPresent",
     "resources": {"limits": {"nvidia.com/gpu": 8, …}, …}, "env": [<invariant env>], …}] */}}
{{- define "dockyard.ray.pinContainers" -}}
{{- $v := .ctx.Values -}}
{{- $main := first .containers -}}
{{- $_ := set $main "image" (include "dockyard.image" (dict "img" $v.infra.image)) -}}
{{- $_ := set $main "imagePullPolicy" $v.infra.image.pullPolicy -}}
{{- if ne .role "head" -}}
{{- $gpus := int64 (index $v.recipe.cluster .role).gpusPerNode -}}
{{- $_ := set $main.resources.limits "nvidia.com/gpu" $gpus -}}
{{- $_ := set $main.resources.requests "nvidia.com/gpu" $gpus -}}
{{- end -}}
{{- $inv := include "dockyard.ray.invariantEnv" . | fromJsonArray -}}
{{- $invNames := include "dockyard.const.gpuChartEnv" . | fromJsonArray -}}
{{- if ne .role "head" -}}{{- $invNames = concat $invNames (include "dockyard.const.fabricEnv" . | fromJsonArray) -}}{{- end -}}
{{- /* infra.env and infra.envFrom: the Ray container's own, after the overlay's (infra.env replaces an
overlay variable of the same name), before the invariants (no name of theirs is kept). */ -}}
{{- $infraEnv := list -}}
{{- range ($v.infra.env | default list) -}}
{{- if not (has .name $invNames) -}}{{- $infraEnv = append $infraEnv . -}}{{- end -}}
{{- end -}}
{{- $infraNames := list -}}
{{- range $infraEnv -}}{{- $infraNames = append $infraNames .name -}}{{- end -}}
{{- $out := list -}}
{{- range $i, $c := .containers -}}
{{- $drop := $invNames -}}
{{- $own := list -}}
{{- if eq $i 0 -}}
{{- $drop = concat $invNames $infraNames -}}
{{- $own = $infraEnv -}}
{{- $from := $c.envFrom | default list -}}
{{- range ($v.infra.envFrom | default list) -}}
{{- if not (has . $from) -}}{{- $from = append $from . -}}{{- end -}}
{{- end -}}
{{- with $from -}}{{- $_ := set $c "envFrom" . -}}{{- end -}}
{{- end -}}
{{- $env := list -}}
{{- range ($c.env | default list) -}}
{{- if not (has .name $drop) -}}{{- $env = append $env . -}}{{- end -}}
{{- end -}}
{{- $out = append $out (set $c "env" (concat $env $own $inv)) -}}
{{- end -}}
{{- toJson $out -}}
{{- end -}}

{{/* A group's pull secrets: infra.imagePullSecrets first, then the overlay's not already there.
dict "names" ["regcred"] "overlay" [{"name": "a"}, {"name": "regcred"}] -> [{"name": "regcred"}, {"name": "a"}] */}}
{{- define "dockyard.ray.pullSecrets" -}}
{{- $secrets := list -}}
{{- range .names -}}{{- $secrets = append $secrets (dict "name" .) -}}{{- end -}}
{{- range .overlay -}}
{{- if not (has . $secrets) -}}{{- $secrets = append $secrets . -}}{{- end -}}
{{- end -}}
{{- toJson $secrets -}}
{{- end -}}

{{/* A group's tolerations: kuberay.placement's first, then the overlay's not already there (an
overlay adds tolerations; kuberay.placement's own keys remove them).
dict "base" [{"key": "nvidia.com/gpu", …}] "overlay" [{"key": "dedicated", …}] -> [{"key": "nvidia.com/gpu", …}, {"key": "dedicated", …}] */}}
{{- define "dockyard.ray.tolerations" -}}
{{- $out := .base | default list -}}
{{- range .overlay -}}
{{- if not (has . $out) -}}{{- $out = append $out . -}}{{- end -}}
{{- end -}}
{{- toJson $out -}}
{{- end -}}

{{/* rayStartParams.resources with the fleet's Ray resource added: single-quoted JSON, one shell word
for `ray start --resources=...` and what KubeRay parses (it trims the outer quotes and reads JSON: a
backslash-escaped form fails there, and KubeRay then drops the group's num-gpus — seen by
`dockyard-k8s smoke` as a fleet with 0 GPUs). The overlay's value may come quoted or escaped.
dict "role" "trainer" "given" "{\"custom\": 2}" -> '{"custom":2,"dockyard_fleet_trainer":1}'
Checked here, where the merged value is parsed: a string holding one JSON object of numbers (at
least 0), without a single quote. It is read inside `[…]` by fromJsonArray: one object comes back as
one map, a parse failure as one string (fromJson's failure, a map with key "Error", is also what a
valid {"Error": 1} gives). The models refuse the same first (generator/inputs/rules.py). */}}
{{- define "dockyard.ray.resourcesParam" -}}
{{- $res := dict -}}
{{- with .given -}}
{{- $parsed := list -}}
{{- if kindIs "string" . -}}
{{- $parsed = printf "[%s]" (. | trimAll "\"'" | replace "\\\"" "\"") | fromJsonArray -}}
{{- end -}}
{{- if not (and (eq (len $parsed) 1) (kindIs "map" (first $parsed))) -}}
{{- fail (printf "kuberay.spec %s: rayStartParams.resources is not a JSON object: %v" $.role $.given) -}}
{{- end -}}
{{- $res = first $parsed -}}
{{- range $name, $n := $res -}}
{{- if not (kindIs "float64" $n) -}}
{{- fail (printf "kuberay.spec %s: rayStartParams.resources: the Ray resource %q is not a number: %v" $.role $name $.given) -}}
{{- else if lt $n 0.0 -}}
{{- fail (printf "kuberay.spec %s: rayStartParams.resources: the Ray resource %q is below 0: %v" $.role $name $.given) -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- $_ := set $res (printf "dockyard_fleet_%s" .role) 1 -}}
{{- $json := toJson $res -}}
{{- if contains "'" $json -}}
{{- fail (printf "kuberay.spec %s: a Ray resource name holds a single quote: %s" .role $json) -}}
{{- end -}}
{{- printf "'%s'" $json -}}
{{- end -}}

{{/* The fleet's Ray resource in a group: in its group-level `resources` when the overlay uses them
(KubeRay refuses them beside rayStartParams' resource flags), else in rayStartParams.resources.
dict "role" "trainer" "group" {"resources": {"custom": "2"}} -> {"resources": {"custom": "2", "dockyard_fleet_trainer": "1"}}
dict "role" "trainer" "group" {"rayStartParams": {}} -> {"rayStartParams": {"resources": "'{\"dockyard_fleet_trainer\":1}'"}} */}}
{{- define "dockyard.ray.fleetTag" -}}
{{- $group := .group -}}
{{- if $group.resources -}}
{{- $_ := set $group.resources (printf "dockyard_fleet_%s" .role) "1" -}}
{{- else -}}
{{- $params := $group.rayStartParams | default dict -}}
{{- $_ := set $params "resources" (include "dockyard.ray.resourcesParam" (dict "role" .role "given" $params.resources)) -}}
{{- $_ := set $group "rayStartParams" $params -}}
{{- end -}}
{{- toJson $group -}}
{{- end -}}

{{/* One group, merged and pinned, as JSON (not YAML: Helm's toYaml trims the final newline, so a
string ending in one, last in the group, lost it on the way back).
dict "ctx" $ "role" "trainer" "base" <dockyard.ray.workerBase> "overlay" {"groupName": "trainer", …}
-> {"groupName": "trainer", "replicas": 2, "minReplicas": 2, "maxReplicas": 2, "rayStartParams": {…}, "template": {…}} */}}
{{- define "dockyard.ray.group" -}}
{{- $v := .ctx.Values -}}
{{- $base := .base -}}
{{- $ov := include "dockyard.ray.overlayParts" .overlay | fromJson -}}
{{- $group := mergeOverwrite (omit $base "template") $ov.group -}}
{{- $tpl := mergeOverwrite (omit $base.template "spec") $ov.template -}}
{{- $spec := mergeOverwrite (omit $base.template.spec "containers" "volumes") $ov.spec -}}
{{- if not $spec.serviceAccountName -}}{{- /* an overlay's empty or null account is no account: the base's, else none */ -}}
{{- with $base.template.spec.serviceAccountName -}}{{- $_ := set $spec "serviceAccountName" . -}}{{- else -}}{{- $_ := unset $spec "serviceAccountName" -}}{{- end -}}
{{- end -}}
{{- $containers := include "dockyard.ray.mergeContainers" (dict "main" (first $base.template.spec.containers) "overlay" $ov.containers) | fromJsonArray -}}
{{- $_ := set $spec "containers" (include "dockyard.ray.pinContainers" (dict "ctx" .ctx "role" .role "containers" $containers) | fromJsonArray) -}}
{{- with concat ($base.template.spec.volumes | default list) $ov.volumes -}}{{- $_ := set $spec "volumes" . -}}{{- end -}}
{{- $spec = include "dockyard.ray.pinStorage" (dict "ctx" .ctx "role" .role "spec" $spec) | fromJson -}}
{{- $spec = include "dockyard.ray.pinRayLogKeeper" (dict "ctx" .ctx "role" .role "spec" $spec) | fromJson -}}
{{- with include "dockyard.ray.tolerations" (dict "base" $base.template.spec.tolerations "overlay" $ov.tolerations) | fromJsonArray -}}
{{- $_ := set $spec "tolerations" . -}}
{{- end -}}
{{- with include "dockyard.ray.pullSecrets" (dict "names" $v.infra.imagePullSecrets "overlay" $ov.imagePullSecrets) | fromJsonArray -}}
{{- $_ := set $spec "imagePullSecrets" . -}}
{{- end -}}
{{- if ne .role "head" -}}
{{- $nodes := int64 (index $v.recipe.cluster .role).nodes -}}
{{- range $key := list "replicas" "minReplicas" "maxReplicas" -}}{{- $_ := set $group $key $nodes -}}{{- end -}}
{{- end -}}
{{- $group = include "dockyard.ray.fleetTag" (dict "role" .role "group" $group) | fromJson -}}
{{- $fabric := include "dockyard.ray.pinFabric" (dict "ctx" .ctx "role" .role "tpl" $tpl "spec" $spec) | fromJson -}}
{{- $tpl = $fabric.tpl -}}
{{- if ne .role "head" -}}{{- $tpl = include "dockyard.ray.pinTopology" (dict "ctx" .ctx "tpl" $tpl) | fromJson -}}{{- end -}}
{{- $_ := set $tpl "spec" $fabric.spec -}}
{{- $_ := set $group "template" $tpl -}}
{{- toJson $group -}}
{{- end -}}
