#!/usr/bin/env python3
"""A prepared claim's CDI spec judged by the CDI project's own library, next to xpud's spec.

The real xpud (sim backend, 2 cards) on a private dbus-daemon writes its spec into a directory of
the test's; dra-claim-spec-writer prepares a claim for both cards with the driver's code and writes
the claim's spec into the same directory; tests/cdi-check loads the directory and injects the CDI
names the kubelet would pass, together and in order, as a runtime does for one container. Label
e2e: the first run fetches the CDI module through the Go module proxy.

Usage: claim_cdi_reference_test.py SOURCE_DIR BUILD_DIR WRITER
"""

import os
import subprocess
import sys
import tempfile
import unittest

# The fixture xpud's own CDI reference test uses.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "e2e"))
from xpud_cdi_fixture import XpudWithCdi  # noqa: E402

SOURCE_DIR = BUILD_DIR = WRITER = WORK = None
UID = "0d6c9a52-7f3b-4b8e-9c1d-2e4f6a8b0c1d"


class ClaimReference(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.xpud = XpudWithCdi(SOURCE_DIR, BUILD_DIR, WORK, cards=2)
        cls.spec_dir, cls.uuids = cls.xpud.spec_dir, cls.xpud.uuids

    @classmethod
    def tearDownClass(cls):
        cls.xpud.stop()

    def cdi_check(self, *names):
        code, report = self.xpud.cdi_check(*names)
        self.assertEqual(report["errors"], {})
        self.assertEqual(code, 0, report)
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
        env = [e for e in got["env"]
               if e.startswith(("XPU_VISIBLE_DEVICES=", "CXPU_VISIBLE_DEVICES=", "KUNLUNXIN_XPU_UUIDS="))]
        self.assertEqual(sorted(env), sorted(["XPU_VISIBLE_DEVICES=0,1", "CXPU_VISIBLE_DEVICES=0,1",
                                              f"KUNLUNXIN_XPU_UUIDS={self.uuids[0]},{self.uuids[1]}"]))
        # The claim's entry alone brings no node: the cards' entries do.
        self.assertEqual(report["resolved"][claim_name]["nodes"], [])


if __name__ == "__main__":
    SOURCE_DIR, BUILD_DIR, WRITER = sys.argv[1:4]
    with tempfile.TemporaryDirectory(prefix="dra-cdi-") as work:
        WORK = work
        sys.argv = sys.argv[:1]
        unittest.main()
