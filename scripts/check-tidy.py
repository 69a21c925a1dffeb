#!/usr/bin/env python3
"""Fails, printing each finding once, when clang-tidy 14 finds anything in the production code.

The production code is every .cpp file of the production folders (common/, xpud/, xpud-api-proxy/,
xpuctl/, k8s-shim/) that git tracks or would track, checked with the compile commands of a build
directory (its generated protobuf and D-Bus headers must be built), and the tree's own headers
those files include. The checks are the tree's .clang-tidy.

A translation unit found clean is remembered in a cache (XPU_TIDY_CACHE_DIR, by default
~/.cache/xpu-tidy), keyed on clang-tidy's version, .clang-tidy, the file's compile command and the
content of every file the build's dependency record (ninja -t deps) says it includes: a second run
checks only what changed. A finding is never cached.

Usage: scripts/check-tidy.py [BUILD_DIR]    (default: build; clang-tidy-14: install-deps.sh ci)
"""

import concurrent.futures
import hashlib
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import time

CLANG_TIDY = "clang-tidy-14"
PRODUCTION_DIRS = ("common", "xpud", "xpud-api-proxy", "xpuctl", "k8s-shim")
# "FILE:LINE:COL: error: TEXT [CHECK]" opens a finding; the lines up to the next one are its
# quoted code and notes.
DIAGNOSTIC = re.compile(r"^(/[^:]+):\d+:\d+: (error|warning): .*\[[^\]]+\]$")


def fail(message):
    print(f"check-tidy.py: {message}", file=sys.stderr)
    sys.exit(1)


def production_sources(root):
    # Tracked, and new files git does not ignore: a file is checked before its first commit.
    listed = subprocess.run(["git", "-C", root, "ls-files", "-z", "--cached", "--others",
                             "--exclude-standard", "--", "*.cpp"], check=True,
                            capture_output=True, text=True).stdout.split("\0")
    return sorted(p for p in listed if p.split("/", 1)[0] in PRODUCTION_DIRS)


def dependencies_by_object(build_dir):
    """Maps each object ninja built to the files its compile read, from ninja's deps log."""
    out = subprocess.run(["ninja", "-C", build_dir, "-t", "deps"], check=True,
                         capture_output=True, text=True).stdout
    deps, current = {}, None
    for line in out.splitlines():
        if line and not line[0].isspace():
            # "OBJECT: #deps N, deps mtime M (VALID|STALE)"
            current = line.split(":", 1)[0] if "(VALID)" in line else None
            if current:
                deps[current] = []
        elif current and line.strip():
            deps[current].append(line.strip())
    return deps


class ContentHashes:
    """The sha256 of each file read, once per run: the tree's units share most of their headers."""

    def __init__(self):
        self._known = {}

    def of(self, path):
        if path not in self._known:
            try:
                with open(path, "rb") as f:
                    self._known[path] = hashlib.sha256(f.read()).hexdigest()
            except OSError:
                self._known[path] = "missing"
        return self._known[path]


def cache_key(root, build_dir, entry, dependencies, hashes, fixed):
    key = hashlib.sha256(fixed.encode())
    command = entry.get("command") or " ".join(entry.get("arguments", []))
    # Paths of this checkout are spelled relative to it, so that a clone elsewhere shares the cache.
    key.update(command.replace(root, "<root>").encode())
    for dep in sorted(dependencies):
        path = os.path.normpath(os.path.join(build_dir, dep))
        key.update(f"\n{path.replace(root, '<root>')} {hashes.of(path)}".encode())
    return key.hexdigest()


def object_of(entry):
    """The object a compile command writes (its -o), as ninja's deps log names it."""
    arguments = entry.get("arguments") or shlex.split(entry["command"])
    for flag, value in zip(arguments, arguments[1:]):
        if flag == "-o":
            return value
    return None


def split_findings(output):
    """The findings in clang-tidy's output, each its header line with the lines below it."""
    findings, current = [], None
    for line in output.splitlines():
        if DIAGNOSTIC.match(line):
            current = [line]
            findings.append(current)
        elif current is not None and not re.match(r"^\d+ (warning|error)s? (generated|treated)", line):
            current.append(line)
    return ["\n".join(f).rstrip() for f in findings]


def main():
    root = subprocess.run(["git", "rev-parse", "--show-toplevel"], check=True,
                          capture_output=True, text=True,
                          cwd=os.path.dirname(os.path.abspath(__file__))).stdout.strip()
    build_dir = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(root, "build"))
    if len(sys.argv) > 2 or (len(sys.argv) > 1 and sys.argv[1].startswith("-")):
        print(__doc__.strip().splitlines()[-1], file=sys.stderr)
        sys.exit(2)
    if not shutil.which(CLANG_TIDY):
        fail(f"{CLANG_TIDY} is missing (scripts/install-deps.sh ci installs it)")
    database = os.path.join(build_dir, "compile_commands.json")
    if not os.path.isfile(database):
        fail(f"{database} is missing: configure and build {build_dir} first")
    with open(database) as f:
        entries = {os.path.normpath(e["file"]): e for e in json.load(f)}
    deps = dependencies_by_object(build_dir)

    cache_dir = os.environ.get("XPU_TIDY_CACHE_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "xpu-tidy")
    os.makedirs(cache_dir, exist_ok=True)
    with open(os.path.join(root, ".clang-tidy")) as f:
        config = f.read()
    version = subprocess.run([CLANG_TIDY, "--version"], check=True, capture_output=True,
                             text=True).stdout
    fixed = version + config
    # Only the tree's own headers, not the generated ones in the build directory.
    header_filter = "^" + re.escape(root) + "/(" + "|".join(PRODUCTION_DIRS) + ")/"

    hashes = ContentHashes()
    work = []
    for source in production_sources(root):
        path = os.path.join(root, source)
        entry = entries.get(path)
        if entry is None:
            fail(f"{source} has no compile command in {database}: is it built?")
        dependencies = deps.get(object_of(entry))
        if dependencies is None:
            fail(f"{source}: ninja has no dependency record of {object_of(entry)}: "
                 f"build {build_dir} first")
        key = cache_key(root, build_dir, entry, dependencies, hashes, fixed)
        work.append((source, os.path.join(cache_dir, key)))

    pending = [(source, marker) for source, marker in work if not os.path.exists(marker)]
    started = time.monotonic()

    def check(item):
        source, marker = item
        run = subprocess.run([CLANG_TIDY, "-p", build_dir, "--quiet",
                              f"--header-filter={header_filter}", os.path.join(root, source)],
                             capture_output=True, text=True)
        findings = split_findings(run.stdout)
        if run.returncode == 0 and not findings:
            with open(marker, "w"):
                pass
        elif not findings:
            findings = [f"{source}: {CLANG_TIDY} exited {run.returncode}:\n{run.stderr.strip()}"]
        return findings

    findings = []
    with concurrent.futures.ThreadPoolExecutor(max_workers=os.cpu_count() or 1) as pool:
        for found in pool.map(check, pending):
            findings.extend(found)
    elapsed = time.monotonic() - started
    # A header's finding shows once, however many units include it.
    unique = list(dict.fromkeys(findings))
    summary = (f"{len(work)} files, {len(work) - len(pending)} clean in the cache, "
               f"{len(pending)} checked in {elapsed:.0f} s")
    if unique:
        print("\n\n".join(unique))
        count = f"{len(unique)} finding{'s' if len(unique) > 1 else ''}"
        fail(f"{count} ({summary}); the checks and their reasons: .clang-tidy")
    print(f"check-tidy.py: clean: {summary}")


if __name__ == "__main__":
    main()
