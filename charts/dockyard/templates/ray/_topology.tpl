{{/*
launch.topology: Kueue's Topology Aware Scheduling annotations on the trainer and inference pod
templates (Kueue reads them from each worker group's template when it admits the gang). Applied after
the overlay: on a placed fleet every `kueue.x-k8s.io/podset-*` annotation is the chart's (the models
and values.schema.json refuse an overlay's). The head and the submitter are never placed: they carry
no weight sync, and Kueue's PodSet group holds two pod sets only. The names are
generator/inputs/topology_rules.py's.
dict "ctx" $ "tpl" {"metadata": {"annotations": {"a": "b"}}} with launch.topology {level: rack, mode: required, groups: together}
-> {"metadata": {"annotations": {"a": "b", "kueue.x-k8s.io/podset-required-topology": "rack",
    "kueue.x-k8s.io/podset-group-name": "gpu-fleets"}}} */}}
{{- define "dockyard.ray.pinTopology" -}}
{{- $tpl := .tpl -}}
{{- with .ctx.Values.launch.topology -}}
{{- $meta := $tpl.metadata | default dict -}}
{{- $ann := dict -}}
{{- range $k, $v := ($meta.annotations | default dict) -}}
{{- if not (hasPrefix "kueue.x-k8s.io/podset-" $k) -}}{{- $_ := set $ann $k $v -}}{{- end -}}
{{- end -}}
{{- if eq (.mode | default "required") "required" -}}
{{- $_ := set $ann "kueue.x-k8s.io/podset-required-topology" .level -}}
{{- else -}}
{{- $_ := set $ann "kueue.x-k8s.io/podset-preferred-topology" .level -}}
{{- end -}}
{{- if eq .groups "together" -}}
{{- $_ := set $ann "kueue.x-k8s.io/podset-group-name" "gpu-fleets" -}}
{{- end -}}
{{- $_ := set $meta "annotations" $ann -}}
{{- $_ := set $tpl "metadata" $meta -}}
{{- end -}}
{{- toJson $tpl -}}
{{- end -}}
