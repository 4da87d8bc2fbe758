{{/* Helpers of the sandbox executor pool (the templates beside this file, and the GPU pods' URL). */}}

{{/* The name of the pool's objects: grpo-swe -> grpo-swe-sandbox */}}
{{- define "dockyard.sandbox.name" -}}{{ include "dockyard.fullname" . }}-sandbox{{- end -}}

{{/* The labels the Deployment selector, the Service, the NetworkPolicy and the PDB match on.
$ -> app.kubernetes.io/name: "dockyard"
     app.kubernetes.io/instance: "grpo-swe"
     app.kubernetes.io/component: sandbox */}}
{{- define "dockyard.sandbox.selectorLabels" -}}
{{ include "dockyard.selectorLabels" . }}
app.kubernetes.io/component: sandbox
{{- end -}}

{{/* The labels the chart puts on every object of the pool, the executor pods included
(sandbox.podLabels may not set these keys). dockyard.dev/sandbox-backend tells a Deployment's executor from a
claimed sandbox's: after a switch from agent-sandbox back to pool, the sandboxes still claimed keep running
until released, and the pool's Service must not send tasks to them (dockyard.sandbox.serviceSelector). */}}
{{- define "dockyard.sandbox.chartPodLabels" -}}
{{- include "dockyard.componentLabels" (dict "ctx" . "component" "sandbox" "fleet" "sandbox") }}
dockyard.dev/sandbox-backend: {{ .Values.sandbox.backend | quote }}
{{- end -}}

{{/* The executors the pool's Service and PodDisruptionBudget mean: the Deployment's (its selector, which cannot
change, plus the backend label), never a claimed sandbox's.
$ -> <dockyard.sandbox.selectorLabels>
     dockyard.dev/sandbox-backend: pool */}}
{{- define "dockyard.sandbox.serviceSelector" -}}
{{ include "dockyard.sandbox.selectorLabels" . }}
dockyard.dev/sandbox-backend: pool
{{- end -}}

{{/* The executor pods' labels: the chart's, then sandbox.podLabels.
sandbox.podLabels {"team": "rl"} -> <dockyard.sandbox.chartPodLabels>
                                    team: rl */}}
{{- define "dockyard.sandbox.podLabels" -}}
{{- include "dockyard.sandbox.chartPodLabels" . -}}
{{- with .Values.sandbox.podLabels }}
{{ toYaml . }}
{{- end -}}
{{- end -}}

{{/* The executor image: sandbox.image, else infra.image (dockyard.image's rule).
sandbox.image {} with infra.image {"repository": "ghcr.io/x/swe", "tag": "vllm"} -> ghcr.io/x/swe:vllm */}}
{{- define "dockyard.sandbox.image" -}}
{{- include "dockyard.image" (dict "img" .Values.sandbox.image "fallback" .Values.infra.image) -}}
{{- end -}}

{{/* The pool's Service URL, injected into the GPU pods as DOCKYARD_SANDBOX_URLS.
$ -> http://grpo-swe-sandbox.dockyard.svc.cluster.local:9090 */}}
{{- define "dockyard.sandbox.url" -}}
http://{{ include "dockyard.sandbox.name" . }}.{{ .Release.Namespace }}.svc.cluster.local:{{ int64 .Values.sandbox.port }}
{{- end -}}

{{/* The Role and RoleBinding that let the Ray pods claim sandboxes (backend agent-sandbox).
$ -> grpo-swe-sandbox-claims */}}
{{- define "dockyard.sandbox.claimsName" -}}{{ include "dockyard.fullname" . }}-sandbox-claims{{- end -}}

{{/* The Ray pods' own ServiceAccount under sandbox.backend agent-sandbox, so that the right to claim sandboxes
goes to this release's Ray pods, not to every pod of the namespace running as "default".
$ -> grpo-swe-ray */}}
{{- define "dockyard.ray.serviceAccountName" -}}{{ include "dockyard.fullname" . }}-ray{{- end -}}

{{/* The ServiceAccounts the Ray pods run as: each group's serviceAccountName from kuberay.spec, else the
release's (dockyard.ray.serviceAccountName), each once (the subjects of the claims' RoleBinding).
$ (no overlay names one) -> ["grpo-swe-ray"] */}}
{{- define "dockyard.ray.serviceAccounts" -}}
{{- $spec := .Values.kuberay.spec | default dict -}}
{{- $groups := list ($spec.headGroupSpec | default dict) -}}
{{- range ($spec.workerGroupSpecs | default list) -}}{{- $groups = append $groups . -}}{{- end -}}
{{- $names := list -}}
{{- range $groups -}}
{{- /* an empty or null name in the overlay merges as nothing: the pod keeps the release's account */ -}}
{{- $names = append $names (default (include "dockyard.ray.serviceAccountName" $) (dig "template" "spec" "serviceAccountName" "" .)) -}}
{{- end -}}
{{- if lt (len $groups) 3 -}}{{- $names = append $names (include "dockyard.ray.serviceAccountName" $) -}}{{- end -}}
{{- toJson (uniq $names) -}}
{{- end -}}

