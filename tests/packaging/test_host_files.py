"""The files the host packages install beside the binaries: systemd/xpud.service, the API
proxy's two sockets, service and sysusers entry, and the shipped /etc/xpud/xpud.conf.

The unit is checked by systemd's own tools (`systemd-analyze verify`, and `systemd-analyze
security --offline` with a ceiling on the exposure score), the config by the real xpud.

Environment: XPU_SOURCE_DIR, XPU_XPUD (the xpud binary), XPU_BINARY_DIR (the build, for
`cmake --install`), XPU_SHIM (set when the shim is built).
"""

import json
import os
import re
import shutil
import subprocess
import tempfile
import unittest

import package_contents

SOURCE_DIR = os.environ.get("XPU_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", ".."))
UNIT = os.path.join(SOURCE_DIR, "systemd", "xpud.service")
CONFIG = os.path.join(SOURCE_DIR, "systemd", "xpud.conf")
MAN_DIR = os.path.join(SOURCE_DIR, "packaging", "man")
XPUD = os.environ.get("XPU_XPUD", "xpud")
API_PROXY = os.environ.get("XPU_API_PROXY", "xpud-api-proxy")
PROXY_SERVICE = os.path.join(SOURCE_DIR, "systemd", "xpud-api-proxy.service")
PROXY_SOCKET = os.path.join(SOURCE_DIR, "systemd", "xpud-api-proxy.socket")
PROXY_SRIOV_SOCKET = os.path.join(SOURCE_DIR, "systemd", "xpud-api-proxy-sriov.socket")
PROXY_SYSUSERS = os.path.join(SOURCE_DIR, "systemd", "xpud-api.sysusers")
BINARY_DIR = os.environ.get("XPU_BINARY_DIR")

# systemd's scale: 0 (locked down) to 10 (UNSAFE); systemd's own daemons mostly score 1-3.
MAX_EXPOSURE = 2.0


def parse_unit(path):
    """{section: [(key, value), ...]} keeping repeated keys in order, as systemd does."""
    sections = {}
    current = None
    with open(path, encoding="utf-8") as f:
        for number, raw in enumerate(f, 1):
            line = raw.strip()
            if not line or line.startswith(("#", ";")):
                continue
            if line.startswith("[") and line.endswith("]"):
                current = sections.setdefault(line[1:-1], [])
                continue
            if current is None or "=" not in line:
                raise AssertionError(f"{path}:{number}: not a key=value line: {line!r}")
            key, value = line.split("=", 1)
            current.append((key.strip(), value.strip()))
    return sections


