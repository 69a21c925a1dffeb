"""A package build run the way the packaging tests run one: its output kept in a log beside the
build, and on failure an AssertionError with the log's end (a build's own error is near it)."""

import subprocess


def run_logged(command, log_path, what, **kwargs):
    """Runs command with stdout and stderr in log_path; raises with the log's last 6000 characters
    if it fails. kwargs go to subprocess.run (cwd, env, timeout)."""
    with open(log_path, "w") as log:
        build = subprocess.run(command, stdout=log, stderr=subprocess.STDOUT, **kwargs)
    if build.returncode != 0:
        with open(log_path, encoding="utf-8", errors="replace") as log:
            tail = log.read()[-6000:]
        raise AssertionError(f"{what} failed ({build.returncode}):\n{tail}")
