"""rpm/xpud.spec built the way the rpm tests build it, and what they read back from the
packages: shared by test_rpm.py (x86_64) and test_rpm_arm64.py (aarch64, cross-built)."""

import glob
import os
import shutil
import subprocess
import tarfile

import package_contents
from logged_build import run_logged
from source_tree import write_tarball


def rpm_query(package_file, *args):
    result = subprocess.run(["rpm", "-qp", *args, package_file], capture_output=True, text=True)
    if result.returncode != 0:
        raise AssertionError(f"rpm -qp {' '.join(args)} {package_file}: {result.stderr}")
    return result.stdout


def build_rpms(source_dir, topdir, version, target=None, env=None):
    """rpmbuild -bb of the spec on a release tarball of the tree; returns {package name: path}.

    --nodeps: the build requirements are Fedora/RHEL package names, satisfied here by their
    Debian equivalents (or, for a cross build, by the arm64 root the toolchain file names)."""
    sources = os.path.join(topdir, "SOURCES")
    os.makedirs(sources)
    write_tarball(source_dir, os.path.join(sources, f"xpud-{version}.tar.gz"), f"xpud-{version}")
    command = ["rpmbuild", "-bb", "--nodeps", "--define", f"_topdir {topdir}",
               "--define", "_smp_build_ncpus 2",
               # rpm's flags (-O2 -g) with the debug information at -g1: these tests look at what
               # the packages hold, and -g is a third of the build. With the spec's -DNDEBUG this
               # is the tree's default RelWithDebInfo, so under scripts/test.sh's compiler cache
               # (and its locale) every compile is one the main build already made.
               "--define", "optflags -O2 -g1"]
    if target:
        command += ["--target", target]
    run_logged(command + [os.path.join(source_dir, "rpm", "xpud.spec")], os.path.join(topdir, "rpmbuild.log"),
               "rpmbuild", timeout=2700, env=env)
    return {rpm_query(path, "--queryformat", "%{NAME}").strip(): path
            for path in glob.glob(os.path.join(topdir, "RPMS", "*", "*.rpm"))}


def assert_file_lists_match_the_debian_packages(test, rpms):
    for package, expected in package_contents.expected_files(package_contents.RPM_UNIT_DIR).items():
        # `rpm -qlv` is ls -l shaped: directories the package owns (%dir) start with 'd'.
        files, dirs = set(), set()
        for line in rpm_query(rpms[package], "-lv").splitlines():
            path = line.split(" -> ")[0].split()[-1]
            (dirs if line.startswith("d") else files).add(path)
        files |= dirs
        # The directories rpm creates for the proxy, the topology table and the shim's role
        # programs (%dir) are removed with the package; dpkg removes an emptied directory by
        # itself, so the deb does not list them.
        for owned in {"xpud": ("/usr/libexec/xpud", "/usr/share/xpud"),
                      "xpu-k8s-shim": ("/usr/libexec/xpu-k8s-shim",)}[package]:
            test.assertIn(owned, dirs)
            files.discard(owned)
        # %{_licensedir}/<name> (Fedora, RHEL) or <name>-<version> (older rpm configurations)
        licences = [f for f in files if f.startswith("/usr/share/licenses/") and f.endswith("/LICENSE")]
        test.assertEqual(len(licences), 1, f"{package}: {licences}")
        files = {package_contents.without_compression(f) for f in files
                 if not f.startswith(package_contents.DISTRIBUTION_SPECIFIC)}
        test.assertEqual(files, expected, package)


def extract(package_file, root):
    """Unpacks a package's files under root (rpm2archive, then tar)."""
    os.makedirs(root, exist_ok=True)
    copy = root + ".rpm"
    shutil.copy(package_file, copy)
    subprocess.run(["rpm2archive", "-n", copy], check=True)  # writes <copy>.tar
    with tarfile.open(copy + ".tar") as tar:
        # Extraction filters arrived in Python 3.11.4; Debian 12 has 3.11.2.
        if hasattr(tarfile, "tar_filter"):
            tar.extractall(root, filter="tar")
        else:
            tar.extractall(root)