class Unit(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.unit = parse_unit(UNIT)
        cls.service = cls.unit["Service"]

    def values(self, key):
        return [v for k, v in self.service if k == key]

    def value(self, key):
        found = self.values(key)
        self.assertEqual(len(found), 1, f"{key} set {len(found)} times")
        return found[0]

    def test_systemd_analyze_verify(self):
        # verify insists that ExecStart exists, so check a copy that starts the built xpud.
        with tempfile.TemporaryDirectory() as directory:
            with open(UNIT, encoding="utf-8") as f:
                text = f.read()
            text, count = re.subn(r"(?m)^ExecStart=/usr/sbin/xpud$", f"ExecStart={os.path.abspath(XPUD)}", text)
            self.assertEqual(count, 1, "ExecStart=/usr/sbin/xpud not found")
            copy = os.path.join(directory, "xpud.service")
            with open(copy, "w", encoding="utf-8") as f:
                f.write(text)
            # verify also opens every Documentation=man: page; serve it the ones the packages ship.
            for page in os.listdir(MAN_DIR):
                section_dir = os.path.join(directory, "man", "man" + page.rsplit(".", 1)[1])
                os.makedirs(section_dir, exist_ok=True)
                shutil.copy(os.path.join(MAN_DIR, page), section_dir)
            result = subprocess.run(["systemd-analyze", "verify", copy], capture_output=True, text=True,
                                    timeout=60, env=dict(os.environ, MANPATH=os.path.join(directory, "man")))
            self.assertEqual(result.returncode, 0, result.stdout + result.stderr)
            self.assertEqual(result.stderr.strip(), "", "verify warned")

    def test_security_exposure(self):
        result = subprocess.run(["systemd-analyze", "security", "--offline=yes", "--no-pager", UNIT],
                                capture_output=True, text=True, timeout=60)
        self.assertEqual(result.returncode, 0, result.stderr)
        match = re.search(r"Overall exposure level for xpud\.service: (\d+\.\d+) (\w+)", result.stdout)
        self.assertIsNotNone(match, result.stdout)
        score = float(match.group(1))
        print(f"systemd-analyze security: exposure {score} {match.group(2)} (ceiling {MAX_EXPOSURE})")
        self.assertLessEqual(score, MAX_EXPOSURE, result.stdout)

    def test_security_checks_that_matter(self):
        result = subprocess.run(["systemd-analyze", "security", "--offline=yes", "--json=short", UNIT],
                                capture_output=True, text=True, timeout=60)
        self.assertEqual(result.returncode, 0, result.stderr)
        checks = {item["name"]: item for item in json.loads(result.stdout)}
        # Not PrivateNetwork= nor RestrictAddressFamilies=~AF_NETLINK: udev's device events reach
        # only netlink sockets in the host's network namespace (test_devices_...).
        for name in ("NoNewPrivileges=", "ProtectSystem=", "ProtectHome=",
                     "PrivateTmp=", "RestrictAddressFamilies=~AF_(INET|INET6)",
                     "RestrictAddressFamilies=~AF_PACKET", "CapabilityBoundingSet=~CAP_SYS_ADMIN",
                     "CapabilityBoundingSet=~CAP_SYS_RAWIO", "ProtectKernelModules=",
                     "ProtectKernelTunables=", "ProtectKernelLogs=", "ProtectClock=",
                     "ProtectControlGroups=", "MemoryDenyWriteExecute=", "LockPersonality=",
                     "RestrictRealtime=", "RestrictSUIDSGID=", "RestrictNamespaces=~user",
                     "SystemCallFilter=~@mount", "SystemCallFilter=~@privileged",
                     "SystemCallArchitectures=", "IPAddressDeny="):
            self.assertIn(name, checks)
            self.assertTrue(checks[name]["set"], f"{name}: {checks[name]['description']}")

    def test_service_contract(self):
        self.assertEqual(self.value("Type"), "notify")
        self.assertEqual(self.value("BusName"), "com.kunlunxin.xpud1")
        self.assertEqual(self.value("ExecStart"), "/usr/sbin/xpud")
        self.assertEqual(self.value("ExecReload"), "kill -HUP $MAINPID")
        self.assertEqual(self.value("Restart"), "on-failure")
        self.assertRegex(self.value("WatchdogSec"), r"^\d+s$")
        self.assertEqual(self.value("ConfigurationDirectory"), "xpud")
        self.assertIn(("WantedBy", "multi-user.target"), self.unit["Install"])

    def test_orders_after_udev_not_module_loading(self):
        # udev loads the kunlun module and creates /dev/xpu*; modules-load.d plays no part, and
        # udev-settle is deprecated.
        after = " ".join(v for k, v in self.unit["Unit"] if k == "After").split()
        for unit in ("dbus.socket", "systemd-udevd.service", "systemd-udev-trigger.service"):
            self.assertIn(unit, after)
        for unit in ("systemd-modules-load.service", "systemd-udev-settle.service"):
            self.assertNotIn(unit, after)
        wanted = " ".join(v for k, v in self.unit["Unit"] if k in ("Wants", "Requires")).split()
        self.assertNotIn("systemd-udev-settle.service", wanted)
        # A device unit wanted by the unit itself would hold up xpud (and boot) for 90 s on every
        # host without cards; xpud-generator adds it where cards exist (Generator below).
        self.assertEqual([u for u in wanted if u.endswith(".device")], [])

    def test_devices_are_closed_but_the_xpu_nodes(self):
        self.assertEqual(self.value("DevicePolicy"), "closed")
        allowed = self.values("DeviceAllow")
        self.assertIn("/dev/xpuctrl rw", allowed)
        self.assertTrue(any(a.startswith("char-") and a.endswith(" rw") for a in allowed), allowed)
        self.assertEqual(self.value("CapabilityBoundingSet"), "")
        # The bus, and udev's device events (netlink, in the host's network namespace: so no
        # PrivateNetwork=); no IP.
        self.assertEqual(self.value("RestrictAddressFamilies"), "AF_UNIX AF_NETLINK")
        self.assertEqual(self.values("PrivateNetwork"), [])
        self.assertEqual(self.value("IPAddressDeny"), "any")


GENERATOR = os.path.join(SOURCE_DIR, "systemd", "xpud-generator")
RULES = os.path.join(SOURCE_DIR, "systemd", "60-xpud.rules")


class Generator(unittest.TestCase):
    """xpud-generator: xpud waits for /dev/xpuctrl at boot only where Kunlunxin cards are."""

    def run_generator(self, vendors):
        with tempfile.TemporaryDirectory() as directory:
            for bus_id, vendor in vendors.items():
                function = os.path.join(directory, "sys", "bus", "pci", "devices", bus_id)
                os.makedirs(function)
                with open(os.path.join(function, "vendor"), "w", encoding="utf-8") as f:
                    f.write(vendor + "\n")
            out = os.path.join(directory, "out")
            os.makedirs(out)
            result = subprocess.run([GENERATOR, out, out + "-early", out + "-late"], capture_output=True, text=True,
                                    timeout=30, env=dict(os.environ, XPUD_GENERATOR_SYSFS=os.path.join(directory, "sys")))
            self.assertEqual(result.returncode, 0, result.stderr)
            self.assertEqual(result.stderr, "")
            written = {}
            for parent, _, files in os.walk(out):
                for name in files:
                    path = os.path.join(parent, name)
                    written[os.path.relpath(path, out)] = parse_unit(path)
            return written

    def test_a_host_without_cards_gets_no_dependency(self):
        self.assertEqual(self.run_generator({"0000:00:1f.0": "0x8086", "0000:3b:00.0": "0x15b3"}), {})
        self.assertEqual(self.run_generator({}), {})

    def test_a_host_with_cards_waits_for_the_control_node_for_a_bounded_time(self):
        written = self.run_generator({"0000:00:1f.0": "0x8086", "0000:3b:00.0": "0x1d22", "0000:3d:00.0": "0x1d22"})
        self.assertEqual(written, {
            "xpud.service.d/50-xpu-device-nodes.conf":
                {"Unit": [("Wants", "dev-xpuctrl.device"), ("After", "dev-xpuctrl.device")]},
            "dev-xpuctrl.device.d/50-xpud.conf": {"Unit": [("JobRunningTimeoutSec", "30s")]},
        })

    def run_generator_on_real_layout(self, directory, functions):
        """Lays out sysfs as the kernel does (the bus entry a symlink into devices/pci<root>/);
        `functions`: bus id -> (vendor, attribute names). Returns the sysfs root."""
        sysfs = os.path.join(directory, "sys")
        bus = os.path.join(sysfs, "bus", "pci", "devices")
        os.makedirs(bus)
        for bus_id, (vendor, attributes) in functions.items():
            # Behind a root port on bus 0 of the function's own root: devices/pci0000:3b/0000:00:01.0/
            real = os.path.join(sysfs, "devices", "pci" + bus_id[:7], bus_id[:5] + "00:01.0", bus_id)
            os.makedirs(real)
            with open(os.path.join(real, "vendor"), "w", encoding="utf-8") as f:
                f.write(vendor + "\n")
            for name in attributes:
                if name == "physfn":
                    os.symlink("..", os.path.join(real, name))
                else:
                    with open(os.path.join(real, name), "w", encoding="utf-8") as f:
                        f.write("4\n")
            os.symlink(os.path.relpath(real, bus), os.path.join(bus, bus_id))
        return sysfs

    def test_sriov_physical_functions_are_made_writable_and_nothing_else(self):
        """ConfigureVirtualFunctions writes sriov_numvfs, which ProtectKernelTunables=yes makes
        read-only: the drop-in opens the real directory of each Kunlunxin PF that can have VFs."""
        directory = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, directory)
        sysfs = self.run_generator_on_real_layout(directory, {
            "0000:3b:00.0": ("0x1d22", ["sriov_totalvfs", "sriov_numvfs"]),
            "0000:3b:00.1": ("0x1d22", ["physfn"]),            # one of its VFs
            "0000:5e:00.0": ("0x1d22", []),                    # no SR-IOV capability
            "0000:af:00.0": ("0x15b3", ["sriov_totalvfs"]),    # another vendor's SR-IOV NIC
        })
        out = os.path.join(directory, "out")
        os.makedirs(out)
        subprocess.run([GENERATOR, out], check=True, timeout=30, env=dict(os.environ, XPUD_GENERATOR_SYSFS=sysfs))
        written = parse_unit(os.path.join(out, "xpud.service.d", "50-xpu-sriov.conf"))
        real_sysfs = os.path.realpath(sysfs)
        self.assertEqual(written, {"Service": [
            ("ReadWritePaths", "-" + real_sysfs + "/devices/pci0000:3b/0000:00:01.0/0000:3b:00.0")]})
        # The shipped unit itself opens no part of /sys.
        unit = parse_unit(UNIT)
        self.assertEqual([v for k, v in unit.get("Service", []) if k == "ReadWritePaths"], [])
        self.assertIn(("ProtectKernelTunables", "yes"), unit["Service"])

    def test_no_sriov_function_no_writable_path(self):
        directory = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, directory)
        sysfs = self.run_generator_on_real_layout(directory, {"0000:5e:00.0": ("0x1d22", [])})
        out = os.path.join(directory, "out")
        os.makedirs(out)
        subprocess.run([GENERATOR, out], check=True, timeout=30, env=dict(os.environ, XPUD_GENERATOR_SYSFS=sysfs))
        self.assertEqual(sorted(os.listdir(os.path.join(out, "xpud.service.d"))), ["50-xpu-device-nodes.conf"])

    def test_the_drop_ins_are_valid_for_systemd(self):
        written_dir = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, written_dir)
        sysfs = self.run_generator_on_real_layout(
            written_dir, {"0000:3b:00.0": ("0x1d22", ["sriov_totalvfs", "sriov_numvfs"])})
        out = os.path.join(written_dir, "out")
        os.makedirs(out)
        subprocess.run([GENERATOR, out], check=True, timeout=30, env=dict(os.environ, XPUD_GENERATOR_SYSFS=sysfs))
        self.assertTrue(os.path.exists(os.path.join(out, "xpud.service.d", "50-xpu-sriov.conf")))
        # The unit with the generated drop-in, as systemd would load it.
        with open(UNIT, encoding="utf-8") as f:
            text = f.read().replace("ExecStart=/usr/sbin/xpud", f"ExecStart={os.path.abspath(XPUD)}")
        unit_dir = os.path.join(written_dir, "units")
        os.makedirs(unit_dir)
        with open(os.path.join(unit_dir, "xpud.service"), "w", encoding="utf-8") as f:
            f.write(text)
        shutil.copytree(os.path.join(out, "xpud.service.d"), os.path.join(unit_dir, "xpud.service.d"))
        result = subprocess.run(["systemd-analyze", "verify", "--man=no", os.path.join(unit_dir, "xpud.service")],
                                capture_output=True, text=True, timeout=60)
        self.assertEqual(result.returncode, 0, result.stdout + result.stderr)
        self.assertEqual(result.stderr.strip(), "", "verify warned (it names a drop-in's unknown keys here)")


