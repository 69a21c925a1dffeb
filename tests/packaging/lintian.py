"""lintian on a .changes file, as the .deb tests of both architectures run it: every tag shown
(info included), and any error tag, or lintian's own failure, fails the test."""

import subprocess


def assert_no_errors(test, changes):
    result = subprocess.run(["lintian", "--tag-display-limit", "0", "--display-info", changes],
                            capture_output=True, text=True, timeout=900)
    print(result.stdout)
    errors = [line for line in result.stdout.splitlines() if line.startswith("E:")]
    test.assertEqual(errors, [], result.stdout + result.stderr)
    test.assertEqual(result.returncode, 0, result.stdout + result.stderr)
