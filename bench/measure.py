"""How bench/run takes each figure: wrk for scrape latency, /proc for memory and CPU time, the
kubelet stand-in's timestamps for health and registration latency, Google Benchmark's JSON for
the D-Bus round trips."""

import http.client
import json
import os
import re
import statistics
import subprocess
import sys
import threading
import time

import stack
from stack import BenchError

HERE = os.path.dirname(os.path.abspath(__file__))
WRK_SCRIPT = os.path.join(HERE, "wrk-report.lua")


def wrk_command(url, seconds, cpu):
    return stack.on_cpu(cpu, ["wrk", "-t1", "-c1", f"-d{seconds}s", "--latency", url])


def wrk(url, seconds, cpu):
    """One `wrk -t1 -c1 --latency` run (one keep-alive connection for `seconds`), on `cpu`: its
    p50 and p99 in microseconds and its request count. Any error or non-2xx answer fails it."""
    command = wrk_command(url, seconds, cpu) + ["-s", WRK_SCRIPT]
    result = subprocess.run(command, capture_output=True, text=True, timeout=seconds + 30)
    found = re.search(r"^BENCH (.*)$", result.stdout, re.M)
    if result.returncode != 0 or not found:
        raise BenchError(f"{' '.join(command)} failed:\n{result.stdout}{result.stderr}")
    fields = {key: int(value) for key, value in (pair.split("=") for pair in found.group(1).split())}
    errors = sum(fields[key] for key in ("connect_errors", "read_errors", "write_errors",
                                        "status_errors", "timeouts"))
    if errors or fields["requests"] == 0:
        raise BenchError(f"{' '.join(command)}: {errors} errors in {fields['requests']} requests")
    return fields


def latency_rounds(targets, rounds, seconds, cpu, progress):
    """wrk on every target in turn, `rounds` times, the order rotated each round so that no
    target always runs first or after the same neighbour: {key: [wrk fields per round]}."""
    results = {key: [] for key, _ in targets}
    for round_index in range(rounds):
        shift = round_index % len(targets)
        for key, url in targets[shift:] + targets[:shift]:
            results[key].append(wrk(url, seconds, cpu))
        progress(f"scrape latency: round {round_index + 1} of {rounds} done")
    return results


def median_of(runs, field):
    return statistics.median(run[field] for run in runs)


def paired_ratios(numerator_runs, denominator_runs, field):
    """numerator/denominator for each round, both taken in the same round, sorted."""
    return sorted(n[field] / d[field] for n, d in zip(numerator_runs, denominator_runs))


def memory_kib(pid):
    """VmRSS, RssAnon and RssFile of a process, in KiB."""
    values = {}
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            key, _, rest = line.partition(":")
            if key in ("VmRSS", "RssAnon", "RssFile", "VmHWM", "Threads"):
                values[key] = int(rest.split()[0])
    return values


def library_load_cost(binary):
    """How many shared libraries `binary` needs, and how many KiB of file-backed RSS loading them
    costs an idle process that runs nothing of them (bench/load-libraries.py)."""
    command = [sys.executable, os.path.join(HERE, "load-libraries.py"), binary]
    result = subprocess.run(command, capture_output=True, text=True, timeout=60)
    if result.returncode != 0:
        raise BenchError(f"{' '.join(command)} failed:\n{result.stderr[-1500:]}")
    count, kib = (int(word) for word in result.stdout.split())
    return count, kib, command


def cpu_seconds(pid):
    """utime + stime of a process and its threads so far, from /proc/PID/stat (in clock ticks,
    10 ms each: coarse for a daemon that works a few milliseconds a second)."""
    with open(f"/proc/{pid}/stat") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    # After the command's closing parenthesis: state is field 3, utime field 14, stime field 15.
    ticks = int(fields[11]) + int(fields[12])
    return ticks / os.sysconf("SC_CLK_TCK")


def cpu_seconds_precise(pid):
    """Time on a CPU of every live thread of a process, from /proc/PID/task/*/schedstat (in
    nanoseconds; threads that exited are not counted)."""
    total = 0
    for task in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{task}/schedstat") as schedstat:
                total += int(schedstat.read().split()[0])
        except (OSError, ValueError, IndexError):
            pass
    return total / 1e9


class CpuWindow:
    """CPU time of some processes over one fixed window of wall-clock time: read when the window
    opens and again, by a timer, exactly `seconds` later, whatever else the run is doing."""

    def __init__(self, pids, seconds):
        self.pids = pids
        self.seconds = seconds
        self.done = threading.Event()
        self.started = time.monotonic()
        self.before = self._read()
        self.after = None
        timer = threading.Timer(seconds, self._close)
        timer.daemon = True  # a run that fails early does not wait for it
        timer.start()

    def _read(self):
        return {pid: (cpu_seconds(pid), cpu_seconds_precise(pid)) for pid in self.pids}

    def _close(self):
        try:
            self.after = self._read()
            self.elapsed = time.monotonic() - self.started
        except OSError:
            pass  # finish() reports it
        finally:
            self.done.set()

    def finish(self):
        """Waits for the window's end: ({pid: (% of a core from stat, % from schedstat)}, seconds)."""
        self.done.wait()
        if self.after is None:
            raise BenchError("the CPU window could not read /proc at its end (a process exited?)")
        shares = {}
        for pid in self.pids:
            (stat_before, precise_before), (stat_after, precise_after) = self.before[pid], self.after[pid]
            shares[pid] = (100.0 * (stat_after - stat_before) / self.elapsed,
                           100.0 * (precise_after - precise_before) / self.elapsed)
        return shares, self.elapsed


