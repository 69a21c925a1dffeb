#!/bin/bash
# Makes (once) and prints the path of the Debian 12 root the container tests start from: a
# debootstrap minbase root with systemd, dbus and xpud's runtime libraries, cached in
# BUILD_DIR/e2e-root-cache (about 2.5 minutes to make). The cache is a read-only base: tests copy
# it and work on the copy. Shared by the boot test (nspawn_boot_test.sh) and the fresh-machine
# test (tests/fresh), so that a CI run makes it once.
#
# Usage: debian_root.sh BUILD_DIR      prints BUILD_DIR/e2e-root-cache/root
set -euo pipefail

cache="$(realpath "$1")/e2e-root-cache"
# procps provides the kill(1) of ExecReload (a dependency of the xpud package).
packages=systemd,systemd-sysv,dbus,procps,libsdbus-c++1,libinih1,libspdlog1.10,libfmt9,passwd

command -v debootstrap >/dev/null || { echo "missing debootstrap (apt-get install debootstrap)" >&2; exit 1; }
if [ ! -f "$cache/stamp" ] || [ "$(cat "$cache/stamp")" != "$packages" ]; then
  echo "creating the Debian 12 root (debootstrap, cached in $cache)" >&2
  rm -rf "$cache"
  mkdir -p "$cache"
  debootstrap --variant=minbase --include="$packages" bookworm "$cache/root" http://deb.debian.org/debian \
    >"$cache/debootstrap.log" 2>&1 || { tail -20 "$cache/debootstrap.log" >&2; exit 1; }
  echo "$packages" >"$cache/stamp"
fi
echo "$cache/root"