{{/* What a GPU pod needs to find its executors, injected with sandbox.injectUrls: the pool's Service URL, or
with agent-sandbox what a SandboxClaim needs (the warm pool to name, the namespace, the executor port) and the
template's name (docs/sandbox-pool.md).
backend pool -> [{"name": "DOCKYARD_SANDBOX_URLS", "value": "http://grpo-swe-sandbox.dockyard.svc.cluster.local:9090"}]
backend agent-sandbox -> [{"name": "DOCKYARD_SANDBOX_WARM_POOL", "value": "grpo-swe-sandbox"}, …] */}}
{{- define "dockyard.sandbox.gpuEnv" -}}
{{- if eq .Values.sandbox.backend "agent-sandbox" -}}
{{- $name := include "dockyard.sandbox.name" . -}}
{{- toJson (list (dict "name" "DOCKYARD_SANDBOX_WARM_POOL" "value" $name) (dict "name" "DOCKYARD_SANDBOX_TEMPLATE" "value" $name) (dict "name" "DOCKYARD_SANDBOX_NAMESPACE" "value" .Release.Namespace) (dict "name" "DOCKYARD_SANDBOX_PORT" "value" (toString (int64 .Values.sandbox.port)))) -}}
{{- else -}}
{{- toJson (list (dict "name" "DOCKYARD_SANDBOX_URLS" "value" (include "dockyard.sandbox.url" .))) -}}
{{- end -}}
{{- end -}}

{{/* The executor's env the chart sets itself (sandbox.extraEnv may not set these names).
$ -> - name: DOCKYARD_EXECUTOR_PORT
       value: "9090"
     - name: DOCKYARD_WORK_DIR
       value: "/workspace" */}}
{{- define "dockyard.sandbox.chartEnv" -}}
- name: DOCKYARD_EXECUTOR_PORT
  value: {{ int64 .Values.sandbox.port | quote }}
- name: DOCKYARD_WORK_DIR
  value: {{ .Values.sandbox.security.workDir | quote }}
{{- end -}}

{{/* The executor's env: the chart's, then sandbox.extraEnv (Kubernetes EnvVar objects, as given).
sandbox.extraEnv [{"name": "HF_HOME", "value": "/cache"}] -> <dockyard.sandbox.chartEnv>
                                                             - name: HF_HOME
                                                               value: /cache */}}
{{- define "dockyard.sandbox.env" -}}
{{- include "dockyard.sandbox.chartEnv" . -}}
{{- with .Values.sandbox.extraEnv }}
{{ toYaml . }}
{{- end -}}
{{- end -}}

{{/* The Deployment's checkov skips, each rendered only while its control is actually off, with the reason.
$ (defaults) -> checkov.io/skip1: "CKV_K8S_43=Image pinned by tag, not digest: …"
                checkov.io/skip2: "CKV_K8S_15=…" … */}}
{{- define "dockyard.sandbox.scannerSkips" -}}
{{- $sb := .Values.sandbox -}}
{{- $sec := $sb.security -}}
{{- $restricted := and $sec.enabled (eq $sec.profile "restricted") -}}
{{- $digest := contains "@" (include "dockyard.sandbox.image" .) -}}
{{- $policy := $sb.image.pullPolicy | default .Values.infra.image.pullPolicy -}}
{{- $skips := list -}}
{{- if not $digest -}}
{{- $skips = append $skips "CKV_K8S_43=Image pinned by tag, not digest: set image.digest (sandbox.image.digest or infra.image.digest) to pin it" -}}
{{- end -}}
{{- if and (ne $policy "Always") (not $digest) -}}
{{- $skips = append $skips "CKV_K8S_15=imagePullPolicy IfNotPresent avoids re-pulling the multi-GB executor image on every start; pinning by digest makes the cached image immutable" -}}
{{- end -}}
{{- if not (and $sec.enabled (or $sec.runAsNonRoot $restricted)) -}}
{{- $skips = append $skips "CKV_K8S_23=The ubuntu-swe executor image runs as root; runAsNonRoot is opt-in (sandbox.security.profile restricted) once the image has a non-root user" -}}
{{- end -}}
{{- if not (and $sec.enabled (or $restricted (ge (int ($sec.runAsUser | default 0)) 10000))) -}}
{{- $skips = append $skips "CKV_K8S_40=Runs as the image's user (root by default); profile restricted runs as UID 10001" -}}
{{- end -}}
{{- if not (and $sec.enabled (or $sec.readOnlyRootFilesystem $restricted)) -}}
{{- $skips = append $skips "CKV_K8S_22=The executor writes repository checkouts across the filesystem; readOnlyRootFilesystem is opt-in, with an emptyDir work dir" -}}
{{- end -}}
{{- range $i, $s := $skips }}
checkov.io/skip{{ add1 $i }}: {{ $s | quote }}
{{- end }}
{{- end -}}

{{/* A rolling-update IntOrString: a count as an integer, a percentage as a quoted string.
1 -> 1     "25%" -> "25%" */}}
{{- define "dockyard.intOrString" -}}
{{- if kindIs "string" . -}}{{ quote . }}{{- else -}}{{ int64 . }}{{- end -}}
{{- end -}}
