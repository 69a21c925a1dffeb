#!/bin/sh
# Builds the node's programs into OUT_DIR, from the Go module proxy, once per version:
#   kube (kube/main.go against kube/RELEASE/go.mod: kube-apiserver, kube-controller-manager,
#   kube-scheduler and kubelet in one multi-call binary, with a symlink per program), kubectl
#   (kube/kubectl/main.go, the same module: a program of its own starts in half the CPU time),
#   etcd (etcd/: the server module's etcdmain) and containerd 2 with its runc shim and ctr.
# RELEASE is a directory under kube/ (v1.37, the default, v1.35, or v1.38, a pre-release); the exact Kubernetes version
# is its go.mod's. It is stamped into the binary, or every component reports v0.0.0 and Helm's
# kubeVersion checks fail. Go's build cache makes a rebuild ~20 s.
# Usage: tests/cluster/build-node.sh OUT_DIR [RELEASE]
set -eu
[ $# -ge 1 ] && [ $# -le 2 ] || { echo "usage: $0 OUT_DIR [v1.37|v1.35|v1.38]" >&2; exit 2; }
here=$(cd "$(dirname "$0")" && pwd)
release=${2:-v1.37}
module=$here/kube/$release
[ -f "$module/go.mod" ] || { echo "build-node: no release $release (no $module/go.mod)" >&2; exit 2; }
mkdir -p "$1"
out=$(cd "$1" && pwd)
go=$here/../../scripts/go
containerd_version=v2.4.2

kube_version=$(sed -n 's/^[[:space:]]*k8s.io\/kubernetes \(v[0-9.]*[-a-z0-9.]*\)$/\1/p' "$module/go.mod")
[ -n "$kube_version" ] || { echo "build-node: no k8s.io/kubernetes version in $module/go.mod" >&2; exit 1; }
etcd_version=$(sed -n 's/^require go.etcd.io\/etcd\/server\/v3 \(v[0-9.]*\)$/\1/p' "$here/etcd/go.mod")
[ -n "$etcd_version" ] || { echo "build-node: no etcd server version in $here/etcd/go.mod" >&2; exit 1; }
sources=$(cat "$module/go.sum" "$here/kube/main.go" "$here/kube/kubectl/main.go" "$here/kube/iptables-wrappers/go.mod" \
  "$here/kube/iptables-wrappers/pkg/iptables/iptables.go" "$here/etcd/go.sum" "$here/etcd/main.go" "$0" |
  sha256sum | cut -c1-16)
stamp="kubernetes $kube_version etcd $etcd_version containerd $containerd_version $sources"
if [ -f "$out/.stamp" ] && [ "$(cat "$out/.stamp")" = "$stamp" ]; then
  exit 0
fi
rm -rf "$out"
mkdir -p "$out/src"

# No DWARF (-dwarf=false: -s -w alone strips it only after the compiler and linker made it) and
# no inlining (-l: a fifth less compile for a cold build), for test binaries nobody runs under a
# debugger or times. helm and the registry are built with the same flags, so the standard library
# compiles once for all three (docs/development.md, "CI time").
gcflags="all=-dwarf=false -l"

major=$(echo "$kube_version" | sed 's/^v\([0-9]*\)\..*/\1/')
minor=$(echo "$kube_version" | sed 's/^v[0-9]*\.\([0-9]*\)\..*/\1/')
ldflags="-s -w"
for package in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
  ldflags="$ldflags -X $package.gitVersion=$kube_version -X $package.gitMajor=$major -X $package.gitMinor=$minor"
  ldflags="$ldflags -X $package.gitTreeState=clean -X $package.buildDate=1970-01-01T00:00:00Z"
done
# One main.go for every release: the module is put together in the output directory (Go builds
# a module from one directory), so the tree keeps a single copy of the program.
# A release whose go.mod replaces a module the proxy refuses with the tree's stand-in
# (kube/iptables-wrappers, for v1.38) finds it beside go.mod.
cp "$here/kube/main.go" "$module/go.mod" "$module/go.sum" "$out/src/"
cp -r "$here/kube/iptables-wrappers" "$here/kube/kubectl" "$out/src/"
(cd "$out/src" && "$go" build -trimpath -gcflags "$gcflags" -ldflags "$ldflags" -o "$out/kube" . &&
  "$go" build -trimpath -gcflags "$gcflags" -ldflags "$ldflags" -o "$out/kubectl" ./kubectl)
for program in kube-apiserver kube-controller-manager kube-scheduler kubelet; do
  ln -s kube "$out/$program"
done
rm -rf "$out/src"

(cd "$here/etcd" && "$go" build -trimpath -gcflags "$gcflags" -ldflags "-s -w" -o "$out/etcd" .)

# No btrfs, devmapper or zfs snapshotters: the node uses overlayfs, and btrfs needs C headers.
GOBIN=$out GOFLAGS=-tags=no_btrfs,no_devmapper,no_zfs "$go" install -trimpath -gcflags "$gcflags" \
  -ldflags "-s -w -X github.com/containerd/containerd/v2/version.Version=$containerd_version" \
  "github.com/containerd/containerd/v2/cmd/containerd@$containerd_version" \
  "github.com/containerd/containerd/v2/cmd/containerd-shim-runc-v2@$containerd_version" \
  "github.com/containerd/containerd/v2/cmd/ctr@$containerd_version"

echo "$stamp" >"$out/.stamp"
echo "build-node: $stamp in $out"
