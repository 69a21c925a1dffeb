#!/usr/bin/env python3
"""Fails, printing each finding once, when clang-tidy 14 finds anything in the production code.

The production code is every .cpp file of the production folders (common/, xpud/, xpud-api-proxy/,
xpuctl/, k8s-shim/) that git tracks or would track, checked with the compile commands of a build
directory (its generated protobuf and D-Bus headers must be built), and the tree's own headers
those files include. The checks are the tree's .clang-tidy.

The files of one build target are checked together, as one unit that includes them all (a unity
file in BUILD_DIR/tidy-units/), with the target's compile flags. Most of a check's time goes to the
system, gRPC and protobuf headers every file includes: a target's files share one pass over them
(xpud-core's 19 files take 30 s as one unit, 145 s one by one). A finding names the file and line
it is in, as when that file is checked alone. A unit that does not compile as one (two files of the
target define the same name in their anonymous namespaces) has its files checked one by one.

A unit found clean is remembered in a cache (XPU_TIDY_CACHE_DIR, by default ~/.cache/xpu-tidy),
keyed on clang-tidy's version, .clang-tidy, the unit's compile command and the content of every
file the build's dependency record (ninja -t deps) says its files include: a second run checks
only the units where something changed. A finding is never cached.

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


def cache_key(root, build_dir, unit, hashes, fixed):
    key = hashlib.sha256(fixed.encode())
    # Paths of this checkout are spelled relative to it, so that a clone elsewhere shares the cache.
    key.update(shlex.join(unit.flags).replace(root, "<root>").encode())
    for source, dependencies in zip(unit.sources, unit.dependencies):
        key.update(f"\nunit file {source}".encode())
        for dep in sorted(dependencies):
            path = os.path.normpath(os.path.join(build_dir, dep))
            key.update(f"\n{path.replace(root, '<root>')} {hashes.of(path)}".encode())
    return key.hexdigest()


def arguments_of(entry):
    return entry.get("arguments") or shlex.split(entry["command"])


def object_of(entry):
    """The object a compile command writes (its -o), as ninja's deps log names it."""
    arguments = arguments_of(entry)
    for flag, value in zip(arguments, arguments[1:]):
        if flag == "-o":
            return value
    return None


def flags_of(entry):
    """The compile command without its compiler, output and input: what its target gives every file."""
    flags, arguments = [], iter(arguments_of(entry)[1:])
    for argument in arguments:
        if argument in ("-o", "-c"):
            next(arguments, None)
        else:
            flags.append(argument)
    return flags


def commands_by_file(database):
    """Each file's compile command. A production file that a test or a fake compiles too has more
    than one, and its production target's is the one to check it with: a test's carries the tests'
    precompiled header, which GCC made and clang-tidy cannot read ("not a valid precompiled PCH
    file")."""
    commands = {}
    for entry in database:
        path = os.path.normpath(entry["file"])
        production = (object_of(entry) or "").split("/", 1)[0] in PRODUCTION_DIRS
        if path not in commands or production:
            commands[path] = entry
    return commands


class Unit:
    """Files of one build target, compiled with the same flags, checked as one translation unit."""

    def __init__(self, name, directory, flags):
        self.name, self.directory, self.flags = name, directory, flags
        self.sources, self.dependencies, self.key = [], [], None


