#!/usr/bin/env bash
# Builds the test control plane (kube-apiserver, kube-controller-manager,
# kubectl from k8s.io/kubernetes; etcd from go.etcd.io/etcd/server/v3) from
# the tool modules under tools/, through the Go module proxy only, and caches
# the binaries in a directory keyed by version. Prints that directory.
#
# Cold: ~10-15 min on 2 cores. Warm (binaries cached): instant.
# SYNCD_CONTROLPLANE_DIR overrides the cache directory.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
k8s_version=v1.37.2
etcd_version=v3.6.6
key="k8s-${k8s_version}-etcd-${etcd_version}"
dir=${SYNCD_CONTROLPLANE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/syncd/controlplane/$key}
mkdir -p "$dir"

minor=${k8s_version#v1.}
minor=${minor%%.*}
ldflags="-s -w"
for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
  ldflags="$ldflags -X $pkg.gitVersion=$k8s_version -X $pkg.gitMajor=1 -X $pkg.gitMinor=$minor -X $pkg.gitTreeState=clean"
done

# build MODULE_DIR NAME... : builds the missing commands of one tool module
# in a single go build, so the packages they share compile once.
build() {
  local moddir=$1; shift
  local pkgs=() names=()
  for name in "$@"; do
    [ -x "$dir/$name" ] && continue
    names+=("$name")
    case $name in
      etcd) pkgs+=(go.etcd.io/etcd/server/v3) ;;
      *) pkgs+=("k8s.io/kubernetes/cmd/$name") ;;
    esac
  done
  [ ${#pkgs[@]} -eq 0 ] && return
  echo "controlplane: building ${names[*]} (first time only, several minutes)..." >&2
  local start=$SECONDS tmp
  tmp=$(mktemp -d "$dir/.build.XXXXXX")
  (cd "$root/$moddir" && go build -trimpath -ldflags "$ldflags" -o "$tmp/" "${pkgs[@]}")
  for name in "${names[@]}"; do
    src=$name
    [ "$name" = etcd ] && src=server
    mv "$tmp/$src" "$dir/$name"
  done
  rmdir "$tmp"
  echo "controlplane: built ${names[*]} in $((SECONDS - start))s" >&2
}

build tools/etcd etcd
build tools/controlplane kube-apiserver kube-controller-manager kubectl
echo "$dir"
