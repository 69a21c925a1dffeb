#!/usr/bin/env python3
"""The Chinese quick start (README_zh.md) stays true to the chart and to the English README:

- every command of its sh blocks is a command of the English README's or the chart README's sh
  blocks (those run as written in the fresh-machine test and the real-node suite), so a reader
  copies only commands that are tested;
- every chart value key its tables name exists in values.yaml, with the default the table gives;
- every `--set KEY=...` it mentions names a key of values.yaml;
- its pod asks for the chart's default resource on the chart's default nodes.

And README.md is for users: no commit hashes in it (history is in CHANGELOG.md).
Usage: readme_zh_test.py SOURCE_DIR
"""
import re
import sys
import unittest

import yaml

from markdown_text import fenced_blocks, read_file

SOURCE_DIR = sys.argv.pop(1) if len(sys.argv) > 1 else "."


def read(path):
    return read_file(SOURCE_DIR, path)


def commands(block_text):
    """The commands of an sh block: comments cut, blanks folded; a line in two columns (the
    English README's Debian and RHEL install block) gives each column."""
    found = []
    for line in block_text.splitlines():
        for column in re.split(r"\s{3,}", line.strip()):
            command = re.sub(r"(^|\s)#.*$", "", column).strip()
            if command:
                found.append(" ".join(command.split()))
    return found


def lookup(values, dotted):
    node = values
    for part in dotted.split("."):
        if not isinstance(node, dict) or part not in node:
            raise KeyError(dotted)
        node = node[part]
    return node


def rendered(value):
    """A value as the tables write it."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if value == "":
        return '""'
    if isinstance(value, dict):
        return ", ".join(f"{k}: {v}" for k, v in value.items())
    return str(value)


class ReadmeZh(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.zh = read("README_zh.md")
        cls.values = yaml.safe_load(read("charts/xpu-k8s-shim/values.yaml"))

    def test_commands_are_the_tested_ones(self):
        tested = set()
        for path in ("README.md", "charts/xpu-k8s-shim/README.md"):
            for block in fenced_blocks(read(path), ("sh", "")):
                tested.update(commands(block))
        zh_commands = [c for block in fenced_blocks(self.zh, ("sh",)) for c in commands(block)]
        self.assertGreater(len(zh_commands), 8, "README_zh.md has lost its commands")
        for command in zh_commands:
            self.assertTrue(command in tested, f"README_zh.md runs {command!r}, which no tested README block runs")

    def test_value_keys_and_defaults(self):
        rows = re.findall(r"^\| `([A-Za-z][\w.]*)` \| ([^|]*) \|", self.zh, flags=re.M)
        self.assertGreater(len(rows), 20, "README_zh.md has lost its value tables")
        for key, default in rows:
            try:
                value = lookup(self.values, key)
            except KeyError:
                self.fail(f"README_zh.md names the value {key}, which values.yaml does not have")
            if isinstance(value, list):
                continue  # tolerations: described, not written out
            shown = default.strip()
            if shown.startswith("`") and shown.endswith("`"):
                shown = shown[1:-1]
            self.assertEqual(shown, rendered(value), f"README_zh.md gives {key} the default {default.strip()}")

    def test_set_flags_name_values(self):
        keys = re.findall(r"--set ([A-Za-z][\w.]*)=", self.zh)
        self.assertTrue(keys)
        for key in keys:
            try:
                lookup(self.values, key)
            except KeyError:
                self.fail(f"README_zh.md sets {key}, which values.yaml does not have")

    def test_pod_asks_for_the_chart_resource(self):
        pods = [doc for block in fenced_blocks(self.zh, ("yaml",)) for doc in yaml.safe_load_all(block) if doc]
        self.assertEqual(len(pods), 1)
        pod = pods[0]
        self.assertEqual(pod["spec"]["nodeSelector"], self.values["nodeSelector"])
        limits = pod["spec"]["containers"][0]["resources"]["limits"]
        resource = self.values["devicePlugin"]["customizedResourceName"] or "kunlunxin.com/xpu"
        self.assertEqual(list(limits), [resource])


class ReadmeForUsers(unittest.TestCase):
    def test_no_commit_hashes(self):
        text = read("README.md")
        # A commit as people cite them: 7 to 40 hex digits with both a letter and a digit.
        hashes = [w for w in re.findall(r"\b[0-9a-f]{7,40}\b", text)
                  if re.search(r"[a-f]", w) and re.search(r"[0-9]", w)]
        self.assertEqual(hashes, [], "README.md cites commits; history belongs in CHANGELOG.md")


if __name__ == "__main__":
    unittest.main(verbosity=2)