def units_of(work):
    """Groups (source, entry, dependencies) by the target whose object directory holds the object."""
    units = {}
    for source, entry, dependencies in work:
        target = re.search(r"CMakeFiles/([^/]+)\.dir/", object_of(entry) or "")
        name = target.group(1) if target else source.replace("/", "_")
        flags = flags_of(entry)
        unit = units.setdefault((name, entry["directory"], tuple(flags)),
                                Unit(name, entry["directory"], flags))
        unit.sources.append(source)
        unit.dependencies.append(dependencies)
    return list(units.values())


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
        entries = commands_by_file(json.load(f))
    deps = dependencies_by_object(build_dir)

    cache_dir = os.environ.get("XPU_TIDY_CACHE_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "xpu-tidy")
    os.makedirs(cache_dir, exist_ok=True)
    config_file = os.path.join(root, ".clang-tidy")
    with open(config_file) as f:
        config = f.read()
    version = subprocess.run([CLANG_TIDY, "--version"], check=True, capture_output=True,
                             text=True).stdout
    fixed = version + config
    # Only the tree's own headers, not the generated ones in the build directory.
    header_filter = "^" + re.escape(root) + "/(" + "|".join(PRODUCTION_DIRS) + ")/"
    tidy = [CLANG_TIDY, "--quiet", f"--config-file={config_file}", f"--header-filter={header_filter}"]

    work = []
    for source in production_sources(root):
        entry = entries.get(os.path.join(root, source))
        if entry is None:
            fail(f"{source} has no compile command in {database}: is it built?")
        dependencies = deps.get(object_of(entry))
        if dependencies is None:
            fail(f"{source}: ninja has no dependency record of {object_of(entry)}: "
                 f"build {build_dir} first")
        work.append((source, entry, dependencies))
    units = units_of(work)
    hashes = ContentHashes()
    for unit in units:
        unit.key = cache_key(root, build_dir, unit, hashes, fixed)
    pending = [u for u in units if not os.path.exists(os.path.join(cache_dir, u.key))]
    unit_dir = os.path.join(build_dir, "tidy-units")
    os.makedirs(unit_dir, exist_ok=True)
    started = time.monotonic()

    def check_alone(source):
        run = subprocess.run([*tidy, "-p", build_dir, os.path.join(root, source)],
                             capture_output=True, text=True)
        findings = split_findings(run.stdout)
        if run.returncode != 0 and not findings:
            findings = [f"{source}: {CLANG_TIDY} exited {run.returncode}:\n{run.stderr.strip()}"]
        return findings

    def check(unit):
        if len(unit.sources) == 1:
            findings = check_alone(unit.sources[0])
        else:
            unity = os.path.join(unit_dir, unit.name + ".cpp")
            with open(unity, "w") as f:
                f.write(f"// scripts/check-tidy.py: the files of {unit.name}, checked as one unit.\n")
                for source in unit.sources:
                    f.write(f'#include "{os.path.join(root, source)}"  '
                            "// NOLINT(bugprone-suspicious-include)\n")
            run = subprocess.run([*tidy, unity, "--", *unit.flags], cwd=unit.directory,
                                 capture_output=True, text=True)
            findings = split_findings(run.stdout)
            if any("[clang-diagnostic-error]" in f.splitlines()[0] for f in findings):
                # Two files that each compile alone may not compile together.
                print(f"check-tidy.py: note: {unit.name} does not compile as one unit; "
                      f"its {len(unit.sources)} files are checked one by one", flush=True)
                findings = [f for source in unit.sources for f in check_alone(source)]
            elif run.returncode != 0 and not findings:
                findings = [f"{unit.name}: {CLANG_TIDY} exited {run.returncode}:\n{run.stderr.strip()}"]
        if not findings:
            with open(os.path.join(cache_dir, unit.key), "w"):
                pass
        return findings

    findings = []
    with concurrent.futures.ThreadPoolExecutor(max_workers=os.cpu_count() or 1) as pool:
        for found in pool.map(check, pending):
            findings.extend(found)
    elapsed = time.monotonic() - started
    # A header's finding shows once, however many units include it.
    unique = list(dict.fromkeys(findings))
    summary = (f"{len(work)} files in {len(units)} units, {len(units) - len(pending)} units clean "
               f"in the cache, {len(pending)} checked in {elapsed:.0f} s")
    if unique:
        print("\n\n".join(unique))
        count = f"{len(unique)} finding{'s' if len(unique) > 1 else ''}"
        fail(f"{count} ({summary}); the checks and their reasons: .clang-tidy")
    print(f"check-tidy.py: clean: {summary}")


if __name__ == "__main__":
    main()
