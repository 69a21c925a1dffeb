#!/usr/bin/env python3
"""Runs a command where arm64 programs start as if they were native, without changing the machine.

usage: scripts/arm64-namespace.py COMMAND [ARG...]        (as root; Linux 6.7 or later)

The command runs in a user namespace and a mount namespace of its own, with uids and gids 0-65535
mapped to themselves (so files keep their owners, and root stays root on them), and with a
binfmt_misc instance of that user namespace (binfmt_misc is per user namespace since Linux 6.7)
in which arm64 ELF files are handed to Debian's qemu-aarch64-static. The registration goes away
with the namespace; the machine's own binfmt_misc (often not even mounted) is never touched.
That lets mmdebstrap run an arm64 root's maintainer scripts and `chroot ROOT dpkg -i` install an
arm64 package there (tests/arm64/test_deb_arm64.py).

The "F" flag opens qemu-aarch64-static when registering, so it also runs inside a chroot that
has no copy of it. The magic and mask are those of an ELF64 little-endian file for machine 183
(EM_AARCH64), as Debian's qemu-user-static registers it (/usr/share/binfmts/qemu-aarch64).
"""

import ctypes
import os
import sys

CLONE_NEWUSER = 0x10000000
CLONE_NEWNS = 0x00020000
MS_REC = 0x4000
MS_PRIVATE = 1 << 18
QEMU = "/usr/bin/qemu-aarch64-static"
BINFMT = "/proc/sys/fs/binfmt_misc"
MAGIC = b"\\x7fELF\\x02\\x01\\x01\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x02\\x00\\xb7\\x00"
MASK = b"\\xff\\xff\\xff\\xff\\xff\\xff\\xff\\x00\\xff\\xff\\xff\\xff\\xff\\xff\\xff\\xff\\xfe\\xff\\xff\\xff"


def fail(message):
    print(f"arm64-namespace: {message}", file=sys.stderr)
    sys.exit(1)


def checked(result, what, libc):
    if result != 0:
        fail(f"{what}: {os.strerror(ctypes.get_errno())}")


def child(ready_write, mapped_read, argv):
    libc = ctypes.CDLL(None, use_errno=True)
    checked(libc.unshare(CLONE_NEWUSER | CLONE_NEWNS), "unshare", libc)
    os.write(ready_write, b"u")
    os.close(ready_write)
    if os.read(mapped_read, 1) != b"m":
        fail("the parent could not map the namespace's ids")
    checked(libc.mount(None, b"/", None, MS_REC | MS_PRIVATE, None), "making / private", libc)
    checked(libc.mount(b"binfmt_misc", BINFMT.encode(), b"binfmt_misc", 0, None),
            "mounting binfmt_misc (Linux 6.7 or later has one per user namespace)", libc)
    with open(os.path.join(BINFMT, "register"), "wb") as register:
        register.write(b":qemu-aarch64:M::" + MAGIC + b":" + MASK + b":" + QEMU.encode() + b":F\n")
    os.execvp(argv[0], argv)


def main():
    if len(sys.argv) < 2:
        print(__doc__.strip().splitlines()[2], file=sys.stderr)
        sys.exit(2)
    if os.geteuid() != 0:
        fail("run it as root: it maps uids and gids 0-65535, which only root may")
    if not os.access(QEMU, os.X_OK):
        fail(f"{QEMU} is missing (apt install qemu-user-static)")
    ready_read, ready_write = os.pipe()
    mapped_read, mapped_write = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(ready_read)
        os.close(mapped_write)
        try:
            child(ready_write, mapped_read, sys.argv[1:])
        except OSError as error:
            fail(str(error))
    os.close(ready_write)
    os.close(mapped_read)
    if os.read(ready_read, 1) == b"u":
        # Written from here, the parent namespace, where root may map any range.
        for name in ("uid_map", "gid_map"):
            with open(f"/proc/{pid}/{name}", "w") as mapping:
                mapping.write("0 0 65536\n")
        os.write(mapped_write, b"m")
    os.close(mapped_write)
    _, status = os.waitpid(pid, 0)
    sys.exit(os.waitstatus_to_exitcode(status))


if __name__ == "__main__":
    main()
