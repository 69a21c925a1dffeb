"""A private dbus-daemon that enforces the system bus's policy.

The configuration is the distribution's own system.conf (/usr/share/dbus-1/system.conf) with
only what ties it to the real system bus taken out (listen address, pid file, runtime user,
service activation, syslog, the system.d include directories) and the policy file under test
included, so a call is allowed or denied exactly as it would be on a host that installed it.
The daemon stays root (no <user>), as the real one's policy decisions do not depend on that.
"""

import os
import select
import subprocess
import tempfile
import time
import xml.etree.ElementTree as ET

SYSTEM_CONF = "/usr/share/dbus-1/system.conf"
DROPPED = {"user", "fork", "pidfile", "listen", "servicehelper", "standard_system_servicedirs",
           "servicedir", "includedir", "include", "syslog"}


def bus_config(socket_path, policy_files):
    tree = ET.parse(SYSTEM_CONF)
    root = tree.getroot()
    for child in list(root):
        if child.tag in DROPPED:
            root.remove(child)
    listen = ET.SubElement(root, "listen")
    listen.text = f"unix:path={socket_path}"
    for policy in policy_files:
        include = ET.SubElement(root, "include")
        include.text = os.path.abspath(policy)
    return ('<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"\n'
            ' "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">\n'
            + ET.tostring(root, encoding="unicode"))


class PrivateSystemBus:
    """Context manager: .address is the bus address, usable by any local user."""

    def __init__(self, policy_files, start_timeout=10.0):
        self.policy_files = policy_files
        self.start_timeout = start_timeout
        self.process = None
        self.address = None

    def __enter__(self):
        self.directory = tempfile.TemporaryDirectory(prefix="xpu-bus-")
        # Unprivileged test clients must reach the socket.
        os.chmod(self.directory.name, 0o755)
        socket_path = os.path.join(self.directory.name, "system_bus_socket")
        config_path = os.path.join(self.directory.name, "bus.conf")
        with open(config_path, "w", encoding="utf-8") as f:
            f.write(bus_config(socket_path, self.policy_files))
        self.log_path = os.path.join(self.directory.name, "dbus-daemon.log")
        read_fd, write_fd = os.pipe()
        with open(self.log_path, "wb") as log:
            self.process = subprocess.Popen(
                ["dbus-daemon", f"--config-file={config_path}", "--nofork", "--nopidfile",
                 f"--print-address={write_fd}"],
                pass_fds=(write_fd,), stdout=log, stderr=subprocess.STDOUT)
        os.close(write_fd)
        try:
            self.address = self._read_address(read_fd)
        except Exception:
            self._stop()
            raise
        finally:
            os.close(read_fd)
        return self

    def _read_address(self, fd):
        # dbus-daemon prints its address once it listens: that is the readiness signal.
        deadline = time.monotonic() + self.start_timeout
        data = b""
        while not data.endswith(b"\n"):
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError(f"dbus-daemon printed no address within {self.start_timeout} s")
            ready, _, _ = select.select([fd], [], [], remaining)
            if ready:
                chunk = os.read(fd, 4096)
                if not chunk:
                    self.process.wait(timeout=5)
                    with open(self.log_path, encoding="utf-8", errors="replace") as log:
                        raise RuntimeError(f"dbus-daemon exited with {self.process.returncode}: {log.read()}")
                data += chunk
        return data.decode().strip()

    def _stop(self):
        if self.process and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()

    def __exit__(self, *exc):
        self._stop()
        self.directory.cleanup()
        return False
