#!/bin/bash
# DRA driver: ResourceSlice writes and health-change latency, counted by a real API server.
#
# Starts, all on loopback and in a temp dir (removed on exit): etcd, kube-apiserver (HTTPS,
# static token, audit log), a private dbus-daemon, xpud on the sim backend (8 cards) and
# `xpu-k8s-shim dra-driver`. Then:
#   1. time from the driver's start to its slice with 8 devices in the API;
#   2. FLAPS health changes on xpud (a random card Unhealthy, the same card Healthy again, ...),
#      each timed until a watch on the API shows that device's `healthy` attribute changed;
#      the audit log's slice writes in that phase (expected: one per change);
#   3. IDLE_SECONDS with nothing changing: the audit log's slice writes (expected: none) and
#      lists (expected: the 10-minute resyncs), and the writes per hour that makes.
# Writes and lists are counted from the API server's audit log, so by the server, not by us.
#
# Usage: bench/dra_slices.sh [PROGRAMS_DIR]      (run as root, from the top of the tree)
#   PROGRAMS_DIR (or $PROGRAMS_DIR): etcd, kube-apiserver and kubectl, default
#                build/cluster/programs (the real-node suite's); build them with
#                tests/cluster/build-node.sh PROGRAMS_DIR.
#   BUILD_DIR    the CMake build tree with xpud and xpu-k8s-shim (default build; build them with
#                ninja -C build -j2 xpud xpu-k8s-shim)
#   FLAPS        health changes in phase 2 (default 50)
#   IDLE_SECONDS length of phase 3 (default 900: covers one 10-minute resync)
#   KEEP=1       keep the temp dir (logs, audit log) instead of removing it
# Ports: etcd 42379/42380, kube-apiserver 46443 (away from the real-node suite's 2379/6443);
#   ETCD_CLIENT_PORT, ETCD_PEER_PORT, API_PORT override them.
# Authorization is AlwaysAllow here: the chart's RBAC and admission policy for the driver are
# proven in the real-node suite (tests/cluster, scenario 14), not by this benchmark.
set -eu

cd "$(dirname "$0")/.."
REPO=$(pwd)
PROGRAMS_DIR=${1:-${PROGRAMS_DIR:-build/cluster/programs}}
BUILD_DIR=${BUILD_DIR:-build}
FLAPS=${FLAPS:-50}
IDLE_SECONDS=${IDLE_SECONDS:-900}
ETCD_CLIENT_PORT=${ETCD_CLIENT_PORT:-42379}
ETCD_PEER_PORT=${ETCD_PEER_PORT:-42380}
API_PORT=${API_PORT:-46443}
NODE=bench-node

die() { echo "dra_slices: $*" >&2; exit 1; }

[ "$(id -u)" = 0 ] || die "run as root (the driver and xpud expect it)"
PROGRAMS_DIR=$(cd "$PROGRAMS_DIR" 2>/dev/null && pwd) ||
  die "no programs directory '${1:-${PROGRAMS_DIR:-build/cluster/programs}}': build it with tests/cluster/build-node.sh PROGRAMS_DIR"
BUILD_DIR=$(cd "$BUILD_DIR" 2>/dev/null && pwd) || die "no build directory '${BUILD_DIR}': cmake -S . -B build -G Ninja && ninja -C build -j2 xpud xpu-k8s-shim"
ETCD=$PROGRAMS_DIR/etcd
APISERVER=$PROGRAMS_DIR/kube-apiserver
KUBECTL_BIN=$PROGRAMS_DIR/kubectl
XPUD=$BUILD_DIR/xpud/xpud
SHIM=$BUILD_DIR/k8s-shim/xpu-k8s-shim
for f in "$ETCD" "$APISERVER" "$KUBECTL_BIN"; do
  [ -x "$f" ] || die "$f missing: build it with tests/cluster/build-node.sh $PROGRAMS_DIR"
done
for f in "$XPUD" "$SHIM"; do
  [ -x "$f" ] || die "$f missing: ninja -C $BUILD_DIR -j2 xpud xpu-k8s-shim"
done
for p in dbus-daemon busctl openssl python3 ss; do
  command -v "$p" >/dev/null || die "$p not on PATH"
done
# A python with dbus-python (Debian's python3-dbus) calls SetHealth in-process; busctl otherwise.
PYTHON=python3
for p in /usr/bin/python3 python3; do
  if "$p" -c 'import dbus' 2>/dev/null; then PYTHON=$p; break; fi
