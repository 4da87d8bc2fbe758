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
app.kubernetes.io/name: {{ .Chart.Name | quote }}
app.kubernetes.io/instance: {{ .Release.Name | quote }}
{{- end -}}

{{- define "dockyard.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | quote }}
{{ include "dockyard.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service | quote }}
app.kubernetes.io/part-of: dockyard
{{- end -}}

{{/* Labels of one component: dict "ctx" $ "component" "sandbox" "fleet" "sandbox" */}}
{{- define "dockyard.componentLabels" -}}
{{ include "dockyard.labels" .ctx }}
app.kubernetes.io/component: {{ .component | quote }}
{{- with .fleet }}
dockyard.dev/fleet: {{ . | quote }}
{{- end }}
{{- end -}}

{{- define "dockyard.sandbox.selectorLabels" -}}
{{ include "dockyard.selectorLabels" . }}
app.kubernetes.io/component: sandbox
{{- end -}}

{{/* Images and pods ------------------------------------------------------ */}}

{{/* dict "img" <image> "fallback" <image>: the reference, repository@digest, else repository:tag.
An image that sets any of repository, tag or digest is its own reference (its repository defaults to
the fallback's, its tag to "latest"); only an image that sets none of them takes the fallback's
reference, and then as a whole. generator/inputs/compose.py image_reference states the same rule. */}}
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

{{- define "dockyard.sandbox.image" -}}
{{- include "dockyard.image" (dict "img" .Values.sandbox.image "fallback" .Values.infra.image) -}}
{{- end -}}

{{/* A Kubernetes quantity as a string: Helm reads numbers from values as floats, so a whole
number is printed as an integer (2, not 2e+06 nor 2.0); strings pass unchanged. */}}
{{- define "dockyard.quantity" -}}
{{- if and (kindIs "float64" .) (eq . (float64 (int64 .))) -}}
{{- int64 . -}}
{{- else -}}
{{- toString . -}}
{{- end -}}
{{- end -}}

{{/* One shell word: bare when it holds only safe characters, else single-quoted (' as '"'"'). */}}
{{- define "dockyard.shellQuote" -}}
{{- if regexMatch "^[-A-Za-z0-9@%+=:,./_]+$" . -}}
{{- . -}}
{{- else -}}
{{- printf "'%s'" (replace "'" "'\"'\"'" .) -}}
{{- end -}}
{{- end -}}

{{- define "dockyard.sandbox.url" -}}
http://{{ include "dockyard.sandbox.name" . }}.{{ .Release.Namespace }}.svc.cluster.local:{{ int64 .Values.sandbox.port }}
{{- end -}}

{{/* The ids of a security settings block: a set id is rendered, 0 included (zero is root, a
value); `restricted` fills an unset runAsUser (and fsGroup) with 10001. */}}
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
{{- include "dockyard.securityIds" (dict "sec" . "fields" (list "runAsUser" "runAsGroup")) }}
readOnlyRootFilesystem: {{ or .readOnlyRootFilesystem $restricted }}
seccompProfile:
  type: {{ .seccompProfile | quote }}
{{- end -}}

{{/* Pod securityContext from a security settings block. */}}
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

{{- define "dockyard.scratchMounts" -}}
- name: workdir
  mountPath: {{ .workDir | quote }}
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

{{/* Checks -------------------------------------------------------------- */}}

{{/* Helm's toYaml silently drops a whole structure holding U+007F-U+009F (but U+0085), U+FFFE or
U+FFFF, turns U+0085 into a space and writes U+2028/U+2029 raw, which breaks the manifest or changes
the string; and it writes a key "<<" unquoted, YAML's merge key. Refuse such a string, by path,
rather than lose or alter the object it is in.
dict "v" <value> "path" <key path>. The recipe is not walked: its strings are only ever quoted. */}}
{{- define "dockyard.checkChars" -}}
{{- $bad := `[\x{7f}-\x{9f}\x{2028}\x{2029}\x{fffe}\x{ffff}]` -}}
{{- if kindIs "map" .v -}}
{{- range $k, $x := .v -}}
{{- if eq $k "<<" -}}
{{- fail (printf "%s: the key \"<<\" is YAML's merge key, which Helm's toYaml writes unquoted: it would merge into or break the object; rename it" $.path) -}}
{{- end -}}
{{- if regexMatch $bad $k -}}
{{- fail (printf "%s: the key %q holds a character Helm's toYaml drops or mangles (U+007F to U+009F, U+2028, U+2029, U+FFFE, U+FFFF); remove it" $.path $k) -}}
{{- end -}}
{{- include "dockyard.checkChars" (dict "v" $x "path" (printf "%s.%s" $.path $k)) -}}
{{- end -}}
{{- else if kindIs "slice" .v -}}
{{- range $i, $x := .v -}}
{{- include "dockyard.checkChars" (dict "v" $x "path" (printf "%s[%d]" $.path $i)) -}}
{{- end -}}
{{- else if and (kindIs "string" .v) (regexMatch $bad .v) -}}
{{- fail (printf "%s: %q holds a character Helm's toYaml drops or mangles (U+007F to U+009F, U+2028, U+2029, U+FFFE, U+FFFF); remove it" .path .v) -}}
{{- end -}}
{{- end -}}
