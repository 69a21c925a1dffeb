"""The images the test node runs, built here because no registry serves any: the shim's own
(packaging/container/build-image.sh, the image users get), a pause image for pod sandboxes and a
busybox image for the workload pods, both written with the same OCI archive writer."""

import json
import os
import shutil
import subprocess

HERE = os.path.dirname(os.path.abspath(__file__))
PAUSE = "localhost/xpu-cluster-test/pause:1"
BUSYBOX = "localhost/xpu-cluster-test/busybox:1"
BUSYBOX_APPLETS = ["sh", "env", "ls", "cat", "sleep", "stat", "readlink", "grep", "test"]


def build_all(source_dir, build_dir, image_dir):
    """Returns {name: archive path} for pause, busybox and shim; rebuilt when missing."""
    os.makedirs(image_dir, exist_ok=True)
    archives = {
        "pause": os.path.join(image_dir, "pause.tar"),
        "busybox": os.path.join(image_dir, "busybox.tar"),
    }
    if not os.path.exists(archives["pause"]):
        build_pause(source_dir, image_dir, archives["pause"])
    if not os.path.exists(archives["busybox"]):
        build_busybox(source_dir, image_dir, archives["busybox"])
    archives["shim"] = build_shim(source_dir, build_dir, image_dir)
    return archives


def write_archive(source_dir, rootfs, reference, entrypoint, output, user=None):
    argv = [os.path.join(source_dir, "packaging", "container", "oci-archive.py"),
            "--root", rootfs, "--ref", reference, "--entrypoint", json.dumps(entrypoint),
            "--output", output]
    if user:
        argv += ["--user", user]
    subprocess.run(argv, check=True)


def build_pause(source_dir, image_dir, output):
    rootfs = fresh(os.path.join(image_dir, "pause-root"))
    subprocess.run(["gcc", "-static", "-O2", "-Wall", "-Wextra", "-Werror", "-o",
                    os.path.join(rootfs, "pause"), os.path.join(HERE, "pause", "pause.c")], check=True)
    subprocess.run(["strip", os.path.join(rootfs, "pause")], check=True)
    write_archive(source_dir, rootfs, PAUSE, ["/pause"], output, user="65535:65535")
    shutil.rmtree(rootfs)


def build_busybox(source_dir, image_dir, output):
    busybox = "/bin/busybox"
    if not os.path.exists(busybox):
        raise RuntimeError("no /bin/busybox: scripts/install-deps.sh ci installs busybox-static")
    rootfs = fresh(os.path.join(image_dir, "busybox-root"))
    os.makedirs(os.path.join(rootfs, "bin"))
    shutil.copy2(busybox, os.path.join(rootfs, "bin", "busybox"))
    for applet in BUSYBOX_APPLETS:
        os.symlink("busybox", os.path.join(rootfs, "bin", applet))
    for directory in ["tmp", "etc"]:
        os.makedirs(os.path.join(rootfs, directory))
    write_archive(source_dir, rootfs, BUSYBOX, ["/bin/sh"], output)
    shutil.rmtree(rootfs)


def build_shim(source_dir, build_dir, image_dir):
    """The shim's image from this build's binary, for this machine's architecture alone (the
    two-architecture index is packaging.image's); returns the archive's path."""
    output = os.path.join(image_dir, "shim")
    architecture = subprocess.run(["dpkg", "--print-architecture"], capture_output=True, text=True,
                                  check=True).stdout.strip()
    subprocess.run([os.path.join(source_dir, "packaging", "container", "build-image.sh"),
                    "--arch", architecture, "--binary", os.path.join(build_dir, "k8s-shim", "xpu-k8s-shim"),
                    "--output", output], check=True)
    archives = [name for name in os.listdir(output) if name.endswith(".tar")]
    if len(archives) != 1:
        raise RuntimeError(f"build-image.sh left {archives} in {output}, expected one archive")
    return os.path.join(output, archives[0])


def fresh(path):
    shutil.rmtree(path, ignore_errors=True)
    os.makedirs(path)
    return path
