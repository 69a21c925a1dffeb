#!/bin/sh
# The main job, on any Debian 12 machine without XPUs: xpud on the simulated backend serving a
# private D-Bus bus, with xpu-k8s-shim's exporter (and device plugin) beside it.
# Usage: scripts/demo.sh [--no-deps] [--once]
#   --once  print what an operator would look at, then stop everything (otherwise runs until Ctrl-C)
set -eu
cd "$(dirname "$0")/.."
deps=1 once=0
for arg in "$@"; do
  case "$arg" in
    --no-deps) deps=0 ;;
    --once) once=1 ;;
    *) echo "usage: $0 [--no-deps] [--once]" >&2; exit 2 ;;
  esac
done
[ "$deps" -eq 1 ] && scripts/install-deps.sh
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
ninja -C build xpud xpuctl xpu-k8s-shim

run=$(mktemp -d /tmp/xpu-demo.XXXXXX)
pids=""
cleanup() {
  for pid in $pids; do kill "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$run"
}
trap cleanup EXIT INT TERM

bus="unix:path=$run/bus"
dbus-daemon --session --nofork --nopidfile --address="$bus" >"$run/dbus.log" 2>&1 &
pids="$pids $!"
for _ in $(seq 100); do [ -S "$run/bus" ] && break; sleep 0.05; done

printf '[daemon]\nbackend = sim\n[sim]\ndevices = 8\n' >"$run/xpud.conf"
build/xpud/xpud --bus-address "$bus" --config "$run/xpud.conf" 2>"$run/xpud.log" &
pids="$pids $!"
up=0
for _ in $(seq 100); do
  build/xpuctl/xpuctl --bus-address "$bus" list >/dev/null 2>&1 && { up=1; break; }
  sleep 0.1
done
[ "$up" -eq 1 ] || { echo "xpud did not come up:" >&2; cat "$run/xpud.log" >&2; exit 1; }

port=${XPU_DEMO_PORT:-9507}
build/k8s-shim/xpu-k8s-shim --bus-address "$bus" exporter --listen "127.0.0.1:$port" \
  --podresources-socket "$run/pod-resources.sock" 2>"$run/exporter.log" &
pids="$pids $!"
mkdir -p "$run/device-plugins"
build/k8s-shim/xpu-k8s-shim --bus-address "$bus" device-plugin --plugin-dir "$run/device-plugins" \
  2>"$run/device-plugin.log" &
pids="$pids $!"
for _ in $(seq 100); do curl -fs "http://127.0.0.1:$port/healthz" >/dev/null 2>&1 && break; sleep 0.1; done

echo "== xpuctl --bus-address $bus list"
build/xpuctl/xpuctl --bus-address "$bus" list
echo
echo "== xpuctl metrics"
build/xpuctl/xpuctl --bus-address "$bus" metrics
echo
echo "== inject a fault: busctl --address=$bus call com.kunlunxin.xpud1 /com/kunlunxin/xpud1 com.kunlunxin.xpud1.Simulator SetHealth uss 3 Unhealthy 'demo fault'"
busctl --address="$bus" call com.kunlunxin.xpud1 /com/kunlunxin/xpud1 com.kunlunxin.xpud1.Simulator \
  SetHealth uss 3 Unhealthy "demo fault"
sleep 0.3
build/xpuctl/xpuctl --bus-address "$bus" show 3 | sed -n '1,10p'
echo
echo "== curl http://127.0.0.1:$port/metrics (excerpt)"
curl -fs "http://127.0.0.1:$port/metrics" | grep -E '^xpu_(healthy|memory_used_bytes|exporter_xpud_up)' | head -12 || true
echo
echo "== logs: $run/*.log"
if [ "$once" -eq 1 ]; then exit 0; fi
echo "Running. Bus: $bus   Metrics: http://127.0.0.1:$port/metrics   Ctrl-C to stop."
wait
