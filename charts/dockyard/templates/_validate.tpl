{{/*
Checks of the values that values.schema.json cannot express. Each dockyard.validate.* define prints
its refusals, one a line, or nothing; dockyard.validateValues (called once, by checks.yaml) fails
once with all of them. The checks that need the merged kuberay.spec overlay stay where it is merged
(ray/_group.tpl). The models refuse the same values first (generator/inputs), by the same rules; the
sandbox checks in the models' very words (tests/chart/test_chart_refusals.py compares them), the others in
words of their own. The lists these checks share with the Python come from _constants.tpl (make schema).
*/}}

{{/* Every refusal, or nothing: fails the render once, one refusal a line.
$ -> "" (valid), else fail "release name \"1abc\" must be a DNS-1035 label …\nsandbox.nodeSelector: …" */}}
{{- define "dockyard.validateValues" -}}
{{- $messages := list -}}
{{- $messages = append $messages (include "dockyard.validate.releaseName" .) -}}
{{- $messages = append $messages (include "dockyard.validate.workerGroupNames" .) -}}
{{- $messages = append $messages (include "dockyard.validate.kuberayGroups" .) -}}
{{- $messages = append $messages (include "dockyard.validate.kueue" .) -}}
{{- $messages = append $messages (include "dockyard.validate.resourceQuota" .) -}}
{{- $messages = append $messages (include "dockyard.validate.sandboxHooks" .) -}}
{{- $messages = append $messages (include "dockyard.validate.sandboxPool" .) -}}
{{- $messages = append $messages (include "dockyard.validate.toYamlSafe" .) -}}
{{- $messages = append $messages (include "dockyard.validate.storage" .) -}}
{{- with without $messages "" -}}
{{- fail (join "\n" .) -}}
{{- end -}}
{{- end -}}

{{/* The release name against KubeRay's limits: a RayJob name <= 47 characters (its cluster gets a
5-character suffix), a RayCluster <= 53, both DNS-1035 labels.
release "1abc" -> release name "1abc" must be a DNS-1035 label (lower case, starting with a letter) */}}
{{- define "dockyard.validate.releaseName" -}}
{{- $name := .Release.Name -}}
{{- $max := ternary 47 53 (eq .Values.launch.mode "rayjob") -}}
{{- if not (regexMatch "^[a-z]([-a-z0-9]*[a-z0-9])?$" $name) -}}
{{- printf "release name %q must be a DNS-1035 label (lower case, starting with a letter)" $name -}}
{{- else if gt (len $name) $max -}}
{{- printf "release name %q has %d characters; KubeRay allows at most %d in %s mode" $name (len $name) $max .Values.launch.mode -}}
{{- end -}}
{{- end -}}

{{/* The worker group overlays name a group of the chart, each once.
kuberay.spec.workerGroupSpecs [{groupName: trainer}, {groupName: trainer}]
-> kuberay.spec.workerGroupSpecs: duplicate groupName "trainer" */}}
{{- define "dockyard.validate.workerGroupNames" -}}
{{- $seen := list -}}
{{- $messages := list -}}
{{- $groups := include "dockyard.const.workerGroups" . | fromJsonArray -}}
{{- range (.Values.kuberay.spec.workerGroupSpecs | default list) -}}
{{- if not (has .groupName $groups) -}}
{{- $messages = append $messages (printf "kuberay.spec.workerGroupSpecs: unknown groupName %q (expected %s)" (toString .groupName) (join " or " $groups)) -}}
{{- else if has .groupName $seen -}}
{{- $messages = append $messages (printf "kuberay.spec.workerGroupSpecs: duplicate groupName %q" .groupName) -}}
{{- end -}}
{{- $seen = append $seen .groupName -}}
{{- end -}}
{{- join "\n" $messages -}}
{{- end -}}

{{/* KubeRay's own rules for a group overlay (its validation.go), checked for plain `helm install` too.
kuberay.spec.headGroupSpec {rayStartParams: {labels: "a=b"}}
-> kuberay.spec head: rayStartParams.labels is refused by KubeRay; use the group's labels field */}}
{{- define "dockyard.validate.kuberayGroups" -}}
{{- $overlays := list (list "head" .Values.kuberay.spec.headGroupSpec) -}}
{{- range $role := include "dockyard.const.workerGroups" . | fromJsonArray -}}
{{- range ($.Values.kuberay.spec.workerGroupSpecs | default list) -}}
{{- if eq (toString .groupName) $role -}}{{- $overlays = append $overlays (list $role .) -}}{{- end -}}
{{- end -}}
{{- end -}}
{{- $messages := list -}}
{{- range $overlays -}}
{{- $role := index . 0 -}}
{{- $ov := index . 1 | default dict -}}
{{- $params := $ov.rayStartParams | default dict -}}
{{- if kindIs "map" $params -}}
{{- if hasKey $params "labels" -}}
{{- $messages = append $messages (printf "kuberay.spec %s: rayStartParams.labels is refused by KubeRay; use the group's labels field" $role) -}}
{{- end -}}
{{- if and $ov.resources (or (hasKey $params "num-cpus") (hasKey $params "num-gpus") (hasKey $params "memory") (hasKey $params "resources")) -}}
{{- $messages = append $messages (printf "kuberay.spec %s: Ray resources set both in group-level resources and rayStartParams; KubeRay refuses this" $role) -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- join "\n" $messages -}}
{{- end -}}

