#!/usr/bin/env python3
"""Hostile clients against `xpu-k8s-shim exporter` (ctest label `hostile`).

Starts a private dbus-daemon, xpud (sim backend, 8 cards) and the exporter on [::]:0, then, all on
loopback and bounded in count and time:
  - 1,000 half-sent requests held from 20 addresses while 100 scrapes and /healthz are timed;
  - 200 half-sent requests from one address: only the per-address limit is kept;
  - an idle keep-alive connection closed after the idle timeout;
  - a 1 MiB header, a 100 MB body (POST and GET), garbage, HTTP/0.9 and a TLS handshake on the
    plain port: each gets an error or a close, and the server keeps serving;
  - [::1] and 127.0.0.1 both served on [::];
  - 10,000 connections opened and dropped: no growth of descriptors, threads or RSS after;
  - with basic auth (a second exporter, a cost-12 bcrypt user): 48 clients sending wrong
    passwords from many addresses while /healthz and a scraper with the right password are
    timed; past 10 failures one address gets 429; an unknown user costs what a known one does.
With node_exporter (PROMETHEUS_NODE_EXPORTER, else prometheus-node-exporter on PATH, where
`scripts/install-deps.sh test` links Debian's binary without its service) the slow-client figures
are measured for node_exporter too, in the same run, for comparison.

Usage: exporter_hostile.py [BUILD_DIR]; XPUD_BIN and XPU_K8S_SHIM_BIN override the binaries.
Ends with 'N passed, M failed'; exits 1 on any failure.
"""

import base64
import ctypes
import http.client
import os
import re
import resource
import select
import shutil
import socket
import statistics
import sys
import tempfile
import threading
import time

BUILD = sys.argv[1] if len(sys.argv) > 1 else "build"
XPUD = os.environ.get("XPUD_BIN", os.path.join(BUILD, "xpud/xpud"))
SHIM = os.environ.get("XPU_K8S_SHIM_BIN", os.path.join(BUILD, "k8s-shim/xpu-k8s-shim"))
NODE_EXPORTER = os.environ.get("PROMETHEUS_NODE_EXPORTER") or shutil.which("prometheus-node-exporter") or ""

IDLE_TIMEOUT_S = 10  # HttpLimits::idle_timeout
HEAD_TIMEOUT_S = 10  # HttpLimits::head_timeout
PER_IP_LIMIT = 64  # HttpLimits::max_connections_per_ip
SLOW_CLIENTS = 1000
SLOW_ADDRESSES = 20  # 50 each, under the per-address limit: all of them must be held
SCRAPES = 100
FAILURES_PER_ADDRESS = 10  # PasswordCheckLimits::failures_per_address
BCRYPT_COST = 12  # about 0.25 s a check: an event thread that ran one would show it at once
FLOOD_CLIENTS = 48  # more than the 8 checks the queue holds: the rest must get 503
FLOOD_SECONDS = 6

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "../../support"))
from hostile_checks import Process, check, figures, finish, print_logs_if_failed, wait_until  # noqa: E402


# gRPC (the exporter's pod-resources client) grows and shrinks its own pools (timers, executor,
# event engine) on its own schedule, whatever the HTTP clients do: seen going from one
# grpc_global_timer thread to two on an idle exporter. The churn check is about the HTTP server,
# so those threads are left out of the count.
GRPC_POOL_THREADS = {"grpc_global_tim", "timer_manager", "event_engine", "default-executo", "resolver-execut"}


def proc_stats(pid):
    """(open descriptors, threads but gRPC's pools, RSS KiB) of a process."""
    fds = len(os.listdir(f"/proc/{pid}/fd"))
    threads = 0
    for task in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{task}/comm") as comm:
                name = comm.read().strip()
        except OSError:  # the thread ended meanwhile
            continue
        threads += name not in GRPC_POOL_THREADS
    status = open(f"/proc/{pid}/status").read()
    rss = int(re.search(r"^VmRSS:\s+(\d+)", status, re.M).group(1))
    return fds, threads, rss


