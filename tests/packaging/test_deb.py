"""debian/: builds the binary packages with dpkg-buildpackage from a copy of the tree, runs
lintian on the result and checks what the packages install.

Slow (a full release build): ctest LABEL packaging. Environment: XPU_SOURCE_DIR, XPU_BINARY_DIR.
"""

import filecmp
import glob
import os
import re
import shutil
import subprocess
import tempfile
import unittest

import compiler_cache
import lintian
import package_contents
from logged_build import run_logged
from source_tree import copy_tree, project_version

SOURCE_DIR = os.path.abspath(os.environ.get("XPU_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", "..")))
BINARY_DIR = os.environ.get("XPU_BINARY_DIR")


def compile_flags_of(binary_dir):
    """dpkg-buildflags' variables that give the package build the compile flags of the build
    under test (its CMakeCache.txt), so that every compile is one ccache already holds from that
    build: the test looks at what the packages hold and how they install, and a cold CI run would
    otherwise compile the tree once more (about 8 minutes of its 2 cores). Debian's own flags are
    built with in packaging.deb_arm64. Without a build directory: Debian's flags, debug
    information at -g1 (line tables, still a -dbgsym package)."""
    cache = os.path.join(binary_dir or "", "CMakeCache.txt")
    if not binary_dir or not os.path.exists(cache):
        return {"DEB_CFLAGS_APPEND": "-g1", "DEB_CXXFLAGS_APPEND": "-g1"}
    entries = {}
    with open(cache, encoding="utf-8") as f:
        for line in f:
            match = re.match(r"([A-Za-z_]+):[A-Z]+=(.*)$", line.rstrip("\n"))
            if match:
                entries[match.group(1)] = match.group(2)
    build_type = entries.get("CMAKE_BUILD_TYPE", "").upper()

    def flags(language):
        # What CMake puts on a compile line: the language's flags, then the build type's.
        return " ".join(filter(None, (entries.get(f"CMAKE_{language}_FLAGS", ""),
                                      entries.get(f"CMAKE_{language}_FLAGS_{build_type}", "")))).strip()

    # debian/rules' cmake build type is None (debhelper's), which adds nothing; debhelper appends
    # CPPFLAGS to both, so they are emptied here.
    return {"DEB_CFLAGS_SET": flags("C"), "DEB_CXXFLAGS_SET": flags("CXX"), "DEB_CPPFLAGS_SET": ""}


def run(command, **kwargs):
    return subprocess.run(command, capture_output=True, text=True, **kwargs)


