#!/usr/bin/env bash
# Build the pinned tools from Go modules into a version-keyed cache outside the repo.
# usage: hack/tools.sh [helm kubeconform kubernetes etcd kwok kuberay node ...]   (default: all; node = the real node's)
# Each tool lands in $CACHE/<tool>-<version>/ and is reused when present.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck disable=SC1091
source "$root/tools/versions.env"
CACHE=${DOCKYARD_TOOLS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/dockyard-k8s}
export GOTOOLCHAIN=local GOFLAGS=-buildvcs=false CGO_ENABLED=0
mkdir -p "$CACHE"

say() { printf '[tools] %s\n' "$*" >&2; }

# build NAME VERSION FUNC [SRC]: run FUNC with $out (a temp dir) unless $CACHE/NAME-VERSION holds a
# build made by the same recipe (.complete records a hash of FUNC and of the files under SRC, so a
# changed recipe or source rebuilds).
build() {
  local name=$1 version=$2 fn=$3 dest="$CACHE/$1-$2" recipe
  recipe=$({ declare -f "$fn"; [ -z "${4:-}" ] || find "$4" -type f -print0 | sort -z | xargs -0 cat; } | sha256sum | cut -c1-16)
  if [ "$(cat "$dest/.complete" 2>/dev/null)" = "$recipe" ]; then say "$name $version: cached ($dest)"; return; fi
  say "$name $version: building (cold builds take minutes; progress below)"
  local start=$SECONDS out
  out=$(mktemp -d "$CACHE/.$name.XXXXXX")
  "$fn" "$out" "$version"
  echo "$recipe" > "$out/.complete"
  rm -rf "$dest" && mv "$out" "$dest"
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

# wrapper module: requires the target module, optional replace lines, builds packages with -o.
wrapper() {
  local dir=$1; shift
  mkdir -p "$dir" && cd "$dir"
  printf 'module dockyard.local/wrapper\n\ngo 1.26\n' > go.mod
  printf 'package wrapper\n' > doc.go
}

build_etcd() {
  local w; w=$(mktemp -d)
  ( wrapper "$w"
    go get "go.etcd.io/etcd/server/v3@$2"
    go build -trimpath -ldflags "-s -w" -o "$1/etcd" go.etcd.io/etcd/server/v3 )
  rm -rf "$w"
}

build_kubernetes() {
  local w v=$2 minor; w=$(mktemp -d); minor=${v#v1.}; minor=${minor%%.*}
  local staging=v0.${v#v1.}
  ( wrapper "$w"
    local gomod; gomod=$(go mod download -json "k8s.io/kubernetes@$v" | python3 -c 'import json,sys; print(json.load(sys.stdin)["GoMod"])')
    grep -oE '^\s*k8s.io/[a-z0-9-]+ => ./staging/src/' "$gomod" | awk '{print $1}' | sort -u | while read -r m; do
      printf 'replace %s => %s %s\n' "$m" "$m" "$staging" >> go.mod
    done
    # the require must be resolved with the replaces already in place
    printf 'require k8s.io/kubernetes %s\n' "$v" >> go.mod
    printf '//go:build tools\npackage wrapper\nimport (\n_ "k8s.io/kubernetes/cmd/kube-apiserver"\n_ "k8s.io/kubernetes/cmd/kube-controller-manager"\n_ "k8s.io/kubernetes/cmd/kube-scheduler"\n_ "k8s.io/kubernetes/cmd/kubectl"\n)\n' > tools.go
    go mod tidy -e >/dev/null 2>&1 || true
    go mod download
    local now; now=$(date -u +%Y-%m-%dT%H:%M:%SZ)
    local ld="-s -w"
    for p in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
      ld="$ld -X $p.gitVersion=$v -X $p.gitMajor=1 -X $p.gitMinor=$minor -X $p.gitCommit=0000000000000000000000000000000000000000 -X $p.gitTreeState=clean -X $p.buildDate=$now"
    done
    for c in kube-apiserver kube-controller-manager kube-scheduler kubectl; do
      say "kubernetes: $c"
      go build -tags tools -trimpath -ldflags "$ld" -o "$1/$c" "k8s.io/kubernetes/cmd/$c"
    done )
  rm -rf "$w"
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
# wrapper module like build_kubernetes's, so it links the pinned Kubernetes' validation packages.
build_kube_validate() {
  local w v=$2 staging=v0.${2#v1.}; w=$(mktemp -d)
  ( cd "$w"
    cp "$root"/tools/kube-validate/*.go .
    printf 'module dockyard.local/kube-validate\n\ngo 1.26\n' > go.mod
    local gomod; gomod=$(go mod download -json "k8s.io/kubernetes@$v" | python3 -c 'import json,sys; print(json.load(sys.stdin)["GoMod"])')
    grep -oE '^\s*k8s.io/[a-z0-9-]+ => ./staging/src/' "$gomod" | awk '{print $1}' | sort -u | while read -r m; do
      printf 'replace %s => %s %s\n' "$m" "$m" "$staging" >> go.mod
    done
    printf 'require k8s.io/kubernetes %s\n' "$v" >> go.mod
    go mod tidy
    go build -trimpath -ldflags "-s -w -X main.version=$v" -o "$1/kube-validate" . )
  rm -rf "$w"
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

# --- the playground's real node (issue 13): `hack/tools.sh node` builds all of these ---

# kubelet and kube-proxy: the control plane's wrapper module and version stamp, own cache entry.
build_kubernetes_node() {
  local w v=$2 minor; w=$(mktemp -d); minor=${v#v1.}; minor=${minor%%.*}
  local staging=v0.${v#v1.}
  ( wrapper "$w"
    local gomod; gomod=$(go mod download -json "k8s.io/kubernetes@$v" | python3 -c 'import json,sys; print(json.load(sys.stdin)["GoMod"])')
    grep -oE '^\s*k8s.io/[a-z0-9-]+ => ./staging/src/' "$gomod" | awk '{print $1}' | sort -u | while read -r m; do
      printf 'replace %s => %s %s\n' "$m" "$m" "$staging" >> go.mod
    done
    printf 'require k8s.io/kubernetes %s\n' "$v" >> go.mod
    printf '//go:build tools\npackage wrapper\nimport (\n_ "k8s.io/kubernetes/cmd/kubelet"\n_ "k8s.io/kubernetes/cmd/kube-proxy"\n)\n' > tools.go
    go mod tidy -e >/dev/null 2>&1 || true
    go mod download
    local now ld="-s -w"; now=$(date -u +%Y-%m-%dT%H:%M:%SZ)
    for p in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
      ld="$ld -X $p.gitVersion=$v -X $p.gitMajor=1 -X $p.gitMinor=$minor -X $p.gitCommit=0000000000000000000000000000000000000000 -X $p.gitTreeState=clean -X $p.buildDate=$now"
    done
    for c in kubelet kube-proxy; do
      say "kubernetes-node: $c"
      go build -tags tools -trimpath -ldflags "$ld" -o "$1/$c" "k8s.io/kubernetes/cmd/$c"
    done )
  rm -rf "$w"
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

tools=("$@")
[ ${#tools[@]} -gt 0 ] || tools=(helm helm4 kubeconform kuberay-crds kube-validate checkov kubernetes etcd kwok kuberay registry node ray-image)
for t in "${tools[@]}"; do
  case $t in
    helm) build helm "$HELM_VERSION" build_helm ;;
    helm4) build helm4 "$HELM4_VERSION" build_helm ;;
    kubeconform) build kubeconform "$KUBECONFORM_VERSION" build_kubeconform ;;
    kubernetes) build kubernetes "$KUBERNETES_VERSION" build_kubernetes ;;
    etcd) build etcd "$ETCD_VERSION" build_etcd ;;
    kwok) build kwok "$KWOK_VERSION" build_kwok ;;
    kuberay) build kuberay "$KUBERAY_VERSION" build_kuberay ;;
    kuberay-crds) build kuberay-crds "$KUBERAY_VERSION" build_kuberay_crds ;;
    kube-validate) build kube-validate "$KUBERNETES_VERSION" build_kube_validate "$root/tools/kube-validate" ;;
    checkov) build checkov "$CHECKOV_VERSION" build_checkov ;;
    registry) build registry "$REGISTRY_VERSION" build_registry ;;
    node) bash "$root/hack/tools.sh" runc containerd cni-plugins coredns kube-router node-images kubernetes-node device-plugin ;;
    kubernetes-node) build kubernetes-node "$KUBERNETES_VERSION" build_kubernetes_node ;;
    runc) bash "$root/hack/node-deps.sh" && build runc "$RUNC_VERSION" build_runc ;;
    containerd) build containerd "$CONTAINERD_VERSION" build_containerd ;;
    cni-plugins) build cni-plugins "$CNI_PLUGINS_VERSION" build_cni_plugins ;;
    coredns) build coredns "$COREDNS_VERSION" build_coredns ;;
    kube-router) build kube-router "$KUBE_ROUTER_VERSION" build_kube_router ;;
    device-plugin) build device-plugin "$KUBERNETES_VERSION" build_device_plugin "$root/tools/device-plugin" ;;
    ray-image) bash "$root/hack/node-deps.sh" && build ray-image "$RAY_VERSION" build_ray_image "$root/generator/playground/node/ray_image.py" ;;
    node-images) bash "$root/hack/node-deps.sh" && build node-images "$NODE_IMAGES_VERSION" build_node_images "$root/tools/node-images" ;;
    *) say "unknown tool: $t"; exit 2 ;;
  esac
done
