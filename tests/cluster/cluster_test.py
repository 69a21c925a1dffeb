#!/usr/bin/env python3
"""The real-node suite: a single-node Kubernetes cluster on this machine, the chart installed
into it with the locally built image, and the operator's scenarios asserted against it.

Two processes. The outer one (this file run as the test) does what must outlive the node and
puts the host back as it was: it saves the sysctls the kubelet changes, makes the mount points
and the sim cards' stand-in device nodes that do not exist yet, builds the images, then runs
the inner one in new mount, network and PID namespaces (unshare). The inner one starts the node
and runs the scenarios; when it exits, the kernel ends every process it started (containers
too) and drops its mounts and network. The outer one then removes the kubelet's cgroups, the
device nodes and mount points it made, and restores the sysctls.

Usage: cluster_test.py SOURCE_DIR BUILD_DIR [--keep] [--only N,N] [--kubernetes v1.37|v1.35|v1.38]
"""

import argparse
import fcntl
import json
import os
import shutil
import signal
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import images  # noqa: E402
from node import NODE_DIRECTORIES, remove_kubepods_cgroups  # noqa: E402

# Set by the kubelet on start (it wants the kernel to panic rather than run on after an oops and
# to allow overcommitting memory); the machine's own values come back at the end.
KUBELET_SYSCTLS = ["vm/overcommit_memory", "kernel/panic", "kernel/panic_on_oops"]
CARD_NODES = [f"/dev/xpu{i}" for i in range(8)] + ["/dev/xpuctrl"]
# The releases the suite builds (kube/<release>/go.mod pins the exact version): the newest, which
# runs every scenario in .ci/run, the oldest still supported, and the next while it is a
# pre-release (README.md: what runs where).
DEFAULT_RELEASE = "v1.37"
RELEASES = [DEFAULT_RELEASE, "v1.35", "v1.38"]
# The machine-wide lock that keeps a second run (from any build directory) waiting.
MACHINE_LOCK_DIRECTORY = "/run/lock"
# Where the node's programs write by default: the test fails if one of them appears on the host.
WATCHED_PATHS = ["/opt/containerd", "/run/containerd", "/etc/cni", "/var/lib/kubelet",
                 "/var/lib/containerd", "/etc/kubernetes", "/var/run/cdi", "/xpu-runtime",
                 "/var/lib/containers", "/etc/containerd"]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("source_dir")
    parser.add_argument("build_dir")
    parser.add_argument("--inner", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--keep", action="store_true", help="keep the run directory (logs)")
    parser.add_argument("--only", default="", help="comma-separated scenario numbers")
    parser.add_argument("--kubernetes", default=DEFAULT_RELEASE, choices=RELEASES,
                        help=f"the Kubernetes release to run (default {DEFAULT_RELEASE})")
    args = parser.parse_args()
    source_dir, build_dir = os.path.abspath(args.source_dir), os.path.abspath(args.build_dir)
    if args.inner:
        import scenarios
        return scenarios.run_inside(source_dir, build_dir, run_directory(build_dir),
                                    programs_directory(build_dir, args.kubernetes),
                                    [int(n) for n in args.only.split(",") if n])
    # SIGTERM (a CI run stopping this suite beside a failed stage, ctest's timeout) as an exception,
    # so that the node's namespace is stopped and the host restored, as on Ctrl-C; Python's
    # default would end the process at once and leave the node's paths and cgroups behind.
    signal.signal(signal.SIGTERM, lambda number, frame: sys.exit(128 + number))
    return run_outside(source_dir, build_dir, args)


def run_directory(build_dir):
    return os.path.join(build_dir, "cluster", "run")


def tools_directory(build_dir):
    """Where build-registry.sh puts the registry, whatever the Kubernetes release."""
    return os.path.join(build_dir, "cluster", "tools")


def programs_directory(build_dir, release):
    """Where build-node.sh puts a release's programs: the default release's in `programs` (which
    bench/dra_slices.sh and the README name), any other's beside it."""
    name = "programs" if release == DEFAULT_RELEASE else f"programs-{release}"
    return os.path.join(build_dir, "cluster", name)


def run_outside(source_dir, build_dir, args):
    if os.geteuid() != 0:
        print("SKIP: the cluster suite needs root (namespaces, mounts, device nodes)")
        return 77
    missing = [tool for tool in ["unshare", "runc", "openssl", "busctl", "ip", "dbus-daemon"]
               if shutil.which(tool) is None]
    missing += [path for path in ["/usr/lib/cni/bridge", "/usr/lib/cni/host-local",
                                  os.path.join(build_dir, "tools", "helm")]
                if not os.path.exists(path)]
    if missing:
        print(f"FAIL: missing {', '.join(missing)} (scripts/install-deps.sh ci installs them; "
              "helm comes from the packaging.helm_tool test)")
        return 1
    # One node per machine, whichever build directory runs it: a second run would share the host's
    # mount points, device nodes and ports. A second run waits its turn rather than failing, so
    # several worktrees can queue their runs.
    os.makedirs(MACHINE_LOCK_DIRECTORY, exist_ok=True)
    lock = open(os.path.join(MACHINE_LOCK_DIRECTORY, "xpu-cluster-suite.lock"), "w")
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        print("[outer] another cluster suite runs on this machine; waiting for it to end", flush=True)
        fcntl.flock(lock, fcntl.LOCK_EX)
    started = time.monotonic()
    programs = programs_directory(build_dir, args.kubernetes)
    subprocess.run([os.path.join(HERE, "build-node.sh"), programs, args.kubernetes], check=True)
    print(f"[outer] Kubernetes {args.kubernetes}, etcd and containerd programs ready "
          f"({time.monotonic() - started:.0f} s)", flush=True)
    subprocess.run([os.path.join(HERE, "build-registry.sh"), tools_directory(build_dir)], check=True)
    print(f"[outer] the registry program ready ({time.monotonic() - started:.0f} s)", flush=True)
    image_dir = os.path.join(build_dir, "cluster", "images")
    archives = images.build_all(source_dir, build_dir, image_dir)
    print(f"[outer] images ready ({time.monotonic() - started:.0f} s)", flush=True)

    run_dir = run_directory(build_dir)
    shutil.rmtree(run_dir, ignore_errors=True)
    os.makedirs(run_dir)
    with open(os.path.join(run_dir, "images.json"), "w", encoding="utf-8") as f:
        json.dump(archives, f)
    saved = {name: read(f"/proc/sys/{name}") for name in KUBELET_SYSCTLS}
    existed = {path for path in WATCHED_PATHS if os.path.lexists(path)}
    made = []
    code = 1
    try:
        for path in NODE_DIRECTORIES:
            made += make_directories(path)
        for path in CARD_NODES:
            if not os.path.exists(path):
                # Same major/minor as /dev/null: the runtime stats each device path the plugin
                # hands out, and a write to one of these goes nowhere.
                subprocess.run(["mknod", "-m", "0666", path, "c", "1", "3"], check=True)
                made.append(path)
        inner = [sys.executable, os.path.abspath(__file__), source_dir, build_dir, "--inner"]
        if args.only:
            inner += ["--only", args.only]
        inner += ["--kubernetes", args.kubernetes]
        # --kill-child: if this process is stopped, the node's namespace ends with it.
        node = subprocess.Popen(["unshare", "--mount", "--net", "--pid", "--fork", "--mount-proc",
                                 "--propagation", "private", "--kill-child=SIGTERM", *inner])
        try:
            code = node.wait()
        except BaseException:
            stop_namespace(node)
            raise
    finally:
        # A second Ctrl-C must not cut the restoring short.
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        remove_kubepods_cgroups()
        for path in reversed(made):
            try:
                os.rmdir(path) if os.path.isdir(path) and not os.path.islink(path) else os.unlink(path)
            except OSError as error:
                print(f"[outer] could not remove {path}: {error}")
        for name, value in saved.items():
            write(f"/proc/sys/{name}", value)
        if not args.keep and code == 0:
            shutil.rmtree(run_dir, ignore_errors=True)
    left = [path for path in made if os.path.lexists(path)]
    left += [path for path in WATCHED_PATHS if path not in existed and os.path.lexists(path)]
    changed = [name for name, value in saved.items() if read(f"/proc/sys/{name}") != value]
    if left or changed:
        print(f"FAIL: the host was not restored: left {left}, sysctls changed {changed}")
        return 1
    print(f"[outer] host restored (sysctls, {len(made)} paths, cgroups); "
          f"total {time.monotonic() - started:.0f} s")
    return code


def stop_namespace(node):
    """SIGTERM lets the inner process stop the node in order; SIGKILL ends the namespace."""
    node.terminate()
    try:
        node.wait(60)
    except subprocess.TimeoutExpired:
        node.kill()
        node.wait()


def make_directories(path):
    """Makes path and its missing parents; returns those it made, outermost first."""
    made = []
    missing = []
    current = path
    while not os.path.exists(current):
        missing.append(current)
        current = os.path.dirname(current)
    for directory in reversed(missing):
        os.mkdir(directory)
        made.append(directory)
    return made


def read(path):
    with open(path, encoding="utf-8") as f:
        return f.read().strip()


def write(path, value):
    with open(path, "w", encoding="utf-8") as f:
        f.write(value)


if __name__ == "__main__":
    sys.exit(main())