done
for port in $ETCD_CLIENT_PORT $ETCD_PEER_PORT $API_PORT; do
  if ss -Hltn "sport = :$port" | grep -q .; then die "port $port is in use: is another run going?"; fi
done

TMP=$(mktemp -d /tmp/dra-slices.XXXXXX)
PIDS=()
NAMES=()
cleanup() {
  local rc=$?
  # Only the processes this script started, newest first, by their recorded PIDs.
  for ((i = ${#PIDS[@]} - 1; i >= 0; i--)); do kill "${PIDS[i]}" 2>/dev/null || true; done
  for i in "${!PIDS[@]}"; do
    for _ in $(seq 200); do kill -0 "${PIDS[i]}" 2>/dev/null || break; sleep 0.1; done
    if kill -9 "${PIDS[i]}" 2>/dev/null; then echo "dra_slices: ${NAMES[i]} did not stop in 20 s: killed" >&2; fi
    wait "${PIDS[i]}" 2>/dev/null || true
  done
  if [ "${KEEP:-0}" = 1 ] || [ $rc != 0 ]; then
    echo "dra_slices: logs kept in $TMP" >&2
  else
    rm -rf "$TMP"
  fi
  exit $rc
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

start() {  # start NAME CMD...: background, log in $TMP/NAME.log, PID recorded
  local name=$1; shift
  "$@" >"$TMP/$name.log" 2>&1 &
  PIDS+=($!)
  NAMES+=("$name")
}
wait_for() {  # wait_for WHAT SECONDS CMD...
  local what=$1 seconds=$2; shift 2
  local deadline=$((SECONDS + seconds))
  until "$@" >/dev/null 2>&1; do
    [ $SECONDS -lt $deadline ] || die "$what not ready after ${seconds}s (logs: $TMP)"
    sleep 0.2
  done
}

echo "== setup in $TMP"
# ---- certificates and tokens ----
mkdir -p "$TMP/pki"
(
  cd "$TMP/pki"
  openssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.crt -days 2 \
    -subj "/CN=dra-slices-bench-ca" 2>/dev/null
  openssl req -newkey rsa:2048 -nodes -keyout apiserver.key -out apiserver.csr \
    -subj "/CN=127.0.0.1" 2>/dev/null
  printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n' >ext.cnf
  openssl x509 -req -in apiserver.csr -CA ca.crt -CAkey ca.key -CAcreateserial -days 2 \
    -extfile ext.cnf -out apiserver.crt 2>/dev/null
  openssl genrsa -out sa.key 2048 2>/dev/null
  openssl rsa -in sa.key -pubout -out sa.pub 2>/dev/null
) || die "openssl failed"
cp "$TMP/pki/ca.crt" "$TMP/ca.crt"
DRIVER_TOKEN=$(openssl rand -hex 16)
ADMIN_TOKEN=$(openssl rand -hex 16)
printf '%s\n' "$DRIVER_TOKEN" >"$TMP/token"
cat >"$TMP/tokens.csv" <<EOF
$DRIVER_TOKEN,xpu-dra-driver,uid-driver,"system:authenticated"
$ADMIN_TOKEN,bench-admin,uid-admin,"system:masters"
EOF
cat >"$TMP/kubeconfig" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: bench
  cluster: {server: "https://127.0.0.1:$API_PORT", certificate-authority: "$TMP/ca.crt"}
users:
- name: admin
  user: {token: "$ADMIN_TOKEN"}
contexts:
- name: bench
  context: {cluster: bench, user: admin}
current-context: bench
EOF
cat >"$TMP/audit-policy.yaml" <<EOF
apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived"]
rules:
- level: Metadata
  resources:
  - group: resource.k8s.io
    resources: ["resourceslices"]
- level: None
EOF
kubectl() { "$KUBECTL_BIN" --kubeconfig "$TMP/kubeconfig" "$@"; }

# ---- etcd and kube-apiserver ----
start etcd "$ETCD" --name default --data-dir "$TMP/etcd" \
  --listen-client-urls "http://127.0.0.1:$ETCD_CLIENT_PORT" \
  --advertise-client-urls "http://127.0.0.1:$ETCD_CLIENT_PORT" \
  --listen-peer-urls "http://127.0.0.1:$ETCD_PEER_PORT" \
  --initial-advertise-peer-urls "http://127.0.0.1:$ETCD_PEER_PORT" \
  --initial-cluster "default=http://127.0.0.1:$ETCD_PEER_PORT"
# No endpoint reconciler: the 1.37 API server refuses a loopback --advertise-address for the
# kubernetes Service's endpoints ("may not be in the loopback range"), which nothing here uses.
start kube-apiserver "$APISERVER" \
  --etcd-servers="http://127.0.0.1:$ETCD_CLIENT_PORT" \
  --bind-address=127.0.0.1 --advertise-address=127.0.0.1 --secure-port=$API_PORT \
  --endpoint-reconciler-type=none \
  --tls-cert-file="$TMP/pki/apiserver.crt" --tls-private-key-file="$TMP/pki/apiserver.key" \
  --token-auth-file="$TMP/tokens.csv" --authorization-mode=AlwaysAllow \
  --service-account-issuer=https://kubernetes.default.svc \
  --service-account-key-file="$TMP/pki/sa.pub" --service-account-signing-key-file="$TMP/pki/sa.key" \
  --service-cluster-ip-range=10.254.0.0/24 \
  --audit-policy-file="$TMP/audit-policy.yaml" --audit-log-path="$TMP/audit.log" \
  --audit-log-mode=blocking --audit-log-maxsize=0 \
  --profiling=false
wait_for "kube-apiserver" 120 kubectl get --raw /readyz
wait_for "resource.k8s.io/v1" 60 kubectl get resourceslices
echo "kube-apiserver $("$APISERVER" --version | awk '{print $2}') on 127.0.0.1:$API_PORT"

# ---- dbus-daemon, xpud, the driver ----
BUS="unix:path=$TMP/xpu.bus"
start dbus-daemon dbus-daemon --session --nofork --address="$BUS"
wait_for "dbus-daemon" 10 test -S "$TMP/xpu.bus"
start xpud "$XPUD" --backend sim --bus-address "$BUS"
wait_for "xpud" 30 busctl --address="$BUS" get-property com.kunlunxin.xpud1 /com/kunlunxin/xpud1 \
  com.kunlunxin.xpud1.Manager DeviceCount
mkdir -p "$TMP/plugin" "$TMP/registry" "$TMP/cdi"

cat >"$TMP/measure.py" <<'PYEOF'
import datetime, json, os, random, subprocess, sys, threading, time, queue

tmp, kubectl_bin, bus, node = sys.argv[1:5]
flaps, idle_seconds, driver_start = int(sys.argv[5]), int(sys.argv[6]), float(sys.argv[7])
audit_path = os.path.join(tmp, "audit.log")
DRIVER_USER = "xpu-dra-driver"
WRITE_VERBS = {"create", "update", "patch", "delete", "deletecollection"}
READ_VERBS = {"list", "get", "watch"}
results = {}


def out(line=""):
    print(line, flush=True)


def audit_mark():
    return os.path.getsize(audit_path) if os.path.exists(audit_path) else 0


def audit_events(start, end):
    """The driver's resourceslices requests in the audit log between two byte offsets."""
    events = []
    with open(audit_path, "rb") as f:
        f.seek(start)
        data = f.read(end - start)
    for line in data.decode().splitlines():
        if not line.strip():
            continue
        e = json.loads(line)
        if e.get("stage") != "ResponseComplete" or e.get("user", {}).get("username") != DRIVER_USER:
            continue
        if e.get("objectRef", {}).get("resource") != "resourceslices":
            continue
        events.append(e)
    return events


def summarize(events):
    writes = [e for e in events if e["verb"] in WRITE_VERBS]
    reads = [e for e in events if e["verb"] in READ_VERBS]
    failed = [e for e in events if e.get("responseStatus", {}).get("code", 0) >= 400]
    by_verb = {}
    for e in events:
        by_verb[e["verb"]] = by_verb.get(e["verb"], 0) + 1
    return writes, reads, failed, by_verb


def settle_audit():
    # The log backend runs in blocking mode (written before the response); a short pause covers
    # requests in flight at the phase's end.
    time.sleep(1.0)
    return audit_mark()


class Watch:
    """`kubectl get resourceslices --watch -o json`: a stream of JSON objects, each stamped on arrival."""

    def __init__(self):
        self.proc = subprocess.Popen(
            [kubectl_bin, "--kubeconfig", os.path.join(tmp, "kubeconfig"), "get", "resourceslices",
             "--watch", "-o", "json", "--field-selector", f"spec.nodeName={node}"],
            stdout=subprocess.PIPE, stderr=open(os.path.join(tmp, "watch.log"), "w"))
        self.events = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        decoder = json.JSONDecoder()
        buf = ""
        fd = self.proc.stdout.fileno()
        while True:
            chunk = os.read(fd, 65536)
            if not chunk:
                self.events.put((time.time(), None))
                return
            now = time.time()
            buf += chunk.decode()
            while True:
                buf = buf.lstrip()
                if not buf:
                    break
                try:
                    obj, end = decoder.raw_decode(buf)
                except json.JSONDecodeError:
                    break  # the rest of the object is still on its way
                buf = buf[end:]
                self.events.put((now, obj))

    def next(self, deadline):
        timeout = deadline - time.time()
        if timeout <= 0:
            raise TimeoutError
        try:
            stamp, obj = self.events.get(timeout=timeout)
        except queue.Empty:
            raise TimeoutError
        if obj is None:
            raise RuntimeError("kubectl watch ended (see watch.log)")
        return stamp, obj

    def stop(self):
        self.proc.terminate()
        self.proc.wait()


def health(slice_obj):
    """device name -> healthy, for this driver's slice."""
    if slice_obj.get("spec", {}).get("driver") != "xpu.kunlunxin.com":
        return None
    return {d["name"]: d.get("attributes", {}).get("healthy", {}).get("bool")
            for d in slice_obj["spec"].get("devices", [])}


def stamp_of(event):
    return datetime.datetime.strptime(event["stageTimestamp"], "%Y-%m-%dT%H:%M:%S.%fZ").replace(
        tzinfo=datetime.timezone.utc).timestamp()


def pct(values, p):
    s = sorted(values)
    k = (len(s) - 1) * p / 100
    lo, hi = int(k), min(int(k) + 1, len(s) - 1)
    return s[lo] + (s[hi] - s[lo]) * (k - lo)


def ms(x):
    return f"{x * 1000:.1f} ms"


watch = Watch()

# ---- phase 1 ----
out("== phase 1: first publish")
mark0 = 0
deadline = time.time() + 120
state = None
while True:
    try:
        stamp, obj = watch.next(deadline)
    except TimeoutError:
        sys.exit("phase 1: no slice with 8 devices within 120 s of the driver's start (see driver.log)")
    h = health(obj)
    if h is not None and len(h) == 8:
        state = h
        break
seen = stamp - driver_start
slice_name = obj["metadata"]["name"]
time.sleep(2)  # let the first publish's requests reach the audit log
mark1 = settle_audit()
writes, reads, failed, by_verb = summarize(audit_events(mark0, mark1))
creates = [e for e in writes if e["verb"] == "create" and e.get("responseStatus", {}).get("code") == 201]
if not creates:
    sys.exit(f"phase 1: no successful create of the slice in the audit log ({by_verb})")
# The server's own time stamp of the create's response: the watch may start after it.
publish = stamp_of(creates[0]) - driver_start
out(f"slice {slice_name} with 8 devices, all healthy: {all(state.values())}; created "
    f"{ms(publish)} after the driver's start (audit log), seen in the watch at {ms(seen)}")
out(f"driver's slice requests so far: {by_verb}")
results["publish"] = publish
results["publish_requests"] = by_verb

# ---- phase 2 ----
out(f"== phase 2: {flaps} health changes")
latencies, calls, starts = [], [], []
try:
    # In-process with dbus-python when it is there: t0 is then the call itself, not busctl's start.
    import dbus
    simulator = dbus.Interface(dbus.bus.BusConnection(bus).get_object("com.kunlunxin.xpud1", "/com/kunlunxin/xpud1"),
                               "com.kunlunxin.xpud1.Simulator")

    def set_health(card, healthy):
        simulator.SetHealth(dbus.UInt32(card), "Healthy" if healthy else "Unhealthy", "" if healthy else "bench")
    caller = "dbus-python"
except ImportError:
    def set_health(card, healthy):
        subprocess.run(["busctl", f"--address={bus}", "call", "com.kunlunxin.xpud1", "/com/kunlunxin/xpud1",
                        "com.kunlunxin.xpud1.Simulator", "SetHealth", "uss", str(card),
                        "Healthy" if healthy else "Unhealthy", "" if healthy else "bench"],
                       check=True, stdout=subprocess.DEVNULL)
    caller = "busctl (its start-up counts in the latency)"
out(f"SetHealth through {caller}")
rng = random.Random(int(os.environ.get("SEED", "1")))
card = None
for i in range(flaps):
    if card is None:
        card, healthy = rng.randrange(8), False
    else:
        healthy = True
    name = f"xpu-{card}"
    t0 = time.time()
    set_health(card, healthy)
    calls.append(time.time() - t0)
    starts.append(t0)
    deadline = t0 + 30
    while True:
        try:
            stamp, obj = watch.next(deadline)
        except TimeoutError:
            sys.exit(f"phase 2: change {i + 1} ({name} healthy={healthy}) not in the API after 30 s")
        h = health(obj)
        if h is None:
            continue
        if h.get(name) == healthy:
            others = {k: v for k, v in h.items() if k != name}
            if others != {k: v for k, v in state.items() if k != name}:
                sys.exit(f"phase 2: change {i + 1}: other devices changed too: {h} (was {state})")
            state = h
            latencies.append(stamp - t0)
            break
    if healthy:
        card = None
    time.sleep(rng.uniform(0.05, 0.25))
watch.stop()
mark2 = settle_audit()
writes, reads, failed, by_verb = summarize(audit_events(mark1, mark2))
out(f"latency SetHealth call -> slice change seen in a watch, {flaps} changes: "
    f"p50 {ms(pct(latencies, 50))}, p90 {ms(pct(latencies, 90))}, max {ms(max(latencies))} "
    f"(min {ms(min(latencies))})")
out(f"SetHealth round trip (inside the above): p50 {ms(pct(calls, 50))}, max {ms(max(calls))}")
updates = [e for e in writes if e["verb"] == "update"]
if len(updates) == flaps:
    # The server's side: SetHealth call -> the update's response written (audit stageTimestamp).
    done = [stamp_of(e) - t0 for e, t0 in zip(updates, starts)]
    out(f"latency SetHealth call -> the API server answered the update (audit log): "
        f"p50 {ms(pct(done, 50))}, p90 {ms(pct(done, 90))}, max {ms(max(done))}")
out(f"slice writes the audit log saw: {len(writes)} (expected {flaps}); all requests: {by_verb}; "
    f"failed: {len(failed)}")
results.update(latencies=latencies, flap_writes=len(writes), flap_requests=by_verb, flap_failed=len(failed),
               calls=calls)
ok_flaps = len(writes) == flaps and not failed

# ---- phase 3 ----
out(f"== phase 3: idle for {idle_seconds} s")
idle_start = time.time()
time.sleep(idle_seconds)
mark3 = settle_audit()
idle_elapsed = time.time() - idle_start
events = audit_events(mark2, mark3)
writes, reads, failed, by_verb = summarize(events)
lists = [e for e in reads if e["verb"] in ("list", "get")]
per_hour = len(writes) * 3600 / idle_elapsed
out(f"slice writes: {len(writes)} (expected 0); list/get: {len(lists)} "
    f"(the 10-minute resync: expected {idle_seconds // 600} or so); failed: {len(failed)}")
for e in lists:
    out(f"  {e['verb']} at {e.get('stageTimestamp')} -> {e.get('responseStatus', {}).get('code')}")
out(f"extrapolated writes per hour on an idle node: {per_hour:.1f}")
ok_idle = not writes and not failed

# ---- summary ----
out()
out("== summary")
out(f"first publish (driver start -> slice with 8 devices in the API): {ms(results['publish'])}")
out(f"health change -> slice updated in the API, {flaps} changes: p50 {ms(pct(latencies, 50))}, "
    f"p90 {ms(pct(latencies, 90))}, max {ms(max(latencies))}")
out(f"slice writes during the changes: {results['flap_writes']} for {flaps} changes "
    f"({'one per change' if ok_flaps else 'NOT one per change'})")
out(f"idle {idle_elapsed:.0f} s: {len(writes)} slice writes, {len(lists)} list/get; "
    f"writes per hour: {per_hour:.1f}")
sys.exit(0 if ok_flaps and ok_idle else 1)
PYEOF

DRIVER_START=$(date +%s.%N)
start driver "$SHIM" --bus-address "$BUS" dra-driver --node-name "$NODE" \
  --plugin-dir "$TMP/plugin" --registry-dir "$TMP/registry" --cdi-dir "$TMP/cdi" \
  --api-server "https://127.0.0.1:$API_PORT" --api-token-file "$TMP/token" --api-ca-file "$TMP/ca.crt"
echo "xpud (sim) on $BUS, driver pid ${PIDS[-1]}, node $NODE"

"$PYTHON" "$TMP/measure.py" "$TMP" "$KUBECTL_BIN" "$BUS" "$NODE" "$FLAPS" "$IDLE_SECONDS" "$DRIVER_START" ||
  die "measurement failed or a figure missed its expectation (logs: $TMP)"
kill -0 "${PIDS[-1]}" 2>/dev/null || die "the driver exited during the run (see $TMP/driver.log)"
echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), load $(cut -d' ' -f1-3 /proc/loadavg), $(date -u +%Y-%m-%d)"
