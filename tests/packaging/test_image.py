"""packaging/container/build-image.sh: builds the shim's image for amd64 and arm64, from the build
tree's binary and the arm64 package's (packaging.deb_arm64 leaves it in arm64-packages/, the ctest
fixture arm64_packages; the Debian roots are cached in ~/.cache/xpu-k8s-shim-image), then loads
the archive the way a user would, into podman and into containerd, each with storage of its own
that is removed afterwards, and checks what a user sees: the chart's default reference listed,
the machine's own architecture taken from the image index, user 65534:65534, the entrypoint and
command, and the shim answering from inside the image; and for arm64, containerd unpacking the
arm64 manifest when asked for that platform, and the shim answering, under emulation, from the
arm64 image's own root.

Slow the first time (mmdebstrap makes the roots, minutes): ctest LABELS packaging, arm64. Needs
root, network access to the Debian mirror on the first run, and scripts/install-deps.sh ci.
Environment: XPU_SOURCE_DIR, XPU_BINARY_DIR, XPU_SHIM.

Two facts of these CI machines shape the `podman run` calls (a user's host needs neither):
- crun 1.8 refuses a hybrid cgroup layout (v1 controllers plus a cgroup2 mount with controllers,
  "cgroups in hybrid mode not supported"); runc runs there, so the runs use `--runtime runc`;
- the sandbox has no CAP_SYS_RESOURCE, so podman's default open-files limit (1048576) cannot be
  set ("setrlimit RLIMIT_NOFILE: Operation not permitted"); the runs ask for limits no higher
  than this process's own.
"""

import glob
import json
import os
import re
import resource
import shutil
import signal
import subprocess
import tarfile
import tempfile
import time
import unittest

import yaml

import package_contents

from source_tree import project_version

SOURCE_DIR = os.path.abspath(os.environ.get("XPU_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", "..")))
BINARY_DIR = os.environ.get("XPU_BINARY_DIR")
SHIM = os.environ.get("XPU_SHIM")
BUILD_IMAGE = os.path.join(SOURCE_DIR, "packaging", "container", "build-image.sh")
TOOLS = ["podman", "runc", "conmon", "containerd", "ctr", "mmdebstrap", "unshare", "qemu-aarch64-static", "dpkg-deb", "file"]

# podman and the containers/image library it uses write a few things outside --root and
# --runroot (a blob-info cache in /var/lib/containers, network state in /run/containers); in a
# mount namespace of its own with /var/lib and /run on empty tmpfs, none of that reaches the host.
PODMAN_IN_PRIVATE_MOUNTS = ('mount -t tmpfs -o mode=0755 xpu-image-test /var/lib && '
                            'mount -t tmpfs -o mode=0755 xpu-image-test /run && exec podman "$@"')


def chart_reference(version):
    with open(os.path.join(SOURCE_DIR, "charts", "xpu-k8s-shim", "values.yaml"), encoding="utf-8") as f:
        image = yaml.safe_load(f)["global"]["image"]
    with open(os.path.join(SOURCE_DIR, "charts", "xpu-k8s-shim", "Chart.yaml"), encoding="utf-8") as f:
        app_version = str(yaml.safe_load(f)["appVersion"])
    if app_version != version:
        raise AssertionError(f"the chart's appVersion {app_version} is not the project's {version}")
    return f"{image['host']}/{image['repository']}:{version}"


def read_archive_json(name):
    with tarfile.open(Build.archive) as tar:
        return json.load(tar.extractfile(name))


def manifest_of(architecture):
    """The manifest of one architecture, found as a runtime finds it: index.json names one
    image index, which lists a manifest per platform."""
    named = read_archive_json("index.json")["manifests"]
    if len(named) != 1 or named[0]["mediaType"] != "application/vnd.oci.image.index.v1+json":
        raise AssertionError(f"index.json does not name one image index: {named}")
    for descriptor in read_archive_json("blobs/sha256/" + named[0]["digest"][7:])["manifests"]:
        if descriptor["platform"] == {"architecture": architecture, "os": "linux"}:
            return read_archive_json("blobs/sha256/" + descriptor["digest"][7:])
    raise AssertionError(f"no linux/{architecture} manifest in the image index")


def archive_diff_ids(architecture):
    """The image config's diff_ids of one architecture."""
    manifest = manifest_of(architecture)
    return read_archive_json("blobs/sha256/" + manifest["config"]["digest"][7:])["rootfs"]["diff_ids"]


def host_architecture():
    return subprocess.run(["dpkg", "--print-architecture"], capture_output=True, text=True,
                          check=True).stdout.strip()