def get(host, port, path="/metrics", source="", timeout=5.0, headers=None):
    """One GET on its own connection: (status, body, seconds); status 0 when it failed."""
    started = time.monotonic()
    try:
        conn = http.client.HTTPConnection(host, port, timeout=timeout,
                                          source_address=(source, 0) if source else None)
        conn.request("GET", path, headers=headers or {})
        reply = conn.getresponse()
        body = reply.read()
        conn.close()
        return reply.status, body, time.monotonic() - started
    except (OSError, http.client.HTTPException):
        return 0, b"", time.monotonic() - started


def percentile(values, p):
    ordered = sorted(values)
    rank = max(1, min(len(ordered), int(p * len(ordered) + 0.5)))
    return ordered[rank - 1]


def time_scrapes(host, port, count, path="/metrics"):
    times, failures = [], 0
    for _ in range(count):
        status, _, took = get(host, port, path)
        if status != 200:
            failures += 1
        times.append(took)
    return times, failures


def connect(family, host, port, source="", timeout=5.0):
    s = socket.socket(family, socket.SOCK_STREAM)
    s.settimeout(timeout)
    if source:
        s.bind((source, 0))
    s.connect((host, port))
    return s


def raw_exchange(port, data, host="127.0.0.1", read_for=5.0):
    """Sends `data` (stopping early if the server closes) and returns (reply bytes, bytes sent)."""
    s = connect(socket.AF_INET, host, port)
    sent = 0
    reply = b""
    try:
        view = memoryview(data)
        s.setblocking(False)
        deadline = time.monotonic() + read_for
        while time.monotonic() < deadline:
            readable, writable, _ = select.select([s], [s] if sent < len(data) else [], [], 0.5)
            if readable:
                chunk = s.recv(65536)
                if not chunk:
                    break
                reply += chunk
                continue
            if writable:
                sent += s.send(view[sent:sent + (1 << 20)])
    except (ConnectionResetError, BrokenPipeError):
        pass
    finally:
        s.close()
    return reply, sent


def status_of(reply):
    m = re.match(rb"HTTP/1\.[01] (\d{3})", reply)
    return int(m.group(1)) if m else None


def half_sent(addresses, per_address, port):
    """Connections from each address that sent part of a request head and then nothing."""
    sockets = []
    for source in addresses:
        for i in range(per_address):
            s = connect(socket.AF_INET, "127.0.0.1", port, source)
            s.sendall(b"GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow-%d: " % i)
            sockets.append(s)
    return sockets


def still_open(sockets):
    """How many of `sockets` the server has neither answered nor closed."""
    held = 0
    for s in sockets:
        readable, _, _ = select.select([s], [], [], 0)
        if not readable:
            held += 1
    return held


