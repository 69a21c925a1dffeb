"""The processes bench/run measures, each started by it in one temporary folder and stopped when
the run ends: private dbus-daemons, xpud (sim backend), the kubelet stand-in (pod-resources and
device-plugin sides), the exporter and the device plugin, nginx serving the exporter's bytes, and
node_exporter. Nothing here listens beyond loopback or touches the machine's own bus."""

import datetime
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time
import urllib.request

import dbus

BUS_NAME = "com.kunlunxin.xpud1"
MANAGER_PATH = "/com/kunlunxin/xpud1"
DEVICE_INTERFACE = "com.kunlunxin.xpud1.Device"
SIMULATOR_INTERFACE = "com.kunlunxin.xpud1.Simulator"
XPU_RESOURCE = "kunlunxin.com/xpu"


class BenchError(Exception):
    """A step of the run failed; the message says which and why."""


def wait_until(seconds, condition, what):
    """Polls condition() every 20 ms until it returns a true value (returned) or time is up."""
    deadline = time.monotonic() + seconds
    while True:
        result = condition()
        if result:
            return result
        if time.monotonic() >= deadline:
            raise BenchError(f"{what} within {seconds} s")
        time.sleep(0.02)


def on_cpu(cpu, argv):
    """argv run by taskset on one CPU (all its threads and children), or as it is for None."""
    return argv if cpu is None else ["taskset", "-c", str(cpu)] + argv


def free_loopback_port():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def http_get(url, timeout=5):
    with urllib.request.urlopen(url, timeout=timeout) as reply:
        return reply.read()


def http_answers(url):
    try:
        http_get(url, timeout=1)
        return True
    except OSError:
        return False


class Run:
    """The run's folder and processes. Every process is stopped (SIGTERM, then SIGKILL) when the
    run ends, and the folder removed unless asked to keep it."""

    def __init__(self, keep):
        self.dir = tempfile.mkdtemp(prefix="bench-run.", dir="/tmp")
        self.keep = keep
        self.processes = []  # (name, Popen)

    def path(self, *parts):
        return os.path.join(self.dir, *parts)

    def start(self, name, argv, env=None, stdout=None):
        """Starts argv with its output in NAME.log (stdout to a pipe when stdout is PIPE)."""
        log = open(self.path(name + ".log"), "wb")
        try:
            process = subprocess.Popen(
                argv, stdin=subprocess.DEVNULL, stdout=stdout if stdout is not None else log,
                stderr=log, env=env, start_new_session=True)
        except OSError as error:
            raise BenchError(f"cannot start {name} ({argv[0]}): {error}") from error
        finally:
            log.close()
        self.processes.append((name, process))
        return process

    def log_tail(self, name, lines=15):
        try:
            with open(self.path(name + ".log"), errors="replace") as log:
                return "".join(log.readlines()[-lines:])
        except OSError:
            return ""

    def check_running(self, name, process):
        if process.poll() is not None:
            raise BenchError(f"{name} exited with status {process.returncode}:\n{self.log_tail(name)}")

    def stop(self, process, timeout=10):
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(timeout)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()

    def close(self):
        for _, process in reversed(self.processes):
            self.stop(process)
        if self.keep:
            print(f"bench/run: logs kept in {self.dir}")
        else:
            shutil.rmtree(self.dir, ignore_errors=True)


class PrivateBus:
    def __init__(self, run, name):
        self.address = "unix:path=" + run.path(name + ".socket")
        self.process = run.start(name, ["dbus-daemon", "--session", "--nofork", "--nopidfile",
                                        "--address=" + self.address])
        self.connection = wait_until(10, self._connect, f"{name} (dbus-daemon) answering")

    def _connect(self):
        try:
            return dbus.bus.BusConnection(self.address)
        except dbus.exceptions.DBusException:
            return None

    def name_owned(self):
        bus = self.connection.get_object("org.freedesktop.DBus", "/org/freedesktop/DBus")
        return bool(bus.NameHasOwner(BUS_NAME, dbus_interface="org.freedesktop.DBus"))

    def device_uuid(self, index):
        device = self.connection.get_object(BUS_NAME, f"{MANAGER_PATH}/devices/xpu{index}")
        return str(device.Get(DEVICE_INTERFACE, "Uuid", dbus_interface="org.freedesktop.DBus.Properties"))

    def set_health(self, index, health, reason):
        manager = self.connection.get_object(BUS_NAME, MANAGER_PATH)
        manager.SetHealth(dbus.UInt32(index), health, reason, dbus_interface=SIMULATOR_INTERFACE)


class Xpud:
    """xpud with the sim backend and `cards` cards, alone on its own private bus."""

    def __init__(self, run, binary, cards, name):
        self.bus = PrivateBus(run, name + "-bus")
        config = run.path(name + ".conf")
        with open(config, "w") as out:
            out.write(f"[daemon]\nbackend = sim\n[sim]\ndevices = {cards}\n")
        self.cards = cards
        self.name = name
        self.process = run.start(name, [binary, "--config", config, "--bus-address", self.bus.address])
        wait_until(15, lambda: run.check_running(name, self.process) or self.bus.name_owned(),
                   f"{name} owning {BUS_NAME}")
        self.uuids = [self.bus.device_uuid(i) for i in range(cards)]


