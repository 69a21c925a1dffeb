#!/usr/bin/env python3
"""A prepared claim's CDI spec judged by the CDI project's own library, next to xpud's spec.

The real xpud (sim backend, 2 cards) on a private dbus-daemon writes its spec into a directory of
the test's; dra-claim-spec-writer prepares a claim for both cards with the driver's code and writes
the claim's spec into the same directory; tests/cdi-check loads the directory and injects the CDI
names the kubelet would pass, together and in order, as a runtime does for one container. Label
e2e: the first run fetches the CDI module through the Go module proxy.

Usage: claim_cdi_reference_test.py SOURCE_DIR BUILD_DIR WRITER
"""

import json
import os
import subprocess
import sys
import tempfile
import time
import unittest

SOURCE_DIR = BUILD_DIR = WRITER = WORK = None
UID = "0d6c9a52-7f3b-4b8e-9c1d-2e4f6a8b0c1d"


def wait_for(what, seconds, condition):
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {seconds} s waiting for {what}")
        time.sleep(0.05)


class ClaimReference(unittest.TestCase):
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
            f.write("[daemon]\nbackend = sim\n[sim]\ndevices = 2\n"
                    f"[cdi]\nenabled = true\ndirectory = {cls.spec_dir}\n")
        cls.start(["dbus-daemon", "--session", "--nofork", "--nopidfile", f"--address={cls.address}"], "dbus")
        wait_for("the private bus", 10, lambda: os.path.exists(bus))
        cls.start([os.path.join(BUILD_DIR, "xpud", "xpud"), "--bus-address", cls.address,
                   "--config", config], "xpud")
        spec = os.path.join(cls.spec_dir, "kunlunxin-xpu.json")
        wait_for("xpud's CDI spec", 20, lambda: os.path.exists(spec) and cls.uuid_of(1))
        cls.uuids = [cls.uuid_of(i) for i in range(2)]

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

    def cdi_check(self, *names):
        result = subprocess.run([os.path.join(WORK, "cdi-check"), self.spec_dir, *names],
                                capture_output=True, text=True, timeout=60)
        try:
            report = json.loads(result.stdout)
        except json.JSONDecodeError as error:
            raise AssertionError(f"cdi-check printed no report ({error}): {result.stdout}{result.stderr}")
        self.assertEqual(report["errors"], {})
        self.assertEqual(result.returncode, 0, report)
        return report

    def test_the_claims_names_give_both_cards_and_the_claims_environment(self):
        written = subprocess.run([WRITER, self.spec_dir, UID, "xpus", f"1={self.uuids[1]}",
                                  f"0={self.uuids[0]}"], capture_output=True, text=True, timeout=10)
        self.assertEqual(written.returncode, 0, written.stderr)
        ids = written.stdout.split()
        claim_name = f"kunlunxin.com/claim={UID}-xpus"
        # The cards by UUID in allocation order, the claim's entry last.
        self.assertEqual(ids, [f"kunlunxin.com/xpu={self.uuids[1]}", f"kunlunxin.com/xpu={self.uuids[0]}",
                               claim_name])
        together = ",".join(ids)
        report = self.cdi_check(together, claim_name)
        self.assertIn(claim_name, report["devices"])
        got = report["resolved"][together]
        self.assertEqual(sorted(n["path"] for n in got["nodes"]), ["/dev/xpu0", "/dev/xpu1", "/dev/xpuctrl"])
        env = [e for e in got["env"] if e.startswith(("XPU_VISIBLE_DEVICES=", "KUNLUNXIN_XPU_UUIDS="))]
        self.assertEqual(sorted(env), sorted(["XPU_VISIBLE_DEVICES=0,1",
                                              f"KUNLUNXIN_XPU_UUIDS={self.uuids[0]},{self.uuids[1]}"]))
        # The claim's entry alone brings no node: the cards' entries do.
        self.assertEqual(report["resolved"][claim_name]["nodes"], [])


if __name__ == "__main__":
    SOURCE_DIR, BUILD_DIR, WRITER = sys.argv[1:4]
    with tempfile.TemporaryDirectory(prefix="dra-cdi-") as work:
        WORK = work
        sys.argv = sys.argv[:1]
        unittest.main()
