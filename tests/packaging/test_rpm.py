"""rpm/xpud.spec: builds the binary RPMs with rpmbuild (--nodeps: the build requirements are
Fedora/RHEL package names, satisfied here by their Debian equivalents) from a tarball of the
tree, and checks that they install the same files as the Debian packages.

Slow (a full release build): ctest LABEL packaging. Environment: XPU_SOURCE_DIR, XPU_BINARY_DIR.
"""

import filecmp
import glob
import os
import re
import shutil
import subprocess
import tarfile
import tempfile
import unittest

import package_contents
from source_tree import project_version, write_tarball

SOURCE_DIR = os.path.abspath(os.environ.get("XPU_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", "..")))
BINARY_DIR = os.environ.get("XPU_BINARY_DIR")
SPEC = os.path.join(SOURCE_DIR, "rpm", "xpud.spec")


def rpm_query(package_file, *args):
    result = subprocess.run(["rpm", "-qp", *args, package_file], capture_output=True, text=True)
    if result.returncode != 0:
        raise AssertionError(f"rpm -qp {' '.join(args)} {package_file}: {result.stderr}")
    return result.stdout


class RpmPackages(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.version = project_version(SOURCE_DIR)
        cls.topdir = tempfile.mkdtemp(prefix="xpud-rpm-", dir=BINARY_DIR)
        cls.addClassCleanup(shutil.rmtree, cls.topdir, True)
        sources = os.path.join(cls.topdir, "SOURCES")
        os.makedirs(sources)
        write_tarball(SOURCE_DIR, os.path.join(sources, f"xpud-{cls.version}.tar.gz"), f"xpud-{cls.version}")
        log_path = os.path.join(cls.topdir, "rpmbuild.log")
        with open(log_path, "w") as log:
            build = subprocess.run(["rpmbuild", "-bb", "--nodeps", "--define", f"_topdir {cls.topdir}",
                                    "--define", "_smp_build_ncpus 2",
                                    # rpm's x86_64 flags (-O2 -g) with the debug information at
                                    # -g1: this test looks at what the packages hold, and -g is a
                                    # third of the build.
                                    "--define", "optflags -O2 -g1", SPEC],
                                   stdout=log, stderr=subprocess.STDOUT, timeout=2700)
        if build.returncode != 0:
            with open(log_path, encoding="utf-8", errors="replace") as log:
                tail = log.read()[-6000:]
            raise AssertionError(f"rpmbuild failed ({build.returncode}):\n{tail}")
        cls.rpms = {}
        for path in glob.glob(os.path.join(cls.topdir, "RPMS", "*", "*.rpm")):
            cls.rpms[rpm_query(path, "--queryformat", "%{NAME}").strip()] = path

    def test_packages_and_version(self):
        self.assertEqual(set(self.rpms), {"xpud", "xpu-k8s-shim"})
        for name, path in self.rpms.items():
            self.assertEqual(rpm_query(path, "--queryformat", "%{VERSION}"), self.version, name)

    def test_file_lists_match_the_debian_packages(self):
        for package, expected in package_contents.expected_files(package_contents.RPM_UNIT_DIR).items():
            # `rpm -qlv` is ls -l shaped: directories the package owns (%dir) start with 'd'.
            files, dirs = set(), set()
            for line in rpm_query(self.rpms[package], "-lv").splitlines():
                path = line.split(" -> ")[0].split()[-1]
                (dirs if line.startswith("d") else files).add(path)
            files |= dirs
            if package == "xpud":
                # The directories rpm creates for the proxy and the topology table (%dir) are removed
                # with the package; dpkg removes an emptied directory by itself, so the deb does not
                # list them.
                for owned in ("/usr/libexec/xpud", "/usr/share/xpud"):
                    self.assertIn(owned, dirs)
                    files.discard(owned)
            # %{_licensedir}/<name> (Fedora, RHEL) or <name>-<version> (older rpm configurations)
            licences = [f for f in files if f.startswith("/usr/share/licenses/") and f.endswith("/LICENSE")]
            self.assertEqual(len(licences), 1, f"{package}: {licences}")
            files = {package_contents.without_compression(f) for f in files
                     if not f.startswith(package_contents.DISTRIBUTION_SPECIFIC)}
            self.assertEqual(files, expected, package)

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
        copy = os.path.join(self.topdir, "xpud.rpm")
        shutil.copy(self.rpms["xpud"], copy)
        subprocess.run(["rpm2archive", "-n", copy], check=True)  # writes xpud.rpm.tar
        with tarfile.open(copy + ".tar") as tar:
            # Extraction filters arrived in Python 3.11.4; Debian 12 has 3.11.2.
            if hasattr(tarfile, "tar_filter"):
                tar.extractall(root, filter="tar")
            else:
                tar.extractall(root)
        for installed, source in package_contents.verbatim_files(package_contents.RPM_UNIT_DIR).items():
            self.assertTrue(filecmp.cmp(root + installed, os.path.join(SOURCE_DIR, source), shallow=False),
                            installed)
        result = subprocess.run([os.path.join(root, "usr/sbin/xpud"), "--version"], capture_output=True,
                                text=True, timeout=30)
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertIn(self.version, result.stdout)


if __name__ == "__main__":
    unittest.main(verbosity=2)