def scrape_new_connection(port):
    """One GET /metrics on a new connection, as Prometheus does at its usual interval (15 s,
    beyond the exporter's 10 s idle timeout); returns the body's length."""
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        connection.request("GET", "/metrics")
        reply = connection.getresponse()
        body = reply.read()
        if reply.status != 200:
            raise BenchError(f"scrape of port {port}: status {reply.status}")
        return len(body)
    finally:
        connection.close()


def scrapes_with_health_flaps(port, xpud, start, count, flap_every):
    """Scrapes number start+1 to start+count, each on a new connection (so every server thread
    builds bodies in turn), with card 1's health flipped every `flap_every` scrapes so that the
    body is built again and again rather than served from the cache only."""
    for n in range(start, start + count):
        if n % flap_every == 0:
            xpud.bus.set_health(1, "Unhealthy" if (n // flap_every) % 2 == 0 else "Healthy", "bench flap")
        scrape_new_connection(port)


def memory_over_scrapes(pid, port, xpud, marks, flap_every, samples=10, spacing=10):
    """RSS around each mark (a number of scrapes): memory_kib() read after every `spacing`-th of
    the last samples*spacing scrapes up to the mark. Between body builds (each followed by a trim)
    the server's other work touches a few hundred KiB that the next trim returns, so one reading
    depends on where in that cycle it falls; the median of several does not.
    Returns {mark: {"median": {...}, "low": VmRSS, "high": VmRSS}}."""
    done, readings = 0, {}
    for mark in marks:
        window_start = max(done, mark - samples * spacing)
        scrapes_with_health_flaps(port, xpud, done, window_start - done, flap_every)
        done = window_start
        taken = []
        while done < mark:
            step = min(spacing, mark - done)
            scrapes_with_health_flaps(port, xpud, done, step, flap_every)
            done += step
            taken.append(memory_kib(pid))
        taken.sort(key=lambda memory: memory["VmRSS"])
        readings[mark] = {"median": taken[len(taken) // 2], "low": taken[0]["VmRSS"],
                          "high": taken[-1]["VmRSS"], "samples": len(taken)}
    xpud.bus.set_health(1, "Healthy", "bench flap over")
    return readings


def health_latency(plugin, count, card=3):
    """`count` health changes of one card through xpud's Simulator.SetHealth, alternating
    Unhealthy and Healthy: for each, the SetHealth round trip (the baseline: xpud has taken the
    change when it answers) and the time until the kubelet stand-in received the ListAndWatch
    message with the card's new health. Seconds."""
    uuid = plugin.xpud.uuids[card]
    round_trips, latencies = [], []
    for n in range(count):
        health = "Unhealthy" if n % 2 == 0 else "Healthy"
        start = plugin.kubelet.event_count()
        injected = time.time()
        plugin.xpud.bus.set_health(card, health, "bench latency probe")
        answered = time.time()
        _, received = plugin.kubelet.wait_event(
            start, lambda kind, data: kind == "devices" and plugin.health_of(data, uuid) == health,
            10, f"ListAndWatch showing card {card} {health}")
        round_trips.append(answered - injected)
        latencies.append(received - injected)
    return latencies, round_trips


def reregistration_latency(plugin, count):
    """`count` kubelet restarts (see DevicePluginKubelet.restart): for each, the time from the new
    kubelet.sock existing to the stand-in accepting the plugin's Register, and to ListAndWatch
    listing every card again. Seconds."""
    registered, listing = [], []
    for _ in range(count):
        start = plugin.kubelet.event_count()
        socket_at = plugin.kubelet.restart()
        _, register_at = plugin.kubelet.wait_event(start, lambda kind, data: kind == "register", 20,
                                                   "the device plugin registering again")
        _, listed_at = plugin.kubelet.wait_event(
            start, lambda kind, data: kind == "devices" and plugin.all_healthy(data), 20,
            "ListAndWatch listing every card after the restart")
        registered.append(register_at - socket_at)
        listing.append(listed_at - socket_at)
    return registered, listing


def google_benchmark(command, field="real_time"):
    """Runs a Google Benchmark binary with JSON output: {run name: median of `field`, in µs}."""
    command = command + ["--benchmark_format=json"]
    result = subprocess.run(command, capture_output=True, text=True, timeout=600)
    if result.returncode != 0:
        raise BenchError(f"{' '.join(command)} failed:\n{result.stderr[-2000:]}")
    report = json.loads(result.stdout)
    per_name = {}
    for entry in report["benchmarks"]:
        if entry.get("error_occurred"):
            raise BenchError(f"{entry['name']}: {entry.get('error_message')}")
        if entry.get("run_type") == "iteration":
            scale = {"ns": 1e-3, "us": 1.0, "ms": 1e3, "s": 1e6}[entry["time_unit"]]
            per_name.setdefault(entry["run_name"], []).append(entry[field] * scale)
    return {name: statistics.median(times) for name, times in per_name.items()}


def dbus_bench_command(binary, repetitions, min_time):
    """tests/xpud/bench/xpud_dbus_bench: GetMetrics and Peer.Ping to the same xpud on the same
    private bus, repetitions interleaved at random."""
    return [binary, f"--benchmark_min_time={min_time}", f"--benchmark_repetitions={repetitions}",
            "--benchmark_enable_random_interleaving=true", "--benchmark_filter=BM_(PingBaseline|GetMetrics)"]


def render_bench_command(binary, repetitions, min_time):
    """tests/k8s-shim/exporter/exporter_render_bench: one /metrics body built, families and
    prometheus-cpp's serialiser apart."""
    return [binary, f"--benchmark_min_time={min_time}", f"--benchmark_repetitions={repetitions}",
            "--benchmark_enable_random_interleaving=true"]
