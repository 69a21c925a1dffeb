"""debian/ for arm64: cross-builds the binary packages with `dpkg-buildpackage -a arm64` on this
amd64 machine, runs lintian on them, installs them with dpkg into an arm64 Debian 12 root, where
their maintainer scripts run under emulation, runs `xpud --check-config` there, and then the
installed programs under emulation (tests/arm64/smoke.sh --installed). The packages are kept in
the build directory's arm64-packages/ for packaging.image.

The compile uses the unpacked arm64 root of scripts/make-arm64-sysroot.sh (cmake/toolchain-arm64.cmake
says why a root); dh_shlibdeps reads the arm64 runtime libraries from :arm64 packages on this
machine (scripts/install-deps.sh ci). The install root is made by mmdebstrap (variant apt, with
what the packages depend on, so dpkg needs no network) once per package list and kept as a
tarball in ~/.cache/xpu-arm64-root/. Both emulated steps run inside scripts/arm64-namespace.py,
which registers qemu-aarch64-static in a binfmt_misc of its own user namespace: nothing changes
on the machine.

Slow (a cross release build): ctest LABELS packaging, arm64. Environment: XPU_SOURCE_DIR,
XPU_BINARY_DIR.
"""

import glob
import hashlib
import os
import shutil
import subprocess
import tempfile
import unittest

import lintian
from logged_build import run_logged
from source_tree import copy_tree, project_version

SOURCE_DIR = os.path.abspath(os.environ.get("XPU_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", "..")))
BINARY_DIR = os.environ.get("XPU_BINARY_DIR")
CACHE_DIR = os.path.join(os.environ.get("XDG_CACHE_HOME", os.path.expanduser("~/.cache")), "xpu-arm64-root")
NAMESPACE = os.path.join(SOURCE_DIR, "scripts", "arm64-namespace.py")
# What the two packages depend on (their Depends as dh_shlibdeps computes them, and the fixed
# ones in debian/control), so that dpkg installs them into the root without a network.
# gRPC and protobuf are not among them: the shim links them statically.
ROOT_PACKAGES = ("systemd,dbus,procps,libsdbus-c++1,libinih1,libspdlog1.10-fmt9,libfmt9,"
                 "libprometheus-cpp-core1.0,libyaml-cpp0.7,libmicrohttpd12,libcurl4,libgnutls30")


def run(command, **kwargs):
    return subprocess.run(command, capture_output=True, text=True, **kwargs)


def checked(command, what, **kwargs):
    result = run(command, **kwargs)
    if result.returncode != 0:
        raise AssertionError(f"{what} failed ({result.returncode}):\n{(result.stdout + result.stderr)[-6000:]}")
    return result.stdout


def install_root_tarball():
    """The arm64 Debian root to install into, as a tarball made once per package list."""
    key = hashlib.sha256(ROOT_PACKAGES.encode()).hexdigest()[:16]
    tarball = os.path.join(CACHE_DIR, f"debian-arm64-{key}.tar")
    if not os.path.exists(tarball):
        os.makedirs(CACHE_DIR, exist_ok=True)
        partial = os.path.join(CACHE_DIR, f"debian-arm64-{key}.partial.tar")  # mmdebstrap: .tar, a tarball
        checked([NAMESPACE, "mmdebstrap", "--quiet", "--architectures=arm64", "--variant=apt",
                 f"--include={ROOT_PACKAGES}", "bookworm", partial], "mmdebstrap of the arm64 root",
                timeout=1800)
        os.rename(partial, tarball)
    return tarball


