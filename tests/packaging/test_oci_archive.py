"""packaging/container/oci-archive.py, the image archive writer: what a tree becomes in the
archive (modes, owners, links, file capabilities, clamped times), the archive's two indexes
(OCI index.json and Docker manifest.json) and their digests, the image config, byte-for-byte
determinism, and the refusals. Loading the result into podman and containerd is test_image.py.

Environment: XPU_SOURCE_DIR.
"""

import gzip
import hashlib
import importlib.util
import io
import json
import os
import shutil
import stat
import struct
import subprocess
import sys
import tarfile
import tempfile
import unittest

SOURCE_DIR = os.environ.get("XPU_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", ".."))
WRITER = os.path.join(SOURCE_DIR, "packaging", "container", "oci-archive.py")
TIMESTAMP = 1700000000
# A file capability (vfs_cap_data revision 2) granting CAP_NET_RAW, effective.
CAP_NET_RAW = struct.pack("<5I", 0x02000001, 1 << 13, 0, 0, 0)


def write_archive(root, output, *extra):
    return subprocess.run([sys.executable, WRITER, "--root", root, "--output", output, *extra],
                          capture_output=True, text=True)


def read_archive(path):
    """{name: bytes} of the archive's regular files, plus the member names in order."""
    with tarfile.open(path) as tar:
        members = tar.getmembers()
        files = {m.name: tar.extractfile(m).read() for m in members if m.isfile()}
    return files, [m.name for m in members]


def sha256(data):
    return "sha256:" + hashlib.sha256(data).hexdigest()


def blob(files, digest):
    return files["blobs/sha256/" + digest.split(":", 1)[1]]