class UdevRules(unittest.TestCase):
    """60-xpud.rules: the XPU nodes get device units and the tag xpud's monitor listens for."""

    def test_nodes_are_tagged_for_systemd_and_xpud(self):
        with open(RULES, encoding="utf-8") as f:
            rules = [line for line in f.read().splitlines() if line and not line.startswith("#")]
        tagging = [r for r in rules if 'TAG+="systemd"' in r]
        self.assertEqual(len(tagging), 1, rules)
        self.assertIn('KERNEL=="xpu[0-9]*|xpuctrl"', tagging[0])
        self.assertIn('TAG+="xpud"', tagging[0])  # kUdevTag in xpud/events/uevent_monitor.h
        # A driver loaded after xpud started: its major joins the device policy by a restart.
        self.assertIn('ACTION=="add", KERNEL=="xpuctrl", RUN+="/bin/systemctl --no-block try-restart xpud.service"',
                      rules)


class ShippedConfig(unittest.TestCase):
    # The defaults the architecture promises for the keys it names.
    CONTRACT = {
        ("daemon", "backend"): "auto",
        ("daemon", "log_level"): "info",
        ("sampling", "interval_ms"): "1000",
        ("xpuml", "library"): "/usr/local/xpu/lib64/libxpuml.so.1 libxpuml.so.1 libxpuml.so",
        ("sysfs", "root"): "/",
        ("sim", "devices"): "8",
        ("sim", "model"): "R200",
        ("sim", "memory_mib"): "32768",
    }

    @classmethod
    def setUpClass(cls):
        with open(CONFIG, encoding="utf-8") as f:
            cls.lines = f.read().splitlines()

    def check_config(self, path):
        return subprocess.run([XPUD, "--check-config", "--config", path], capture_output=True, text=True,
                              timeout=30)

    def test_as_shipped_it_sets_nothing(self):
        for line in self.lines:
            self.assertTrue(not line.strip() or line.startswith("#") or re.fullmatch(r"\[\w+\]", line), line)
        result = self.check_config(CONFIG)
        self.assertEqual(result.returncode, 0, result.stderr)

    def test_every_documented_setting_is_a_valid_default(self):
        documented = {}
        section = None
        uncommented = []
        for line in self.lines:
            if re.fullmatch(r"\[\w+\]", line):
                section = line[1:-1]
            match = re.fullmatch(r"#(\w+) = (.*)", line)
            if match:
                documented[(section, match.group(1))] = match.group(2)
                line = line[1:]
            uncommented.append(line)
        for key, value in self.CONTRACT.items():
            self.assertEqual(documented.get(key), value, key)
        with tempfile.TemporaryDirectory() as directory:
            path = os.path.join(directory, "xpud.conf")
            with open(path, "w", encoding="utf-8") as f:
                f.write("\n".join(uncommented) + "\n")
            result = self.check_config(path)
            self.assertEqual(result.returncode, 0, result.stderr)
            self.assertIn("backend auto, interval 1000 ms", result.stdout)


