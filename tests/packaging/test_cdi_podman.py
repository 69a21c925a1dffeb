#!/usr/bin/env python3
"""README "Using XPUs with podman", run as written: xpud (sim) writes its CDI spec to
/var/run/cdi, a busybox image is made with packaging/container/oci-archive.py and loaded, and
`podman run --device kunlunxin.com/xpu=N` gives the container exactly that card's nodes and
environment (then by UUID, `all`, and an unknown card refused).

The README's lines run unchanged, in new mount and PID namespaces where /tmp, /run (so
/var/run/cdi), /var/lib and /var/tmp are empty tmpfs: nothing reaches the host, and every
process started ends with the namespace. Two facts of these CI machines go into podman's
configuration (CONTAINERS_CONF, CONTAINERS_STORAGE_CONF) rather than into the README's commands,
as test_image.py explains: runc (crun 1.8 refuses the hybrid cgroup layout) and open-files and
process limits no higher than this process's own; plus no network and vfs storage.

Needs root, podman, runc, busybox-static, unshare (scripts/install-deps.sh ci). Label packaging.
Environment: XPU_SOURCE_DIR, XPU_BINARY_DIR.
"""

import os
import re
import resource
import shlex
import shutil
import subprocess
import unittest

SOURCE_DIR = os.path.abspath(os.environ.get("XPU_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", "..")))
BINARY_DIR = os.environ.get("XPU_BINARY_DIR", os.path.join(SOURCE_DIR, "build"))
README = os.path.join(SOURCE_DIR, "README.md")
SECTION = "### Using XPUs with podman"
MARK = "== xpu-cdi-test "


def readme_commands():
    """The sh block of the README's podman section, verbatim."""
    with open(README, encoding="utf-8") as f:
        text = f.read()
    start = text.index(SECTION)
    block = re.search(r"```sh\n(.*?)```", text[start:], re.S)
    if not block:
        raise AssertionError(f"no ```sh block under {SECTION!r} in README.md")
    return block.group(1)


# After the README's lines, in the same namespaces: the checks the README's comments promise,
# each section marked so the output can be cut apart.
FOLLOW_UP = r"""
echo "{mark}uuids"
for i in 0 1 2 3 4 5 6 7; do
  busctl --address=unix:path=/tmp/xpu-cdi.bus get-property com.kunlunxin.xpud1 \
    /com/kunlunxin/xpud1/devices/xpu$i com.kunlunxin.xpud1.Device Uuid | cut -d'"' -f2
done
uuid5=$(busctl --address=unix:path=/tmp/xpu-cdi.bus get-property com.kunlunxin.xpud1 \
  /com/kunlunxin/xpud1/devices/xpu5 com.kunlunxin.xpud1.Device Uuid | cut -d'"' -f2)
echo "{mark}by-uuid"
podman run --rm --device kunlunxin.com/xpu=$uuid5 localhost/busybox:xpu sh -c 'ls /dev | grep xpu; env | grep XPU'
echo "{mark}unknown"
podman run --rm --device kunlunxin.com/xpu=8 localhost/busybox:xpu true 2>&1 && echo "status 0" || echo "status $?"
echo "{mark}end"
"""


