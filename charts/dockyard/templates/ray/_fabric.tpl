{{/*
kuberay.network in the trainer and inference groups (docs/fabric.md): the fabric the NCCL weight sync
crosses. Both groups get the same fields, applied by dockyard.ray.group after the kuberay.spec overlay, so
no overlay makes the groups differ or removes them; the head carries no NCCL traffic and gets none.
The env names it owns are dockyard.const.fabricEnv (_constants.tpl, from generator/inputs/fabric_rules.py).
*/}}

{{/* The fabric's env of one group. Gloo reads GLOO_SOCKET_IFNAME as exact interface names, comma-separated:
it has no exclusion (^) nor prefix match, so it gets the value only without a ^ (and without NCCL's leading =).
dict "ctx" $ "role" "trainer" with kuberay.network {profile: rdma, socketInterface: eth0, rdma: {hca: mlx5}}
-> [{"name": "NCCL_SOCKET_IFNAME", "value": "eth0"}, {"name": "GLOO_SOCKET_IFNAME", "value": "eth0"},
    {"name": "NCCL_IB_HCA", "value": "mlx5"}]
socketInterface "^lo,docker" -> [{"name": "NCCL_SOCKET_IFNAME", "value": "^lo,docker"}]
dict "ctx" $ "role" "head" -> [] */}}
{{- define "dockyard.ray.fabricEnv" -}}
{{- $net := .ctx.Values.kuberay.network | default dict -}}
{{- $env := list -}}
{{- if ne .role "head" -}}
{{- with $net.socketInterface -}}
{{- $env = append $env (dict "name" "NCCL_SOCKET_IFNAME" "value" .) -}}
{{- if not (hasPrefix "^" .) -}}
{{- $env = append $env (dict "name" "GLOO_SOCKET_IFNAME" "value" (trimPrefix "=" .)) -}}
{{- end -}}
{{- end -}}
{{- if eq $net.profile "rdma" -}}
{{- with $net.rdma.hca -}}{{- $env = append $env (dict "name" "NCCL_IB_HCA" "value" .) -}}{{- end -}}
{{- else if eq $net.profile "efa" -}}
{{- $env = append $env (dict "name" "FI_PROVIDER" "value" "efa") -}}
{{- end -}}
{{- end -}}
{{- toJson $env -}}
{{- end -}}

{{/* The device a profile asks for per pod: {"name": resource, "count": n}, or {} (tcp, hostNetwork).
$ with kuberay.network {profile: efa, efa: {perPod: 4}} -> {"name": "vpc.amazonaws.com/efa", "count": 4} */}}
{{- define "dockyard.ray.fabricDevice" -}}
{{- $net := .Values.kuberay.network | default dict -}}
{{- if eq $net.profile "rdma" -}}
{{- toJson (dict "name" $net.rdma.resourceName "count" (int64 (default 1 $net.rdma.perPod))) -}}
{{- else if eq $net.profile "efa" -}}
{{- toJson (dict "name" "vpc.amazonaws.com/efa" "count" (int64 $net.efa.perPod)) -}}
{{- else -}}
{{- toJson dict -}}
{{- end -}}
{{- end -}}

{{/* One Ray pod per node for hostNetwork: every host-network trainer and inference pod (of any release, in
any namespace) carries the fabric's own label, set after the overlay, and repels the others (two on one node
would share its ports). */}}
{{- define "dockyard.ray.fabricAntiAffinity" -}}
{{- toJson (dict
  "labelSelector" (dict "matchExpressions" (list (dict "key" "dockyard.dev/host-network" "operator" "Exists")))
  "namespaceSelector" dict
  "topologyKey" "kubernetes.io/hostname") -}}
{{- end -}}

{{/* A worker group's pod template with the fabric pinned: the device in the Ray container's (index 0)
requests and limits, IPC_LOCK added (rdma), the Multus networks annotation (rdma), hostNetwork with its DNS
policy, the dockyard.dev/host-network label and anti-affinity (hostNetwork); what the overlay set of these is
replaced.
dict "ctx" $ "role" "trainer" "tpl" {"metadata": …} "spec" {"containers": […], …}
-> {"tpl": {"metadata": {"annotations": {"k8s.v1.cni.cncf.io/networks": "ib-net"}}}, "spec": {…}} */}}
{{- define "dockyard.ray.pinFabric" -}}
{{- $net := .ctx.Values.kuberay.network | default dict -}}
{{- $tpl := .tpl -}}
{{- $spec := .spec -}}
{{- if ne .role "head" -}}
{{- $main := first $spec.containers -}}
{{- $device := include "dockyard.ray.fabricDevice" .ctx | fromJson -}}
{{- if $device -}}
{{- $res := $main.resources | default dict -}}
{{- range $side := list "requests" "limits" -}}
{{- $_ := set $res $side (set (index $res $side | default dict) $device.name $device.count) -}}
{{- end -}}
{{- $_ := set $main "resources" $res -}}
{{- end -}}
{{- if eq $net.profile "rdma" -}}
{{- $sc := $main.securityContext | default dict -}}
{{- $caps := $sc.capabilities | default dict -}}
{{- $add := without ($caps.add | default list) "IPC_LOCK" -}}
{{- $_ := set $caps "add" (append $add "IPC_LOCK") -}}
{{- $drop := without ($caps.drop | default list) "IPC_LOCK" -}}
{{- if $drop -}}{{- $_ := set $caps "drop" $drop -}}{{- else -}}{{- $_ := unset $caps "drop" -}}{{- end -}}
{{- $_ := set $sc "capabilities" $caps -}}
{{- $_ := set $main "securityContext" $sc -}}
{{- end -}}
{{- $meta := $tpl.metadata | default dict -}}
{{- $notes := omit ($meta.annotations | default dict) "k8s.v1.cni.cncf.io/networks" -}}
{{- if and (eq $net.profile "rdma") $net.rdma.networks -}}
{{- $_ := set $notes "k8s.v1.cni.cncf.io/networks" (join "," $net.rdma.networks) -}}
{{- end -}}
{{- if $notes -}}{{- $_ := set $meta "annotations" $notes -}}{{- else -}}{{- $_ := unset $meta "annotations" -}}{{- end -}}
{{- $labels := omit ($meta.labels | default dict) "dockyard.dev/host-network" -}}
{{- if eq $net.profile "hostNetwork" -}}{{- $_ := set $labels "dockyard.dev/host-network" "true" -}}{{- end -}}
{{- $_ := set $meta "labels" $labels -}}
{{- $_ := set $tpl "metadata" $meta -}}
{{- $_ := unset $spec "hostNetwork" -}}
{{- if eq $net.profile "hostNetwork" -}}
{{- $_ := set $spec "hostNetwork" true -}}
{{- $_ := set $spec "dnsPolicy" "ClusterFirstWithHostNet" -}}
{{- $aff := $spec.affinity | default dict -}}
{{- $anti := $aff.podAntiAffinity | default dict -}}
{{- $term := include "dockyard.ray.fabricAntiAffinity" .ctx | fromJson -}}
{{- $terms := $anti.requiredDuringSchedulingIgnoredDuringExecution | default list -}}
{{- if not (has $term $terms) -}}{{- $terms = append $terms $term -}}{{- end -}}
{{- $_ := set $anti "requiredDuringSchedulingIgnoredDuringExecution" $terms -}}
{{- $_ := set $aff "podAntiAffinity" $anti -}}
{{- $_ := set $spec "affinity" $aff -}}
{{- end -}}
{{- end -}}
{{- toJson (dict "tpl" $tpl "spec" $spec) -}}
{{- end -}}
