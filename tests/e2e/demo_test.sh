#!/bin/sh
# The README's first command, as a user runs it (without the apt step): scripts/demo.sh --once
# must show the device plugin allocating two cards with their environment, the token sync's
# files, and the injected fault in xpuctl, /metrics and the kubelet's ListAndWatch; and a taken
# port must be an error.
# Usage: demo_test.sh SOURCE_DIR BUILD_DIR
set -eu
source_dir=$1 build_dir=$2
out=$(mktemp)
listener=""
trap 'rm -f "$out"; [ -z "$listener" ] || kill "$listener" 2>/dev/null || true' EXIT
fail() { echo "FAIL: $*"; echo "---- demo output"; cat "$out"; exit 1; }
expect() { grep -q -- "$1" "$out" || fail "no line matching: $1"; }

port=19507
XPU_BUILD_DIR=$build_dir XPU_DEMO_PORT=$port "$source_dir/scripts/demo.sh" --no-deps --once >"$out" 2>&1 ||
  fail "demo.sh --once exited $?"
"$(dirname "$0")"/demo_output_check.sh "$out" || fail "the demo does not show what the README promises"
logs=$(sed -n 's/^== logs kept in //p' "$out")
rm -rf "$logs"
echo "PASS: the demo shows allocation, token files and the fault in all three"

# A port something already listens on: an error naming it, not an empty metrics section.
python3 -c 'import socket, sys, time
s = socket.socket(); s.bind(("127.0.0.1", int(sys.argv[1]))); s.listen(); time.sleep(120)' "$port" &
listener=$!
for _ in $(seq 100); do
  python3 -c 'import socket, sys; socket.create_connection(("127.0.0.1", int(sys.argv[1])), 1)' "$port" 2>/dev/null && break
  sleep 0.1
done
rc=0
XPU_BUILD_DIR=$build_dir XPU_DEMO_PORT=$port "$source_dir/scripts/demo.sh" --no-deps --once >"$out" 2>&1 || rc=$?
[ "$rc" -ne 0 ] || fail "demo.sh exited 0 with port $port taken"
expect "port $port is taken"
echo "PASS: a taken port is an error (exit $rc)"
