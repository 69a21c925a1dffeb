"""rpm/xpud.spec: builds the binary RPMs with rpmbuild (--nodeps: the build requirements are
Fedora/RHEL package names, satisfied here by their Debian equivalents) from a tarball of the
tree, and checks that they install the same files as the Debian packages.

Slow (a full release build): ctest LABEL packaging. Environment: XPU_SOURCE_DIR, XPU_BINARY_DIR.
"""

import filecmp
import os
import re
import shutil
import subprocess
import tempfile
import unittest

import compiler_cache
import package_contents
from rpm_build import assert_file_lists_match_the_debian_packages, build_rpms, extract, rpm_query
from source_tree import project_version

SOURCE_DIR = os.path.abspath(os.environ.get("XPU_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", "..")))
BINARY_DIR = os.environ.get("XPU_BINARY_DIR")


class RpmPackages(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.version = project_version(SOURCE_DIR)
        cls.topdir = tempfile.mkdtemp(prefix="xpud-rpm-", dir=BINARY_DIR)
        cls.addClassCleanup(shutil.rmtree, cls.topdir, True)
        cls.cache_env = compiler_cache.statslog_env(cls.topdir)
        cls.rpms = build_rpms(SOURCE_DIR, cls.topdir, cls.version, env=dict(os.environ, **cls.cache_env))

    def test_packages_and_version(self):
        self.assertEqual(set(self.rpms), {"xpud", "xpu-k8s-shim"})
        for name, path in self.rpms.items():
            self.assertEqual(rpm_query(path, "--queryformat", "%{VERSION}"), self.version, name)

    def test_compiles_are_the_main_builds(self):
        compiler_cache.assert_compiles_shared(self, self.cache_env)

    def test_file_lists_match_the_debian_packages(self):
        assert_file_lists_match_the_debian_packages(self, self.rpms)

    def test_config_is_noreplace(self):
        self.assertEqual(set(rpm_query(self.rpms["xpud"], "--configfiles").split()), package_contents.CONFFILES)
        flags = rpm_query(self.rpms["xpud"], "--queryformat", "[%{FILENAMES} %{FILEFLAGS:fflags}\n]")
        self.assertIn("/etc/xpud/xpud.conf cn", flags)

    def test_daemon_requires_the_bus_and_kill(self):
        requires = rpm_query(self.rpms["xpud"], "--requires").split("\n")
        self.assertIn("dbus", requires)
        self.assertIn("/usr/bin/kill", requires, "the unit's ExecReload runs kill(1)")

    def test_unit_is_preset_on_install_and_stopped_on_removal(self):
        scripts = rpm_query(self.rpms["xpud"], "--scripts")
        self.assertRegex(scripts, r"systemctl --no-reload preset xpud.service")
        self.assertRegex(scripts, r"systemctl --no-reload disable --now xpud.service")
        self.assertRegex(scripts, r"systemctl try-restart xpud.service")
        # The API proxy's two sockets as well (the service itself is socket-activated).
        for socket in ("xpud-api-proxy.socket", "xpud-api-proxy-sriov.socket"):
            self.assertRegex(scripts, r"systemctl --no-reload preset [^\n]*\b" + re.escape(socket))
            self.assertRegex(scripts, r"systemctl --no-reload disable --now [^\n]*\b" + re.escape(socket))

    def test_installed_files_are_the_trees(self):
        root = os.path.join(self.topdir, "extracted")
        extract(self.rpms["xpud"], root)
        for installed, source in package_contents.verbatim_files(package_contents.RPM_UNIT_DIR).items():
            self.assertTrue(filecmp.cmp(root + installed, os.path.join(SOURCE_DIR, source), shallow=False),
                            installed)
        result = subprocess.run([os.path.join(root, "usr/sbin/xpud"), "--version"], capture_output=True,
                                text=True, timeout=30)
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertIn(self.version, result.stdout)


if __name__ == "__main__":
    unittest.main(verbosity=2)