def wait_for(what, seconds, condition):
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {seconds} s waiting for {what}")
        time.sleep(0.1)


def unmount_under(directory):
    """Unmounts whatever is still mounted below `directory` (deepest first)."""
    with open("/proc/self/mountinfo", encoding="utf-8") as f:
        points = [line.split()[4] for line in f]
    for point in sorted((p for p in points if p.startswith(directory + "/")), key=len, reverse=True):
        subprocess.run(["umount", "-l", point], capture_output=True)


def processes_mentioning(text):
    """PIDs whose command line holds `text` (a private temporary path: only ours can)."""
    pids = []
    for entry in os.listdir("/proc"):
        if entry.isdigit() and int(entry) != os.getpid():
            try:
                with open(f"/proc/{entry}/cmdline", "rb") as f:
                    if text.encode() in f.read():
                        pids.append(int(entry))
            except OSError:
                pass
    return pids


class Build:
    """The image, built once for the whole module."""
    archive = reference = version = output = arm64_package = None
    seconds = 0.0


def setUpModule():
    missing = [tool for tool in TOOLS if shutil.which(tool) is None]
    if missing:
        raise AssertionError(f"missing {', '.join(missing)}: run scripts/install-deps.sh ci")
    if os.geteuid() != 0:
        raise AssertionError("needs root (mmdebstrap's root mode, podman and containerd with private storage)")
    if not SHIM or not BINARY_DIR:
        raise AssertionError("XPU_SHIM and XPU_BINARY_DIR must be set (ctest sets them)")
    Build.version = project_version(SOURCE_DIR)
    output = os.path.join(BINARY_DIR, "image")
    debs = glob.glob(os.path.join(BINARY_DIR, "arm64-packages", "xpu-k8s-shim_*_arm64.deb"))
    if len(debs) != 1:
        raise AssertionError(f"expected one arm64 shim package in {BINARY_DIR}/arm64-packages (ctest runs "
                             f"packaging.deb_arm64 first, the fixture arm64_packages), found {debs}")
    Build.arm64_package = tempfile.mkdtemp(prefix="xpu-image-arm64-deb-", dir=BINARY_DIR)
    subprocess.run(["dpkg-deb", "-x", debs[0], Build.arm64_package], check=True)
    started = time.monotonic()
    result = subprocess.run([BUILD_IMAGE, "--output", output, "--binary", SHIM, "--binary",
                             os.path.join(Build.arm64_package, "usr", "bin", "xpu-k8s-shim")],
                            capture_output=True, text=True, timeout=1500)
    Build.seconds = time.monotonic() - started
    print(result.stdout, end="", flush=True)
    if result.returncode != 0:
        raise AssertionError(f"build-image.sh failed ({result.returncode}):\n{result.stderr[-4000:]}")
    fields = dict(re.findall(r"^\[image\] (\w+): +(.*)$", result.stdout, re.M))
    Build.archive, Build.reference = fields.get("archive"), fields.get("reference")
    Build.output = result.stdout
    print(f"[test] build-image.sh took {Build.seconds:.0f} s", flush=True)


def tearDownModule():
    if Build.arm64_package:
        shutil.rmtree(Build.arm64_package, ignore_errors=True)