def build_standin(run, repo):
    """The Go kubelet stand-in (tests/kubelet-standin), built into the run's folder."""
    binary = run.path("kubelet-standin")
    env = dict(os.environ, GOFLAGS="-mod=mod")
    result = subprocess.run([os.path.join(repo, "scripts", "go"), "build", "-C",
                             os.path.join(repo, "tests", "kubelet-standin"), "-o", binary, "."],
                            env=env, capture_output=True, text=True)
    if result.returncode != 0:
        raise BenchError("cannot build the kubelet stand-in:\n" + result.stderr[-2000:])
    return binary


class PodResources:
    """The kubelet's pod-resources side: every other card held by a pod (job-0 holds card 0)."""

    def __init__(self, run, standin, xpud):
        pods = [{"namespace": "bench", "name": f"job-{n}", "containers": [
            {"name": "main", "devices": [{"resource_name": XPU_RESOURCE, "device_ids": [uuid]}]}]}
            for n, uuid in enumerate(xpud.uuids[::2])]
        pods_file = run.path(xpud.name + "-pods.json")
        with open(pods_file, "w") as out:
            json.dump({"pods": pods}, out)
        self.socket = run.path(xpud.name + "-podresources.sock")
        name = xpud.name + "-podresources"
        process = run.start(name, [standin, "podresources", "--socket", self.socket,
                                   "--pods-file", pods_file])
        wait_until(10, lambda: run.check_running(name, process) or os.path.exists(self.socket),
                   "the pod-resources stand-in listening")


class Exporter:
    """`xpu-k8s-shim exporter` on a loopback port the kernel picks, ready once it shows every card
    with pod labels."""

    def __init__(self, run, binary, xpud, podresources, name, cpu=None):
        self.name = name
        self.process = run.start(name, on_cpu(cpu, [binary, "--bus-address", xpud.bus.address, "exporter",
                                                    "--listen", "127.0.0.1:0",
                                                    "--podresources-socket", podresources.socket]))
        self.pid = self.process.pid
        log = run.path(name + ".log")

        def port():
            run.check_running(name, self.process)
            with open(log, errors="replace") as text:
                found = re.search(r"serving /metrics on .* \(port (\d+)\)", text.read())
            return int(found.group(1)) if found else None

        self.port = wait_until(10, port, f"{name} serving /metrics")
        self.url = f"http://127.0.0.1:{self.port}/metrics"

        def complete():
            body = http_get(self.url)
            return body if (body.count(b"\nxpu_info{") == xpud.cards
                            and b'pod="job-0"' in body) else None

        self.body = wait_until(15, complete, f"{name} showing {xpud.cards} cards with pod labels")


class Nginx:
    """Debian's nginx with its own configuration in the run's folder, serving `files` (name ->
    bytes) on loopback with keep-alive, as Debian's nginx.conf sets it up (sendfile, tcp_nopush)
    but without an access log."""

    def __init__(self, run, binary, files, cpu=None):
        prefix = run.path("nginx")
        root = os.path.join(prefix, "www")
        os.makedirs(os.path.join(prefix, "temp"))
        os.makedirs(root)
        # Started as root, nginx serves from workers running as nobody: they need to reach the
        # files through the run's folder (mkdtemp makes it 0700).
        os.chmod(run.dir, 0o711)
        os.chmod(prefix, 0o711)
        os.chmod(root, 0o755)
        for name, body in files.items():
            with open(os.path.join(root, name), "wb") as out:
                out.write(body)
        self.port = free_loopback_port()
        temp = os.path.join(prefix, "temp")
        config = os.path.join(prefix, "nginx.conf")
        with open(config, "w") as out:
            out.write(f"""daemon off;
worker_processes 1;
pid {prefix}/nginx.pid;
error_log {prefix}/error.log;
events {{ worker_connections 64; }}
http {{
  access_log off;
  sendfile on;
  tcp_nopush on;
  keepalive_requests 10000000;
  keepalive_timeout 60s;
  default_type "text/plain; version=0.0.4; charset=utf-8";
  client_body_temp_path {temp}/body;
  proxy_temp_path {temp}/proxy;
  fastcgi_temp_path {temp}/fastcgi;
  uwsgi_temp_path {temp}/uwsgi;
  scgi_temp_path {temp}/scgi;
  server {{
    listen 127.0.0.1:{self.port};
    root {root};
  }}
}}
""")
        self.command = on_cpu(cpu, [binary, "-p", prefix + "/", "-c", config, "-e", prefix + "/error.log"])
        self.process = run.start("nginx", self.command)
        first = next(iter(files))
        wait_until(10, lambda: run.check_running("nginx", self.process) or self._serves(first, files[first]),
                   "nginx serving the captured bodies")

    def url(self, name):
        return f"http://127.0.0.1:{self.port}/{name}"

    def _serves(self, name, body):
        try:
            return http_get(self.url(name), timeout=1) == body
        except OSError:
            return False