class PodmanReadme(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        if os.geteuid() != 0:
            raise AssertionError("needs root (podman with private storage, mount namespaces)")
        missing = [tool for tool in ["podman", "runc", "unshare", "busctl", "dbus-daemon"] if not shutil.which(tool)]
        missing += [path for path in ["/bin/busybox", os.path.join(BINARY_DIR, "xpud", "xpud")]
                    if not os.path.exists(path)]
        if missing:
            raise AssertionError(f"missing {', '.join(missing)} (scripts/install-deps.sh ci installs them)")
        if os.path.realpath(BINARY_DIR) != os.path.realpath(os.path.join(SOURCE_DIR, "build")):
            raise AssertionError(f"the README runs build/xpud/xpud: the build directory must be "
                                 f"{SOURCE_DIR}/build, not {BINARY_DIR}")
        # Outside /tmp, which the namespace replaces.
        cls.workdir = os.path.join(BINARY_DIR, "cdi-podman")
        shutil.rmtree(cls.workdir, ignore_errors=True)
        os.makedirs(cls.workdir)
        nofile = min(1024, resource.getrlimit(resource.RLIMIT_NOFILE)[1])
        nproc = min(1024, resource.getrlimit(resource.RLIMIT_NPROC)[1])
        containers_conf = os.path.join(cls.workdir, "containers.conf")
        with open(containers_conf, "w", encoding="utf-8") as f:
            f.write(f'[containers]\nnetns = "none"\n'
                    f'default_ulimits = ["nofile={nofile}:{nofile}", "nproc={nproc}:{nproc}"]\n'
                    f'[engine]\nruntime = "runc"\ncgroup_manager = "cgroupfs"\nevents_logger = "file"\n'
                    f'[network]\nnetwork_backend = "netavark"\nnetwork_config_dir = "{cls.workdir}/networks"\n')
        storage_conf = os.path.join(cls.workdir, "storage.conf")
        with open(storage_conf, "w", encoding="utf-8") as f:
            f.write('[storage]\ndriver = "vfs"\ngraphroot = "/var/lib/containers/storage"\n'
                    'runroot = "/run/containers/storage"\n')
        script = os.path.join(cls.workdir, "readme.sh")
        with open(script, "w", encoding="utf-8") as f:
            f.write("set -e\n" + readme_commands() + FOLLOW_UP.replace("{mark}", MARK))
        # The tree itself stays in sight where it is, also when it lies under /tmp (a clone in
        # /tmp/fresh): held at /mnt while the tmpfs go on, then bound back at its own path.
        source = shlex.quote(os.path.realpath(SOURCE_DIR))
        inner = (f"mount --rbind {source} /mnt && "
                 "for d in /tmp /run /var/lib /var/tmp; do mount -t tmpfs -o mode=1777 xpu-cdi-test $d; done && "
                 f"mkdir -p {source} && mount --rbind /mnt {source} && umount -l /mnt && "
                 f"cd {source} && exec sh {shlex.quote(script)}")
        env = dict(os.environ, CONTAINERS_CONF=containers_conf, CONTAINERS_STORAGE_CONF=storage_conf)
        # --kill-child: should this test be stopped, the namespace's first process (and with it every
        # process of the namespace) goes too.
        try:
            cls.result = subprocess.run(["unshare", "--mount", "--pid", "--fork", "--kill-child", "--mount-proc",
                                         "--propagation", "private", "sh", "-c", inner],
                                        capture_output=True, text=True, env=env, timeout=300)
        except subprocess.TimeoutExpired as expired:
            raise AssertionError(f"the README's commands did not finish in 300 s: {expired.stdout}{expired.stderr}")
        cls.sections = {}
        name = "readme"
        for line in cls.result.stdout.splitlines():
            if line.startswith(MARK):
                name = line[len(MARK):]
                cls.sections[name] = []
                continue
            cls.sections.setdefault(name, []).append(line)

    @classmethod
    def tearDownClass(cls):
        if hasattr(cls, "workdir"):
            shutil.rmtree(cls.workdir, ignore_errors=True)

    def output(self):
        return f"stdout:\n{self.result.stdout}\nstderr:\n{self.result.stderr}"

    def test_the_readme_runs_as_written(self):
        self.assertEqual(self.result.returncode, 0, self.output())
        self.assertIn("end", self.sections, self.output())

    def runs(self):
        """The README's two podman runs: the lines after `podman load`'s last one, cut where the
        second run's `ls` starts again at xpu0."""
        lines = self.sections.get("readme", [])
        loaded = [i for i, line in enumerate(lines) if line.startswith("Loaded image: ")]
        self.assertTrue(loaded, self.output())
        runs = lines[loaded[-1] + 1:]
        self.assertIn("xpu0", runs, self.output())
        second = runs.index("xpu0")
        return runs[:second], runs[second:]

    def test_one_card_by_index_gets_exactly_its_node_the_control_node_and_its_environment(self):
        uuids = self.sections["uuids"]
        one, _ = self.runs()
        self.assertEqual(sorted(one), sorted(["xpu1", "xpuctrl", "XPU_VISIBLE_DEVICES=1",
                                              "CXPU_VISIBLE_DEVICES=1",
                                              "KUNLUNXIN_XPU_UUIDS=" + uuids[1]]), self.output())

    def test_all_gets_every_card(self):
        uuids = self.sections["uuids"]
        _, every = self.runs()
        self.assertEqual(sorted(every), sorted([f"xpu{i}" for i in range(8)] + ["xpuctrl",
                                                "XPU_VISIBLE_DEVICES=0,1,2,3,4,5,6,7",
                                                "CXPU_VISIBLE_DEVICES=0,1,2,3,4,5,6,7",
                                                "KUNLUNXIN_XPU_UUIDS=" + ",".join(uuids)]), self.output())

    def test_a_card_by_uuid(self):
        uuids = self.sections["uuids"]
        self.assertEqual(sorted(self.sections["by-uuid"]),
                         sorted(["xpu5", "xpuctrl", "XPU_VISIBLE_DEVICES=5", "CXPU_VISIBLE_DEVICES=5",
                                 "KUNLUNXIN_XPU_UUIDS=" + uuids[5]]),
                         self.output())

    def test_an_unknown_card_is_refused(self):
        out = "\n".join(self.sections["unknown"])
        self.assertNotIn("status 0", out, self.output())
        self.assertIn("kunlunxin.com/xpu=8", out)


if __name__ == "__main__":
    unittest.main(verbosity=2)