def slow_client_figures(label, host, port, pid):
    """p50/p99 of scrapes on an idle server, then with SLOW_CLIENTS half-sent requests held."""
    idle, idle_failures = time_scrapes(host, port, SCRAPES)
    addresses = [f"127.0.0.{10 + i}" for i in range(SLOW_ADDRESSES)]
    sockets = half_sent(addresses, SLOW_CLIENTS // SLOW_ADDRESSES, port)
    try:
        loaded, loaded_failures = time_scrapes(host, port, SCRAPES)
        health, health_failures = time_scrapes(host, port, 20, path="/healthz" if label == "xpu exporter" else "/")
        held = still_open(sockets)
        stats = proc_stats(pid)
    finally:
        for s in sockets:
            s.close()
    figures.append((f"{label}: scrape p50/p99 ms, idle", f"{percentile(idle, .5)*1000:.1f} / {percentile(idle, .99)*1000:.1f}"))
    figures.append((f"{label}: scrape p50/p99/max ms, {SLOW_CLIENTS} slow clients held",
                    f"{percentile(loaded, .5)*1000:.1f} / {percentile(loaded, .99)*1000:.1f} / {max(loaded)*1000:.1f}"))
    figures.append((f"{label}: slow clients still held after the scrapes", f"{held} of {SLOW_CLIENTS}"))
    figures.append((f"{label}: fds / threads / RSS KiB with them held", "%d / %d / %d" % stats))
    return idle, idle_failures, loaded, loaded_failures, health, health_failures, held


RELEASE_DEADLINE_S = 60


def thread_states(pid):
    """'name state wchan cpu-ticks' of each thread: what a server that is slow to act is doing."""
    states = []
    for task in sorted(os.listdir(f"/proc/{pid}/task"), key=int):
        try:
            with open(f"/proc/{pid}/task/{task}/stat") as f:
                stat = f.read()
            with open(f"/proc/{pid}/task/{task}/wchan") as f:
                wchan = f.read().strip() or "-"
        except OSError:  # the thread ended meanwhile
            continue
        name = stat[stat.index("(") + 1:stat.rindex(")")]
        fields = stat[stat.rindex(")") + 2:].split()
        states.append(f"{name} {fields[0]} {wchan} {int(fields[11]) + int(fields[12])}")
    return states


def release_figures(pid, target):
    """(released, seconds taken, the threads' states if it took over 5 s) for the server's
    descriptors to come back to `target` once its clients have closed theirs."""
    started = time.monotonic()
    released = wait_until(lambda: proc_stats(pid)[0] <= target, 5)
    stalled = ""
    if not released:
        stalled = "; threads after 5 s: " + ", ".join(thread_states(pid))
        released = wait_until(lambda: proc_stats(pid)[0] <= target, RELEASE_DEADLINE_S - 5)
    return released, time.monotonic() - started, stalled


def bcrypt_hash(password, cost):
    """A $2b$ hash made by libxcrypt, the library the exporter checks with."""
    libcrypt = ctypes.CDLL("libcrypt.so.1")
    libcrypt.crypt_gensalt.restype = ctypes.c_char_p
    libcrypt.crypt_gensalt.argtypes = [ctypes.c_char_p, ctypes.c_ulong, ctypes.c_char_p, ctypes.c_int]
    libcrypt.crypt.restype = ctypes.c_char_p
    libcrypt.crypt.argtypes = [ctypes.c_char_p, ctypes.c_char_p]
    return libcrypt.crypt(password.encode(), libcrypt.crypt_gensalt(b"$2b$", cost, None, 0)).decode()


def basic(user, password):
    return {"Authorization": "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()}


def password_checks(run, procs):
    """Basic auth against a flood of wrong passwords: the bcrypt checks run on their own thread,
    with a bounded queue and a failure limit per address, so the event threads keep serving."""
    d = f"{run}/auth"
    os.mkdir(d)
    with open(f"{d}/web-config.yml", "w") as f:
        f.write(f"basic_auth_users:\n  prometheus: {bcrypt_hash('secret', BCRYPT_COST)}\n")
    exporter, port = start_stack(d, procs, ["--listen", "127.0.0.1:0",
                                            "--web-config-file", f"{d}/web-config.yml"])
    host = "127.0.0.1"
    right = basic("prometheus", "secret")
    status, _, first = get(host, port, headers=right, timeout=10)
    check("basic auth: the right password is served", status == 200, f"got {status}")
    figures.append(("basic auth: first scrape with the right password (one bcrypt check) ms", f"{first*1000:.0f}"))
    idle, _ = time_scrapes(host, port, 50, path="/healthz")

    statuses = {}
    lock = threading.Lock()
    stop = threading.Event()

    def flood(index):
        n = 0
        while not stop.is_set():
            n += 1
            # Many addresses, so that the per-address limit does not end the flood by itself.
            source = f"127.2.{index}.{1 + n % 250}"
            # A long timeout: a check that waits its turn is slow, not dropped.
            status, _, _ = get(host, port, source=source, headers=basic("prometheus", f"guess{n}"), timeout=30)
            with lock:
                statuses[status] = statuses.get(status, 0) + 1
            if status != 401:
                time.sleep(0.01)  # refused at once (503, 429): keep the load generator's own CPU low

    flooders = [threading.Thread(target=flood, args=(i,)) for i in range(FLOOD_CLIENTS)]
    for t in flooders:
        t.start()
    try:
        time.sleep(1)  # the flood under way before timing what must not feel it
        health, health_failures = [], 0
        scrapes, scrape_failures = [], 0
        deadline = time.monotonic() + FLOOD_SECONDS - 1
        while time.monotonic() < deadline:
            status, _, took = get(host, port, path="/healthz")
            health.append(took)
            health_failures += status != 200
            status, _, took = get(host, port, headers=right)
            scrapes.append(took)
            scrape_failures += status != 200
            time.sleep(0.02)
        stats = proc_stats(exporter.proc.pid)
    finally:
        stop.set()
        for t in flooders:
            t.join()
    figures.append(("basic auth: /healthz p50/p99 ms, idle", f"{percentile(idle, .5)*1000:.1f} / {percentile(idle, .99)*1000:.1f}"))
    figures.append((f"basic auth: /healthz p50/p99 ms, {FLOOD_CLIENTS} clients with wrong passwords",
                    f"{percentile(health, .5)*1000:.1f} / {percentile(health, .99)*1000:.1f}"))
    figures.append(("basic auth: right-password scrape p50/p99 ms, during the flood",
                    f"{percentile(scrapes, .5)*1000:.1f} / {percentile(scrapes, .99)*1000:.1f}"))
    figures.append(("basic auth: the flood's answers (status: count)",
                    ", ".join(f"{k}: {v}" for k, v in sorted(statuses.items()))))
    figures.append(("basic auth: fds / threads / RSS KiB during the flood", "%d / %d / %d" % stats))
    check(f"/healthz stays fast while {FLOOD_CLIENTS} clients send wrong passwords (p99 under 100 ms)",
          health_failures == 0 and percentile(health, .99) < 0.1,
          f"p99 {percentile(health, .99)*1000:.0f} ms, {health_failures} failed")
    check("the scraper with the right password stays served during the flood (p99 under 200 ms)",
          scrape_failures == 0 and percentile(scrapes, .99) < 0.2,
          f"p99 {percentile(scrapes, .99)*1000:.0f} ms, {scrape_failures} failed")
    check("checks past the queue are refused at once with 503, none dropped",
          statuses.get(503, 0) > 0 and statuses.get(0, 0) == 0, str(statuses))

    # One address past its failures: 429 without a check, and a Retry-After.
    source = "127.3.0.1"
    answers = [get(host, port, source=source, headers=basic("prometheus", f"no{i}"), timeout=10)[0]
               for i in range(FAILURES_PER_ADDRESS)]
    conn = http.client.HTTPConnection(host, port, timeout=10, source_address=(source, 0))
    conn.request("GET", "/metrics", headers=basic("prometheus", "again"))
    reply = conn.getresponse()
    reply.read()
    conn.close()
    check(f"{FAILURES_PER_ADDRESS} wrong passwords from one address get 401, the next 429 with Retry-After",
          answers == [401] * FAILURES_PER_ADDRESS and reply.status == 429 and reply.getheader("Retry-After"),
          f"{answers} then {reply.status} (Retry-After {reply.getheader('Retry-After')})")
    status, _, _ = get(host, port, source="127.3.0.2", headers=right)
    check("another address is still served", status == 200, f"got {status}")

    # An unknown user costs the configured hash's cost, so timing does not tell names apart.
    def median_seconds(user, base):
        return statistics.median(get(host, port, source=f"127.4.{base}.{i}", headers=basic(user, "x"), timeout=10)[2]
                                 for i in range(1, 6))
    known, unknown = median_seconds("prometheus", 1), median_seconds("nobody", 2)
    figures.append((f"basic auth: wrong password of a known / an unknown user ms (cost {BCRYPT_COST})",
                    f"{known*1000:.0f} / {unknown*1000:.0f}"))
    check("an unknown user takes as long as a known one's wrong password (within 2x)",
          known / 2 < unknown < known * 2, f"{known*1000:.0f} ms against {unknown*1000:.0f} ms")
    check("the exporter with basic auth is still running", exporter.proc.poll() is None)


def find_port(log_text):
    m = re.search(r"serving /metrics on \S+ \(port (\d+)\)", log_text)
    return int(m.group(1)) if m else None


class SetupError(Exception):
    pass


def start_stack(run, procs, exporter_args, cards=8):
    """A private dbus-daemon, xpud (sim backend) and the exporter (no kubelet): (exporter, port).
    Every process started is appended to `procs` for the caller to stop."""
    bus = f"unix:path={run}/bus"
    procs.append(Process(["dbus-daemon", "--session", "--nofork", "--nopidfile", f"--address={bus}"],
                         f"{run}/dbus.log"))
    if not wait_until(lambda: os.path.exists(f"{run}/bus"), 10):
        raise SetupError("dbus-daemon did not come up")
    with open(f"{run}/xpud.conf", "w") as f:
        f.write(f"[daemon]\nbackend = sim\n[sim]\ndevices = {cards}\n")
    procs.append(Process([XPUD, "--config", f"{run}/xpud.conf", "--bus-address", bus], f"{run}/xpud.log"))
    exporter = Process([SHIM, "--bus-address", bus, "exporter", "--podresources-socket",
                        f"{run}/no-kubelet.sock", *exporter_args], f"{run}/exporter.log")
    procs.append(exporter)
    if not wait_until(lambda: find_port(exporter.output()) is not None or exporter.proc.poll() is not None, 10) \
            or find_port(exporter.output()) is None:
        raise SetupError("exporter did not start:\n" + exporter.output())
    return exporter, find_port(exporter.output())


def main():
    for binary in (XPUD, SHIM):
        if not os.access(binary, os.X_OK):
            print(f"exporter_hostile.py: {binary} is not executable (build first)", file=sys.stderr)
            return 2
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, 16384), hard))

    run = tempfile.mkdtemp(prefix="xpu-hostile.")
    procs = []
    try:
        exporter, port = start_stack(run, procs, ["--listen", "[::]:0"])
        pid = exporter.proc.pid
        if not wait_until(lambda: get("127.0.0.1", port)[1].count(b"\nxpu_info{") == 8, 15):
            raise SetupError("exporter does not show 8 cards:\n" + exporter.output())

        # An idle keep-alive connection, watched in the background while the rest runs.
        keepalive = {}

        def watch_keepalive():
            s = connect(socket.AF_INET, "127.0.0.1", port, "127.0.0.3", timeout=IDLE_TIMEOUT_S + 10)
            s.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
            first = s.recv(4096)
            answered = time.monotonic()
            rest = b""
            try:
                while True:
                    chunk = s.recv(4096)
                    if not chunk:
                        break
                    rest += chunk
            except OSError as e:
                keepalive["error"] = str(e)
            keepalive["first"] = first
            keepalive["closed_after"] = time.monotonic() - answered
            s.close()

        # A request head trickling in at one byte a second: never idle, cut by the head deadline.
        drip = {}

        def trickle():
            s = connect(socket.AF_INET, "127.0.0.1", port, "127.0.0.4", timeout=1)
            started = time.monotonic()
            head = b"GET /metrics HTTP/1.1\r\nHost: x\r\nX-Slow: " + b"a" * 100
            try:
                for byte in head:
                    s.send(bytes([byte]))
                    try:
                        if s.recv(4096) == b"":
                            break
                    except socket.timeout:
                        pass
            except OSError:
                pass
            drip["closed_after"] = time.monotonic() - started
            s.close()

        watcher = threading.Thread(target=watch_keepalive)
        watcher.start()
        trickler = threading.Thread(target=trickle)
        trickler.start()

        baseline = proc_stats(pid)
        figures.append(("xpu exporter: fds / threads / RSS KiB at start", "%d / %d / %d" % baseline))

        # 1. Slow clients from many addresses, all held, while scrapes stay fast.
        idle, idle_fail, loaded, loaded_fail, health, health_fail, held = slow_client_figures(
            "xpu exporter", "127.0.0.1", port, pid)
        check("scrapes on an idle server all answered 200", idle_fail == 0, f"{idle_fail} failed")
        check(f"{SCRAPES} scrapes answered 200 while {SLOW_CLIENTS} half-sent requests are held",
              loaded_fail == 0, f"{loaded_fail} failed")
        under = sum(1 for t in loaded if t < 0.1)
        check(f"scrapes under 100 ms with {SLOW_CLIENTS} slow clients (at least 95 of 100, none over 1 s)",
              under >= 95 and max(loaded) < 1.0, f"{under} under 100 ms, max {max(loaded)*1000:.0f} ms")
        check("/healthz answered throughout", health_fail == 0 and max(health) < 1.0,
              f"{health_fail} failed, max {max(health)*1000:.0f} ms")
        check(f"all {SLOW_CLIENTS} slow clients held (none refused)", held == SLOW_CLIENTS, f"{held} held")
        released, took, stalled = release_figures(pid, baseline[0] + 2)
        figures.append((f"xpu exporter: descriptors of {SLOW_CLIENTS} slow clients released in", f"{took*1000:.0f} ms"))
        # The claim is that none leaks, not a speed: on a loaded two-core CI machine the release
        # once took over 5 s. A leaked descriptor never comes back, so a long deadline loses
        # nothing, and the threads' states say what the server did while it waited.
        check("descriptors back to the start after the slow clients leave", released,
              "fds %d after %.1f s%s" % (proc_stats(pid)[0], took, stalled))

        # 2. One address gets at most the per-address limit; the others still get served.
        crowd = half_sent(["127.0.0.2"], 200, port)
        try:
            wait_until(lambda: still_open(crowd) <= PER_IP_LIMIT, RELEASE_DEADLINE_S)
            kept = still_open(crowd)
            status, _, took = get("127.0.0.1", port)
        finally:
            for s in crowd:
                s.close()
        figures.append(("xpu exporter: half-sent requests kept from one address (of 200)", str(kept)))
        check(f"one address holds at most {PER_IP_LIMIT} connections", kept == PER_IP_LIMIT, f"{kept} kept")
        check("another address is served meanwhile", status == 200 and took < 1.0,
              f"status {status} in {took*1000:.0f} ms")

        # 3. Oversized and malformed requests.
        reply, _ = raw_exchange(port, b"GET /metrics HTTP/1.1\r\nHost: x\r\nX-Pad: " + b"a" * (1 << 20) + b"\r\n\r\n")
        check("1 MiB header: 431 or 400", status_of(reply) in (400, 431), f"got {reply[:40]!r}")
        for method, expected in (("POST", 405), ("GET", 413)):
            reply, sent = raw_exchange(
                port, f"{method} /metrics HTTP/1.1\r\nHost: x\r\nContent-Length: 104857600\r\n\r\n".encode()
                + b"\0" * (100 << 20), read_for=10)
            check(f"{method} with a 100 MB body: {expected} before the body is read",
                  status_of(reply) == expected and sent < (100 << 20),
                  f"got {reply[:30]!r} after sending {sent >> 20} MiB")
        reply, _ = raw_exchange(port, b"GET /metrics HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
                                + b"100000\r\n" + b"\0" * 65536)
        check("GET with a chunked body: 413", status_of(reply) == 413, f"got {reply[:30]!r}")
        reply, _ = raw_exchange(port, b"GARBAGE /\x01 JUNK\r\n\r\n")
        check("a request line of garbage: 400", status_of(reply) == 400, f"got {reply[:40]!r}")
        # MHD closes a one-word request line without a reply.
        reply, _ = raw_exchange(port, b"GARBAGE\r\n\r\n")
        check("a one-word request line: 400 or a close", reply == b"" or status_of(reply) == 400,
              f"got {reply[:40]!r}")
        for name, data in (("HTTP/0.9 request", b"GET /metrics\r\n\r\n"),
                           ("TLS handshake on the plain port",
                            bytes.fromhex("16030100a5010000a10303") + os.urandom(32) + b"\0" * 128),
                           ("4 KiB of binary junk", os.urandom(4096))):
            reply, _ = raw_exchange(port, data)
            check(f"{name}: an error or a close", reply == b"" or (status_of(reply) or 0) >= 400,
                  f"got {reply[:40]!r}")
        status, body, _ = get("127.0.0.1", port)
        check("scrapes still answered after the malformed requests",
              status == 200 and body.count(b"\nxpu_info{") == 8, f"status {status}")

        # 4. Both families on [::].
        for host in ("::1", "127.0.0.1"):
            status, body, _ = get(host, port)
            check(f"/metrics served to {host} on [::]", status == 200 and b"xpu_info{" in body, f"status {status}")

        # 5. Churn: 10,000 connections opened and dropped, half of them mid-request.
        before = proc_stats(pid)
        started = time.monotonic()
        for i in range(10000):
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.settimeout(5)
            s.connect(("127.0.0.1", port))
            if i % 2:
                s.send(b"GET /metrics HTTP/1.1\r\nHo")
            s.close()
        figures.append(("10,000 connections opened and dropped in", f"{time.monotonic() - started:.1f} s"))
        # A connection dropped before the server read from it can stay until the idle timeout
        # notices it; then every descriptor must be back.
        wait_until(lambda: proc_stats(pid)[0] <= before[0] and proc_stats(pid)[1] <= before[1],
                   IDLE_TIMEOUT_S + RELEASE_DEADLINE_S)
        after = proc_stats(pid)
        figures.append(("xpu exporter: fds / threads / RSS KiB before / after the churn",
                        "%d / %d / %d" % before + "  ->  %d / %d / %d" % after))
        check("no growth of descriptors or threads after the churn", after[0] <= before[0] and after[1] == before[1],
              f"{before} -> {after}")
        check("RSS grew by under 2 MiB after the churn", after[2] - before[2] < 2048, f"{before[2]} -> {after[2]} KiB")

        watcher.join(IDLE_TIMEOUT_S + 15)
        closed_after = keepalive.get("closed_after", -1)
        figures.append(("idle keep-alive connection closed after", f"{closed_after:.1f} s"))
        check(f"an idle keep-alive connection is closed after about {IDLE_TIMEOUT_S} s",
              status_of(keepalive.get("first", b"")) == 200 and IDLE_TIMEOUT_S - 1 <= closed_after <= IDLE_TIMEOUT_S + 3,
              f"closed after {closed_after:.1f} s {keepalive.get('error', '')}")
        trickler.join(HEAD_TIMEOUT_S + 15)
        cut_after = drip.get("closed_after", -1)
        figures.append(("request head trickling at 1 byte/s cut after", f"{cut_after:.1f} s"))
        check(f"a head trickling in at 1 byte/s is cut after about {HEAD_TIMEOUT_S} s",
              HEAD_TIMEOUT_S - 1 <= cut_after <= HEAD_TIMEOUT_S + 3, f"cut after {cut_after:.1f} s")
        check("the exporter is still running", exporter.proc.poll() is None)

        password_checks(run, procs)

        if NODE_EXPORTER and os.access(NODE_EXPORTER, os.X_OK):
            probe = socket.socket()
            probe.bind(("127.0.0.1", 0))
            ne_port = probe.getsockname()[1]
            probe.close()
            node = Process([NODE_EXPORTER, f"--web.listen-address=127.0.0.1:{ne_port}"], f"{run}/node_exporter.log")
            procs.append(node)
            if wait_until(lambda: get("127.0.0.1", ne_port)[0] == 200, 10):
                slow_client_figures("node_exporter", "127.0.0.1", ne_port, node.proc.pid)
            else:
                print("node_exporter did not answer within 10 s: no comparison figures\n"
                      + node.output()[-2000:], flush=True)
            node.stop()
        else:
            print("node_exporter not found: no comparison figures (`scripts/install-deps.sh test` "
                  "links it without installing a service)", flush=True)
    except SetupError as e:
        print(f"exporter_hostile.py: {e}", file=sys.stderr)
        return 1
    finally:
        for p in reversed(procs):
            p.stop()
        print_logs_if_failed(run)
        shutil.rmtree(run, ignore_errors=True)

    return finish("loopback, this machine")


if __name__ == "__main__":
    sys.exit(main())