{{/* Kueue's admission rules (its RayJob and RayCluster webhooks) for a queued job, and suspend left
to Kueue: the chart never renders it, so a helm upgrade cannot flip what Kueue set.
launch {mode: rayjob, queue: training, shutdownAfterJobFinishes: false}
-> launch.shutdownAfterJobFinishes: Kueue refuses a queued RayJob that keeps its cluster after the job ends (…) */}}
{{- define "dockyard.validate.kueue" -}}
{{- $l := .Values.launch -}}
{{- $spec := .Values.kuberay.spec | default dict -}}
{{- $messages := list -}}
{{- if and $l.priorityClass (not $l.queue) -}}
{{- $messages = append $messages (printf "launch.priorityClass: a WorkloadPriorityClass without launch.queue does nothing: Kueue reads it only on a queued RayJob or RayCluster; set launch.queue or remove launch.priorityClass") -}}
{{- end -}}
{{- if $l.queue -}}
{{- if eq $l.mode "attach" -}}
{{- $messages = append $messages (printf "launch.queue: an existing cluster cannot be queued: Kueue admits a RayJob with its own cluster or a RayCluster, and refuses a queued RayJob on a clusterSelector; use launch.mode rayjob or bringup, or remove launch.queue") -}}
{{- end -}}
{{- if and (eq $l.mode "rayjob") (not $l.shutdownAfterJobFinishes) -}}
{{- $messages = append $messages (printf "launch.shutdownAfterJobFinishes: Kueue refuses a queued RayJob that keeps its cluster after the job ends (the cluster would go on holding the queue's quota); set it to true or remove launch.queue") -}}
{{- end -}}
{{- if and (kindIs "bool" $spec.enableInTreeAutoscaling) $spec.enableInTreeAutoscaling -}}
{{- $messages = append $messages (printf "kuberay.spec.enableInTreeAutoscaling: Kueue refuses in-tree autoscaling on a queued RayJob or RayCluster: it admits the gang at its fixed size; set it to false or remove launch.queue") -}}
{{- end -}}
{{- end -}}
{{- if not (kindIs "invalid" $spec.suspend) -}}
{{- $messages = append $messages (printf "kuberay.spec.suspend: the chart never renders suspend: Kueue suspends a queued RayJob or RayCluster and admits it by clearing suspend, and a helm upgrade must not flip it; remove it") -}}
{{- end -}}
{{- join "\n" $messages -}}
{{- end -}}

{{/* An enabled ResourceQuota needs its limits.
infra.resourceQuota {enabled: true, hard: {}} -> infra.resourceQuota is enabled but infra.resourceQuota.hard is empty */}}
{{- define "dockyard.validate.resourceQuota" -}}
{{- with .Values.infra.resourceQuota -}}
{{- if and .enabled (not .hard) -}}
infra.resourceQuota is enabled but infra.resourceQuota.hard is empty
{{- end -}}
{{- end -}}
{{- end -}}

{{/* The sandbox hooks leave alone what the chart sets itself: the executor's env
(dockyard.sandbox.chartEnv) and the pod labels its Service, selector and tools match on.
sandbox.extraEnv [{name: DOCKYARD_WORK_DIR, value: /tmp}]
-> sandbox.extraEnv[0].name: DOCKYARD_WORK_DIR is set by the chart itself (…); choose another name */}}
{{- define "dockyard.validate.sandboxHooks" -}}
{{- $messages := list -}}
{{- $env := list -}}
{{- range include "dockyard.sandbox.chartEnv" . | fromYamlArray -}}{{- $env = append $env .name -}}{{- end -}}
{{- range $i, $e := .Values.sandbox.extraEnv -}}
{{- if has $e.name $env -}}
{{- $messages = append $messages (printf "sandbox.extraEnv[%d].name: %s is set by the chart itself (it sets %s from sandbox.port and sandbox.security.workDir); choose another name" $i $e.name (join ", " $env)) -}}
{{- end -}}
{{- end -}}
{{- $labels := include "dockyard.sandbox.chartPodLabels" . | fromYaml | keys | sortAlpha -}}
{{- range $key := keys (.Values.sandbox.podLabels | default dict) | sortAlpha -}}
{{- if has $key $labels -}}
{{- $messages = append $messages (printf "sandbox.podLabels: %q is a label the chart sets itself on the executor pods (%s); choose another key" $key (join ", " $labels)) -}}
{{- end -}}
{{- end -}}
{{- join "\n" $messages -}}
{{- end -}}

