"""Whether a package build reused the main build's compiles.

scripts/test.sh builds the tree and then the packages through one compiler cache, with the same
flags and locale (packaging.deb builds with the build's flags, packaging.rpm's match the tree's
default), so that a cold CI run compiles the tree once, not three times. When it says so
(XPU_PACKAGE_BUILDS_SHARE_COMPILES=1), the package tests record their build's cache statistics
(CCACHE_STATSLOG) and fail when more than a handful of its compiles missed: the few that may are
the objects that hold an install path (the topology table's default, the shim's role directory)
and CMake's own compiler checks. A definition that carries the prefix into every file, or a flag
that differs, shows up here instead of as minutes in every cold run."""

import os
import re
import subprocess

EXPECTED = os.environ.get("XPU_PACKAGE_BUILDS_SHARE_COMPILES") == "1"
# topology_quirks.cpp, the shim's dispatcher, CMake's C and C++ compiler checks, and slack for a
# generated file or two.
MOST_MISSES = 8


def statslog_env(workdir):
    """The environment entries that make the build record its cache statistics in workdir, when
    the test is to check them; else none."""
    if not EXPECTED:
        return {}
    return {"CCACHE_STATSLOG": os.path.join(workdir, "ccache-stats.log")}


def assert_compiles_shared(test, env):
    if not EXPECTED:
        test.skipTest("the build is not expected to share the main build's compiles "
                      "(XPU_PACKAGE_BUILDS_SHARE_COMPILES, set by scripts/test.sh)")
    log = env["CCACHE_STATSLOG"]
    test.assertTrue(os.path.exists(log), f"{log}: the package build made no compile through ccache")
    stats = subprocess.run(["ccache", "--show-log-stats"], env=dict(os.environ, CCACHE_STATSLOG=log),
                           capture_output=True, text=True, check=True).stdout
    hits = re.search(r"^\s*Hits:\s+(\d+)", stats, re.M)
    misses = re.search(r"^\s*Misses:\s+(\d+)", stats, re.M)
    test.assertTrue(hits and misses, f"ccache --show-log-stats said:\n{stats}")
    test.assertLessEqual(int(misses.group(1)), MOST_MISSES,
                         f"the package build compiled {misses.group(1)} files anew and reused "
                         f"{hits.group(1)} of the main build's: its flags, definitions or locale "
                         f"differ from the main build's\n{stats}")
