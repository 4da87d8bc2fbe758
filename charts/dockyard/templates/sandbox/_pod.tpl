{{/* The executor pod, as the pool's Deployment (spec.template) and agent-sandbox's SandboxTemplate
(spec.podTemplate) both hold it, at the indentation both put it (4): one pod, whichever backend runs it.
$ -> metadata: {labels: <dockyard.sandbox.podLabels>}
     spec: {serviceAccountName: …-sandbox, automountServiceAccountToken: false, containers: [{name: executor, …}]} */}}
{{- define "dockyard.sandbox.podTemplate" -}}
{{- $sb := .Values.sandbox -}}
{{- $sec := $sb.security -}}
{{- $res := $sb.resources -}}
{{- $ro := include "dockyard.readOnlyRoot" $sec }}
    metadata:
      labels:
        {{- include "dockyard.sandbox.podLabels" . | nindent 8 }}
      {{- with $sb.podAnnotations }}
      annotations:
        {{- toYaml . | nindent 8 }}
      {{- end }}
    spec:
      serviceAccountName: {{ include "dockyard.sandbox.name" . | quote }}
      # The preStop pause, then SIGTERM: the executor finishes its tasks in flight (docs/sandbox-pool.md).
      terminationGracePeriodSeconds: {{ int64 $sb.terminationGracePeriodSeconds }}
      automountServiceAccountToken: false
      # Untrusted code: no service-discovery env vars of other Services.
      enableServiceLinks: false
      {{- with .Values.infra.priorityClassName }}
      priorityClassName: {{ . | quote }}
      {{- end }}
      {{- with $sb.runtimeClassName }}
      runtimeClassName: {{ . | quote }}
      {{- end }}
      {{- with .Values.infra.imagePullSecrets }}
      imagePullSecrets:
        {{- include "dockyard.imagePullSecrets" . | nindent 8 }}
      {{- end }}
      {{- if $sec.enabled }}
      securityContext:
        {{- include "dockyard.podSecurityContext" $sec | nindent 8 }}
      {{- end }}
      {{- with $sb.nodeSelector }}
      nodeSelector:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      {{- with $sb.tolerations }}
      tolerations:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      affinity:
        {{- if $sb.affinity }}
        {{- toYaml $sb.affinity | nindent 8 }}
        {{- else }}
        {{- include "dockyard.preferCpuNodes" . | nindent 8 }}
        {{- end }}
      {{- with $sb.topologySpreadConstraints }}
      topologySpreadConstraints:
        {{- range . }}
        - maxSkew: {{ int64 .maxSkew }}
          topologyKey: {{ .topologyKey | quote }}
          whenUnsatisfiable: {{ .whenUnsatisfiable | quote }}
          {{- if not (kindIs "invalid" .minDomains) }}
          minDomains: {{ int64 .minDomains }}
          {{- end }}
          labelSelector:
            {{- if .labelSelector }}
            {{- toYaml .labelSelector | nindent 12 }}
            {{- else }}
            matchLabels:
              {{- include "dockyard.sandbox.selectorLabels" $ | nindent 14 }}
            {{- end }}
        {{- end }}
      {{- end }}
      containers:
        - name: executor
          image: {{ include "dockyard.sandbox.image" . | quote }}
          imagePullPolicy: {{ $sb.image.pullPolicy | default .Values.infra.image.pullPolicy | quote }}
          ports:
            - name: http
              containerPort: {{ int64 $sb.port }}
              protocol: TCP
          env:
            {{- include "dockyard.sandbox.env" . | nindent 12 }}
          lifecycle:
            # Out of the Service's endpoints before the executor is told to stop (0: a no-op sleep).
            preStop:
              sleep:
                seconds: {{ int64 $sb.preStopSleepSeconds }}
          readinessProbe:
            {{- with $sb.readinessProbe }}
            {{- if eq .type "http" }}
            httpGet:
              path: {{ .path | quote }}
              port: http
            {{- else }}
            tcpSocket:
              port: http
            {{- end }}
            periodSeconds: {{ int64 .periodSeconds }}
            failureThreshold: {{ int64 .failureThreshold }}
            {{- end }}
          livenessProbe:
            tcpSocket:
              port: http
            initialDelaySeconds: 10
            periodSeconds: 10
            failureThreshold: 6
          resources:
            requests:
              {{- range $key, $field := dict "cpu" "cpu" "memory" "memory" "ephemeral-storage" "ephemeralStorage" }}
              {{ $key }}: {{ include "dockyard.quantity" (index $res $field) | quote }}
              {{- end }}
            limits:
              {{- /* Each limit defaults to its request; a limit that is set (0 too) is rendered. */}}
              {{- range $key, $field := dict "cpu" "cpu" "memory" "memory" "ephemeral-storage" "ephemeralStorage" }}
              {{- $limit := index $res (printf "%sLimit" $field) }}
              {{ $key }}: {{ include "dockyard.quantity" (ternary (index $res $field) $limit (kindIs "invalid" $limit)) | quote }}
              {{- end }}
          {{- if $sec.enabled }}
          securityContext:
            {{- include "dockyard.containerSecurityContext" $sec | nindent 12 }}
          {{- end }}
          {{- if $ro }}
          volumeMounts:
            {{- include "dockyard.scratchMounts" $sec | nindent 12 }}
          {{- end }}
      {{- if $ro }}
      volumes:
        {{- include "dockyard.scratchVolumes" $sec | nindent 8 }}
      {{- end }}
{{- end -}}