@unittest.skipUnless(BINARY_DIR, "XPU_BINARY_DIR is not set (run through ctest)")
class CmakeInstall(unittest.TestCase):
    """What `cmake --install` puts on a host: `man xpud` works after it."""

    def install(self, root):
        result = subprocess.run(["cmake", "--install", BINARY_DIR, "--prefix", "/usr"], capture_output=True,
                                text=True, timeout=120, env=dict(os.environ, DESTDIR=root))
        self.assertEqual(result.returncode, 0, result.stdout + result.stderr)

    def test_man_pages_are_installed(self):
        pages = {"xpud": "man8/xpud.8", "xpuctl": "man1/xpuctl.1", "xpud-api-proxy": "man8/xpud-api-proxy.8"}
        if os.environ.get("XPU_SHIM"):
            pages["xpu-k8s-shim"] = "man1/xpu-k8s-shim.1"
        with tempfile.TemporaryDirectory() as root:
            self.install(root)
            man_dir = os.path.join(root, "usr", "share", "man")
            for name, page in pages.items():
                with open(os.path.join(MAN_DIR, os.path.basename(page)), encoding="utf-8") as shipped, \
                        open(os.path.join(man_dir, page), encoding="utf-8") as installed:
                    self.assertEqual(installed.read(), shipped.read(), page)
                if shutil.which("man"):
                    found = subprocess.run(["man", "-w", name], capture_output=True, text=True, timeout=30,
                                           env=dict(os.environ, MANPATH=man_dir))
                    self.assertEqual(found.stdout.strip(), os.path.join(man_dir, page), found.stderr)

    @unittest.skipUnless(os.environ.get("XPU_SHIM"), "xpu-k8s-shim is not built (XPU_BUILD_SHIM=OFF)")
    def test_installed_shim_runs_the_installed_role_programs(self):
        # Each role is its own program in libexec, which the installed xpu-k8s-shim finds from
        # where it is: a role's --help comes from that program.
        with tempfile.TemporaryDirectory() as root:
            self.install(root)
            for role in package_contents.SHIM_ROLES:
                self.assertTrue(os.access(os.path.join(root, "usr/libexec/xpu-k8s-shim", role), os.X_OK), role)
                result = subprocess.run([os.path.join(root, "usr/bin/xpu-k8s-shim"), role, "--help"],
                                        capture_output=True, text=True, timeout=30)
                self.assertEqual(result.returncode, 0, f"{role}: {result.stderr}")
                self.assertIn(f"Usage: xpu-k8s-shim {role} [OPTIONS]", result.stdout, role)


