#!/usr/bin/python3
"""Loads every shared library a program needs (as ldd lists them) into this idle process, runs
none of their code beyond the loader's relocations and static initialisers, and prints how many
libraries that was and by how many KiB the file-backed resident memory (RssFile) grew: the part of
a program's RSS that is the price of its libraries, before it does anything.

Usage: bench/load-libraries.py PROGRAM"""

import ctypes
import subprocess
import sys


def file_kib():
    with open("/proc/self/status") as status:
        return int(next(line for line in status if line.startswith("RssFile")).split()[1])


def main():
    if len(sys.argv) != 2:
        print(__doc__.splitlines()[-1], file=sys.stderr)
        return 2
    listed = subprocess.run(["ldd", sys.argv[1]], capture_output=True, text=True)
    if listed.returncode != 0:
        print(f"load-libraries: ldd {sys.argv[1]}: {listed.stderr.strip()}", file=sys.stderr)
        return 1
    libraries = [line.split("=>")[1].split()[0] for line in listed.stdout.splitlines()
                 if "=>" in line and line.split("=>")[1].split()[0].startswith("/")]
    before = file_kib()
    for library in libraries:
        ctypes.CDLL(library, mode=ctypes.RTLD_GLOBAL)
    print(len(libraries), file_kib() - before)
    return 0


if __name__ == "__main__":
    sys.exit(main())