class BuildOutput(unittest.TestCase):
    def test_reference_is_the_charts_default(self):
        self.assertEqual(Build.reference, chart_reference(Build.version))

    def test_archive_and_sizes_are_reported(self):
        self.assertTrue(Build.archive and os.path.isfile(Build.archive), Build.output)
        self.assertEqual(os.path.dirname(Build.archive), os.path.join(BINARY_DIR, "image"))
        self.assertRegex(Build.output, r"\[image\] size: +[0-9.]+ MiB compressed, [0-9.]+ MiB unpacked")
        self.assertIn("[image] platforms: linux/amd64 linux/arm64", Build.output)
        self.assertTrue(Build.archive.endswith(f"xpu-k8s-shim-image-{Build.version}-amd64-arm64.tar"), Build.archive)
        # Nothing of the build's scratch space is left beside the archive.
        self.assertEqual([n for n in os.listdir(os.path.dirname(Build.archive)) if n.startswith(".")
                          and n != ".lock"], [])

    def test_a_bad_binary_is_refused(self):
        # An image whose tag does not match its binary's version would mislead every node.
        result = subprocess.run([BUILD_IMAGE, "--output", os.path.join(BINARY_DIR, "image"),
                                 "--binary", SHIM, "--version", "9.9.9"], capture_output=True, text=True)
        self.assertEqual(result.returncode, 1)
        self.assertIn(f"reports 'xpu-k8s-shim {Build.version}', not 'xpu-k8s-shim 9.9.9'", result.stderr)

    def test_binaries_and_architectures_that_do_not_fit_are_refused(self):
        arm64_shim = os.path.join(Build.arm64_package, "usr", "bin", "xpu-k8s-shim")
        not_a_program = os.path.join(Build.arm64_package, "not-a-program")
        with open(not_a_program, "w") as f:
            f.write("#!/bin/sh\n")
        os.chmod(not_a_program, 0o755)
        alone = os.path.join(Build.arm64_package, "alone", "bin", "xpu-k8s-shim")
        os.makedirs(os.path.dirname(alone))
        shutil.copy(SHIM, alone)
        for arguments, status, message in [
            (["--arch", "amd64", "--binary", arm64_shim], 1, "is for arm64, which --arch (amd64) does not name"),
            (["--arch", "amd64", "--binary", alone], 1,
             f"has no device-plugin program beside it ({os.path.dirname(alone)}/../libexec/xpu-k8s-shim/device-plugin)"),
            (["--binary", SHIM, "--binary", SHIM], 1, "--binary given twice for amd64"),
            (["--binary", not_a_program], 1, "is not an amd64 or arm64 executable"),
            (["--binary", os.path.join(Build.arm64_package, "missing")], 1, "is not an executable file"),
            (["--binary", "/bin/sh", "--arch", "amd64,sparc"], 2, "'sparc' is not one of amd64, arm64"),
            (["--arch", "arm64,arm64"], 2, "--arch names arm64 twice"),
        ]:
            result = subprocess.run([BUILD_IMAGE, "--output", os.path.join(BINARY_DIR, "image"), *arguments],
                                    capture_output=True, text=True, timeout=60)
            self.assertEqual(result.returncode, status, f"{arguments}: {result.stderr}")
            self.assertIn(message, result.stderr, arguments)


