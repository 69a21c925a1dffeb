#!/bin/sh
# The main job, on any Debian 12 machine without XPUs: xpud on the simulated backend serving a
# private D-Bus bus, and all three roles of xpu-k8s-shim beside it: the exporter (/metrics), the
# device plugin registered with a kubelet (the Go stand-in built on the official k8s.io/kubelet
# packages, tests/kubelet-standin) that allocates two cards, and the token sync writing its files.
# Then a fault injected on xpud, as the exporter, the kubelet and xpuctl each see it.
# Usage: scripts/demo.sh [--no-deps] [--once]
#   --once  print what an operator would look at, then stop everything (otherwise runs until Ctrl-C)
# Logs stay in the folder the last lines name. XPU_DEMO_PORT picks the exporter's port (9507),
# XPU_BUILD_DIR the build directory (build).
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
[ "$deps" -eq 1 ] && scripts/install-deps.sh build
for tool in cmake ninja dbus-daemon busctl curl; do
  command -v "$tool" >/dev/null 2>&1 ||
    { echo "demo: $tool is missing (scripts/install-deps.sh build installs it)" >&2; exit 1; }
done
scripts/go --which >/dev/null # one line naming what is missing, if no Go can be had
port=${XPU_DEMO_PORT:-9507}
case "$port" in
  '' | *[!0-9]*) echo "demo: XPU_DEMO_PORT=$port is not a port number" >&2; exit 2 ;;
esac
# curl exits 7 when nothing accepts the connection; anything else means something listens there.
rc=0
curl -s -o /dev/null --max-time 2 "http://127.0.0.1:$port/" || rc=$?
if [ "$rc" -ne 7 ]; then
  echo "demo: port $port is taken on 127.0.0.1 (set XPU_DEMO_PORT to another)" >&2
  exit 1
fi

build=${XPU_BUILD_DIR:-build}
if [ ! -f "$build/CMakeCache.txt" ]; then
  cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
fi
ninja -C "$build" xpud xpuctl xpu-k8s-shim
run=$(mktemp -d /tmp/xpu-demo.XXXXXX)
scripts/go build -C tests/kubelet-standin -o "$run/kubelet-standin" . ||
  { echo "demo: cannot build the kubelet stand-in (tests/kubelet-standin)" >&2; exit 1; }

