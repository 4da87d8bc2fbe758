{{/* Names ---------------------------------------------------------------- */}}

{{/* The release name, checked against KubeRay's limits: a RayJob name <= 47 characters
(its cluster gets a 5-character suffix), a RayCluster <= 53, both DNS-1035 labels. */}}
{{- define "dockyard.fullname" -}}
{{- $name := .Release.Name -}}
{{- if not (regexMatch "^[a-z]([-a-z0-9]*[a-z0-9])?$" $name) -}}
{{- fail (printf "release name %q must be a DNS-1035 label (lower case, starting with a letter)" $name) -}}
{{- end -}}
{{- $max := ternary 47 53 (eq .Values.launch.mode "rayjob") -}}
{{- if gt (len $name) $max -}}
{{- fail (printf "release name %q has %d characters; KubeRay allows at most %d in %s mode" $name (len $name) $max .Values.launch.mode) -}}
{{- end -}}
{{- $name -}}
{{- end -}}

{{- define "dockyard.sandbox.name" -}}{{ include "dockyard.fullname" . }}-sandbox{{- end -}}
{{- define "dockyard.recipe.name" -}}{{ include "dockyard.fullname" . }}-recipe{{- end -}}

{{/* Labels --------------------------------------------------------------- */}}

{{- define "dockyard.selectorLabels" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name | quote }}
{{- end -}}

{{- define "dockyard.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{ include "dockyard.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: dockyard
{{- end -}}

{{/* Labels of one component: dict "ctx" $ "component" "sandbox" "fleet" "sandbox" */}}
{{- define "dockyard.componentLabels" -}}
{{ include "dockyard.labels" .ctx }}
app.kubernetes.io/component: {{ .component }}
{{- with .fleet }}
dockyard.dev/fleet: {{ . }}
{{- end }}
{{- end -}}

{{- define "dockyard.sandbox.selectorLabels" -}}
{{ include "dockyard.selectorLabels" . }}
app.kubernetes.io/component: sandbox
{{- end -}}

{{/* Images and pods ------------------------------------------------------ */}}

{{/* dict "img" <image> "fallback" <image>: repository@digest, else repository:tag. */}}
{{- define "dockyard.image" -}}
{{- $img := .img | default dict -}}
{{- $fb := .fallback | default dict -}}
{{- $repo := $img.repository | default $fb.repository -}}
{{- $digest := $img.digest | default $fb.digest -}}
{{- if $digest -}}
{{ $repo }}@{{ $digest }}
{{- else -}}
{{ $repo }}:{{ $img.tag | default $fb.tag }}
{{- end -}}
{{- end -}}

{{- define "dockyard.sandbox.url" -}}
http://{{ include "dockyard.sandbox.name" . }}.{{ .Release.Namespace }}.svc.cluster.local:{{ .Values.sandbox.port }}
{{- end -}}

{{/* Container securityContext from a security settings block. */}}
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
{{- if or .runAsUser $restricted }}
runAsUser: {{ .runAsUser | default 10001 }}
{{- end }}
{{- with .runAsGroup }}
runAsGroup: {{ . }}
{{- end }}
readOnlyRootFilesystem: {{ or .readOnlyRootFilesystem $restricted }}
seccompProfile:
  type: {{ .seccompProfile }}
{{- end -}}

{{/* Pod securityContext from a security settings block. */}}
{{- define "dockyard.podSecurityContext" -}}
{{- $restricted := eq .profile "restricted" -}}
seccompProfile:
  type: {{ .seccompProfile }}
{{- if or .runAsNonRoot $restricted }}
runAsNonRoot: true
{{- end }}
{{- if or .runAsUser $restricted }}
runAsUser: {{ .runAsUser | default 10001 }}
{{- end }}
{{- with .runAsGroup }}
runAsGroup: {{ . }}
{{- end }}
{{- if or .fsGroup $restricted }}
fsGroup: {{ .fsGroup | default 10001 }}
{{- end }}
{{- end -}}

{{/* True ("true") when the settings make the root filesystem read-only. */}}
{{- define "dockyard.readOnlyRoot" -}}
{{- if and .enabled (or .readOnlyRootFilesystem (eq .profile "restricted")) }}true{{ end -}}
{{- end -}}

{{/* Writable scratch volumes for a read-only root filesystem: work dir and /tmp. */}}
{{- define "dockyard.scratchVolumes" -}}
- name: workdir
  emptyDir:
    {{- with .workDirSizeLimit }}
    sizeLimit: {{ . }}
    {{- else }} {}
    {{- end }}
- name: tmp
  emptyDir: {}
{{- end -}}

{{- define "dockyard.scratchMounts" -}}
- name: workdir
  mountPath: {{ .workDir }}
- name: tmp
  mountPath: /tmp
{{- end -}}

{{- define "dockyard.imagePullSecrets" -}}
{{- range . }}
- name: {{ . | quote }}
{{- end }}
{{- end -}}

{{/* checkov skips, each rendered only while its control is actually off, with the reason. */}}
{{- define "dockyard.sandbox.scannerSkips" -}}
{{- $sb := .Values.sandbox -}}
{{- $sec := $sb.security -}}
{{- $restricted := and $sec.enabled (eq $sec.profile "restricted") -}}
{{- $digest := $sb.image.digest | default .Values.infra.image.digest -}}
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