class Archive(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.workdir = tempfile.mkdtemp(prefix="xpu-oci-archive-")
        cls.addClassCleanup(shutil.rmtree, cls.workdir, True)
        root = cls.root = os.path.join(cls.workdir, "root")
        os.makedirs(os.path.join(root, "usr", "bin"))
        os.makedirs(os.path.join(root, "tmp"))
        os.makedirs(os.path.join(root, "home", "nobody"))
        os.makedirs(os.path.join(root, "empty"))
        with open(os.path.join(root, "usr", "bin", "tool"), "wb") as f:
            f.write(b"#!/bin/sh\necho tool\n")
        with open(os.path.join(root, "usr", "bin", "privileged"), "wb") as f:
            f.write(b"setuid\n")
        with open(os.path.join(root, "home", "nobody", "notes"), "wb") as f:
            f.write(b"mine\n")
        with open(os.path.join(root, "future"), "wb") as f:
            f.write(b"from the future\n")
        os.chmod(os.path.join(root, "usr", "bin", "tool"), 0o755)
        os.chmod(os.path.join(root, "usr", "bin", "privileged"), 0o4755)
        os.chmod(os.path.join(root, "tmp"), 0o1777)
        os.chmod(os.path.join(root, "home", "nobody", "notes"), 0o600)
        os.link(os.path.join(root, "usr", "bin", "tool"), os.path.join(root, "usr", "bin", "tool-alias"))
        os.symlink("tool", os.path.join(root, "usr", "bin", "relative-link"))
        os.symlink("/nowhere/at/all", os.path.join(root, "dangling"))
        os.utime(os.path.join(root, "future"), (TIMESTAMP + 86400, TIMESTAMP + 86400))
        os.utime(os.path.join(root, "usr", "bin", "tool"), (TIMESTAMP - 3600, TIMESTAMP - 3600))
        cls.is_root = os.geteuid() == 0
        cls.capability_set = False
        if cls.is_root:
            os.chown(os.path.join(root, "home", "nobody"), 65534, 65534)
            os.chown(os.path.join(root, "home", "nobody", "notes"), 65534, 65534)
            try:
                os.setxattr(os.path.join(root, "usr", "bin", "privileged"), "security.capability", CAP_NET_RAW)
                cls.capability_set = True
            except OSError:
                pass  # a file system without capabilities; the test below says so

        cls.archive = os.path.join(cls.workdir, "image.tar")
        cls.arguments = ["--ref", "registry.local:5000/team/tool:1.2", "--timestamp", str(TIMESTAMP),
                         "--entrypoint", '["/usr/bin/tool", "--flag"]', "--cmd", '["--help"]',
                         "--user", "65534:65534", "--env", "MODE=test", "--workdir", "/home/nobody",
                         "--label", "org.opencontainers.image.version=1.2", "--architecture", "amd64"]
        result = write_archive(root, cls.archive, *cls.arguments)
        if result.returncode != 0:
            raise AssertionError(f"oci-archive.py failed ({result.returncode}): {result.stderr}")
        cls.summary = json.loads(result.stdout)
        cls.files, cls.names = read_archive(cls.archive)
        cls.index = json.loads(cls.files["index.json"])
        cls.manifest_descriptor = cls.index["manifests"][0]
        cls.manifest = json.loads(blob(cls.files, cls.manifest_descriptor["digest"]))
        cls.config = json.loads(blob(cls.files, cls.manifest["config"]["digest"]))
        cls.layer_blob = blob(cls.files, cls.manifest["layers"][0]["digest"])
        with tarfile.open(fileobj=io.BytesIO(gzip.decompress(cls.layer_blob))) as layer:
            cls.layer = {m.name.rstrip("/"): m for m in layer.getmembers()}
            cls.layer_order = [m.name.rstrip("/") for m in layer.getmembers()]

    def test_oci_layout_names_the_image_for_containerd_and_podman(self):
        self.assertEqual(json.loads(self.files["oci-layout"]), {"imageLayoutVersion": "1.0.0"})
        self.assertEqual(len(self.index["manifests"]), 1)
        self.assertEqual(self.manifest_descriptor["annotations"], {
            "io.containerd.image.name": "registry.local:5000/team/tool:1.2",
            "org.opencontainers.image.ref.name": "registry.local:5000/team/tool:1.2"})
        self.assertEqual(self.manifest_descriptor["platform"], {"architecture": "amd64", "os": "linux"})

    def test_docker_manifest_points_at_the_same_blobs(self):
        docker = json.loads(self.files["manifest.json"])
        self.assertEqual(len(docker), 1)
        self.assertEqual(docker[0]["RepoTags"], ["registry.local:5000/team/tool:1.2"])
        self.assertEqual(docker[0]["Config"], "blobs/sha256/" + self.manifest["config"]["digest"][7:])
        self.assertEqual(docker[0]["Layers"], ["blobs/sha256/" + self.manifest["layers"][0]["digest"][7:]])

    def test_every_descriptor_matches_its_blob(self):
        manifest_bytes = blob(self.files, self.manifest_descriptor["digest"])
        self.assertEqual(sha256(manifest_bytes), self.manifest_descriptor["digest"])
        self.assertEqual(len(manifest_bytes), self.manifest_descriptor["size"])
        for descriptor in [self.manifest["config"]] + self.manifest["layers"]:
            data = blob(self.files, descriptor["digest"])
            self.assertEqual(sha256(data), descriptor["digest"])
            self.assertEqual(len(data), descriptor["size"])
        # diff_ids are the digests of the uncompressed layers: what runtimes verify on unpack.
        self.assertEqual(self.config["rootfs"], {"type": "layers",
                                                 "diff_ids": [sha256(gzip.decompress(self.layer_blob))]})
        self.assertEqual(self.manifest["layers"][0]["mediaType"], "application/vnd.oci.image.layer.v1.tar+gzip")
        blobs = {n for n in self.files if n.startswith("blobs/")}
        self.assertEqual(len(blobs), 3, "manifest, config and layer, nothing else")

    def test_image_config(self):
        self.assertEqual(self.config["architecture"], "amd64")
        self.assertEqual(self.config["os"], "linux")
        self.assertEqual(self.config["created"], "2023-11-14T22:13:20Z")
        self.assertEqual(self.config["config"], {
            "User": "65534:65534",
            "Env": ["PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "MODE=test"],
            "Entrypoint": ["/usr/bin/tool", "--flag"],
            "Cmd": ["--help"],
            "WorkingDir": "/home/nobody",
            "Labels": {"org.opencontainers.image.version": "1.2"},
        })
        self.assertEqual(self.summary["reference"], "registry.local:5000/team/tool:1.2")
        self.assertEqual(self.summary["layer_tar_size"], len(gzip.decompress(self.layer_blob)))

    def test_layer_keeps_modes_owners_and_links(self):
        layer = self.layer
        self.assertEqual(stat.S_IMODE(layer["usr/bin/tool"].mode), 0o755)
        self.assertEqual(stat.S_IMODE(layer["usr/bin/privileged"].mode), 0o4755)
        self.assertEqual(stat.S_IMODE(layer["tmp"].mode), 0o1777)
        self.assertEqual(stat.S_IMODE(layer["home/nobody/notes"].mode), 0o600)
        self.assertTrue(layer["tmp"].isdir())
        self.assertTrue(layer["empty"].isdir())
        self.assertTrue(layer["usr/bin/relative-link"].issym())
        self.assertEqual(layer["usr/bin/relative-link"].linkname, "tool")
        self.assertEqual(layer["dangling"].linkname, "/nowhere/at/all")
        # The first path written holds the content, the other one links to it.
        self.assertTrue(layer["usr/bin/tool"].isfile())
        self.assertTrue(layer["usr/bin/tool-alias"].islnk())
        self.assertEqual(layer["usr/bin/tool-alias"].linkname, "usr/bin/tool")
        for member in layer.values():
            self.assertEqual((member.uname, member.gname), ("", ""), member.name)
        if self.is_root:
            self.assertEqual((layer["home/nobody"].uid, layer["home/nobody"].gid), (65534, 65534))
            self.assertEqual((layer["home/nobody/notes"].uid, layer["home/nobody/notes"].gid), (65534, 65534))
            self.assertEqual((layer["usr/bin/tool"].uid, layer["usr/bin/tool"].gid), (0, 0))

    def test_layer_order_parents_first(self):
        self.assertEqual(len(self.layer_order), len(set(self.layer_order)))
        for position, name in enumerate(self.layer_order):
            parent = os.path.dirname(name)
            if parent:
                self.assertLess(self.layer_order.index(parent), position, name)

    def test_mtimes_clamped_to_the_timestamp(self):
        self.assertEqual(self.layer["future"].mtime, TIMESTAMP)
        self.assertEqual(self.layer["usr/bin/tool"].mtime, TIMESTAMP - 3600)

    def test_file_capability_is_kept(self):
        if not self.capability_set:
            self.skipTest("setting security.capability needs root and a file system that stores it")
        self.assertEqual(self.layer["usr/bin/privileged"].pax_headers.get("SCHILY.xattr.security.capability")
                         .encode("utf-8", "surrogateescape"), CAP_NET_RAW)
        self.assertNotIn("SCHILY.xattr.security.capability", self.layer["usr/bin/tool"].pax_headers)

    def test_same_tree_same_bytes(self):
        again = os.path.join(self.workdir, "again.tar")
        result = write_archive(self.root, again, *self.arguments)
        self.assertEqual(result.returncode, 0, result.stderr)
        with open(self.archive, "rb") as first, open(again, "rb") as second:
            self.assertEqual(hashlib.sha256(first.read()).digest(), hashlib.sha256(second.read()).digest())

    def test_no_temporary_file_left_beside_the_archive(self):
        self.assertEqual(sorted(n for n in os.listdir(self.workdir) if n.startswith(".")), [])


class References(unittest.TestCase):
    """The reference is stored in full, the form the kubelet asks a runtime for."""

    @classmethod
    def setUpClass(cls):
        sys.dont_write_bytecode = True  # no __pycache__ in the source tree
        spec = importlib.util.spec_from_file_location("oci_archive", WRITER)
        cls.writer = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(cls.writer)

    def test_normalized(self):
        for given, full in [
            ("busybox", "docker.io/library/busybox:latest"),
            ("busybox:1.36", "docker.io/library/busybox:1.36"),
            ("team/app:v1", "docker.io/team/app:v1"),
            ("index.docker.io/busybox", "docker.io/library/busybox:latest"),
            ("localhost/app", "localhost/app:latest"),
            ("localhost:5000/a/b:c", "localhost:5000/a/b:c"),
            ("registry.k8s.io/pause:3.10", "registry.k8s.io/pause:3.10"),
            ("ccr.ccs.tencentyun.com/kunlunxin/xpu-k8s-shim:0.1.0",
             "ccr.ccs.tencentyun.com/kunlunxin/xpu-k8s-shim:0.1.0"),
        ]:
            self.assertEqual(self.writer.normalize_reference(given), full, given)

    def test_refused(self):
        for bad in ["Busybox", "busybox@sha256:" + "0" * 64, "busybox:", "a//b", "-a", "busybox:-x",
                    "x:" + "1" * 129, ""]:
            with self.assertRaises(self.writer.UsageError, msg=bad):
                self.writer.normalize_reference(bad)


class MultiArchitecture(unittest.TestCase):
    """--platform ARCH=DIR twice: one name on an image index of one manifest per architecture,
    as a registry serves a multi-architecture tag."""

    @classmethod
    def setUpClass(cls):
        cls.workdir = tempfile.mkdtemp(prefix="xpu-oci-archive-")
        cls.addClassCleanup(shutil.rmtree, cls.workdir, True)
        cls.trees = {}
        for architecture in ("amd64", "arm64"):
            tree = cls.trees[architecture] = os.path.join(cls.workdir, architecture)
            os.makedirs(os.path.join(tree, "usr", "bin"))
            with open(os.path.join(tree, "usr", "bin", "tool"), "w") as f:
                f.write(f"built for {architecture}\n")
        cls.archive = os.path.join(cls.workdir, "image.tar")
        result = subprocess.run([sys.executable, WRITER, "--platform", f"amd64={cls.trees['amd64']}",
                                 "--platform", f"arm64={cls.trees['arm64']}", "--ref", "tool:2",
                                 "--output", cls.archive, "--timestamp", str(TIMESTAMP), "--user", "65534"],
                                capture_output=True, text=True)
        if result.returncode != 0:
            raise AssertionError(f"oci-archive.py failed ({result.returncode}): {result.stderr}")
        cls.summary = json.loads(result.stdout)
        cls.files, _ = read_archive(cls.archive)
        cls.index = json.loads(cls.files["index.json"])

    def nested(self):
        descriptor = self.index["manifests"][0]
        data = blob(self.files, descriptor["digest"])
        self.assertEqual(sha256(data), descriptor["digest"])
        self.assertEqual(len(data), descriptor["size"])
        return json.loads(data)

    def test_the_name_is_on_one_index_of_both_manifests(self):
        self.assertEqual(len(self.index["manifests"]), 1)
        descriptor = self.index["manifests"][0]
        self.assertEqual(descriptor["mediaType"], "application/vnd.oci.image.index.v1+json")
        self.assertEqual(descriptor["annotations"]["io.containerd.image.name"], "docker.io/library/tool:2")
        self.assertEqual(descriptor["annotations"]["org.opencontainers.image.ref.name"], "docker.io/library/tool:2")
        self.assertNotIn("platform", descriptor)
        self.assertEqual([m["platform"] for m in self.nested()["manifests"]],
                         [{"architecture": "amd64", "os": "linux"}, {"architecture": "arm64", "os": "linux"}])
        self.assertEqual(self.summary["index"], descriptor["digest"])

    def test_each_manifest_holds_its_own_tree_and_architecture(self):
        for descriptor in self.nested()["manifests"]:
            architecture = descriptor["platform"]["architecture"]
            manifest_bytes = blob(self.files, descriptor["digest"])
            self.assertEqual((sha256(manifest_bytes), len(manifest_bytes)), (descriptor["digest"], descriptor["size"]))
            manifest = json.loads(manifest_bytes)
            config = json.loads(blob(self.files, manifest["config"]["digest"]))
            self.assertEqual(config["architecture"], architecture)
            self.assertEqual(config["config"]["User"], "65534")
            layer = blob(self.files, manifest["layers"][0]["digest"])
            self.assertEqual(config["rootfs"]["diff_ids"], [sha256(gzip.decompress(layer))])
            with tarfile.open(fileobj=io.BytesIO(gzip.decompress(layer))) as tar:
                self.assertEqual(tar.extractfile("usr/bin/tool").read().decode(), f"built for {architecture}\n")

    def test_no_docker_manifest_and_no_stray_blob(self):
        self.assertNotIn("manifest.json", self.files, "Docker's manifest.json cannot say which architecture")
        blobs = {n for n in self.files if n.startswith("blobs/")}
        self.assertEqual(len(blobs), 1 + 2 * 3, "the index, and a manifest, config and layer for each")

    def test_platform_arguments_refused(self):
        tree = self.trees["amd64"]
        for arguments, message in [
            (["--platform", "amd64"], "is not ARCH=DIR"),
            (["--platform", f"AMD64={tree}"], "is not ARCH=DIR"),
            (["--platform", f"amd64={tree}", "--platform", f"amd64={tree}"], "--platform amd64 given twice"),
            (["--platform", f"amd64={tree}", "--root", tree], "not both"),
            (["--platform", f"amd64={tree}", "--architecture", "arm64"], "--architecture goes with --root"),
            (["--platform", f"arm64={self.workdir}/missing"], "is not a directory"),
            ([], "give --root DIR, or --platform ARCH=DIR"),
        ]:
            output = os.path.join(self.workdir, "refused.tar")
            result = subprocess.run([sys.executable, WRITER, "--ref", "tool:2", "--output", output,
                                     "--timestamp", "1", *arguments], capture_output=True, text=True)
            self.assertEqual(result.returncode, 2, arguments)
            self.assertIn(message, result.stderr, arguments)
            self.assertFalse(os.path.exists(output))


class Refusals(unittest.TestCase):
    def setUp(self):
        self.workdir = tempfile.mkdtemp(prefix="xpu-oci-archive-")
        self.addCleanup(shutil.rmtree, self.workdir, True)
        self.root = os.path.join(self.workdir, "root")
        os.makedirs(os.path.join(self.root, "dev"))
        self.output = os.path.join(self.workdir, "image.tar")

    def assert_refused(self, status, message, *arguments, root=None):
        result = write_archive(root or self.root, self.output, "--ref", "app:1", *arguments)
        self.assertEqual(result.returncode, status, result.stderr)
        self.assertIn(message, result.stderr)
        self.assertFalse(os.path.exists(self.output), "no archive after a refusal")
        self.assertEqual([n for n in os.listdir(self.workdir) if n.startswith(".")], [],
                         "no partial file left")

    def test_fifo_in_the_tree(self):
        os.mkfifo(os.path.join(self.root, "dev", "pipe"))
        self.assert_refused(1, os.path.join(self.root, "dev", "pipe") + " is a FIFO")

    def test_device_node_in_the_tree(self):
        if os.geteuid() != 0:
            self.skipTest("mknod needs root")
        os.mknod(os.path.join(self.root, "dev", "null"), stat.S_IFCHR | 0o666, os.makedev(1, 3))
        self.assert_refused(1, os.path.join(self.root, "dev", "null") + " is a device node")

    def test_bad_arguments(self):
        self.assert_refused(2, "must be a JSON array of strings", "--entrypoint", '["/bin/sh", 1]')
        self.assert_refused(2, "is not a JSON array", "--cmd", "[oops")
        self.assert_refused(2, "is not NAME=VALUE", "--env", "NOVALUE")
        self.assert_refused(2, "is not KEY=VALUE", "--label", "=x")
        self.assert_refused(2, "is not an absolute path", "--workdir", "relative")
        self.assert_refused(2, "is not a directory", root=os.path.join(self.workdir, "missing"))

    def test_output_inside_the_root(self):
        result = write_archive(self.root, os.path.join(self.root, "image.tar"), "--ref", "app:1")
        self.assertEqual(result.returncode, 2)
        self.assertIn("the archive would contain itself", result.stderr)

    def test_unreadable_file_is_named(self):
        if os.geteuid() == 0:
            self.skipTest("root reads every file")
        secret = os.path.join(self.root, "secret")
        with open(secret, "w") as f:
            f.write("x")
        os.chmod(secret, 0)
        self.assert_refused(1, secret)


if __name__ == "__main__":
    unittest.main()