class ReleaseVersions(unittest.TestCase):
    """One version everywhere a release states it."""

    def read(self, *parts):
        with open(os.path.join(SOURCE_DIR, *parts), encoding="utf-8") as f:
            return f.read()

    def test_packaging_states_the_cmake_project_version(self):
        project = re.search(r"project\(\s*xpud\s+VERSION\s+([0-9.]+)", self.read("CMakeLists.txt")).group(1)
        debian = re.match(r"xpud \(([^)]+)\)", self.read("debian", "changelog")).group(1)
        spec = self.read("rpm", "xpud.spec")
        rpm_version = re.search(r"(?m)^Version:\s*(\S+)$", spec).group(1)
        rpm_changelog = re.search(r"(?m)^\* .* - (\S+)-\d+$", spec).group(1)
        chart = re.search(r'(?m)^appVersion:\s*"?([^"\s]+)"?$', self.read("charts", "xpu-k8s-shim", "Chart.yaml")).group(1)
        self.assertEqual({"debian/changelog": debian, "rpm Version": rpm_version,
                          "rpm %changelog": rpm_changelog, "chart appVersion": chart},
                         dict.fromkeys(("debian/changelog", "rpm Version", "rpm %changelog",
                                        "chart appVersion"), project))


class ProxyUnits(unittest.TestCase):
    """xpud-api-proxy: the sockets the chart mounts and the unprivileged service behind them."""

    @classmethod
    def setUpClass(cls):
        cls.service = parse_unit(PROXY_SERVICE)
        cls.socket = parse_unit(PROXY_SOCKET)
        cls.sriov_socket = parse_unit(PROXY_SRIOV_SOCKET)

    def test_systemd_analyze_verify(self):
        with tempfile.TemporaryDirectory() as directory:
            with open(PROXY_SERVICE, encoding="utf-8") as f:
                text = f.read()
            text, count = re.subn(r"(?m)^ExecStart=/usr/libexec/xpud/xpud-api-proxy$",
                                  f"ExecStart={os.path.abspath(API_PROXY)}", text)
            self.assertEqual(count, 1, "ExecStart=/usr/libexec/xpud/xpud-api-proxy not found")
            with open(os.path.join(directory, "xpud-api-proxy.service"), "w", encoding="utf-8") as f:
                f.write(text)
            shutil.copy(PROXY_SOCKET, directory)
            shutil.copy(PROXY_SRIOV_SOCKET, directory)
            section_dir = os.path.join(directory, "man", "man8")
            os.makedirs(section_dir)
            shutil.copy(os.path.join(MAN_DIR, "xpud-api-proxy.8"), section_dir)
            result = subprocess.run(
                ["systemd-analyze", "verify", os.path.join(directory, "xpud-api-proxy.socket"),
                 os.path.join(directory, "xpud-api-proxy-sriov.socket"),
                 os.path.join(directory, "xpud-api-proxy.service")],
                capture_output=True, text=True, timeout=60,
                env=dict(os.environ, MANPATH=os.path.join(directory, "man")))
            self.assertEqual(result.returncode, 0, result.stdout + result.stderr)
            # verify cannot resolve the package's own user on this machine; nothing else may warn.
            warnings = [line for line in result.stderr.splitlines() if "xpud-api" not in line or "User" not in line]
            self.assertEqual([w for w in warnings if w.strip()], [], result.stderr)

    def test_runs_unprivileged_and_locked_down(self):
        service = dict(self.service["Service"])
        self.assertEqual(service["User"], "xpud-api")
        self.assertEqual(service["Type"], "notify")
        self.assertEqual(service["CapabilityBoundingSet"], "")
        self.assertEqual(service["NoNewPrivileges"], "yes")
        # No PrivateUsers=: in its user namespace every uid but root and xpud-api reads as 65534,
        # and the per-uid budgets would be one budget for all local users (xpud-api-proxy/README.md,
        # "The unit's uids"); systemd-analyze counts 0.2 for it, under the ceiling below.
        self.assertNotIn("PrivateUsers", service)
        result = subprocess.run(["systemd-analyze", "security", "--offline=yes", "--no-pager", PROXY_SERVICE],
                                capture_output=True, text=True, timeout=60)
        self.assertEqual(result.returncode, 0, result.stderr)
        match = re.search(r"Overall exposure level for xpud-api-proxy\.service: (\d+\.\d+) (\w+)", result.stdout)
        self.assertIsNotNone(match, result.stdout)
        print(f"xpud-api-proxy.service exposure {match.group(1)} {match.group(2)}")
        self.assertLessEqual(float(match.group(1)), 1.0, result.stdout)

    def test_socket_is_where_the_chart_looks(self):
        socket = dict(self.socket["Socket"])
        self.assertEqual(socket["ListenStream"], "/run/xpud-api/bus.sock")
        self.assertEqual(socket["SocketMode"], "0666")
        # Any name but "sriov" is served read-only by the proxy.
        self.assertEqual(socket["FileDescriptorName"], "api")
        self.assertIn(("WantedBy", "sockets.target"), self.socket["Install"])
        # Socket-activated only: enabling the service itself would start it without its socket.
        self.assertNotIn("Install", self.service)

    def test_sriov_socket_is_roots_alone(self):
        """ConfigureVirtualFunctions is served only here: a socket only root can connect to
        (the chart mounts its directory into the uid-0 device plugin alone, with reconfigVxpu),
        named "sriov" for the proxy, handed to the same service."""
        socket = dict(self.sriov_socket["Socket"])
        self.assertEqual(socket["ListenStream"], "/run/xpud-api-sriov/bus.sock")
        self.assertEqual(socket["SocketMode"], "0600")
        self.assertEqual(socket["DirectoryMode"], "0700")
        # Owned by root: systemd's default, which no SocketUser=/SocketGroup= may change.
        self.assertNotIn("SocketUser", socket)
        self.assertNotIn("SocketGroup", socket)
        self.assertEqual(socket["FileDescriptorName"], "sriov")
        self.assertEqual(socket["Service"], "xpud-api-proxy.service")
        self.assertIn(("WantedBy", "sockets.target"), self.sriov_socket["Install"])

    def test_service_gets_both_sockets_and_room_for_its_clients(self):
        unit = self.service["Unit"]
        service = self.service["Service"]
        self.assertEqual([v for k, v in service if k == "Sockets"],
                         ["xpud-api-proxy.socket xpud-api-proxy-sriov.socket"])
        # The read-only socket is required; the SR-IOV socket wanted (and masked to do without).
        requires = " ".join(v for k, v in unit if k == "Requires").split()
        wants = " ".join(v for k, v in unit if k == "Wants").split()
        after = " ".join(v for k, v in unit if k == "After").split()
        self.assertIn("xpud-api-proxy.socket", requires)
        self.assertNotIn("xpud-api-proxy-sriov.socket", requires)
        self.assertIn("xpud-api-proxy-sriov.socket", wants)
        self.assertTrue({"xpud-api-proxy.socket", "xpud-api-proxy-sriov.socket"} <= set(after), after)
        # Three descriptors per client (its socket and a socketpair), up to 128 clients.
        self.assertEqual(dict(service)["LimitNOFILE"], "1024")

    def test_sysusers_entry_creates_the_user(self):
        with tempfile.TemporaryDirectory() as root:
            os.makedirs(os.path.join(root, "etc"))
            for name in ("passwd", "group", "shadow", "gshadow"):
                open(os.path.join(root, "etc", name), "w").close()
            result = subprocess.run(["systemd-sysusers", f"--root={root}", PROXY_SYSUSERS],
                                    capture_output=True, text=True, timeout=60)
            self.assertEqual(result.returncode, 0, result.stderr)
            with open(os.path.join(root, "etc", "passwd"), encoding="utf-8") as f:
                entries = [line.split(":") for line in f.read().splitlines()]
            user = [e for e in entries if e[0] == "xpud-api"]
            self.assertEqual(len(user), 1, entries)
            self.assertLess(int(user[0][2]), 1000, "a system user")
            self.assertEqual(user[0][6], "/usr/sbin/nologin")