class Podman(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.workdir = tempfile.mkdtemp(prefix="xpu-image-podman-")
        cls.addClassCleanup(cls.tear_down)
        config = os.path.join(cls.workdir, "containers.conf")
        with open(config, "w", encoding="utf-8") as f:
            # netavark named so podman does not probe CNI (which creates /etc/cni/net.d).
            f.write(f'[network]\nnetwork_backend = "netavark"\n'
                    f'network_config_dir = "{cls.workdir}/networks"\n')
        cls.env = dict(os.environ, CONTAINERS_CONF=config)
        cls.global_options = ["--root", f"{cls.workdir}/root", "--runroot", f"{cls.workdir}/run",
                              "--tmpdir", f"{cls.workdir}/tmp", "--storage-driver", "vfs",
                              "--cgroup-manager", "cgroupfs", "--events-backend", "file",
                              "--runtime", "runc"]
        started = time.monotonic()
        cls.load = cls.podman("load", "-i", Build.archive)
        print(f"[test] podman load took {time.monotonic() - started:.1f} s", flush=True)
        if cls.load.returncode != 0:
            raise AssertionError(f"podman load failed: {cls.load.stderr}")

    @classmethod
    def tear_down(cls):
        for pid in processes_mentioning(cls.workdir):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        unmount_under(cls.workdir)
        shutil.rmtree(cls.workdir, ignore_errors=True)

    @classmethod
    def podman(cls, *args, timeout=300):
        return subprocess.run(["unshare", "--mount", "--propagation", "private", "sh", "-c",
                               PODMAN_IN_PRIVATE_MOUNTS, "podman", *cls.global_options, *args],
                              capture_output=True, text=True, env=cls.env, timeout=timeout)

    def run_image(self, *args):
        nofile = min(1024, resource.getrlimit(resource.RLIMIT_NOFILE)[1])
        nproc = min(1024, resource.getrlimit(resource.RLIMIT_NPROC)[1])
        started = time.monotonic()
        result = self.podman("run", "--rm", "--network", "none", "--ulimit", f"nofile={nofile}:{nofile}",
                             "--ulimit", f"nproc={nproc}:{nproc}", *args)
        print(f"[test] podman run {' '.join(args[-2:])} took {time.monotonic() - started:.1f} s", flush=True)
        self.assertEqual(result.returncode, 0, result.stderr)
        return result.stdout

    def test_load_names_the_image(self):
        self.assertIn(f"Loaded image: {Build.reference}", self.load.stdout + self.load.stderr)
        listed = self.podman("images", "--format", "{{.Repository}}:{{.Tag}}")
        self.assertEqual(listed.returncode, 0, listed.stderr)
        self.assertIn(Build.reference, listed.stdout.split())

    def test_inspect_shows_user_entrypoint_and_command(self):
        result = self.podman("image", "inspect", Build.reference)
        self.assertEqual(result.returncode, 0, result.stderr)
        config = json.loads(result.stdout)[0]["Config"]
        self.assertEqual(config["User"], "65534:65534")
        self.assertEqual(config["Entrypoint"], ["/usr/bin/xpu-k8s-shim"])
        self.assertEqual(config["Cmd"], ["--help"])
        self.assertEqual(config["Labels"]["org.opencontainers.image.version"], Build.version)
        # The image index holds two; podman took the one of this machine.
        self.assertEqual(json.loads(result.stdout)[0]["Architecture"], host_architecture())

    def test_shim_prints_its_version_from_inside_the_image(self):
        self.assertEqual(self.run_image(Build.reference, "--version").strip(), f"xpu-k8s-shim {Build.version}")

    def test_default_command_is_the_help(self):
        self.assertIn("Usage: xpu-k8s-shim", self.run_image(Build.reference))

    def test_each_role_runs_its_own_program_inside_the_image(self):
        # As the chart runs them (`xpu-k8s-shim ROLE ...`): a role's --help comes from its program
        # in /usr/libexec/xpu-k8s-shim, which the entrypoint runs.
        for role in package_contents.SHIM_ROLES:
            self.assertIn(f"Usage: xpu-k8s-shim {role} [OPTIONS]", self.run_image(Build.reference, role, "--help"))

    def test_runs_as_nobody(self):
        self.assertEqual(self.run_image("--entrypoint", "id", Build.reference).strip(),
                         "uid=65534(nobody) gid=65534(nogroup) groups=65534(nogroup)")


class Containerd(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.workdir = tempfile.mkdtemp(prefix="xpu-image-containerd-")
        cls.daemon = None
        cls.addClassCleanup(cls.tear_down)
        cls.socket = os.path.join(cls.workdir, "containerd.sock")
        config = os.path.join(cls.workdir, "config.toml")
        with open(config, "w", encoding="utf-8") as f:
            # Every path containerd would otherwise take on the host (/var/lib/containerd,
            # /run/containerd, /opt/containerd) is under the temporary directory; the CRI plugin
            # (CNI, a kubelet's API) is not needed to import an image.
            f.write(f'version = 2\nroot = "{cls.workdir}/root"\nstate = "{cls.workdir}/state"\n'
                    f'disabled_plugins = ["io.containerd.grpc.v1.cri"]\n'
                    f'[grpc]\n  address = "{cls.socket}"\n'
                    f'[ttrpc]\n  address = "{cls.socket}.ttrpc"\n'
                    f'[plugins."io.containerd.internal.v1.opt"]\n  path = "{cls.workdir}/opt"\n')
        cls.log = open(os.path.join(cls.workdir, "containerd.log"), "w")
        cls.daemon = subprocess.Popen(["containerd", "--config", config], stdout=cls.log,
                                      stderr=subprocess.STDOUT, start_new_session=True)
        wait_for("containerd to answer on its socket", 30,
                 lambda: cls.daemon.poll() is not None or cls.ctr("version").returncode == 0)
        if cls.daemon.poll() is not None:
            raise AssertionError(f"containerd exited ({cls.daemon.returncode}): {cls.log_tail()}")
        started = time.monotonic()
        cls.imported = cls.ctr("images", "import", Build.archive)
        print(f"[test] ctr images import took {time.monotonic() - started:.1f} s", flush=True)
        if cls.imported.returncode != 0:
            raise AssertionError(f"ctr images import failed: {cls.imported.stderr}\n{cls.log_tail()}")

    @classmethod
    def log_tail(cls):
        with open(os.path.join(cls.workdir, "containerd.log"), encoding="utf-8", errors="replace") as f:
            return f.read()[-3000:]

    @classmethod
    def tear_down(cls):
        if cls.daemon is not None and cls.daemon.poll() is None:
            cls.daemon.terminate()
            try:
                cls.daemon.wait(timeout=15)
            except subprocess.TimeoutExpired:
                cls.daemon.kill()
                cls.daemon.wait()
        if cls.daemon is not None:
            cls.log.close()
        unmount_under(cls.workdir)
        shutil.rmtree(cls.workdir, ignore_errors=True)

    @classmethod
    def ctr(cls, *args, namespace="k8s.io"):
        # k8s.io: the namespace the kubelet's CRI reads images from.
        return subprocess.run(["ctr", "--address", cls.socket, "--namespace", namespace, *args],
                              capture_output=True, text=True, timeout=300)

    def test_import_lists_the_reference(self):
        listed = self.ctr("images", "list", "--quiet")
        self.assertEqual(listed.returncode, 0, listed.stderr)
        self.assertEqual(listed.stdout.split(), [Build.reference])

    def test_image_is_complete_and_unpacked_for_this_machine(self):
        check = self.ctr("images", "check")
        self.assertEqual(check.returncode, 0, check.stderr)
        line = next((l for l in check.stdout.splitlines() if l.startswith(Build.reference + " ")), "")
        self.assertRegex(line, r"\scomplete \(\d+/\d+\)\s.*\strue$", check.stdout)
        listed = self.ctr("images", "list").stdout
        self.assertIn("linux/amd64", listed)
        self.assertIn("linux/arm64", listed)
        # Unpacking checks the layer against the config's diff_id, which keys the one snapshot:
        # the layer of this machine's manifest, the one the kubelet's containers run.
        snapshots = self.ctr("snapshots", "list")
        self.assertEqual(snapshots.returncode, 0, snapshots.stderr)
        self.assertEqual([l.split()[0] for l in snapshots.stdout.splitlines()[1:]],
                         archive_diff_ids(host_architecture()))

    def test_arm64_manifest_unpacks_when_that_platform_is_asked_for(self):
        # What containerd on an arm64 node does with the same archive.
        imported = self.ctr("images", "import", "--platform", "linux/arm64", Build.archive, namespace="arm64-node")
        self.assertEqual(imported.returncode, 0, imported.stderr)
        snapshots = self.ctr("snapshots", "list", namespace="arm64-node")
        self.assertEqual(snapshots.returncode, 0, snapshots.stderr)
        self.assertEqual([l.split()[0] for l in snapshots.stdout.splitlines()[1:]], archive_diff_ids("arm64"))


class Arm64Root(unittest.TestCase):
    """The arm64 manifest's layer, unpacked: its shim is an arm64 program that runs, under
    emulation, on the libraries of that root alone."""

    @classmethod
    def setUpClass(cls):
        cls.root = tempfile.mkdtemp(prefix="xpu-image-arm64-root-", dir=BINARY_DIR)
        cls.addClassCleanup(shutil.rmtree, cls.root, True)
        layer = manifest_of("arm64")["layers"][0]["digest"][7:]
        with tarfile.open(Build.archive) as tar:
            blob = tar.extractfile("blobs/sha256/" + layer).read()
        subprocess.run(["tar", "-xz", "-C", cls.root, "--numeric-owner"], input=blob, check=True)

    def test_the_shim_is_arm64_and_runs_in_its_root(self):
        shim = os.path.join(self.root, "usr", "bin", "xpu-k8s-shim")
        self.assertIn("ARM aarch64", subprocess.run(["file", "-b", shim], capture_output=True, text=True).stdout)
        libraries = os.path.join(self.root, "usr", "lib", "aarch64-linux-gnu")
        self.assertTrue(os.path.exists(os.path.join(libraries, "libprometheus-cpp-core.so.1.0")))
        # Linked in statically (cmake/StaticGrpc.cmake): not installed.
        self.assertFalse([name for name in os.listdir(libraries) if name.startswith(("libgrpc", "libprotobuf"))])
        result = subprocess.run(["qemu-aarch64-static", "-L", self.root, shim, "--version"],
                                capture_output=True, text=True, timeout=120)
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertEqual(result.stdout.strip(), f"xpu-k8s-shim {Build.version}")
        # The role programs it runs: arm64 too, and running on that root's libraries alone.
        for role in package_contents.SHIM_ROLES:
            program = os.path.join(self.root, "usr", "libexec", "xpu-k8s-shim", role)
            self.assertIn("ARM aarch64", subprocess.run(["file", "-b", program], capture_output=True,
                                                        text=True).stdout, role)
            result = subprocess.run(["qemu-aarch64-static", "-L", self.root, program, role, "--help"],
                                    capture_output=True, text=True, timeout=120)
            self.assertEqual(result.returncode, 0, f"{role}: {result.stderr}")
            self.assertIn(f"Usage: xpu-k8s-shim {role} [OPTIONS]", result.stdout, role)
        config = read_archive_json("blobs/sha256/" + manifest_of("arm64")["config"]["digest"][7:])
        self.assertEqual((config["architecture"], config["config"]["User"]), ("arm64", "65534:65534"))


if __name__ == "__main__":
    unittest.main()
