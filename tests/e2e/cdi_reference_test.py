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
import sys
import tempfile
import unittest

from xpud_cdi_fixture import XpudWithCdi

SOURCE_DIR = BUILD_DIR = WORK = None
CARDS = 4


class Reference(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.xpud = XpudWithCdi(SOURCE_DIR, BUILD_DIR, WORK, cards=CARDS)
        cls.spec_dir, cls.spec, cls.uuids = cls.xpud.spec_dir, cls.xpud.spec, cls.xpud.uuids

    @classmethod
    def tearDownClass(cls):
        cls.xpud.stop()

    def resolved(self, *names):
        code, report = self.xpud.cdi_check(*names)
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
                                                             f"CXPU_VISIBLE_DEVICES={index}",
                                                             f"KUNLUNXIN_XPU_UUIDS={self.uuids[index]}"]))

    def test_all_gets_every_card_once_and_every_index(self):
        got = self.resolved("kunlunxin.com/xpu=all")["resolved"]["kunlunxin.com/xpu=all"]
        self.assertEqual([n["path"] for n in got["nodes"]],
                         [f"/dev/xpu{i}" for i in range(CARDS)] + ["/dev/xpuctrl"])
        self.assertIn("XPU_VISIBLE_DEVICES=" + ",".join(map(str, range(CARDS))), got["env"])
        self.assertIn("CXPU_VISIBLE_DEVICES=" + ",".join(map(str, range(CARDS))), got["env"])
        self.assertIn("KUNLUNXIN_XPU_UUIDS=" + ",".join(self.uuids), got["env"])

    def test_an_unknown_card_does_not_resolve(self):
        code, report = self.xpud.cdi_check(f"kunlunxin.com/xpu={CARDS}")
        self.assertEqual(code, 1)
        self.assertIn("unresolvable CDI devices", report["resolved"][f"kunlunxin.com/xpu={CARDS}"]["error"])

    def test_the_helper_reports_what_the_library_rejects(self):
        # Two specs defining the same devices in one directory: the library's own conflict error,
        # which is also why xpud removes its old file when a reload renames it.
        copy = os.path.join(WORK, "conflict")
        os.makedirs(copy, exist_ok=True)
        for name in ("kunlunxin-a.json", "kunlunxin-b.json"):
            shutil.copy(self.spec, os.path.join(copy, name))
        code, report = self.xpud.cdi_check(directory=copy)
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
