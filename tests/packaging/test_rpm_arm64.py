"""rpm/xpud.spec for aarch64: `rpmbuild --target aarch64` on this x86_64 machine cross-builds the
binary RPMs (the spec hands CMake cmake/toolchain-arm64.cmake and rpm the cross strip), and the
packages are checked for what an aarch64 RPM distribution (openEuler on Kunpeng, Kylin on
Phytium) reads from them: their architecture, 64-bit aarch64 library requirements, the same files
as the x86_64 ones, binaries for aarch64 with the debug information stripped, and the programs
running under emulation with the arm64 root as their library root.

No aarch64 RPM distribution root is available here to install into (the Debian mirror is the only
one reachable), so `rpm -i` on aarch64 is not exercised; the arm64 .deb is installed into a real
arm64 Debian root by test_deb_arm64.py.

Slow (a cross release build): ctest LABEL arm64 only, so `.ci/run` (labels packaging, ...) does
not run it: CI's cold budget has no room for a second arm64 compile (docs/development.md, "Architectures").
Environment: XPU_SOURCE_DIR, XPU_BINARY_DIR.
"""

import os
import shutil
import subprocess
import tempfile
import unittest

import package_contents
from rpm_build import assert_file_lists_match_the_debian_packages, build_rpms, extract, rpm_query
from source_tree import project_version

SOURCE_DIR = os.path.abspath(os.environ.get("XPU_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", "..")))
BINARY_DIR = os.environ.get("XPU_BINARY_DIR")
PROGRAMS = {"xpud": ["usr/sbin/xpud", "usr/bin/xpuctl", "usr/libexec/xpud/xpud-api-proxy"],
            "xpu-k8s-shim": ["usr/bin/xpu-k8s-shim",
                             *(f"usr/libexec/xpu-k8s-shim/{role}" for role in package_contents.SHIM_ROLES)]}


def run(command, **kwargs):
    return subprocess.run(command, capture_output=True, text=True, **kwargs)


class Aarch64RpmPackages(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.version = project_version(SOURCE_DIR)
        cls.topdir = tempfile.mkdtemp(prefix="xpud-rpm-aarch64-", dir=BINARY_DIR)
        cls.addClassCleanup(shutil.rmtree, cls.topdir, True)
        made = run([os.path.join(SOURCE_DIR, "scripts", "make-arm64-sysroot.sh"), "--cached"], timeout=900)
        if made.returncode != 0:
            raise AssertionError(f"make-arm64-sysroot.sh --cached failed:\n{made.stderr[-4000:]}")
        cls.sysroot = made.stdout.strip().splitlines()[-1]
        cls.rpms = build_rpms(SOURCE_DIR, cls.topdir, cls.version, target="aarch64",
                              env=dict(os.environ, XPU_ARM64_SYSROOT=cls.sysroot))
        cls.trees = {}
        for package, path in cls.rpms.items():
            cls.trees[package] = os.path.join(cls.topdir, "extracted-" + package)
            extract(path, cls.trees[package])

    def test_packages_are_aarch64(self):
        self.assertEqual(set(self.rpms), {"xpud", "xpu-k8s-shim"})
        for name, path in self.rpms.items():
            self.assertEqual(rpm_query(path, "--queryformat", "%{ARCH} %{VERSION}"), f"aarch64 {self.version}", name)
            self.assertTrue(path.endswith(".aarch64.rpm"), path)

    def test_requirements_are_aarch64_libraries(self):
        # rpm's ELF dependency generator reads the aarch64 binaries as it reads native ones:
        # sonames marked (64bit), nothing of x86-64 (its loader, ld-linux-x86-64.so.2).
        expected = {"xpud": ["libsdbus-c++.so.1()(64bit)", "libsystemd.so.0()(64bit)", "libinih.so.1()(64bit)"],
                    "xpu-k8s-shim": ["libprometheus-cpp-core.so.1.0()(64bit)", "libyaml-cpp.so.0.7()(64bit)"]}
        for package, libraries in expected.items():
            requires = rpm_query(self.rpms[package], "--requires").splitlines()
            for library in libraries:
                self.assertIn(library, requires, package)
            # gRPC and protobuf are linked in statically (cmake/StaticGrpc.cmake).
            self.assertFalse([r for r in requires if r.startswith(("libgrpc", "libprotobuf"))], package)
            self.assertFalse([r for r in requires if "x86-64" in r], package)

    def test_file_lists_match_the_debian_packages(self):
        assert_file_lists_match_the_debian_packages(self, self.rpms)

    def test_binaries_are_aarch64_without_debug_information(self):
        for package, programs in PROGRAMS.items():
            for program in programs:
                path = os.path.join(self.trees[package], program)
                described = run(["file", "-b", path]).stdout
                self.assertIn("ARM aarch64", described, program)
                # rpm's brp-strip ran with the cross strip (the build machine's cannot read
                # aarch64 objects, and would have left them as they were).
                sections = run(["aarch64-linux-gnu-readelf", "-S", "-W", path]).stdout
                self.assertIn(".text", sections, program)
                self.assertNotIn(".debug_info", sections, program)

    def test_programs_run_under_emulation(self):
        for package, programs in PROGRAMS.items():
            for program in programs:
                result = run(["qemu-aarch64-static", "-L", self.sysroot,
                              os.path.join(self.trees[package], program), "--version"], timeout=120)
                self.assertEqual(result.returncode, 0, program + ": " + result.stderr)
                self.assertIn(self.version, result.stdout, program)
        tree = self.trees["xpud"]
        checked = run(["qemu-aarch64-static", "-L", self.sysroot, os.path.join(tree, "usr/sbin/xpud"),
                       "--check-config", "--config", os.path.join(tree, "etc/xpud/xpud.conf")], timeout=120)
        self.assertEqual(checked.returncode, 0, checked.stdout + checked.stderr)
        self.assertIn("configuration OK", checked.stdout + checked.stderr)


if __name__ == "__main__":
    unittest.main(verbosity=2)
