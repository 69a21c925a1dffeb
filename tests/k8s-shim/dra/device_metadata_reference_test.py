#!/usr/bin/env python3
"""The driver's device metadata files judged by k8s.io/dynamic-resource-allocation v0.37.2 itself.

dra-device-metadata-writer writes the files of three claims with the driver's code (a claim of its
own with two requests, one from a template with a subrequest and a share, a record without
attributes; a model with the characters Go's encoder escapes); tests/device-metadata-check decodes
each as a consumer does (devicemetadata.DecodeMetadataFromStream, with validation), decodes every
version of the stream on its own, and encodes the object again with the library's own serializer
as kubeletplugin/metadata.go writes a file: the text must be the file's, byte for byte. Label e2e:
the first run fetches the library through the Go module proxy.

Usage: device_metadata_reference_test.py SOURCE_DIR WRITER
"""

import json
import os
import subprocess
import sys
import tempfile
import unittest

# The Go build the CDI reference tests share.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "e2e"))
from xpud_cdi_fixture import build_go_program  # noqa: E402

SOURCE_DIR = WRITER = WORK = None


class DeviceMetadataReference(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.checker = build_go_program(SOURCE_DIR, "device-metadata-check", WORK, timeout=900)
        written = subprocess.run([WRITER, os.path.join(WORK, "metadata")], capture_output=True, text=True,
                                 timeout=30)
        if written.returncode != 0:
            raise AssertionError(f"dra-device-metadata-writer: {written.stderr}")
        cls.files = written.stdout.split()

    def check(self, *files):
        result = subprocess.run([self.checker, *files], capture_output=True,
                                text=True, timeout=60)
        self.assertEqual(result.returncode, 0, result.stderr)
        return [json.loads(line) for line in result.stdout.splitlines()]

    def test_the_library_reads_each_file_and_would_have_written_it_byte_for_byte(self):
        self.assertEqual(len(self.files), 4, self.files)
        reports = self.check(*self.files)
        for report in reports:
            self.assertEqual(report["versions"], ["metadata.resource.k8s.io/v1beta1",
                                                  "metadata.resource.k8s.io/v1alpha1"], report["path"])
        by_path = {os.path.relpath(r["path"], os.path.join(WORK, "metadata")): r["decoded"] for r in reports}
        train = by_path["team_train-xpus/xpus/metadata.json"]
        # The library's internal type has no JSON tags: its fields print with their Go names.
        self.assertEqual(train["Requests"][0]["Name"], "xpus")
        devices = train["Requests"][0]["Devices"]
        self.assertEqual([d["Name"] for d in devices], ["xpu-0", "xpu-1"])
        self.assertEqual(devices[0]["Attributes"]["resource.kubernetes.io/pciBusID"], {"string": "0000:30:00.0"})
        self.assertEqual(devices[0]["Attributes"]["driverVersion"], {"version": "5.0.21+6"})
        self.assertEqual(devices[0]["Attributes"]["memory"], {"int": 96 << 30})
        odd = by_path["team_train-xpus/odd/metadata.json"]
        self.assertEqual(odd["Requests"][0]["Devices"][0]["Attributes"]["model"],
                         {"string": "P<8>&0 \u2028OAM"})
        template = by_path["team_trainer-xpus-7x2kq/xpus/metadata.json"]
        self.assertEqual(template["PodClaimName"], "xpus")
        self.assertEqual(template["Requests"][0]["Name"], "xpus/big")
        self.assertEqual(template["Requests"][0]["Devices"][0]["Attributes"]["memory"], {"int": 8 << 30})
        self.assertIsNone(by_path["default_old/xpus/metadata.json"]["Requests"][0]["Devices"][0]["Attributes"])

    def test_the_same_object_in_another_text_is_caught(self):
        # The check itself: the first object's kind and apiVersion swapped is the same JSON, and
        # the library reads it, but it is not what the library writes.
        with open(self.files[0], encoding="utf-8") as f:
            text = f.read()
        kind, version = '  "kind": "DeviceMetadata",\n', '  "apiVersion": "metadata.resource.k8s.io/v1beta1",\n'
        self.assertIn(kind + version, text)
        swapped = os.path.join(WORK, "swapped.json")
        with open(swapped, "w", encoding="utf-8") as f:
            f.write(text.replace(kind + version, version + kind, 1))
        result = subprocess.run([self.checker, swapped], capture_output=True,
                                text=True, timeout=60)
        self.assertEqual(result.returncode, 1, result.stdout)
        self.assertIn("the library writes another text", result.stderr)


if __name__ == "__main__":
    SOURCE_DIR, WRITER = sys.argv[1:3]
    del sys.argv[1:3]
    with tempfile.TemporaryDirectory(prefix="xpu-device-metadata-") as WORK:
        unittest.main()
