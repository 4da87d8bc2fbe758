#!/usr/bin/env bash
# Install the Debian packages the playground's real node needs, only those missing.
# usage: hack/node-deps.sh [--check]   (--check: list what is missing, exit 1 if anything is)
set -euo pipefail
# libseccomp-dev: runc's seccomp support (cgo); iptables/ipset/conntrack: kube-proxy and
# kube-router; busybox-static, bash-static: the shells and client tools of the executor image;
# util-linux/iproute2: unshare, nsenter and ip for the node's namespaces; mmdebstrap: the Ray image's root filesystem.
pkgs=(libseccomp-dev iptables ipset conntrack busybox-static bash-static util-linux iproute2 mmdebstrap)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then echo "[node-deps] all present: ${pkgs[*]}" >&2; exit 0; fi
if [ "${1:-}" = --check ]; then echo "missing Debian packages: ${missing[*]} (run: bash hack/node-deps.sh)"; exit 1; fi
echo "[node-deps] installing: ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get install -y --no-install-recommends "${missing[@]}" >/dev/null 2>&1 || {
  apt-get update -qq >/dev/null && apt-get install -y --no-install-recommends "${missing[@]}" >/dev/null; }
echo "[node-deps] installed: ${missing[*]}" >&2
