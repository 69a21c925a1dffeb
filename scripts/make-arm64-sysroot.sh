#!/bin/sh
# Makes the arm64 root that cmake/toolchain-arm64.cmake builds against: Debian 12's arm64 -dev
# packages of this project's dependencies, unpacked (mmdebstrap's extract variant: no maintainer
# script runs, so no arm64 emulation is needed), with the code generators linked to the build
# machine's own. See cmake/toolchain-arm64.cmake for why a root and not multiarch packages.
#
# usage: make-arm64-sysroot.sh DIR       (as root; DIR must not exist or be empty)
#        make-arm64-sysroot.sh --cached  prints the root kept in ~/.cache/xpu-arm64-root/ for this
#                                        version of the script, made first if it is not there
# needs: mmdebstrap, and for the tools it links: protobuf-compiler, protobuf-compiler-grpc,
#        libsdbus-c++-bin (scripts/install-deps.sh installs them)
set -eu

[ $# -eq 1 ] || { echo "usage: make-arm64-sysroot.sh DIR|--cached" >&2; exit 2; }
if [ "$1" = --cached ]; then
  key=$(sha256sum "$0" | cut -c1-16)
  cached=${XDG_CACHE_HOME:-$HOME/.cache}/xpu-arm64-root/$key
  if [ ! -f "$cached/.complete" ]; then
    rm -rf "$cached"
    "$0" "$cached" >&2
    touch "$cached/.complete"
  fi
  echo "$cached"
  exit 0
fi
root=$1
if [ -e "$root" ] && [ -n "$(ls -A "$root")" ]; then
  echo "make-arm64-sysroot: $root exists and is not empty" >&2
  exit 1
fi

# The arm64 side of scripts/install-deps.sh's build dependencies (the libraries, not the tools).
packages=libc6-dev,libstdc++-12-dev,libsdbus-c++-dev,libsystemd-dev,libgrpc++-dev,libprotobuf-dev
packages=$packages,prometheus-cpp-dev,libinih-dev,libspdlog-dev,libfmt-dev,libmicrohttpd-dev
packages=$packages,libgnutls28-dev,libcrypt-dev,libyaml-cpp-dev,nlohmann-json3-dev,libcurl4-openssl-dev

mkdir -p "$root"
mmdebstrap --quiet --architectures=arm64 --variant=extract --include="$packages" bookworm "$root"

# gRPC's and sdbus-c++'s CMake files check that the generators they name exist in the root; the
# build runs the host's (same versions: both come from Debian 12).
for tool in protoc sdbus-c++-xml2cpp /usr/bin/grpc_*_plugin; do
  host=/usr/bin/$(basename "$tool")
  [ -x "$host" ] || { echo "make-arm64-sysroot: $host is missing (scripts/install-deps.sh)" >&2; exit 1; }
  ln -sf "$host" "$root/usr/bin/$(basename "$tool")"
done
echo "arm64 root in $root; build with: XPU_ARM64_SYSROOT=$root cmake -DCMAKE_TOOLCHAIN_FILE=cmake/toolchain-arm64.cmake ..."