class DebianPackages(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.version = project_version(SOURCE_DIR)
        cls.workdir = tempfile.mkdtemp(prefix="xpud-deb-", dir=BINARY_DIR)
        cls.addClassCleanup(shutil.rmtree, cls.workdir, True)
        tree = os.path.join(cls.workdir, f"xpud-{cls.version}")
        copy_tree(SOURCE_DIR, tree)
        cls.cache_env = compiler_cache.statslog_env(cls.workdir)
        run_logged(["dpkg-buildpackage", "-us", "-uc", "-b", "-j2"],
                   os.path.join(cls.workdir, "dpkg-buildpackage.log"), "dpkg-buildpackage", cwd=tree,
                   env=dict(os.environ, **compile_flags_of(BINARY_DIR), **cls.cache_env), timeout=2700)
        cls.changes = glob.glob(os.path.join(cls.workdir, "xpud_*.changes"))
        cls.debs = {os.path.basename(p).split("_")[0]: p for p in glob.glob(os.path.join(cls.workdir, "*.deb"))}
        cls.extracted = {}
        for package, deb in cls.debs.items():
            target = os.path.join(cls.workdir, "root-" + package)
            subprocess.run(["dpkg-deb", "-x", deb, target], check=True)
            cls.extracted[package] = target

    def control_file(self, package, name):
        result = run(["dpkg-deb", "-I", self.debs[package], name])
        self.assertEqual(result.returncode, 0, f"{package} has no {name}: {result.stderr}")
        return result.stdout

    def test_binary_packages(self):
        self.assertEqual(len(self.changes), 1)
        self.assertEqual(set(self.debs), {"xpud", "xpu-k8s-shim"} | {p for p in self.debs if p.endswith("-dbgsym")})
        for package in ("xpud", "xpu-k8s-shim"):
            version = run(["dpkg-deb", "-f", self.debs[package], "Version"]).stdout.strip()
            self.assertEqual(version, self.version, package)

    def test_compiles_are_the_main_builds(self):
        compiler_cache.assert_compiles_shared(self, self.cache_env)

    def test_lintian_finds_no_errors(self):
        lintian.assert_no_errors(self, self.changes[0])

    def test_file_lists(self):
        for package, expected in package_contents.expected_files(package_contents.DEB_UNIT_DIR).items():
            listing = run(["dpkg-deb", "-c", self.debs[package]]).stdout
            files = {package_contents.without_compression(
                         re.split(r"\s+", line, maxsplit=5)[5].split(" -> ")[0].lstrip(".").rstrip("/"))
                     for line in listing.splitlines()}
            missing = expected - files
            self.assertEqual(missing, set(), f"{package} lacks {missing}")

    def test_installed_files_are_the_trees(self):
        root = self.extracted["xpud"]
        for installed, source in package_contents.verbatim_files(package_contents.DEB_UNIT_DIR).items():
            self.assertTrue(filecmp.cmp(root + installed, os.path.join(SOURCE_DIR, source), shallow=False),
                            installed)

    def test_config_is_a_conffile(self):
        conffiles = set(self.control_file("xpud", "conffiles").split())
        self.assertEqual(conffiles, package_contents.CONFFILES)

    def test_unit_is_enabled_and_started_on_install(self):
        postinst = self.control_file("xpud", "postinst")
        self.assertIn("deb-systemd-helper enable 'xpud.service'", postinst)
        self.assertIn("_dh_action=start", postinst)
        # One start line for all the package's units: xpud and the API proxy's sockets among them.
        start = re.search(r"deb-systemd-invoke \$_dh_action (.*) >/dev/null", postinst)
        self.assertIsNotNone(start, postinst)
        self.assertIn("'xpud.service'", start.group(1))
        self.assertIn("'xpud-api-proxy.socket'", start.group(1))
        self.assertIn("'xpud-api-proxy-sriov.socket'", start.group(1))
        prerm = self.control_file("xpud", "prerm")
        self.assertIn("xpud.service", prerm)
        self.assertIn("xpud-api-proxy-sriov.socket", prerm)

    def test_api_proxy_socket_is_enabled_and_its_user_created_first(self):
        postinst = self.control_file("xpud", "postinst")
        self.assertIn("deb-systemd-helper enable 'xpud-api-proxy.socket'", postinst)
        # The SR-IOV socket too: only root can reach it, and its one write is refused until the
        # host sets [sriov] allow_cluster_reconfigure = true.
        self.assertIn("deb-systemd-helper enable 'xpud-api-proxy-sriov.socket'", postinst)
        # The service is socket-activated: never enabled on its own.
        self.assertNotIn("deb-systemd-helper enable 'xpud-api-proxy.service'", postinst)
        user = postinst.index("systemd-sysusers xpud-api.conf")
        self.assertLess(user, postinst.index("deb-systemd-helper"), "the user exists before any unit starts")

    def test_daemon_depends_on_a_system_bus_and_kill(self):
        depends = run(["dpkg-deb", "-f", self.debs["xpud"], "Depends"]).stdout
        self.assertIn("dbus-system-bus", depends)
        self.assertRegex(depends, r"\bprocps\b", "the unit's ExecReload runs kill(1)")
        self.assertRegex(depends, r"libsdbus-c\+\+\d")

    def test_packaged_binaries_run_and_report_the_version(self):
        for package, binary in (("xpud", "usr/sbin/xpud"), ("xpud", "usr/bin/xpuctl"),
                                ("xpu-k8s-shim", "usr/bin/xpu-k8s-shim")):
            result = run([os.path.join(self.extracted[package], binary), "--version"], timeout=30)
            self.assertEqual(result.returncode, 0, f"{binary}: {result.stderr}")
            self.assertIn(self.version, result.stdout, binary)

    def test_packaged_shim_runs_each_role_program(self):
        # xpu-k8s-shim runs each role's own program, found from where the package put it: a role's
        # --help comes from that program.
        shim = os.path.join(self.extracted["xpu-k8s-shim"], "usr/bin/xpu-k8s-shim")
        for role in package_contents.SHIM_ROLES:
            result = run([shim, role, "--help"], timeout=30)
            self.assertEqual(result.returncode, 0, f"{role}: {result.stderr}")
            self.assertIn(f"Usage: xpu-k8s-shim {role} [OPTIONS]", result.stdout, role)


if __name__ == "__main__":
    unittest.main(verbosity=2)
