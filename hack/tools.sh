#!/usr/bin/env bash
# Build the pinned tools from Go modules into a version-keyed cache outside the repo.
# usage: hack/tools.sh [TARGET ... | node]   (default: every tool a build stream of `make tools` holds;
#        node = the real node's components)          hack/tools.sh --key TARGET ...: the recipe keys only
# The targets, their pins, build functions and cache entries: the table generator/tool_table.toml (one row per
# target; $DOCKYARD_TOOLS_TABLE reads another, for tests). Each tool lands in $CACHE/<entry>-<version>/ and is
# reused when present; the functions below are the recipes.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
# the pins (HELM_VERSION=...), the columns tool_pin, tool_build, tool_entry, tool_source, tool_debs (keyed by
# target), default_tools and node_tools
table_shell=$(python3 "$root/generator/tool_table.py" shell)
eval "$table_shell"
CACHE=${DOCKYARD_TOOLS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/dockyard-k8s}
# -dwarf=false: no debug info compiled (the links strip it anyway, -ldflags -w): the same binaries for ~12% less
# compile CPU (etcd cold: 107 -> 95 CPU-s, docs/playground.md). Outside the recipes, so no entry rebuilds for it.
export GOTOOLCHAIN=local GOFLAGS="-buildvcs=false -gcflags=all=-dwarf=false" CGO_ENABLED=0
mkdir -p "$CACHE"

say() { printf '[tools] %s\n' "$*" >&2; }

# Scratch space of this run (wrapper modules), removed on any exit; $partial is the cache entry
# being built, removed unless it was installed.
scratch=$(mktemp -d)
partial=
trap 'rm -rf "$scratch" ${partial:+"$partial"}' EXIT
scratch_dir() { mktemp -d "$scratch/XXXXXX"; }

# recipe_key FUNC [SRC]: a hash of what a build depends on — the text of FUNC and of every function
# of this script it calls (transitively), the value of every *_VERSION pin that text reads (e.g.
# helm's KUBERNETES_VERSION) and the files under SRC.
recipe_key() {
  local fn=$1 src=${2:-} body seen=" $1 " f grew=1
  body=$(declare -f "$fn")
  while [ $grew = 1 ]; do
    grew=0
    for f in $(declare -F | awk '{print $3}'); do
      case $seen in *" $f "*) continue ;; esac
      if grep -qw -- "$f" <<<"$body"; then body+=$'\n'$(declare -f "$f"); seen+="$f "; grew=1; fi
    done
  done
  { printf '%s\n' "$body"
    grep -oE '\b[A-Z][A-Z0-9_]*_VERSION\b' <<<"$body" | sort -u | while read -r v; do printf '%s=%s\n' "$v" "${!v:-}"; done
    [ -z "$src" ] || find "$src" -type f -print0 | sort -z | xargs -0 cat
  } | sha256sum | cut -c1-16
}

# build NAME VERSION FUNC [SRC]: run FUNC with $out (a temp dir) unless $CACHE/NAME-VERSION holds a
# build with the same recipe_key. One build per entry at a time (a lock file); the new entry replaces
# the old one by rename, so a reader sees the old build or the new one, never half of one.
build() {
  local name=$1 version=$2 fn=$3 dest="$CACHE/$1-$2" recipe
  recipe=$(recipe_key "$fn" "${4:-}")
  if [ -n "${key_only:-}" ]; then printf '%s %s %s\n' "$name" "$version" "$recipe"; return; fi
  exec {lock}>"$CACHE/.$name-$version.lock"
  flock "$lock"
  if [ "$(cat "$dest/.complete" 2>/dev/null)" = "$recipe" ]; then
    say "$name $version: cached ($dest)"; exec {lock}>&-; return
  fi
  say "$name $version: building (cold builds take minutes; progress below)"
  local start=$SECONDS out
  out=$(mktemp -d "$CACHE/.$name.XXXXXX"); partial=$out
  "$fn" "$out" "$version"
  echo "$recipe" > "$out/.complete"
  if [ -e "$dest" ]; then mv "$dest" "$out.old" && mv "$out" "$dest" && rm -rf "$out.old"; else mv "$out" "$dest"; fi
  partial=
  exec {lock}>&-
  say "$name $version: built in $((SECONDS - start)) s -> $dest ($(du -sh "$dest" | cut -f1))"
}