class NodeExporter:
    """Debian's node_exporter with its default collectors, on loopback."""

    def __init__(self, run, binary, cpu=None, name="node_exporter"):
        self.port = free_loopback_port()
        self.url = f"http://127.0.0.1:{self.port}/metrics"
        self.process = run.start(name, on_cpu(cpu, [binary, f"--web.listen-address=127.0.0.1:{self.port}"]))
        self.pid = self.process.pid
        wait_until(10, lambda: run.check_running(name, self.process) or http_answers(self.url),
                   f"{name} serving /metrics")
        self.body = http_get(self.url)


class DevicePluginKubelet:
    """`kubelet-standin deviceplugin`: serves kubelet.sock in a plugin folder and prints every
    registration and ListAndWatch message as a JSON line with its time, which a thread here
    collects. restart() does what a kubelet restart does to a plugin folder."""

    def __init__(self, run, standin, plugin_dir, name):
        self.run, self.standin, self.plugin_dir, self.name = run, standin, plugin_dir, name
        self.events = []  # (wall-clock seconds, event, data)
        self.changed = threading.Condition()
        self.restarts = 0
        self._start()

    def _start(self):
        name = f"{self.name}-{self.restarts}"
        self.process = self.run.start(name, [self.standin, "deviceplugin", "--plugin-dir", self.plugin_dir],
                                      stdout=subprocess.PIPE)
        threading.Thread(target=self._collect, args=(self.process,), daemon=True).start()
        socket_path = os.path.join(self.plugin_dir, "kubelet.sock")
        wait_until(10, lambda: self.run.check_running(name, self.process) or os.path.exists(socket_path),
                   "the device-plugin stand-in serving kubelet.sock")

    def _collect(self, process):
        for line in process.stdout:
            try:
                event = json.loads(line)
                at = rfc3339_seconds(event["time"])
            except (ValueError, KeyError):
                continue
            with self.changed:
                self.events.append((at, event["event"], event["data"]))
                self.changed.notify_all()

    def wait_event(self, start, predicate, seconds, what):
        """The first event at index >= start matching predicate(kind, data): (index, time)."""
        deadline = time.monotonic() + seconds
        with self.changed:
            while True:
                for index in range(start, len(self.events)):
                    at, kind, data = self.events[index]
                    if predicate(kind, data):
                        return index, at
                start = len(self.events)
                left = deadline - time.monotonic()
                if left <= 0:
                    raise BenchError(f"{what} within {seconds} s")
                self.changed.wait(left)

    def event_count(self):
        with self.changed:
            return len(self.events)

    def restart(self):
        """Stops the stand-in (it removes kubelet.sock), deletes every other plain file in the
        folder (the plugin's socket among them) as the kubelet does when it starts, and starts a
        new stand-in. Returns the wall-clock time kubelet.sock existed again."""
        self.run.stop(self.process)
        for entry in os.scandir(self.plugin_dir):
            if not entry.is_dir() and entry.name != "kubelet_internal_checkpoint":
                os.unlink(entry.path)
        self.restarts += 1
        self._start()
        return os.stat(os.path.join(self.plugin_dir, "kubelet.sock")).st_mtime


def rfc3339_seconds(text):
    """Go's RFC 3339 with nanoseconds (2026-12-01T10:16:47.123456789+01:00) as epoch seconds."""
    found = re.fullmatch(r"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(?:\.(\d+))?(Z|[+-]\d\d:\d\d)", text)
    if not found:
        raise ValueError(text)
    whole, fraction, zone = found.groups()
    zone = "+00:00" if zone == "Z" else zone
    stamp = datetime.datetime.fromisoformat(whole + zone).timestamp()
    return stamp + (int(fraction) / 10 ** len(fraction) if fraction else 0.0)


class DevicePlugin:
    """`xpu-k8s-shim device-plugin` against the device-plugin stand-in, ready once ListAndWatch
    delivered every card Healthy."""

    def __init__(self, run, binary, standin, xpud, name):
        self.xpud = xpud
        self.plugin_dir = run.path(name + "-plugins")
        os.makedirs(self.plugin_dir)
        self.process = run.start(name, [binary, "--bus-address", xpud.bus.address, "device-plugin",
                                        "--plugin-dir", self.plugin_dir])
        self.pid = self.process.pid
        self.kubelet = DevicePluginKubelet(run, standin, self.plugin_dir, name + "-kubelet")
        self.kubelet.wait_event(0, lambda kind, data: kind == "devices" and self.all_healthy(data),
                                20, f"{name}: ListAndWatch with {xpud.cards} healthy cards")

    def all_healthy(self, data):
        devices = data.get("devices") or []
        return len(devices) == self.xpud.cards and all(d.get("health") == "Healthy" for d in devices)

    def health_of(self, data, uuid):
        for device in data.get("devices") or []:
            if device.get("ID") == uuid:
                return device.get("health")
        return None