class Arm64DebianPackages(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.version = project_version(SOURCE_DIR)
        cls.workdir = tempfile.mkdtemp(prefix="xpud-deb-arm64-", dir=BINARY_DIR)
        cls.addClassCleanup(shutil.rmtree, cls.workdir, True)
        sysroot = checked([os.path.join(SOURCE_DIR, "scripts", "make-arm64-sysroot.sh"), "--cached"],
                          "make-arm64-sysroot.sh --cached", timeout=900).strip().splitlines()[-1]
        tree = os.path.join(cls.workdir, f"xpud-{cls.version}")
        copy_tree(SOURCE_DIR, tree)
        # -d: the arm64 -dev packages are in the sysroot, not installed here, so
        # dpkg-checkbuilddeps would refuse. -g1 as in test_deb.py.
        run_logged(["dpkg-buildpackage", "-a", "arm64", "-d", "-us", "-uc", "-b", "-j2"],
                   os.path.join(cls.workdir, "dpkg-buildpackage.log"), "dpkg-buildpackage -a arm64",
                   cwd=tree, timeout=2700, env=dict(os.environ, XPU_ARM64_SYSROOT=sysroot,
                                                    DEB_CFLAGS_APPEND="-g1", DEB_CXXFLAGS_APPEND="-g1"))
        cls.changes = glob.glob(os.path.join(cls.workdir, "xpud_*_arm64.changes"))
        cls.debs = {os.path.basename(p).split("_")[0]: p for p in glob.glob(os.path.join(cls.workdir, "*.deb"))}
        # Kept for packaging.image (the ctest fixture arm64_packages), whose arm64 manifest runs
        # the shim of this package: the arm64 compile is done once.
        kept = os.path.join(BINARY_DIR or cls.workdir, "arm64-packages")
        shutil.rmtree(kept, ignore_errors=True)
        os.makedirs(kept)
        for path in cls.debs.values():
            shutil.copy(path, kept)

        cls.root = os.path.join(cls.workdir, "root")
        os.makedirs(cls.root)
        checked(["tar", "-xf", install_root_tarball(), "-C", cls.root, "--numeric-owner"], "unpacking the arm64 root")
        for package in ("xpud", "xpu-k8s-shim"):
            shutil.copy(cls.debs[package], os.path.join(cls.root, "tmp"))
        cls.install = run([NAMESPACE, "chroot", cls.root, "sh", "-c",
                           "dpkg -i /tmp/xpud_*.deb /tmp/xpu-k8s-shim_*.deb"], timeout=600)

    def in_root(self, script):
        return run([NAMESPACE, "chroot", self.root, "sh", "-c", script], timeout=300)

    def test_packages_are_arm64_and_depend_on_the_arm64_libraries(self):
        self.assertEqual(len(self.changes), 1)
        expected_depends = {"xpud": ("libsdbus-c++1", "libinih1", "libsystemd0"),
                            "xpu-k8s-shim": ("libprometheus-cpp-core1.0", "libyaml-cpp0.7", "libcurl4")}
        # gRPC and protobuf are linked in statically (cmake/StaticGrpc.cmake).
        linked_in = ("libgrpc", "libprotobuf", "libabsl")
        for package, libraries in expected_depends.items():
            fields = checked(["dpkg-deb", "-f", self.debs[package], "Architecture", "Version", "Depends"], package)
            self.assertIn("Architecture: arm64", fields, package)
            self.assertIn(f"Version: {self.version}", fields, package)
            for library in libraries:
                self.assertIn(library, fields, f"{package}'s Depends lack {library}")
            for library in linked_in:
                self.assertNotIn(library, fields, f"{package} depends on {library}, which it links statically")

    def test_lintian_finds_no_errors(self):
        lintian.assert_no_errors(self, self.changes[0])

    def test_dpkg_installs_them_into_an_arm64_root(self):
        self.assertEqual(self.install.returncode, 0, self.install.stdout + self.install.stderr)
        status = self.in_root("uname -m; dpkg-query -W -f '${Package} ${Architecture} ${Status}\\n' xpud xpu-k8s-shim; "
                              "getent passwd xpud-api")
        self.assertEqual(status.returncode, 0, status.stdout + status.stderr)
        lines = status.stdout.splitlines()
        self.assertEqual(lines[0], "aarch64", "the root's programs do not run as arm64")
        self.assertIn("xpud arm64 install ok installed", lines)
        self.assertIn("xpu-k8s-shim arm64 install ok installed", lines)
        self.assertTrue(any(line.startswith("xpud-api:") for line in lines), "postinst made no xpud-api user")

    def test_xpud_check_config_runs_in_the_root(self):
        self.assertEqual(self.install.returncode, 0, self.install.stdout + self.install.stderr)
        result = self.in_root("xpud --check-config")
        self.assertEqual(result.returncode, 0, result.stdout + result.stderr)
        self.assertIn("/etc/xpud/xpud.conf: configuration OK", result.stdout + result.stderr)

    def test_the_installed_programs_pass_the_smoke_test(self):
        self.assertEqual(self.install.returncode, 0, self.install.stdout + self.install.stderr)
        result = run(["sh", os.path.join(SOURCE_DIR, "tests", "arm64", "smoke.sh"), "--installed", self.root],
                     timeout=300)
        print(result.stdout)
        self.assertEqual(result.returncode, 0, result.stdout + result.stderr)
        self.assertIn("smoke.sh: PASS", result.stdout)


if __name__ == "__main__":
    unittest.main(verbosity=2)
