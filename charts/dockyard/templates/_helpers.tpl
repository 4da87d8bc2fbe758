{{/* Names ---------------------------------------------------------------- */}}

{{/* The name every object derives from: the release name (dockyard.validate.releaseName checks
it against KubeRay's limits). release "grpo-swe" -> grpo-swe */}}
{{- define "dockyard.fullname" -}}
{{- .Release.Name -}}
{{- end -}}

{{/* The recipe ConfigMap: grpo-swe -> grpo-swe-recipe */}}
{{- define "dockyard.recipe.name" -}}{{ include "dockyard.fullname" . }}-recipe{{- end -}}

{{/* Labels --------------------------------------------------------------- */}}

{{/* The labels that select this release's objects: app.kubernetes.io/name and instance. */}}
{{- define "dockyard.selectorLabels" -}}
app.kubernetes.io/name: {{ .Chart.Name | quote }}
app.kubernetes.io/instance: {{ .Release.Name | quote }}
{{- end -}}

{{/* The standard labels of every object: the selector labels plus chart, version, manager, part-of. */}}
{{- define "dockyard.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | quote }}
{{ include "dockyard.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service | quote }}
app.kubernetes.io/part-of: dockyard
{{- end -}}

{{/* The labels of one component's objects (fleet optional).
dict "ctx" $ "component" "sandbox" "fleet" "sandbox" -> <dockyard.labels>
  app.kubernetes.io/component: "sandbox"
  dockyard.dev/fleet: "sandbox" */}}
{{- define "dockyard.componentLabels" -}}
{{ include "dockyard.labels" .ctx }}
app.kubernetes.io/component: {{ .component | quote }}
{{- with .fleet }}
dockyard.dev/fleet: {{ . | quote }}
{{- end }}
{{- end -}}

{{/* Kueue's labels of the queued object, the RayJob (rayjob) or the RayCluster (bringup), never of its
pod templates: Kueue reads them there and suspends the object until it admits the whole gang.
The chart never renders `suspend` itself (dockyard.validate.kueue), so an upgrade cannot flip it.
$ with launch {queue: training, priorityClass: high} -> kueue.x-k8s.io/queue-name: "training"
                                                        kueue.x-k8s.io/priority-class: "high"
$ without launch.queue -> "" */}}
{{- define "dockyard.kueueLabels" -}}
{{- with .Values.launch.queue }}
kueue.x-k8s.io/queue-name: {{ . | quote }}
{{- with $.Values.launch.priorityClass }}
kueue.x-k8s.io/priority-class: {{ . | quote }}
{{- end }}
{{- end }}
{{- end -}}

{{/* Images and pods ------------------------------------------------------ */}}

{{/* dict "img" <image> "fallback" <image>: the reference, repository@digest, else repository:tag.
An image that sets any of repository, tag or digest is its own reference (its repository defaults to
the fallback's, its tag to "latest"); only an image that sets none of them takes the fallback's
reference, and then as a whole. generator/inputs/compose.py image_reference states the same rule.
dict "img" {"tag": "v2"} "fallback" {"repository": "ghcr.io/x/swe", "tag": "vllm"} -> ghcr.io/x/swe:v2 */}}
{{- define "dockyard.image" -}}
{{- $fb := .fallback | default dict -}}
{{- $img := .img | default dict -}}
{{- if not (or $img.repository $img.tag $img.digest) -}}{{- $img = $fb -}}{{- end -}}
{{- $repo := $img.repository | default $fb.repository -}}
{{- if $img.digest -}}
{{- printf "%s@%s" $repo $img.digest -}}
{{- else -}}
{{- printf "%s:%s" $repo ($img.tag | default "latest") -}}
{{- end -}}
{{- end -}}

{{/* A Kubernetes quantity as a string: Helm reads numbers from values as floats, so a whole
number is printed as an integer (2, not 2e+06 nor 2.0); strings pass unchanged.
2000000.0 -> 2000000; 0.5 -> 0.5; "2Gi" -> 2Gi */}}
{{- define "dockyard.quantity" -}}
{{- if and (kindIs "float64" .) (eq . (float64 (int64 .))) -}}
{{- int64 . -}}
{{- else -}}
{{- toString . -}}
{{- end -}}
{{- end -}}

{{/* One shell word: bare when it holds only safe characters, else single-quoted (' as '"'"').
/etc/dockyard/recipe.yaml -> /etc/dockyard/recipe.yaml; /etc/it's -> '/etc/it'"'"'s' */}}
{{- define "dockyard.shellQuote" -}}
{{- if regexMatch "^[-A-Za-z0-9@%+=:,./_]+$" . -}}
{{- . -}}
{{- else -}}
{{- printf "'%s'" (replace "'" "'\"'\"'" .) -}}
{{- end -}}
{{- end -}}

{{/* The ids of a security settings block: a set id is rendered, 0 included (zero is root, a
value); `restricted` fills an unset runAsUser (and fsGroup) with 10001.
dict "sec" {"profile": "restricted", "runAsGroup": 0} "fields" ["runAsUser", "runAsGroup"]
-> runAsUser: 10001
   runAsGroup: 0 */}}
{{- define "dockyard.securityIds" -}}
{{- $restricted := eq .sec.profile "restricted" -}}
{{- range $field := .fields }}
{{- $id := index $.sec $field }}
{{- if not (kindIs "invalid" $id) }}
{{ $field }}: {{ int64 $id }}
{{- else if and $restricted (has $field (list "runAsUser" "fsGroup")) }}
{{ $field }}: 10001
{{- end }}
{{- end }}
{{- end -}}

{{/* A container's securityContext from a security settings block (sandbox.security, infra.security):
privilege escalation, capabilities, the user, read-only root, seccomp; `restricted` tightens them. */}}
{{- define "dockyard.containerSecurityContext" -}}
{{- $restricted := eq .profile "restricted" -}}
allowPrivilegeEscalation: {{ .allowPrivilegeEscalation }}
{{- with .dropCapabilities }}
capabilities:
  drop: {{ toJson . }}
{{- end }}
{{- if or .runAsNonRoot $restricted }}
runAsNonRoot: true
{{- end }}
{{- include "dockyard.securityIds" (dict "sec" . "fields" (list "runAsUser" "runAsGroup")) }}
readOnlyRootFilesystem: {{ or .readOnlyRootFilesystem $restricted }}
seccompProfile:
  type: {{ .seccompProfile | quote }}
{{- end -}}

{{/* A pod's securityContext from a security settings block: seccomp, non-root, the ids. */}}
{{- define "dockyard.podSecurityContext" -}}
{{- $restricted := eq .profile "restricted" -}}
seccompProfile:
  type: {{ .seccompProfile | quote }}
{{- if or .runAsNonRoot $restricted }}
runAsNonRoot: true
{{- end }}
{{- include "dockyard.securityIds" (dict "sec" . "fields" (list "runAsUser" "runAsGroup" "fsGroup")) }}
{{- end -}}

{{/* True ("true") when the settings make the root filesystem read-only. */}}
{{- define "dockyard.readOnlyRoot" -}}
{{- if and .enabled (or .readOnlyRootFilesystem (eq .profile "restricted")) }}true{{ end -}}
{{- end -}}

{{/* Writable scratch volumes for a read-only root filesystem: work dir and /tmp. */}}
{{- define "dockyard.scratchVolumes" -}}
- name: workdir
  emptyDir:
    {{- if not (kindIs "invalid" .workDirSizeLimit) }}
    sizeLimit: {{ include "dockyard.quantity" .workDirSizeLimit | quote }}
    {{- else }} {}
    {{- end }}
- name: tmp
  emptyDir: {}
{{- end -}}

{{/* The mounts of dockyard.scratchVolumes: the settings' workDir and /tmp. */}}
{{- define "dockyard.scratchMounts" -}}
- name: workdir
  mountPath: {{ .workDir | quote }}
- name: tmp
  mountPath: /tmp
{{- end -}}

{{/* Pull secrets as a pod lists them: ["regcred"] -> - name: "regcred" */}}
{{- define "dockyard.imagePullSecrets" -}}
{{- range . }}
- name: {{ . | quote }}
{{- end }}
{{- end -}}

{{/* Default affinity of GPU-free pods: prefer nodes without GPUs, so they do not take a GPU node's cpu. */}}
{{- define "dockyard.preferCpuNodes" -}}
nodeAffinity:
  preferredDuringSchedulingIgnoredDuringExecution:
    - weight: 100
      preference:
        matchExpressions:
          - key: nvidia.com/gpu.present
            operator: DoesNotExist
{{- end -}}

{{/* The job's entrypoint under the run watcher (launch.watch, docs/run-watch.md): the watcher is the driver and
runs the entrypoint, one quoted word, with /bin/sh. Unchanged with launch.watch.enabled false.
dict "ctx" $ "entry" "python -m train" with stallTimeoutSeconds 600
-> python3 /etc/dockyard/run_watch.py --run grpo-swe --keep-bytes 67108864 --stall-timeout 600 --first-report 1800 -- 'python -m train' */}}
{{- define "dockyard.ray.watched" -}}
{{- $l := .ctx.Values.launch -}}
{{- $w := $l.watch -}}
{{- if $w.enabled -}}
{{- $args := printf "--run %s --keep-bytes %d" (include "dockyard.fullname" .ctx) (mul (int64 $w.keepLogMiB) 1048576) -}}
{{- if not (kindIs "invalid" $w.stallTimeoutSeconds) -}}
{{- $args = printf "%s --stall-timeout %d --first-report %d" $args (int64 $w.stallTimeoutSeconds) (int64 $w.firstReportSeconds) -}}
{{- end -}}
{{- printf "python3 %s %s -- %s" (include "dockyard.shellQuote" (printf "%s/run_watch.py" $l.configMountPath)) $args (include "dockyard.shellQuote" .entry) -}}
{{- else -}}
{{- .entry -}}
{{- end -}}
{{- end -}}
