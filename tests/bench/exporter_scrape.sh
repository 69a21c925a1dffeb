#!/bin/sh
# Scrape latency and memory of `xpu-k8s-shim exporter`, on demand (ctest label `bench`).
#
# For 8 and 64 simulated cards (xpud --backend sim, [sim] devices = N, half the cards held by
# pods of the pod-resources stand-in): p50/p99 of SCRAPES `curl /metrics` against the exporter,
# and of curl fetching a static copy of the same body from `python3 -m http.server` in the same
# run (the floor a plain HTTP server gives on this machine), plus the exporter's RSS.
# Every curl is its own process and connection, for both servers.
#
# Usage: tests/bench/exporter_scrape.sh [BUILD_DIR] [SCRAPES]   (defaults: build, 300)
set -eu
cd "$(dirname "$0")/../.."
build=${1:-build}
scrapes=${2:-300}
xpud_bin=${XPUD_BIN:-$build/xpud/xpud}
shim_bin=${XPU_K8S_SHIM_BIN:-$build/k8s-shim/xpu-k8s-shim}
go_bin=$PWD/scripts/go
for tool in "$xpud_bin" "$shim_bin" "$go_bin"; do
  [ -x "$tool" ] || { echo "exporter_scrape.sh: $tool is not executable (build first)" >&2; exit 2; }
done
for tool in dbus-daemon busctl curl python3; do
  command -v "$tool" >/dev/null || { echo "exporter_scrape.sh: $tool is required" >&2; exit 2; }
done

run=$(mktemp -d /tmp/xpu-bench.XXXXXX)
pids=""
cleanup() {
  for pid in $pids; do kill "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$run"
}
trap cleanup EXIT INT TERM

