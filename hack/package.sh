#!/usr/bin/env bash
# The chart as users install charts: a versioned archive, dist/dockyard-<version>.tgz.
# usage: hack/package.sh                    package the chart (make package)
#        hack/package.sh bump major|minor|patch   bump the version (docs/chart-release.md has the rule)
# The one place of the version is charts/dockyard/Chart.yaml: `version`, with `appVersion` equal to it.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
chart="$root/charts/dockyard/Chart.yaml"
field() { sed -nE "s/^$1: *\"?([^\"]*)\"? *$/\\1/p" "$chart"; }
version=$(field version) app=$(field appVersion)
if [ "$version" != "$app" ]; then
  echo "error: $chart: appVersion \"$app\" differs from version \"$version\"" >&2
  echo "  expected: appVersion equal to version (bump both with: hack/package.sh bump major|minor|patch)" >&2
  exit 2
fi
if [ "${1:-}" = bump ]; then
  IFS=. read -r ma mi pa <<<"${version%%[-+]*}"
  case ${2:-} in
    major) next="$((ma + 1)).0.0" ;;
    minor) next="$ma.$((mi + 1)).0" ;;
    patch) next="$ma.$mi.$((pa + 1))" ;;
    *) echo "error: usage: hack/package.sh bump major|minor|patch" >&2; exit 2 ;;
  esac
  sed -i -E "s/^version: .*/version: $next/; s/^appVersion: .*/appVersion: \"$next\"/" "$chart"
  echo "chart version $version -> $next ($chart)"
  exit 0
fi
[ $# -eq 0 ] || { echo "error: usage: hack/package.sh [bump major|minor|patch]" >&2; exit 2; }
helm=${DOCKYARD_HELM:-$("$root/.venv/bin/python" -c 'from generator.pinned_tools import binary; print(binary("helm"))')}
mkdir -p "$root/dist"
"$helm" package "$root/charts/dockyard" --destination "$root/dist" >/dev/null
echo "$root/dist/dockyard-$version.tgz"