{{/* The sandbox pool's autoscaling, PDB, rolling update and shutdown agree (the models' words:
generator/inputs/rules.py sandbox_pool_problem; the first broken rule only, as there).
sandbox.autoscaling {minReplicas: 5, maxReplicas: 3}
-> sandbox.autoscaling.maxReplicas: minReplicas 5 is more than maxReplicas 3; expected maxReplicas of at least 5, … */}}
{{- define "dockyard.validate.sandboxPool" -}}
{{- $sb := .Values.sandbox -}}
{{- with include "dockyard.validate.sandboxBackend" . -}}
{{- . -}}
{{- else -}}
{{- $hpa := $sb.autoscaling -}}
{{- $low := int64 $hpa.minReplicas -}}
{{- $high := int64 $hpa.maxReplicas -}}
{{- $roll := $sb.rollingUpdate -}}
{{- $grace := int64 $sb.terminationGracePeriodSeconds -}}
{{- if gt $low $high -}}
{{- printf "sandbox.autoscaling.maxReplicas: minReplicas %d is more than maxReplicas %d; expected maxReplicas of at least %d, or a lower minReplicas" $low $high $low -}}
{{- else if and $hpa.enabled (kindIs "invalid" $hpa.targetCPUUtilizationPercentage) (kindIs "invalid" $hpa.targetMemoryUtilizationPercentage) -}}
sandbox.autoscaling: autoscaling is enabled but sets no target, so the HPA has no metric to act on; expected targetCPUUtilizationPercentage (e.g. 70) or targetMemoryUtilizationPercentage
{{- else if and $hpa.enabled $sb.pdb.enabled (ge (int64 $sb.pdb.maxUnavailable) $low) -}}
{{- $mu := int64 $sb.pdb.maxUnavailable -}}
{{- $fix := printf "autoscaling.minReplicas of at least %d" (add1 $mu) -}}
{{- if ge $low 2 }}{{ $fix = printf "pdb.maxUnavailable from 1 to %d, or %s" (sub $low 1) $fix }}{{ end -}}
{{- printf "sandbox.pdb.maxUnavailable: maxUnavailable %d lets a drain evict every executor at the HPA's minimum (autoscaling.minReplicas %d); expected %s (a maxUnavailable of 0 would block every node drain)" $mu $low $fix -}}
{{- else if and (regexMatch "^0+%?$" (toString $roll.maxSurge)) (regexMatch "^0+%?$" (toString $roll.maxUnavailable)) -}}
sandbox.rollingUpdate: maxSurge and maxUnavailable are both zero, a rollout Kubernetes refuses; expected maxSurge of at least 1 (maxUnavailable 0 keeps every replica serving)
{{- else if ge (int64 $sb.preStopSleepSeconds) $grace -}}
{{- printf "sandbox.preStopSleepSeconds: preStopSleepSeconds %d leaves no time of terminationGracePeriodSeconds %d to finish the tasks in flight; expected preStopSleepSeconds below %d, or a longer terminationGracePeriodSeconds" (int64 $sb.preStopSleepSeconds) $grace $grace -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/* A key only the other sandbox backend reads, changed from its default (generator/inputs/rules.py
sandbox_backend_problem, in the same words: its POOL_ONLY_KEYS and AGENT_SANDBOX_ONLY_KEYS are
dockyard.const.backendOnlyKeys).
backend agent-sandbox with autoscaling.enabled true -> sandbox.autoscaling.enabled: autoscaling.enabled is a
setting of the pool backend, which means nothing with backend agent-sandbox; expected false (its default), or backend pool */}}
{{- define "dockyard.validate.sandboxBackend" -}}
{{- $sb := .Values.sandbox -}}
{{- $other := ternary "pool" "agent-sandbox" (eq $sb.backend "agent-sandbox") -}}
{{- $changed := list -}}
{{- range index (include "dockyard.const.backendOnlyKeys" . | fromJson) $other -}}
{{- $value := $sb -}}
{{- range .path -}}{{- $value = index ($value | default dict) . -}}{{- end -}}
{{- if ne (toJson $value) .default -}}{{- $changed = append $changed . -}}{{- end -}}
{{- end -}}
{{- with $changed -}}
{{- $key := first . -}}
{{- printf "sandbox.%s: %s is a setting of the %s backend, which means nothing with backend %s; expected %s (its default), or backend %s" $key.key $key.key $other $sb.backend $key.default $other -}}
{{- end -}}
{{- end -}}