fail() {
  echo "exporter_scrape.sh: $*" >&2
  for log in "$run"/*.log; do [ -f "$log" ] && { echo "---- $log" >&2; tail -20 "$log" >&2; }; done
  exit 1
}

# wait_until SECONDS COMMAND...: polls COMMAND every 50 ms until it succeeds or the time is up.
wait_until() {
  limit=$(( $1 * 20 )); shift
  i=0
  until "$@" >/dev/null 2>&1; do
    i=$((i + 1))
    [ "$i" -ge "$limit" ] && return 1
    sleep 0.05
  done
}

# p50/p99 (nearest rank) of the seconds in file $1, printed in milliseconds.
percentiles() {
  sort -n "$1" | awk '{ v[NR] = $1 } END {
    r50 = int(0.50 * NR + 0.5); if (r50 < 1) r50 = 1
    r99 = int(0.99 * NR + 0.5); if (r99 < 1) r99 = 1; if (r99 > NR) r99 = NR
    printf "%.2f %.2f", v[r50] * 1000, v[r99] * 1000 }'
}

# time_curls URL OUT: SCRAPES fetches, one curl process and connection each.
time_curls() {
  : >"$2"
  i=0
  while [ "$i" -lt "$scrapes" ]; do
    curl -fsS -o /dev/null -w '%{time_total}\n' "$1" >>"$2" || fail "curl $1 failed"
    i=$((i + 1))
  done
}

"$go_bin" build -C tests/kubelet-standin -o "$run/kubelet-standin" . || fail "cannot build the kubelet stand-in"

bus="unix:path=$run/bus"
dbus-daemon --session --nofork --nopidfile --address="$bus" >"$run/dbus.log" 2>&1 &
pids="$pids $!"
wait_until 10 busctl --address="$bus" status || fail "dbus-daemon did not come up"

name_owned() {
  busctl --address="$bus" call org.freedesktop.DBus /org/freedesktop/DBus org.freedesktop.DBus \
    NameHasOwner s com.kunlunxin.xpud1 | grep -q true
}
xpu_info_count() { curl -fsS "http://127.0.0.1:$1/metrics" | grep -c '^xpu_info{'; }
has_cards() { [ "$(xpu_info_count "$1")" -eq "$2" ]; }

echo "exporter scrape benchmark: $scrapes scrapes per row, binaries from $(dirname "$(dirname "$shim_bin")")"
printf '%-6s %-9s %-24s %-24s %s\n' cards bytes "exporter p50/p99 ms" "static file p50/p99 ms" "exporter RSS (peak) KiB"
for cards in 8 64; do
  printf '[daemon]\nbackend = sim\n[sim]\ndevices = %s\n' "$cards" >"$run/xpud-$cards.conf"
  "$xpud_bin" --config "$run/xpud-$cards.conf" --bus-address "$bus" >"$run/xpud-$cards.log" 2>&1 &
  xpud_pid=$!
  pids="$pids $xpud_pid"
  wait_until 15 name_owned || fail "xpud ($cards cards) did not take its name"

  # Every other card held by a pod, so half the series carry namespace/pod/container labels.
  uuids=$(i=0; while [ "$i" -lt "$cards" ]; do
    busctl --address="$bus" get-property com.kunlunxin.xpud1 "/com/kunlunxin/xpud1/devices/xpu$i" \
      com.kunlunxin.xpud1.Device Uuid | sed 's/^s "\(.*\)"$/\1/'
    i=$((i + 2))
  done)
  {
    printf '{"pods": ['
    sep=""
    n=0
    for uuid in $uuids; do
      printf '%s{"namespace": "bench", "name": "job-%d", "containers": [{"name": "main", "devices": [{"resource_name": "kunlunxin.com/xpu", "device_ids": ["%s"]}]}]}' "$sep" "$n" "$uuid"
      sep=", "
      n=$((n + 1))
    done
    printf ']}\n'
  } >"$run/pods-$cards.json"
  "$run/kubelet-standin" podresources --socket "$run/kubelet-$cards.sock" --pods-file "$run/pods-$cards.json" \
    >"$run/standin-$cards.log" 2>&1 &
  pids="$pids $!"
  wait_until 10 test -S "$run/kubelet-$cards.sock" || fail "pod-resources stand-in did not come up"

  "$shim_bin" --bus-address "$bus" exporter --listen 127.0.0.1:0 --podresources-socket "$run/kubelet-$cards.sock" \
    >"$run/exporter-$cards.log" 2>&1 &
  exporter_pid=$!
  pids="$pids $exporter_pid"
  wait_until 10 grep -q 'serving /metrics' "$run/exporter-$cards.log" || fail "exporter did not start"
  port=$(sed -n 's/.*(port \([0-9]*\)).*/\1/p' "$run/exporter-$cards.log" | head -1)
  wait_until 10 has_cards "$port" "$cards" || fail "exporter does not show $cards cards"
  wait_until 10 sh -c "curl -fsS http://127.0.0.1:$port/metrics | grep -q 'pod=\"job-0\"'" || fail "no pod labels"

  mkdir -p "$run/static-$cards"
  curl -fsS -o "$run/static-$cards/metrics" "http://127.0.0.1:$port/metrics"
  bytes=$(wc -c <"$run/static-$cards/metrics")
  static_port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  python3 -m http.server --bind 127.0.0.1 --directory "$run/static-$cards" "$static_port" >"$run/http-$cards.log" 2>&1 &
  static_pid=$!
  pids="$pids $static_pid"
  wait_until 10 curl -fsS -o /dev/null "http://127.0.0.1:$static_port/metrics" || fail "python http.server did not start"

  # Warm-up, then the measured runs, interleaved in halves so drift hits both alike.
  time_curls "http://127.0.0.1:$port/metrics" "$run/warm" >/dev/null
  half=$((scrapes / 2))
  full=$scrapes
  scrapes=$half
  time_curls "http://127.0.0.1:$port/metrics" "$run/exp-a"
  time_curls "http://127.0.0.1:$static_port/metrics" "$run/static-a"
  time_curls "http://127.0.0.1:$port/metrics" "$run/exp-b"
  time_curls "http://127.0.0.1:$static_port/metrics" "$run/static-b"
  scrapes=$full
  cat "$run/exp-a" "$run/exp-b" >"$run/exp"
  cat "$run/static-a" "$run/static-b" >"$run/static"

  rss=$(awk '/^VmRSS:/ { print $2 }' "/proc/$exporter_pid/status")
  hwm=$(awk '/^VmHWM:/ { print $2 }' "/proc/$exporter_pid/status")
  read -r e50 e99 <<EOT
$(percentiles "$run/exp")
EOT
  read -r s50 s99 <<EOT
$(percentiles "$run/static")
EOT
  printf '%-6s %-9s %-24s %-24s %s\n' "$cards" "$bytes" "$e50 / $e99" "$s50 / $s99" "$rss ($hwm)"

  kill "$exporter_pid" "$static_pid" "$xpud_pid"
  wait "$exporter_pid" 2>/dev/null || true
  wait "$xpud_pid" 2>/dev/null || true
  wait_until 10 sh -c "! busctl --address=$bus call org.freedesktop.DBus /org/freedesktop/DBus org.freedesktop.DBus NameHasOwner s com.kunlunxin.xpud1 | grep -q true" ||
    fail "xpud did not release its name"
done