VFIO_DROP_IN = os.path.join(SOURCE_DIR, "docs", "examples", "xpud.service.d", "60-vfio.conf")


class VfioDropIn(unittest.TestCase):
    """docs/examples/xpud.service.d/60-vfio.conf, the drop-in an operator installs so that xpud
    may move functions to vfio-pci and back (README, "Cards for virtual machines"): valid for
    systemd beside the unit, and opening what the moves write (xpud/backends/vfio/vfio_binding.cpp)
    and nothing broader. Whether the kernel then takes the writes needs a host with an IOMMU and a
    Kunlunxin card: not here."""

    def settings(self):
        settings = []
        with open(VFIO_DROP_IN, encoding="utf-8") as f:
            for line in f:
                line = line.strip()
                if line and not line.startswith("#") and "=" in line:
                    key, value = line.split("=", 1)
                    settings.append((key, value))
        return settings

    def test_valid_for_systemd_beside_the_unit(self):
        with tempfile.TemporaryDirectory() as directory:
            with open(UNIT, encoding="utf-8") as f:
                text = f.read().replace("ExecStart=/usr/sbin/xpud", f"ExecStart={os.path.abspath(XPUD)}")
            with open(os.path.join(directory, "xpud.service"), "w", encoding="utf-8") as f:
                f.write(text)
            os.makedirs(os.path.join(directory, "xpud.service.d"))
            shutil.copy(VFIO_DROP_IN, os.path.join(directory, "xpud.service.d"))
            result = subprocess.run(["systemd-analyze", "verify", "--man=no",
                                     os.path.join(directory, "xpud.service")],
                                    capture_output=True, text=True, timeout=60)
            self.assertEqual(result.returncode, 0, result.stdout + result.stderr)
            self.assertEqual(result.stderr.strip(), "", "verify warned (it names a drop-in's unknown keys here)")

    def test_opens_what_a_move_writes_and_no_more(self):
        settings = self.settings()
        self.assertEqual([key for key, _ in settings if key != "ReadWritePaths"], ["DeviceAllow"])
        paths = [value for key, value in settings if key == "ReadWritePaths"]
        # The probe trigger; both drivers' directories (their unbind files), optional; and a
        # function's own directory (driver_override) by its real path under /sys/devices.
        self.assertEqual(paths[:3], ["/sys/bus/pci/drivers_probe", "-/sys/bus/pci/drivers/kunlun",
                                     "-/sys/bus/pci/drivers/vfio-pci"])
        self.assertEqual(len(paths), 4)
        self.assertRegex(paths[3], r"^-/sys/devices/pci[0-9a-f]{4}:[0-9a-f]{2}(/[0-9a-f:.]+)*"
                                   r"/[0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]$")
        # Not the whole of /sys/devices, /sys/bus or /sys: the unit's sandbox stays.
        for path in paths:
            self.assertNotIn(path.lstrip("-").rstrip("/"), ("/sys", "/sys/devices", "/sys/bus", "/sys/bus/pci"))
        # The groups' nodes (/dev/vfio/<N>, the kernel's "vfio" major), read and written, no mknod.
        self.assertEqual(dict(settings)["DeviceAllow"], "char-vfio rw")
        # The unit's own sandbox is left as it is: no setting of the unit is overridden.
        with open(UNIT, encoding="utf-8") as f:
            self.assertIn("ProtectKernelTunables=yes", f.read())

if __name__ == "__main__":
    unittest.main(verbosity=2)
