#!/usr/bin/env python3
"""xpud's CDI spec judged by the CDI project's own library, not by our reading of the format.

The real xpud (sim backend, 4 cards) on a private dbus-daemon writes its spec into a directory
of the test's; tests/cdi-check (a small Go program over tags.cncf.io/container-device-interface's
pkg/cdi cache, the code containerd, CRI-O and podman use) loads that directory, reports every
error, and resolves names as a runtime injects them. Label e2e: the first run fetches the module
through the Go module proxy.

Usage: cdi_reference_test.py SOURCE_DIR BUILD_DIR
"""

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import unittest

SOURCE_DIR = BUILD_DIR = WORK = None
CARDS = 4


def wait_for(what, seconds, condition):
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {seconds} s waiting for {what}")
        time.sleep(0.05)


def cdi_check(directory, *names):
    result = subprocess.run([os.path.join(WORK, "cdi-check"), directory, *names],
                            capture_output=True, text=True, timeout=60)
    try:
        report = json.loads(result.stdout)
    except json.JSONDecodeError as error:
        raise AssertionError(f"cdi-check printed no report ({error}): {result.stdout}{result.stderr}")
    return result.returncode, report


class Reference(unittest.TestCase):
    processes = []

    @classmethod
    def setUpClass(cls):
        env = dict(os.environ, GOFLAGS="-mod=mod")
        built = subprocess.run([os.path.join(SOURCE_DIR, "scripts", "go"), "build", "-o",
                                os.path.join(WORK, "cdi-check"), "."],
                               cwd=os.path.join(SOURCE_DIR, "tests", "cdi-check"), env=env,
                               capture_output=True, text=True, timeout=600)
        if built.returncode != 0:
            raise AssertionError(f"building tests/cdi-check failed: {built.stderr}")
        cls.spec_dir = os.path.join(WORK, "cdi")
        bus = os.path.join(WORK, "bus")
        cls.address = f"unix:path={bus}"
        config = os.path.join(WORK, "xpud.conf")
        with open(config, "w", encoding="utf-8") as f:
            f.write(f"[daemon]\nbackend = sim\n[sim]\ndevices = {CARDS}\n"
                    f"[cdi]\nenabled = true\ndirectory = {cls.spec_dir}\n")
        cls.start(["dbus-daemon", "--session", "--nofork", "--nopidfile", f"--address={cls.address}"], "dbus")
        wait_for("the private bus", 10, lambda: os.path.exists(bus))
        cls.xpud = cls.start([os.path.join(BUILD_DIR, "xpud", "xpud"), "--bus-address", cls.address,
                              "--config", config], "xpud")
        cls.spec = os.path.join(cls.spec_dir, "kunlunxin-xpu.json")
        wait_for("xpud's CDI spec", 20, lambda: os.path.exists(cls.spec) and cls.uuid_of(CARDS - 1))
        cls.uuids = [cls.uuid_of(i) for i in range(CARDS)]

    @classmethod
    def start(cls, argv, name):
        with open(os.path.join(WORK, name + ".log"), "w", encoding="utf-8") as log:
            process = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT)
        cls.processes.append(process)
        return process

    @classmethod
    def uuid_of(cls, index):
        result = subprocess.run(["busctl", f"--address={cls.address}", "get-property", "com.kunlunxin.xpud1",
                                 f"/com/kunlunxin/xpud1/devices/xpu{index}", "com.kunlunxin.xpud1.Device", "Uuid"],
                                capture_output=True, text=True, timeout=10)
        return result.stdout.split('"')[1] if result.returncode == 0 else None

    @classmethod
    def tearDownClass(cls):
        for process in reversed(cls.processes):
            process.terminate()
            try:
                process.wait(10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()

    def resolved(self, *names):
        code, report = cdi_check(self.spec_dir, *names)
        self.assertEqual(report["errors"], {})
        self.assertEqual(code, 0, report)
        return report

    def test_the_library_loads_the_spec_with_every_name(self):
        report = self.resolved()
        expected = [f"kunlunxin.com/xpu={name}" for name in [*map(str, range(CARDS)), *self.uuids, "all"]]
        self.assertEqual(sorted(report["devices"]), sorted(expected))
        with open(self.spec, encoding="utf-8") as f:
            # Names starting with a digit, and hostPath, came with 0.5.0; nothing newer is used.
            self.assertEqual(json.load(f)["cdiVersion"], "0.5.0")

    def test_a_card_by_index_or_uuid_gets_its_node_the_control_node_and_its_environment(self):
        for index in (0, 2):
            for name in (str(index), self.uuids[index]):
                qualified = f"kunlunxin.com/xpu={name}"
                got = self.resolved(qualified)["resolved"][qualified]
                self.assertEqual([n["path"] for n in got["nodes"]], [f"/dev/xpu{index}", "/dev/xpuctrl"], name)
                # The sim cards stand in for /dev/null (what exists on every host), as c 1:3.
                for node in got["nodes"]:
                    self.assertEqual((node["type"], node["major"], node["minor"], node["access"]), ("c", 1, 3, "rw"))
                self.assertEqual(sorted(got["env"]), sorted([f"XPU_VISIBLE_DEVICES={index}",
                                                             f"KUNLUNXIN_XPU_UUIDS={self.uuids[index]}"]))

    def test_all_gets_every_card_once_and_every_index(self):
        got = self.resolved("kunlunxin.com/xpu=all")["resolved"]["kunlunxin.com/xpu=all"]
        self.assertEqual([n["path"] for n in got["nodes"]],
                         [f"/dev/xpu{i}" for i in range(CARDS)] + ["/dev/xpuctrl"])
        self.assertIn("XPU_VISIBLE_DEVICES=" + ",".join(map(str, range(CARDS))), got["env"])
        self.assertIn("KUNLUNXIN_XPU_UUIDS=" + ",".join(self.uuids), got["env"])

    def test_an_unknown_card_does_not_resolve(self):
        code, report = cdi_check(self.spec_dir, f"kunlunxin.com/xpu={CARDS}")
        self.assertEqual(code, 1)
        self.assertIn("unresolvable CDI devices", report["resolved"][f"kunlunxin.com/xpu={CARDS}"]["error"])

    def test_the_helper_reports_what_the_library_rejects(self):
        # Two specs defining the same devices in one directory: the library's own conflict error,
        # which is also why xpud removes its old file when a reload renames it.
        copy = os.path.join(WORK, "conflict")
        os.makedirs(copy, exist_ok=True)
        for name in ("kunlunxin-a.json", "kunlunxin-b.json"):
            shutil.copy(self.spec, os.path.join(copy, name))
        code, report = cdi_check(copy)
        self.assertEqual(code, 1)
        self.assertIn("conflicting device", json.dumps(report["errors"]))


def main():
    global SOURCE_DIR, BUILD_DIR, WORK
    SOURCE_DIR, BUILD_DIR = map(os.path.abspath, sys.argv[1:3])
    WORK = tempfile.mkdtemp(prefix="xpu-cdi-reference-")
    try:
        unittest.main(argv=[sys.argv[0], "-v"], exit=False).result.wasSuccessful() or sys.exit(1)
    finally:
        shutil.rmtree(WORK, ignore_errors=True)


if __name__ == "__main__":
    main()
