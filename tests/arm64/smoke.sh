#!/bin/sh
# The arm64 build under emulation (ctest arm64.smoke): each of the four programs, and the five
# role programs xpu-k8s-shim runs, is an arm64 executable that runs and names its version; the arm64 xpud on the sim backend on a private bus,
# the arm64 xpuctl listing its cards, the arm64 exporter scraped over HTTP. Each runs under
# Debian's qemu-user-static with the arm64 root as its library root.
#
# usage: tests/arm64/smoke.sh ARM64_BUILD_DIR ARM64_ROOT
#          a build with cmake/toolchain-arm64.cmake (scripts/build-variants.sh arm64), and the root
#          it was built against (scripts/make-arm64-sysroot.sh)
#        tests/arm64/smoke.sh --installed ROOT
#          the programs as the arm64 packages installed them into ROOT (tests/arm64/test_deb_arm64.py)
# needs: qemu-user-static, dbus-daemon, curl
set -eu

[ $# -eq 2 ] || { echo "usage: smoke.sh ARM64_BUILD_DIR ARM64_ROOT | --installed ROOT" >&2; exit 2; }
if [ "$1" = --installed ]; then
  root=$(realpath -m "$2")
  xpud=$root/usr/sbin/xpud xpuctl=$root/usr/bin/xpuctl
  proxy=$root/usr/libexec/xpud/xpud-api-proxy shim=$root/usr/bin/xpu-k8s-shim
else
  build=$(realpath -m "$1")
  root=$(realpath -m "$2")
  xpud=$build/xpud/xpud xpuctl=$build/xpuctl/xpuctl
  proxy=$build/xpud-api-proxy/xpud-api-proxy shim=$build/k8s-shim/xpu-k8s-shim
fi
# Where xpu-k8s-shim finds its role programs (k8s-shim/main.cpp), in a build tree and an install.
roles=$(dirname "$shim")/../libexec/xpu-k8s-shim
command -v qemu-aarch64-static >/dev/null || { echo "smoke.sh: qemu-aarch64-static is missing (apt install qemu-user-static)" >&2; exit 1; }
[ -d "$root/usr/lib/aarch64-linux-gnu" ] ||
  { echo "smoke.sh: $root is not an arm64 root (scripts/build-variants.sh arm64 makes one with the build)" >&2; exit 1; }
for binary in "$xpud" "$xpuctl" "$proxy" "$shim" "$roles/device-plugin" "$roles/exporter" \
  "$roles/token-sync" "$roles/dra-driver" "$roles/validate"; do
  [ -f "$binary" ] && file -b "$binary" | grep -q "ARM aarch64" ||
    { echo "smoke.sh: $binary is not an arm64 program" >&2; exit 1; }
  version=$(qemu-aarch64-static -L "$root" "$binary" --version 2>&1) ||
    { echo "smoke.sh: $binary --version failed under emulation: $version" >&2; exit 1; }
  echo "arm64 $version ($(basename "$binary"))"
done

run=$(mktemp -d)
pids=""
cleanup() {
  for pid in $pids; do kill "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$run"
}
trap cleanup EXIT INT TERM
fail() {
  echo "smoke.sh: FAIL: $*" >&2
  for log in "$run"/*.log; do echo "---- $log" >&2; tail -n 20 "$log" >&2; done
  exit 1
}
# Runs an arm64 program under emulation and waits for it. The ones started in the background
# call qemu directly, so that the job's pid is qemu's own and the cleanup's kill reaches it (a
# function's job is a subshell whose child qemu outlived the kill, holding ctest's pipe open).
arm64() { qemu-aarch64-static -L "$root" "$@"; }
# Runs "$@" until it succeeds, for at most $1 seconds (emulation makes start-up slow).
within() {
  seconds=$1
  shift
  deadline=$(($(date +%s) + seconds))
  until "$@"; do
    [ "$(date +%s)" -lt "$deadline" ] || return 1
    sleep 0.2
  done
}

bus="unix:path=$run/bus"
dbus-daemon --session --nofork --nopidfile --address="$bus" >"$run/dbus.log" 2>&1 &
pids="$pids $!"
within 10 test -S "$run/bus" || fail "dbus-daemon did not start"

printf '[daemon]\nbackend = sim\n[sim]\ndevices = 8\n' >"$run/xpud.conf"
qemu-aarch64-static -L "$root" "$xpud" --bus-address "$bus" --config "$run/xpud.conf" \
  2>"$run/xpud.log" &
pids="$pids $!"

list() { arm64 "$xpuctl" --bus-address "$bus" list --json >"$run/list.json" 2>"$run/xpuctl.log"; }
within 60 list || fail "arm64 xpuctl could not list xpud's cards"
cards=$(python3 -c 'import json,sys; d=json.load(open(sys.argv[1]))["devices"]; print(sum(1 for c in d if c["health"]=="Healthy"))' "$run/list.json")
[ "$cards" = 8 ] || fail "arm64 xpuctl lists $cards healthy cards, not 8"
echo "arm64 xpud and xpuctl: 8 healthy cards"

port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
# The exporter's own program, with the arguments xpu-k8s-shim would pass it: qemu-user emulates
# one program, and the dispatcher's execve of an arm64 one would need qemu registered with the
# kernel's binfmt_misc, which this machine need not have.
qemu-aarch64-static -L "$root" "$roles/exporter" --bus-address "$bus" exporter \
  --listen "127.0.0.1:$port" 2>"$run/exporter.log" &
pids="$pids $!"
scraped() {
  curl -sf "http://127.0.0.1:$port/metrics" >"$run/metrics.txt" &&
    [ "$(grep -c '^xpu_healthy{.*} 1$' "$run/metrics.txt")" = 8 ]
}
within 60 scraped || fail "the arm64 exporter's /metrics has not 8 healthy cards"
echo "arm64 exporter: /metrics over HTTP, 8 cards with xpu_healthy 1"
echo "smoke.sh: PASS"
