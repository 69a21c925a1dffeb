#!/bin/sh
# Builds the OCI registry the install-from-a-registry scenario pushes to: the CNCF Distribution
# project's registry server (github.com/distribution/distribution/v3, the reference
# implementation of the OCI distribution spec), from the Go module proxy, once per version.
# Usage: tests/cluster/build-registry.sh OUT_DIR       (OUT_DIR/registry)
set -eu
[ $# -eq 1 ] || { echo "usage: $0 OUT_DIR" >&2; exit 2; }
here=$(cd "$(dirname "$0")" && pwd)
version=v3.1.2
mkdir -p "$1"
out=$(cd "$1" && pwd)
stamp="distribution $version $(sha256sum <"$0" | cut -c1-16)"
if [ -x "$out/registry" ] && [ -f "$out/.registry-stamp" ] && [ "$(cat "$out/.registry-stamp")" = "$stamp" ]; then
  exit 0
fi
# No DWARF and no inlining, as build-node.sh (the same flags, so the standard library it compiled
# serves here too): a test program nobody runs under a debugger.
GOBIN=$out "$here/../../scripts/go" install -trimpath -gcflags "all=-dwarf=false -l" -ldflags "-s -w" \
  "github.com/distribution/distribution/v3/cmd/registry@$version"
echo "$stamp" >"$out/.registry-stamp"
echo "build-registry: $stamp in $out"