pids=""
cleanup() {
  for pid in $pids; do kill "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
  echo "== logs kept in $run"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# wait_for WHAT PID LOG COMMAND...: COMMAND succeeds within 20 s, or the demo stops with WHAT and
# the end of LOG (also when the process PID has exited).
wait_for() {
  what=$1 pid=$2 log=$3
  shift 3
  for _ in $(seq 200); do
    "$@" >/dev/null 2>&1 && return 0
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  echo "demo: $what did not come up; the end of $log:" >&2
  tail -n 20 "$log" >&2
  exit 1
}
xpuctl() { "$build"/xpuctl/xpuctl --bus-address "$bus" "$@"; }

bus="unix:path=$run/bus"
dbus-daemon --session --nofork --nopidfile --address="$bus" >"$run/dbus.log" 2>&1 &
pids="$pids $!"
wait_for "dbus-daemon" $! "$run/dbus.log" test -S "$run/bus"

printf '[daemon]\nbackend = sim\n[sim]\ndevices = 8\n' >"$run/xpud.conf"
"$build"/xpud/xpud --bus-address "$bus" --config "$run/xpud.conf" 2>"$run/xpud.log" &
pids="$pids $!"
wait_for "xpud" $! "$run/xpud.log" xpuctl list

"$build"/k8s-shim/xpu-k8s-shim --bus-address "$bus" exporter --listen "127.0.0.1:$port" \
  --podresources-socket "$run/pod-resources.sock" 2>"$run/exporter.log" &
pids="$pids $!"
wait_for "the exporter" $! "$run/exporter.log" curl -fs "http://127.0.0.1:$port/healthz"

mkdir -p "$run/device-plugins"
"$run/kubelet-standin" deviceplugin --plugin-dir "$run/device-plugins" --allocate 2 \
  >"$run/kubelet.jsonl" 2>"$run/kubelet.log" &
pids="$pids $!"
"$build"/k8s-shim/xpu-k8s-shim --bus-address "$bus" device-plugin --plugin-dir "$run/device-plugins" \
  2>"$run/device-plugin.log" &
pids="$pids $!"
wait_for "the device plugin's allocation" $! "$run/device-plugin.log" grep -q '"event":"allocate"' "$run/kubelet.jsonl"

# The token sync reads a folder shaped like the kubelet's projected service-account volume.
sa=$run/serviceaccount
mkdir -p "$sa/..2026_01_01"
printf 'demo-token-1' >"$sa/..2026_01_01/token"
printf 'default' >"$sa/..2026_01_01/namespace"
printf -- '-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n' >"$sa/..2026_01_01/ca.crt"
ln -sfn ..2026_01_01 "$sa/..data"
for f in token ca.crt namespace; do ln -sfn "..data/$f" "$sa/$f"; done
KUBERNETES_SERVICE_HOST=10.0.0.1 KUBERNETES_SERVICE_PORT=443 \
  "$build"/k8s-shim/xpu-k8s-shim token-sync --source-dir "$sa" --dest-dir "$run/xpu-runtime-auth" \
  2>"$run/token-sync.log" &
pids="$pids $!"
wait_for "the token sync" $! "$run/token-sync.log" test -s "$run/xpu-runtime-auth/kubeconfig"

echo "== xpuctl --bus-address $bus list"
xpuctl list
echo
echo "== xpuctl metrics"
xpuctl metrics
echo
echo "== kubelet (stand-in): the device plugin registered; a pod asking for kunlunxin.com/xpu: 2 gets"
python3 - "$run/kubelet.jsonl" <<'EOF'
import json, sys
for line in open(sys.argv[1]):
    event = json.loads(line)
    if event["event"] == "register":
        print("  registered:", event["data"]["resource"], "at", event["data"]["endpoint"])
    elif event["event"] == "allocate":
        print("  devices:", " ".join(event["data"]["devices"]))
        for response in event["data"]["response"]:
            for key, value in sorted(response.get("envs", {}).items()):
                print(f"  env {key}={value}")
            for device in response.get("devices", []):
                print("  device node:", device.get("host_path"), "->", device.get("container_path"))
EOF
echo
echo "== token sync: $run/xpu-runtime-auth (what /xpu-runtime/auth holds on a node)"
ls -l "$run/xpu-runtime-auth"
echo
echo "== inject a fault: busctl --address=$bus call com.kunlunxin.xpud1 /com/kunlunxin/xpud1 com.kunlunxin.xpud1.Simulator SetHealth uss 3 Unhealthy 'demo fault'"
busctl --address="$bus" call com.kunlunxin.xpud1 /com/kunlunxin/xpud1 com.kunlunxin.xpud1.Simulator \
  SetHealth uss 3 Unhealthy "demo fault"
unhealthy_in_metrics() { curl -fs "http://127.0.0.1:$port/metrics" | grep -q '^xpu_healthy{.*xpu="3".*} 0'; }
unhealthy_in_kubelet() { grep '"event":"devices"' "$run/kubelet.jsonl" | tail -n 1 | grep -q 'Unhealthy'; }
wait_for "the fault in /metrics" "$$" "$run/exporter.log" unhealthy_in_metrics
wait_for "the fault in ListAndWatch" "$$" "$run/device-plugin.log" unhealthy_in_kubelet
echo "-- xpuctl show 3"
xpuctl show 3 | sed -n '1,11p'
echo "-- /metrics"
curl -fs "http://127.0.0.1:$port/metrics" | grep -E '^xpu_healthy\{.*xpu="3"' || true
echo "-- the kubelet's last ListAndWatch message"
grep '"event":"devices"' "$run/kubelet.jsonl" | tail -n 1 | python3 -c '
import json, sys
devices = json.loads(sys.stdin.read())["data"]["devices"]
print("  ", len(devices), "devices;", ", ".join(d["ID"] + " " + d["health"] for d in devices if d["health"] != "Healthy"))'
echo
echo "== curl http://127.0.0.1:$port/metrics (excerpt)"
curl -fs "http://127.0.0.1:$port/metrics" | grep -E '^xpu_(memory_used_bytes|exporter_xpud_up)' | head -6 || true
if [ "$once" -eq 1 ]; then exit 0; fi
echo
echo "Running. Bus: $bus   Metrics: http://127.0.0.1:$port/metrics   Ctrl-C to stop."
wait
