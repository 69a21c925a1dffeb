#!/bin/sh
# Builds the node's programs into OUT_DIR, from the Go module proxy, once per version:
#   kube (kube/: kube-apiserver, kube-controller-manager, kube-scheduler, kubelet and kubectl in
#   one multi-call binary, with a symlink per program) and containerd 2 with its runc shim and ctr.
# The Kubernetes version is kube/go.mod's; it is stamped into the binary, or every component
# reports v0.0.0 and Helm's kubeVersion checks fail. Go's build cache makes a rebuild ~20 s.
# Usage: tests/cluster/build-node.sh OUT_DIR
set -eu
[ $# -eq 1 ] || { echo "usage: $0 OUT_DIR" >&2; exit 2; }
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$1"
out=$(cd "$1" && pwd)
go=$here/../../scripts/go
containerd_version=v2.2.9

kube_version=$(sed -n 's/^[[:space:]]*k8s.io\/kubernetes \(v[0-9.]*\)$/\1/p' "$here/kube/go.mod")
[ -n "$kube_version" ] || { echo "build-node: no k8s.io/kubernetes version in $here/kube/go.mod" >&2; exit 1; }
stamp="kubernetes $kube_version containerd $containerd_version $(cat "$here/kube/go.sum" "$here/kube/main.go" "$0" | sha256sum | cut -c1-16)"
if [ -f "$out/.stamp" ] && [ "$(cat "$out/.stamp")" = "$stamp" ]; then
  exit 0
fi
rm -rf "$out"
mkdir -p "$out"

major=$(echo "$kube_version" | sed 's/^v\([0-9]*\)\..*/\1/')
minor=$(echo "$kube_version" | sed 's/^v[0-9]*\.\([0-9]*\)\..*/\1/')
ldflags="-s -w"
for package in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
  ldflags="$ldflags -X $package.gitVersion=$kube_version -X $package.gitMajor=$major -X $package.gitMinor=$minor"
  ldflags="$ldflags -X $package.gitTreeState=clean -X $package.buildDate=1970-01-01T00:00:00Z"
done
# No DWARF (-dwarf=false: -s -w alone strips it only after the compiler and linker made it), for
# test binaries nobody runs under a debugger.
gcflags=all=-dwarf=false
(cd "$here/kube" && "$go" build -trimpath -gcflags "$gcflags" -ldflags "$ldflags" -o "$out/kube" .)
for program in kube-apiserver kube-controller-manager kube-scheduler kubelet kubectl; do
  ln -s kube "$out/$program"
done

# No btrfs, devmapper or zfs snapshotters: the node uses overlayfs, and btrfs needs C headers.
GOBIN=$out GOFLAGS=-tags=no_btrfs,no_devmapper,no_zfs "$go" install -trimpath -gcflags "$gcflags" \
  -ldflags "-s -w -X github.com/containerd/containerd/v2/version.Version=$containerd_version" \
  "github.com/containerd/containerd/v2/cmd/containerd@$containerd_version" \
  "github.com/containerd/containerd/v2/cmd/containerd-shim-runc-v2@$containerd_version" \
  "github.com/containerd/containerd/v2/cmd/ctr@$containerd_version"

echo "$stamp" >"$out/.stamp"
echo "build-node: $stamp in $out"
