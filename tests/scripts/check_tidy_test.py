#!/usr/bin/env python3
"""scripts/check-tidy.py's choice of compile command, on a compile database as CMake writes it.

A production file that a test or a fake compiles too has one command per target. The test's
carries the tests' precompiled header, made by GCC in the main build, which clang-tidy refuses
("not a valid precompiled PCH file"): CI's clang-tidy failed on xpuml_return_codes.cpp, which the
fake libxpuml and its test compile too, until the production target's command was the one taken.

Usage: check_tidy_test.py SOURCE_DIR
"""
import importlib.util
import os
import sys
import unittest

SOURCE_DIR = sys.argv.pop(1) if len(sys.argv) > 1 else "."


def load_check_tidy():
    spec = importlib.util.spec_from_file_location(
        "check_tidy", os.path.join(SOURCE_DIR, "scripts", "check-tidy.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def command(source, target_dir, extra=""):
    return {"directory": "/src/build", "file": source,
            "command": f"/usr/bin/c++ -O2 {extra} -o {target_dir}/{os.path.basename(source)}.o -c {source}"}


class CommandsByFile(unittest.TestCase):
    def setUp(self):
        self.check_tidy = load_check_tidy()

    def test_the_production_target_wins_over_a_test_that_compiles_the_file_too(self):
        source = "/src/xpud/backends/xpuml/xpuml_return_codes.cpp"
        production = command(source, "xpud/backends/xpuml/CMakeFiles/xpud-backend-xpuml.dir")
        test = command(source, "tests/fakes/libxpuml/CMakeFiles/fake_xpuml_exit_test.dir",
                       "-include /src/build/tests/CMakeFiles/xpu-test-pch.dir/cmake_pch.hxx")
        for database in ([production, test], [test, production]):
            chosen = self.check_tidy.commands_by_file(database)[source]
            self.assertIs(chosen, production, [e["command"] for e in database])

    def test_a_file_with_one_command_keeps_it(self):
        source = "/src/tests/support/child_process.cpp"
        only = command(source, "tests/support/CMakeFiles/xpu-test-support.dir")
        self.assertIs(self.check_tidy.commands_by_file([only])[source], only)


if __name__ == "__main__":
    unittest.main()