# Helm as its release Makefile builds it: version, commit and tree state stamped; Helm 3's default
# capabilities (helm template without --kube-version) pinned to the playground's Kubernetes minor.
# Helm 4 reads that default from its client-go module version instead (no ldflag exists for it).
build_helm() {
  local major=${2%%.*} mod commit ld minor=${KUBERNETES_VERSION#v1.}; minor=${minor%%.*}
  mod="helm.sh/helm/$major"
  commit=$(go mod download -json "$mod@$2" | python3 -c 'import json,sys; print(json.load(sys.stdin).get("Origin", {}).get("Hash", ""))')
  ld="-s -w -X $mod/internal/version.version=$2 -X $mod/internal/version.gitCommit=$commit"
  ld="$ld -X $mod/internal/version.gitTreeState=clean -X $mod/internal/version.metadata="
  if [ "$major" = v3 ]; then
    for p in pkg/lint/rules pkg/chartutil; do
      ld="$ld -X $mod/$p.k8sVersionMajor=1 -X $mod/$p.k8sVersionMinor=$minor"
    done
  fi
  GOBIN=$1 go install -trimpath -ldflags "$ld" "$mod/cmd/helm@$2"
}

build_kubeconform() {
  GOBIN=$1 go install -ldflags "-s -w" "github.com/yannh/kubeconform/cmd/kubeconform@$2"
}

# go_module DIR NAME: an empty Go module NAME in DIR, and cd there.
go_module() {
  mkdir -p "$1" && cd "$1"
  printf 'module %s\n\ngo 1.26\n' "$2" > go.mod
}

# kube_module DIR NAME VERSION [CMD...]: a Go module NAME in DIR (cd there) that requires
# k8s.io/kubernetes@VERSION with its staging modules replaced by their published versions (as
# k8s.io/kubernetes's own go.mod does with local paths), importing each CMD (k8s.io/kubernetes/cmd/CMD)
# under the `tools` build tag, tidied. $kube_ld: the version stamp Kubernetes' release build sets.
kube_module() {
  local dir=$1 name=$2 v=$3 gomod minor=${3#v1.}; shift 3; minor=${minor%%.*}
  go_module "$dir" "$name"
  gomod=$(go mod download -json "k8s.io/kubernetes@$v" | python3 -c 'import json,sys; print(json.load(sys.stdin)["GoMod"])')
  grep -oE '^\s*k8s.io/[a-z0-9-]+ => ./staging/src/' "$gomod" | awk '{print $1}' | sort -u | while read -r m; do
    printf 'replace %s => %s v0.%s\n' "$m" "$m" "${v#v1.}" >> go.mod
  done
  # the require must be resolved with the replaces already in place
  printf 'require k8s.io/kubernetes %s\n' "$v" >> go.mod
  if [ $# -gt 0 ]; then
    { printf '//go:build tools\npackage wrapper\nimport (\n'; printf '_ "k8s.io/kubernetes/cmd/%s"\n' "$@"; printf ')\n'; } > tools.go
  fi
  go mod tidy
  kube_ld="-s -w"
  local p now; now=$(date -u +%Y-%m-%dT%H:%M:%SZ)
  for p in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    kube_ld+=" -X $p.gitVersion=$v -X $p.gitMajor=1 -X $p.gitMinor=$minor -X $p.gitTreeState=clean"
    kube_ld+=" -X $p.gitCommit=0000000000000000000000000000000000000000 -X $p.buildDate=$now"
  done
}

# kube_commands OUT VERSION CMD...: Kubernetes' commands, version-stamped, into OUT.
kube_commands() {
  local out=$1 v=$2 c; shift 2
  ( kube_module "$(scratch_dir)" dockyard.local/wrapper "$v" "$@"
    for c in "$@"; do
      say "kubernetes $v: $c"
      go build -tags tools -trimpath -ldflags "$kube_ld" -o "$out/$c" "k8s.io/kubernetes/cmd/$c"
    done )
}

build_etcd() {
  ( go_module "$(scratch_dir)" dockyard.local/wrapper
    go get "go.etcd.io/etcd/server/v3@$2"
    go build -trimpath -ldflags "-s -w" -o "$1/etcd" go.etcd.io/etcd/server/v3 )
}

build_kubernetes() {
  kube_commands "$1" "$2" kube-apiserver kube-controller-manager kube-scheduler kubectl
}

build_kwok() {
  GOBIN=$1 go install -ldflags "-s -w" "sigs.k8s.io/kwok/cmd/kwok@$2"
  local src; src=$(go mod download -json "sigs.k8s.io/kwok@$2" | python3 -c 'import json,sys; print(json.load(sys.stdin)["Dir"])')
  mkdir -p "$1/stages" && cp -r "$src/kustomize/stage/." "$1/stages/" && chmod -R u+w "$1/stages"
}

build_kuberay() {
  GOBIN=$1 go install -ldflags "-s -w" "github.com/ray-project/kuberay/ray-operator@$2"
  local src; src=$(go mod download -json "github.com/ray-project/kuberay/ray-operator@$2" | python3 -c 'import json,sys; print(json.load(sys.stdin)["Dir"])')
  mkdir -p "$1/crds" && cp "$src"/config/crd/bases/*.yaml "$1/crds/" && chmod -R u+w "$1/crds"
}

# The CNCF distribution registry: an OCI registry on 127.0.0.1 for the chart's push/install tests.
build_registry() {
  GOBIN=$1 go install -trimpath -ldflags "-s -w -X github.com/distribution/distribution/v3/version.version=$2" \
    "github.com/distribution/distribution/v3/cmd/registry@$2"
}

# kube-validate (tools/kube-validate): the apiserver's own validation, offline, for `check`. A
# module like build_kubernetes's, so it links the pinned Kubernetes' validation packages.
build_kube_validate() {
  ( local w; w=$(scratch_dir); cp "$root"/tools/kube-validate/*.go "$w/"
    kube_module "$w" dockyard.local/kube-validate "$2"
    go build -trimpath -ldflags "-s -w -X main.version=$2" -o "$1/kube-validate" . )
}

# Only the CRDs (no build): what `check` needs to validate RayJob and RayCluster offline.
build_kuberay_crds() {
  local src; src=$(go mod download -json "github.com/ray-project/kuberay/ray-operator@$2" | python3 -c 'import json,sys; print(json.load(sys.stdin)["Dir"])')
  cp "$src"/config/crd/bases/*.yaml "$1/" && chmod -R u+w "$1"
}

# checkov (PyPI) in a virtualenv of its own beside the cache entry: its pins stay out of ours.
build_checkov() {
  local venv="$CACHE/checkov-$2.venv"
  rm -rf "$venv" && python3 -m venv "$venv"
  "$venv/bin/pip" install -q --disable-pip-version-check "checkov==$2"
  printf '#!/bin/sh\nexec "%s/bin/checkov" "$@"\n' "$venv" > "$1/checkov" && chmod +x "$1/checkov"
}

# --- the playground's real node (kubelet, containerd, runc, CNI, ...): `hack/tools.sh node` builds all of these ---

# kubelet and kube-proxy: the control plane's module and version stamp, own cache entry.
build_kubernetes_node() {
  kube_commands "$1" "$2" kubelet kube-proxy
}

# runc with seccomp (cgo; needs libseccomp-dev: hack/node-deps.sh).
build_runc() {
  CGO_ENABLED=1 GOBIN=$1 go install -trimpath -tags "seccomp urfave_cli_no_docs" -ldflags "-s -w" \
    "github.com/opencontainers/runc@$2"
}

# containerd v2, its runc shim and ctr.
build_containerd() {
  local mod=github.com/containerd/containerd/v2
  GOBIN=$1 go install -trimpath -ldflags "-s -w -X $mod/version.Version=$2" \
    "$mod/cmd/containerd@$2" "$mod/cmd/containerd-shim-runc-v2@$2" "$mod/cmd/ctr@$2"
}

build_cni_plugins() {
  local mod=github.com/containernetworking/plugins
  GOBIN=$1 go install -trimpath -ldflags "-s -w" "$mod/plugins/main/bridge@$2" "$mod/plugins/main/loopback@$2" \
    "$mod/plugins/ipam/host-local@$2" "$mod/plugins/meta/portmap@$2"
}

build_coredns() {
  GOBIN=$1 go install -trimpath -ldflags "-s -w" "github.com/coredns/coredns@$2"
}

# kube-router, run as a NetworkPolicy engine only (firewall mode).
build_kube_router() {
  GOBIN=$1 go install -trimpath -ldflags "-s -w" "github.com/cloudnativelabs/kube-router/v2/cmd/kube-router@$2"
}

# gVisor (RuntimeClass gvisor, the sandbox pool's user-space kernel): runsc and its containerd shim from the `go` branch, version stamped (else VERSION_MISSING).
# One change: the shim's start lowers the shim's oom_score_adj to -999 and fails without CAP_SYS_RESOURCE
# (absent in this VM); refused with EACCES it carries on at containerd's score, as containerd's own shims do
# under restrict_oom_score_adj. So it builds as the main module in a copy of the served module (71 MB; go
# refuses build overlays of files in the module cache, and embeds no symlinks).
build_gvisor() {
  local mod=gvisor.dev/gvisor src w f=pkg/shim/v1/manager.go
  src=$(go mod download -json "$mod@$2" | python3 -c 'import json,sys; print(json.load(sys.stdin)["Dir"])')
  w=$(scratch_dir)/gvisor
  cp -r "$src" "$w" && chmod -R u+w "$w"
  sed 's/sys.SetOOMScore(cmd.Process.Pid, oomScoreMax); err != nil {/sys.SetOOMScore(cmd.Process.Pid, oomScoreMax); err != nil \&\& !os.IsPermission(err) {/' \
    "$src/$f" > "$w/$f.patched" && mv "$w/$f.patched" "$w/$f"
  if ! grep -q 'oomScoreMax); err != nil && !os.IsPermission(err) {' "$w/$f"; then
    say "gvisor $2: $f changed; the oom_score_adj patch no longer applies"; return 1
  fi
  ( cd "$w"
    go build -trimpath -ldflags "-s -w -X $mod/runsc/version.version=$2" -o "$1/runsc" ./runsc
    go build -trimpath -ldflags "-s -w" -o "$1/containerd-shim-runsc-v1" ./shim )
}

# tools/node-images: the pause and playground executor binaries (static) plus the Debian
# busybox-static and bash-static binaries the executor image carries; images.py writes the OCI layouts.
build_node_images() {
  ( cd "$root/tools/node-images"
    for c in pause executor; do go build -trimpath -ldflags "-s -w" -o "$1/$c" "./$c"; done )
  cp /bin/busybox "$1/busybox" && cp /bin/bash-static "$1/bash"
}

# tools/device-plugin: fake nvidia.com/gpu on the real node through the kubelet's device-plugin API
# (k8s.io/kubelet at the pinned Kubernetes version).
build_device_plugin() {
  ( cd "$root/tools/device-plugin" && go build -trimpath -ldflags "-s -w" -o "$1/device-plugin" . )
}

# The playground's Ray image (stand-in for ubuntu-swe): Debian python3 + ray[default] from PyPI, written
# as an OCI layout by generator/playground/node/ray_image.py (stdlib only; run as a script).
build_ray_image() {
  python3 "$root/generator/playground/node/ray_image.py" build "$1" "$2"
}

# Kueue (the quota system that admits whole gangs; `playground up --kueue`): the controller manager, version-stamped, plus its CRDs and its
# webhook manifest from the module (generator/playground/kueue.py registers them by URL on 127.0.0.1).
build_kueue() {
  local mod=sigs.k8s.io/kueue src
  GOBIN=$1 go install -trimpath -ldflags "-s -w -X $mod/pkg/version.GitVersion=$2" "$mod/cmd/kueue@$2"
  src=$(go mod download -json "$mod@$2" | python3 -c 'import json,sys; print(json.load(sys.stdin)["Dir"])')
  mkdir -p "$1/crds" && cp "$src"/config/components/crd/bases/*.yaml "$1/crds/"
  cp "$src/config/components/webhook/manifests.yaml" "$1/webhook.yaml" && chmod -R u+w "$1"
}

# SIG Apps' agent-sandbox: the controller (its Sandbox controllers, and with --extensions the SandboxTemplate,
# SandboxClaim and SandboxWarmPool ones), version-stamped as its Makefile does, and its CRDs (k8s/crds).
build_agent_sandbox() {
  local mod=sigs.k8s.io/agent-sandbox
  GOBIN=$1 go install -trimpath -ldflags "-s -w -X $mod/internal/version.gitVersion=$2" "$mod/cmd/agent-sandbox-controller@$2"
  mkdir -p "$1/crds" && build_agent_sandbox_crds "$1/crds" "$2"
}

# Only agent-sandbox's CRDs (no build): what `check` needs to validate the sandbox backend's kinds offline.
build_agent_sandbox_crds() {
  local src; src=$(go mod download -json "sigs.k8s.io/agent-sandbox@$2" | python3 -c 'import json,sys; print(json.load(sys.stdin)["Dir"])')
  cp "$src"/k8s/crds/*.yaml "$1/" && chmod -R u+w "$1"
}

# metrics-server: the resource metrics API the real node's HPA reads, version-stamped as its own
# Makefile does (client-go's version package).
build_metrics_server() {
  GOBIN=$1 CGO_ENABLED=0 go install -trimpath \
    -ldflags "-s -w -X k8s.io/client-go/pkg/version.gitVersion=$2" "sigs.k8s.io/metrics-server/cmd/metrics-server@$2"
}

# rancher's local-path-provisioner: the real node's dynamic provisioner (StorageClass local-path, kind's default),
# version-stamped as its scripts/build does (main.VERSION). Its deploy/ manifests are not taken: the playground
# writes its own config (generator/playground/node/local_path.py).
build_local_path_provisioner() {
  GOBIN=$1 go install -trimpath -ldflags "-s -w -X main.VERSION=$2" "github.com/rancher/local-path-provisioner@$2"
}

# hack/tools.sh --key TARGET: print TARGET's recipe key and build nothing (tests: a bumped pin rebuilds).
if [ "${1:-}" = --key ]; then key_only=1; shift; fi
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=("${default_tools[@]}")
expanded=()
for t in "${targets[@]}"; do if [ "$t" = node ]; then expanded+=("${node_tools[@]}"); else expanded+=("$t"); fi; done
# the real node's Debian packages (runc's libseccomp, the images' static binaries, mmdebstrap)
node_deps() { [ -n "${key_only:-}" ] || bash "$root/hack/node-deps.sh"; }
# recipe_sources TARGET: the folder whose files the target's recipe key covers: its one source folder as is,
# or its source files copied side by side into a scratch folder; nothing when it has none.
recipe_sources() {
  local paths d f
  read -r -a paths <<<"${tool_source[$1]}"
  [ ${#paths[@]} -gt 0 ] || return 0
  if [ ${#paths[@]} = 1 ] && [ -d "$root/${paths[0]}" ]; then echo "$root/${paths[0]}"; return; fi
  d=$(scratch_dir)
  for f in "${paths[@]}"; do cp "$root"/$f "$d/"; done  # $f unquoted: it may be a glob (tools/ray-image/*.lock)
  echo "$d"
}
for t in "${expanded[@]}"; do
  if [ -z "${tool_build[$t]+set}" ]; then
    say "unknown tool: $t (the targets: the rows of generator/tool_table.toml, and node)"; exit 2
  fi
  [ -z "${tool_debs[$t]}" ] || node_deps
  pin=${tool_pin[$t]}
  src=$(recipe_sources "$t")
  build "${tool_entry[$t]}" "${!pin}" "${tool_build[$t]}" ${src:+"$src"}
done
