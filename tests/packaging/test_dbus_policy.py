"""dbus/com.kunlunxin.xpud1.conf, enforced by a real dbus-daemon against the real xpud.

A private bus runs the distribution's system-bus policy plus ours; xpud (sim backend) serves on
it as root from its own network namespace (a path-bound bus socket is reachable from any);
clients call it as root and as the unprivileged user `nobody`.

Environment: XPU_SOURCE_DIR, XPU_XPUD (the xpud binary).
"""

import os
import select
import shutil
import socket
import subprocess
import tempfile
import time
import unittest

from private_system_bus import PrivateSystemBus

SOURCE_DIR = os.environ.get("XPU_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", ".."))
POLICY = os.path.join(SOURCE_DIR, "dbus", "com.kunlunxin.xpud1.conf")
XPUD = os.environ.get("XPU_XPUD", "xpud")

BUS_NAME = "com.kunlunxin.xpud1"
MANAGER = "/com/kunlunxin/xpud1"
DEVICE0 = "/com/kunlunxin/xpud1/devices/xpu0"
ACCESS_DENIED = "org.freedesktop.DBus.Error.AccessDenied"
UNPRIVILEGED = ["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups", "--"]
TIMEOUT = 20


class LineReader:
    """Lines of a child's output, waited for with a deadline.

    Reads the pipe unbuffered: a buffered reader could hold lines that select() no longer
    reports as readable.
    """

    def __init__(self, pipe):
        self.fd = pipe.fileno()
        self.pending = b""
        self.seen = []

    def wait_for(self, needle, timeout):
        deadline = time.monotonic() + timeout
        while True:
            while b"\n" in self.pending:
                raw, self.pending = self.pending.split(b"\n", 1)
                line = raw.decode(errors="replace")
                self.seen.append(line)
                if needle in line:
                    return line
            remaining = deadline - time.monotonic()
            ready = select.select([self.fd], [], [], remaining)[0] if remaining > 0 else []
            chunk = os.read(self.fd, 4096) if ready else b""
            if not chunk:
                seen = "\n".join(self.seen)
                raise AssertionError(f"no line with {needle!r} within {timeout} s; got:\n{seen}")
            self.pending += chunk


def network_namespaces_available():
    return subprocess.run(["unshare", "--net", "true"], capture_output=True).returncode == 0