{{/* Helm's toYaml silently drops a whole structure holding U+007F-U+009F (but U+0085), U+FFFE or
U+FFFF, turns U+0085 into a space and writes U+2028/U+2029 raw, which breaks the manifest or changes
the string; and it writes a key "<<" unquoted, YAML's merge key. Refuse such a string, by path,
rather than lose or alter the object it is in. The recipe is not walked: its strings are only ever
quoted. A quick look at all the values first: the walk runs only when one may hold such a string.
sandbox.nodeSelector {"<<": "x"} -> sandbox.nodeSelector: the key "<<" is YAML's merge key, … */}}
{{- define "dockyard.validate.toYamlSafe" -}}
{{- $values := omit .Values "recipe" -}}
{{- if regexMatch (printf "%s|<<" (include "dockyard.validate.badChars" .)) (printf "%v" $values) -}}
{{- $messages := list -}}
{{- range $key, $v := $values -}}
{{- $messages = append $messages (include "dockyard.validate.chars" (dict "v" $v "path" $key)) -}}
{{- end -}}
{{- join "\n" (without $messages "") -}}
{{- end -}}
{{- end -}}

{{/* The characters Helm's toYaml drops or mangles, as a regular expression's class. */}}
{{- define "dockyard.validate.badChars" -}}
{{- `[\x{7f}-\x{9f}\x{2028}\x{2029}\x{fffe}\x{ffff}]` -}}
{{- end -}}

{{/* The refusals of dockyard.validate.toYamlSafe inside one value, walked recursively.
dict "v" {"disk": "ssd\u0085"} "path" "sandbox.nodeSelector"
-> sandbox.nodeSelector.disk: "ssd\u0085" holds a character Helm's toYaml drops or mangles (…); remove it */}}
{{- define "dockyard.validate.chars" -}}
{{- $bad := include "dockyard.validate.badChars" . -}}
{{- $messages := list -}}
{{- if kindIs "map" .v -}}
{{- range $k, $x := .v -}}
{{- if eq $k "<<" -}}
{{- $messages = append $messages (printf "%s: the key \"<<\" is YAML's merge key, which Helm's toYaml writes unquoted: it would merge into or break the object; rename it" $.path) -}}
{{- end -}}
{{- if regexMatch $bad $k -}}
{{- $messages = append $messages (printf "%s: the key %q holds a character Helm's toYaml drops or mangles (U+007F to U+009F, U+2028, U+2029, U+FFFE, U+FFFF); remove it" $.path $k) -}}
{{- end -}}
{{- $messages = append $messages (include "dockyard.validate.chars" (dict "v" $x "path" (printf "%s.%s" $.path $k))) -}}
{{- end -}}
{{- else if kindIs "slice" .v -}}
{{- range $i, $x := .v -}}
{{- $messages = append $messages (include "dockyard.validate.chars" (dict "v" $x "path" (printf "%s[%d]" $.path $i))) -}}
{{- end -}}
{{- else if and (kindIs "string" .v) (regexMatch $bad .v) -}}
{{- $messages = append $messages (printf "%s: %q holds a character Helm's toYaml drops or mangles (U+007F to U+009F, U+2028, U+2029, U+FFFE, U+FFFF); remove it" .path .v) -}}
{{- end -}}
{{- join "\n" (without $messages "") -}}
{{- end -}}

{{/* A claim the chart creates that more than one pod mounts (the head once, a worker group by its nodes)
needs ReadWriteMany; an existing claim's modes are doctor's to check. generator/inputs/storage_rules.py
refuses the same first.
infra.storage.checkpoints {size: 1Ti, accessModes: [ReadWriteOnce]}, trainer nodes 2
-> infra.storage.checkpoints.accessModes: 4 pods (head, trainer, inference) mount it and write, … */}}
{{- define "dockyard.validate.storage" -}}
{{- $v := .Values -}}
{{- $messages := list -}}
{{- range $key := include "dockyard.const.storageKeys" . | fromJsonArray -}}
{{- $vol := index ($v.infra.storage | default dict) $key -}}
{{- if and $vol (not $vol.claimName) -}}
{{- $groups := $vol.mountOn | default (include "dockyard.const.rayGroups" $ | fromJsonArray) -}}
{{- $modes := $vol.accessModes | default (include "dockyard.const.defaultAccessModes" $ | fromJsonArray) -}}
{{- $count := 0 -}}
{{- range $groups -}}
{{- $count = add $count (ternary 1 (int64 (index $v.recipe.cluster .).nodes) (eq . "head")) -}}
{{- end -}}
{{- if and (gt (int64 $count) 1) (not (has "ReadWriteMany" $modes)) -}}
{{- $messages = append $messages (printf "infra.storage.%s.accessModes: %d pods (%s) mount it and write, but its access modes %v do not include ReadWriteMany" $key (int64 $count) (join ", " $groups) $modes) -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- join "\n" $messages -}}
{{- end -}}