class XpudOnPrivateBus(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.bus = PrivateSystemBus([POLICY]).__enter__()
        cls.addClassCleanup(cls.bus.__exit__, None, None, None)
        cls.workdir = tempfile.mkdtemp(prefix="xpud-policy-")
        cls.addClassCleanup(shutil.rmtree, cls.workdir, True)
        config = os.path.join(cls.workdir, "xpud.conf")
        open(config, "w").close()

        notify_path = os.path.join(cls.workdir, "notify")
        notify = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        notify.bind(notify_path)
        cls.addClassCleanup(notify.close)

        cls.in_private_network = network_namespaces_available()
        command = [XPUD, "--backend", "sim", "--bus-address", cls.bus.address, "--config", config]
        if cls.in_private_network:
            command = ["unshare", "--net", "--"] + command
        cls.log = open(os.path.join(cls.workdir, "xpud.log"), "w+")
        cls.addClassCleanup(cls.log.close)
        cls.xpud = subprocess.Popen(command, stdout=cls.log, stderr=subprocess.STDOUT,
                                    env=dict(os.environ, NOTIFY_SOCKET=notify_path))
        cls.addClassCleanup(cls.stop_xpud)
        cls.wait_ready(notify)

    @classmethod
    def stop_xpud(cls):
        if cls.xpud.poll() is None:
            cls.xpud.terminate()
            try:
                cls.xpud.wait(timeout=10)
            except subprocess.TimeoutExpired:
                cls.xpud.kill()
                cls.xpud.wait()

    @classmethod
    def wait_ready(cls, notify):
        # xpud requests the name before READY=1, so READY means the name is owned.
        deadline = time.monotonic() + TIMEOUT
        while True:
            remaining = deadline - time.monotonic()
            if cls.xpud.poll() is not None or remaining <= 0:
                cls.log.seek(0)
                raise AssertionError(f"xpud did not send READY=1 (exit {cls.xpud.poll()}):\n{cls.log.read()}")
            ready, _, _ = select.select([notify], [], [], min(remaining, 0.5))
            if ready and b"READY=1" in notify.recv(4096).split(b"\n"):
                return

    def dbus_send(self, path, method, *args, user_is_nobody=False, dest=BUS_NAME):
        command = ["dbus-send", f"--bus={self.bus.address}", "--print-reply", f"--dest={dest}",
                   "--reply-timeout=10000", path, method, *args]
        if user_is_nobody:
            command = UNPRIVILEGED + command
        return subprocess.run(command, capture_output=True, text=True, timeout=TIMEOUT)

    def assert_allowed(self, result):
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertTrue(result.stdout.startswith("method return"), result.stdout)

    def assert_denied(self, result, by_bus_text="Rejected send message"):
        # The bus's own wording proves the policy denied the call (xpud's checks of its own
        # come later and say something else).
        self.assertNotEqual(result.returncode, 0, result.stdout)
        self.assertIn(f"Error {ACCESS_DENIED}", result.stderr)
        self.assertIn(by_bus_text, result.stderr)

    # --- what any local user may do ---------------------------------------------------------

    def test_nobody_can_get_metrics(self):
        result = self.dbus_send(MANAGER, "com.kunlunxin.xpud1.Manager.GetMetrics", user_is_nobody=True)
        self.assert_allowed(result)
        self.assertIn("temperature_celsius", result.stdout)

    def test_nobody_can_list_devices(self):
        result = self.dbus_send(MANAGER, "com.kunlunxin.xpud1.Manager.ListDevices", user_is_nobody=True)
        self.assert_allowed(result)
        self.assertIn(f'object path "{DEVICE0}"', result.stdout)

    def test_nobody_can_read_properties(self):
        result = self.dbus_send(MANAGER, "org.freedesktop.DBus.Properties.Get",
                                "string:com.kunlunxin.xpud1.Manager", "string:Backend",
                                user_is_nobody=True)
        self.assert_allowed(result)
        self.assertIn('string "sim"', result.stdout)
        result = self.dbus_send(DEVICE0, "org.freedesktop.DBus.Properties.GetAll",
                                "string:com.kunlunxin.xpud1.Device", user_is_nobody=True)
        self.assert_allowed(result)
        self.assertIn('string "Health"', result.stdout)

    def test_nobody_can_introspect_and_enumerate(self):
        result = self.dbus_send(MANAGER, "org.freedesktop.DBus.Introspectable.Introspect",
                                user_is_nobody=True)
        self.assert_allowed(result)
        self.assertIn('interface name="com.kunlunxin.xpud1.Manager"', result.stdout)
        result = self.dbus_send(MANAGER, "org.freedesktop.DBus.ObjectManager.GetManagedObjects",
                                user_is_nobody=True)
        self.assert_allowed(result)
        self.assertIn(DEVICE0, result.stdout)

    def test_nobody_receives_health_signals(self):
        monitor = subprocess.Popen(UNPRIVILEGED + ["stdbuf", "-oL", "gdbus", "monitor", "--address", self.bus.address,
                                                   "--dest", BUS_NAME],
                                   stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        try:
            # gdbus subscribes before it looks the owner up, so once it names the owner the
            # subscription is in place.
            lines = LineReader(monitor.stdout)
            lines.wait_for("is owned by", TIMEOUT)
            self.assert_allowed(self.dbus_send(MANAGER, "com.kunlunxin.xpud1.Simulator.SetHealth",
                                               "uint32:1", "string:Unhealthy", "string:policy test"))
            line = lines.wait_for("DeviceHealthChanged", TIMEOUT)
            self.assertIn("policy test", line)
        finally:
            monitor.terminate()
            monitor.wait(timeout=10)
            monitor.stdout.close()
            self.dbus_send(MANAGER, "com.kunlunxin.xpud1.Simulator.SetHealth",
                           "uint32:1", "string:Healthy", "string:")

    # --- what only root may do --------------------------------------------------------------

    def test_nobody_cannot_set_health(self):
        self.assert_denied(self.dbus_send(MANAGER, "com.kunlunxin.xpud1.Simulator.SetHealth",
                                          "uint32:0", "string:Unhealthy", "string:attack",
                                          user_is_nobody=True))
        result = self.dbus_send(DEVICE0, "org.freedesktop.DBus.Properties.Get",
                                "string:com.kunlunxin.xpud1.Device", "string:Health")
        self.assertIn('string "Healthy"', result.stdout, "the denied call changed nothing")

    def test_nobody_cannot_set_metric(self):
        self.assert_denied(self.dbus_send(MANAGER, "com.kunlunxin.xpud1.Simulator.SetMetric",
                                          "uint32:0", "string:temperature_celsius", "double:99",
                                          user_is_nobody=True))

    def test_nobody_cannot_set_properties(self):
        self.assert_denied(self.dbus_send(DEVICE0, "org.freedesktop.DBus.Properties.Set",
                                          "string:com.kunlunxin.xpud1.Device", "string:Health",
                                          "variant:string:Unhealthy", user_is_nobody=True))

    def test_nobody_cannot_configure_virtual_functions(self):
        # Refused by the bus, before xpud's own check of the caller and of
        # [sriov] allow_cluster_reconfigure: only root and xpud-api-proxy's user get that far.
        self.assert_denied(self.dbus_send(MANAGER, "com.kunlunxin.xpud1.Manager.ConfigureVirtualFunctions",
                                          "uint32:0", "uint32:2", user_is_nobody=True))

    def test_root_reaches_configure_virtual_functions(self):
        # Shows that the denial above comes from the policy: root gets xpud's own answer (a sim
        # card takes at most 3 virtual functions).
        result = self.dbus_send(MANAGER, "com.kunlunxin.xpud1.Manager.ConfigureVirtualFunctions",
                                "uint32:0", "uint32:4")
        self.assertNotEqual(result.returncode, 0, result.stdout)
        self.assertIn("Error com.kunlunxin.xpud1.Error.InvalidArgument", result.stderr)

    def test_nobody_cannot_create_a_share_instance(self):
        # Refused by the bus whatever the arguments (dbus-send cannot pass the pidfd; the policy
        # matches the member, not the signature).
        self.assert_denied(self.dbus_send(MANAGER, "com.kunlunxin.xpud1.Manager.CreateShareInstance",
                                          "uint32:0", "string:attack", "uint64:1", "string:",
                                          "string:claim/share", user_is_nobody=True))

    def test_nobody_cannot_move_cards_to_vfio_pci(self):
        # Cards for virtual machines: Bind and Unbind are root's; the bus refuses them before
        # xpud's own check of the caller.
        for method in ("Bind", "Unbind"):
            self.assert_denied(self.dbus_send(MANAGER, f"com.kunlunxin.xpud1.Vfio.{method}",
                                              "string:0000:3b:00.0", user_is_nobody=True))

    def test_nobody_can_read_the_functions_on_vfio_pci(self):
        result = self.dbus_send(MANAGER, "org.freedesktop.DBus.Properties.Get",
                                "string:com.kunlunxin.xpud1.Vfio", "string:Devices",
                                user_is_nobody=True)
        self.assert_allowed(result)

    def test_root_reaches_vfio_bind(self):
        # Root gets xpud's own answer: the sim backend's xpud reads this host's sysfs, and no
        # PCI function has this address (nothing is written).
        result = self.dbus_send(MANAGER, "com.kunlunxin.xpud1.Vfio.Bind", "string:ffff:ff:1f.7")
        self.assertNotEqual(result.returncode, 0, result.stdout)
        self.assertIn("Error com.kunlunxin.xpud1.Error.NoSuchDevice", result.stderr)

    def test_nobody_cannot_call_methods_that_do_not_exist_yet(self):
        self.assert_denied(self.dbus_send(MANAGER, "com.kunlunxin.xpud1.Manager.FormatDevice",
                                          "uint32:0", user_is_nobody=True))

    def test_nobody_cannot_reset_a_device(self):
        # Refused by the bus, before xpud's own check of the caller and of [recovery].
        self.assert_denied(self.dbus_send(MANAGER, "com.kunlunxin.xpud1.Manager.ResetDevice",
                                          "uint32:0", user_is_nobody=True))

    def test_root_reaches_reset_device(self):
        # Shows that the denial above comes from the policy: root gets xpud's own answer (resets
        # are off in this xpud's configuration, as by default).
        result = self.dbus_send(MANAGER, "com.kunlunxin.xpud1.Manager.ResetDevice", "uint32:0")
        self.assertNotEqual(result.returncode, 0, result.stdout)
        self.assertIn("Error com.kunlunxin.xpud1.Error.NotSupported", result.stderr)
        self.assertIn("[recovery] enabled = false", result.stderr)

    def test_nobody_cannot_bypass_the_policy_by_omitting_the_interface(self):
        # The D-Bus interface field is optional; allow rules must not match calls without one.
        script = ("import dbus, sys\n"
                  "bus = dbus.bus.BusConnection(sys.argv[1])\n"
                  "try:\n"
                  "    bus.call_blocking('com.kunlunxin.xpud1', '/com/kunlunxin/xpud1', None,\n"
                  "                      'SetHealth', 'uss', (0, 'Unhealthy', 'attack'), timeout=10)\n"
                  "    print('allowed')\n"
                  "except dbus.exceptions.DBusException as e:\n"
                  "    print(e.get_dbus_name(), e.get_dbus_message())\n")
        result = subprocess.run(UNPRIVILEGED + ["/usr/bin/python3", "-c", script, self.bus.address],
                                capture_output=True, text=True, timeout=TIMEOUT)
        self.assertTrue(result.stdout.startswith(f"{ACCESS_DENIED} Rejected send message"),
                        result.stdout + result.stderr)

    def test_nobody_cannot_own_the_name(self):
        result = self.dbus_send("/org/freedesktop/DBus", "org.freedesktop.DBus.RequestName",
                                f"string:{BUS_NAME}", "uint32:0", user_is_nobody=True,
                                dest="org.freedesktop.DBus")
        self.assert_denied(result, by_bus_text="is not allowed to own the service")

    def test_root_may_call_the_simulator(self):
        # Shows that the denials above come from the policy, not from a missing method.
        self.assert_allowed(self.dbus_send(MANAGER, "com.kunlunxin.xpud1.Simulator.SetMetric",
                                           "uint32:0", "string:power_watts", "double:123.5"))
        # The injection reaches GetMetrics with the next sample, which it asks for at once.
        deadline = time.monotonic() + TIMEOUT
        while True:
            result = self.dbus_send(MANAGER, "com.kunlunxin.xpud1.Manager.GetMetrics", user_is_nobody=True)
            if "double 123.5" in result.stdout or time.monotonic() > deadline:
                break
            time.sleep(0.05)
        self.assertIn("double 123.5", result.stdout)
        self.dbus_send(MANAGER, "com.kunlunxin.xpud1.Simulator.SetMetric",
                       "uint32:0", "string:power_watts", "double:nan")

    def test_the_name_is_owned_by_root(self):
        result = self.dbus_send("/org/freedesktop/DBus", "org.freedesktop.DBus.GetConnectionUnixUser",
                                f"string:{BUS_NAME}", dest="org.freedesktop.DBus")
        self.assert_allowed(result)
        self.assertIn("uint32 0", result.stdout)

    def test_xpud_reaches_the_bus_from_a_private_network_namespace(self):
        if not self.in_private_network:
            self.skipTest("cannot create network namespaces here (unshare --net failed)")
        ours = os.readlink("/proc/self/ns/net")
        theirs = os.readlink(f"/proc/{self.xpud.pid}/ns/net")
        self.assertNotEqual(ours, theirs, "xpud was meant to run in its own network namespace")


if __name__ == "__main__":
    unittest.main(verbosity=2)
