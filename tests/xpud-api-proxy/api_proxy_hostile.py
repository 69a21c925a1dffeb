#!/usr/bin/env python3
"""Hostile local users against `xpud-api-proxy` (ctest label `hostile`).

Starts a private dbus-daemon with a system-type configuration (`<type>system</type>`, EXTERNAL
authentication, a default policy that lets every user connect, own and send, and no `<limit>`
element: dbus-daemon's built-in defaults apply, which are the system bus's, as the commented
defaults in /usr/share/dbus-1/system.conf list them: max_message_size 32 MiB,
max_replies_per_connection 128, auth_timeout 5 s), xpud as root (sim backend, 8 cards), and the
proxy as uid 65534 (setpriv) with its unit's LimitNOFILE (read from
systemd/xpud-api-proxy.service), serving `api.sock` (and `sriov.sock` when it has --listen-sriov)
in a directory owned by 65534. Then, all on unix sockets,
bounded in count and time, with a raw D-Bus client written here (no D-Bus library: a hostile
client follows no library's rules), from uid 65534 unless said otherwise:
  a. 1,000 idle connections (and 4 that say Hello and nothing more): at most 16 held, root's
     reads timed meanwhile; the held ones closed by the Hello and first-call deadlines (5 s);
  b. 1,000 connections that say Hello and AddMatch: 16 held; root's reads timed; root holds 40
     connections at once, and all 112 that the 128 clients leave beside uid 65534's 16;
  c. a 100 MiB and a 40 MiB call, from uid 65534 and from root: LimitsExceeded, the connection
     goes on; the proxy's peak RSS (VmHWM) stays under its unit's MemoryMax (64M) and it keeps its
     system bus connection (the bus would drop it for a message over 32 MiB);
  d. a client that stops reading while root floods xpud with health changes (directly on the bus):
     dropped once 2 MiB wait for it; RSS under 64 MiB, root's reads timed during the flood;
  e. garbage before authentication, an endless authentication line, a bad header, a header that
     claims a 100 MiB body and then hangs up: each closed, root served after each;
  f. NEGOTIATE_UNIX_FD refused, and descriptors sent anyway (SCM_RIGHTS) closed: the proxy's
     descriptor count back to where it was;
  g. the SR-IOV socket: mode 0600; uid 65534 refused ConfigureVirtualFunctions on it even when it
     can reach it; once owned by root (as xpud-api-proxy-sriov.socket makes it), uid 65534 cannot
     connect and root reads through it;
  h. dbus-daemon and xpud restarted: the same proxy serves root again within 20 s;
  s. the authentication smuggle (issue 39): BEGIN before any AUTH, then a small call whose body
     holds "AUTH EXTERNAL", "BEGIN" and the header of a 100 MiB call, then the 100 MiB as small
     calls: the connection closed at the first BEGIN, the proxy's peak RSS (VmHWM, reset before)
     well under its MemoryMax.
and, on a second stack whose dbus-daemon runs Debian's own system.conf with the package's policy
(tests/packaging/private_system_bus.py), as a node's system bus does:
  forged owner. uid 65534 sends the proxy's connection a NameOwnerChanged naming itself xpud's
     owner, then 10 DeviceHealthChanged: none reaches a client of the proxy, and all 16 of xpud's
     own health changes made after it do.
Root's reads during the attacks are checked for what a user sees, every one answered within the
client's timeout (5 s a step); how fast they were is a figure, with its ratio to root's reads timed
in the same run before any attack: a loaded machine (CI builds on both cores) slows every read,
attack or not. Likewise the deadlines are checked as not early and not missed, not to the tenth.
Against a proxy without --listen-sriov (the one before these limits) the checks fail, they do not
stop the script: run it with XPUD_API_PROXY_BIN pointing at an old build for a before/after.

Usage: api_proxy_hostile.py [BUILD_DIR]; XPUD_BIN and XPUD_API_PROXY_BIN override the binaries.
Run as root. Ends with 'N passed, M failed'; exits 1 on any failure.
"""

import collections
import ctypes
import json
import os
import re
import resource
import select
import shutil
import signal
import socket
import stat
import struct
import subprocess
import sys
import tempfile
import threading
import time

BUILD = sys.argv[1] if len(sys.argv) > 1 else "build"
XPUD = os.environ.get("XPUD_BIN", os.path.join(BUILD, "xpud/xpud"))
PROXY = os.environ.get("XPUD_API_PROXY_BIN", os.path.join(BUILD, "xpud-api-proxy/xpud-api-proxy"))



def unit_setting(name, default, unit_suffix=""):
    """A number the proxy's unit sets (systemd/xpud-api-proxy.service), so the checks follow it."""
    unit = os.path.join(os.path.dirname(os.path.abspath(__file__)), "../../systemd/xpud-api-proxy.service")
    try:
        with open(unit) as f:
            m = re.search(rf"^{name}=(\d+){unit_suffix}\s*$", f.read(), re.M)
        return int(m.group(1)) if m else default
    except OSError:
        return default


NOBODY = 65534
# ProxyLimits' defaults (proxy_server.h).
MAX_CLIENTS = 128
PER_UID = 16
DEADLINE_S = 5  # hello_timeout and first_call_timeout
CLOSED_BY_S = 3 * DEADLINE_S  # how long a connection is watched for the deadline's close
MAX_MESSAGE = 131072
TOO_LARGE_TEXT = f"bytes is larger than the {MAX_MESSAGE} bytes xpud's API socket takes"
MEMORY_MAX_KIB = unit_setting("MemoryMax", 64, "M") * 1024
UNIT_NOFILE = unit_setting("LimitNOFILE", 256)
MIB = 1 << 20

XPUD_NAME = "com.kunlunxin.xpud1"
XPUD_PATH = "/com/kunlunxin/xpud1"
MANAGER = XPUD_NAME + ".Manager"
SIMULATOR = XPUD_NAME + ".Simulator"
DRIVER = "org.freedesktop.DBus"
DRIVER_PATH = "/org/freedesktop/DBus"
PROPERTIES = "org.freedesktop.DBus.Properties"
LIMITS_EXCEEDED = "org.freedesktop.DBus.Error.LimitsExceeded"
ACCESS_DENIED = "org.freedesktop.DBus.Error.AccessDenied"

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "../support"))
from hostile_checks import (Process, any_failed, check, child_environment, figures,  # noqa: E402
                            finish, print_logs_if_failed, wait_until)


def proc_status(pid, key):
    """A field of /proc/PID/status in KiB (VmRSS, VmHWM), -1 when the process is gone."""
    try:
        with open(f"/proc/{pid}/status") as f:
            m = re.search(rf"^{key}:\s+(\d+)", f.read(), re.M)
        return int(m.group(1)) if m else -1
    except OSError:
        return -1


def fd_count(pid):
    try:
        return len(os.listdir(f"/proc/{pid}/fd"))
    except OSError:
        return -1


def percentile(values, p):
    if not values:
        return float("inf")
    ordered = sorted(values)
    rank = max(1, min(len(ordered), int(p * len(ordered) + 0.5)))
    return ordered[rank - 1]


def ms(seconds):
    return f"{seconds * 1000:.1f}"


# --- A minimal D-Bus client: little-endian marshalling of the basic types, EXTERNAL auth. ------

METHOD_CALL, METHOD_RETURN, ERROR, SIGNAL = 1, 2, 3, 4
NO_REPLY_EXPECTED = 0x1
FIELD_PATH, FIELD_INTERFACE, FIELD_MEMBER, FIELD_ERROR_NAME = 1, 2, 3, 4
FIELD_REPLY_SERIAL, FIELD_DESTINATION, FIELD_SENDER, FIELD_SIGNATURE = 5, 6, 7, 8
BASIC_ALIGNMENT = {"y": 1, "b": 4, "n": 2, "q": 2, "i": 4, "u": 4, "x": 8, "t": 8, "d": 8,
                   "s": 4, "o": 4, "g": 1, "h": 4}
BASIC_FORMAT = {"y": "B", "b": "I", "n": "h", "q": "H", "i": "i", "u": "I", "x": "q", "t": "Q",
                "d": "d", "h": "I"}
LARGEST_READ = 64 * MIB  # nothing this test asks for comes close


class BusError(Exception):
    pass


class Closed(BusError):
    pass


def aligned(position, alignment):
    return position + (-position % alignment)


def put(buffer, code, value):
    """Appends one basic value (or a variant of one) to `buffer`, which starts 8-aligned."""
    if code in ("s", "o"):
        buffer.extend(b"\0" * (-len(buffer) % 4))
        data = value.encode()
        buffer += struct.pack("<I", len(data)) + data + b"\0"
    elif code == "g":
        data = value.encode()
        buffer.append(len(data))
        buffer += data + b"\0"
    elif code == "v":
        signature, inner = value
        put(buffer, "g", signature)
        put(buffer, signature, inner)
    else:
        buffer.extend(b"\0" * (-len(buffer) % BASIC_ALIGNMENT[code]))
        buffer += struct.pack("<" + BASIC_FORMAT[code], value)


def marshal(signature, args):
    body = bytearray()
    for code, value in zip(signature, args):
        put(body, code, value)
    return bytes(body)


def encode_message(serial, kind, fields, body=b"", flags=0, body_length=None):
    """A whole message (or, with `body_length`, its header alone, for a body sent apart)."""
    header = bytearray(b"l" + bytes([kind, flags, 1]))
    header += struct.pack("<III", len(body) if body_length is None else body_length, serial, 0)
    for code, signature, value in fields:
        header.extend(b"\0" * (-len(header) % 8))  # each field is a struct
        header.append(code)
        put(header, "g", signature)
        put(header, signature, value)
    struct.pack_into("<I", header, 12, len(header) - 16)
    header.extend(b"\0" * (-len(header) % 8))
    return bytes(header) + body


def encode_call(serial, destination, path, interface, member, signature="", args=(), flags=0,
                body_length=None):
    fields = [(FIELD_PATH, "o", path), (FIELD_INTERFACE, "s", interface), (FIELD_MEMBER, "s", member),
              (FIELD_DESTINATION, "s", destination)]
    if signature:
        fields.append((FIELD_SIGNATURE, "g", signature))
    body = b"" if body_length is not None else marshal(signature, args)
    return encode_message(serial, METHOD_CALL, fields, body, flags, body_length)


def get(data, position, code, endian):
    """One value of type `code` at `position`: (value, position after it)."""
    if code in ("s", "o"):
        position = aligned(position, 4)
        (length,) = struct.unpack_from(endian + "I", data, position)
        text = bytes(data[position + 4:position + 4 + length]).decode(errors="replace")
        return text, position + 4 + length + 1
    if code == "g":
        length = data[position]
        return bytes(data[position + 1:position + 1 + length]).decode(errors="replace"), position + 2 + length
    if code == "v":
        signature, position = get(data, position, "g", endian)
        return get(data, position, signature, endian)
    if code in BASIC_FORMAT:
        position = aligned(position, BASIC_ALIGNMENT[code])
        (value,) = struct.unpack_from(endian + BASIC_FORMAT[code], data, position)
        return value, position + struct.calcsize(BASIC_FORMAT[code])
    raise ValueError(f"type {code!r} not parsed here")


def parse_arguments(data, position, signature, endian):
    """The leading arguments of basic types, arrays of them and variants of them; stops at the
    first other type (what a check needs is at the front)."""
    args = []
    i = 0
    try:
        while i < len(signature):
            code = signature[i]
            if code == "a" and i + 1 < len(signature) and signature[i + 1] in BASIC_ALIGNMENT:
                element = signature[i + 1]
                position = aligned(position, 4)
                (length,) = struct.unpack_from(endian + "I", data, position)
                position = aligned(position + 4, BASIC_ALIGNMENT[element])
                end, items = position + length, []
                while position < end:
                    value, position = get(data, position, element, endian)
                    items.append(value)
                args.append(items)
                i += 2
            else:
                value, position = get(data, position, code, endian)
                args.append(value)
                i += 1
    except (ValueError, struct.error, IndexError):
        pass
    return args


class Message:
    def __init__(self, data):
        endian = "<" if data[0:1] == b"l" else ">"
        self.kind, self.flags = data[1], data[2]
        body_length, self.serial, fields_length = struct.unpack_from(endian + "III", data, 4)
        self.fields = {}
        position, end = 16, 16 + fields_length
        while position < end:
            position = aligned(position, 8)
            code = data[position]
            signature, position = get(data, position + 1, "g", endian)
            value, position = get(data, position, signature, endian)
            self.fields[code] = value
        self.args = parse_arguments(data, aligned(end, 8), self.fields.get(FIELD_SIGNATURE, ""), endian)

    @property
    def reply_serial(self):
        return self.fields.get(FIELD_REPLY_SERIAL)

    @property
    def error_name(self):
        return self.fields.get(FIELD_ERROR_NAME)

    @property
    def first(self):
        return self.args[0] if self.args else None

    def describe(self):
        if self.kind == ERROR:
            return f"{self.error_name}: {self.first}"
        return f"returned {self.args!r}"[:200]


def message_length(buffer):
    """The whole length of the message `buffer` starts with, or None when its header is not in."""
    if len(buffer) < 16:
        return None
    if buffer[0:1] not in (b"l", b"B"):
        raise BusError(f"not a D-Bus message: {bytes(buffer[:16])!r}")
    endian = "<" if buffer[0:1] == b"l" else ">"
    body_length, _, fields_length = struct.unpack_from(endian + "III", buffer, 4)
    return aligned(16 + fields_length, 8) + body_length


class Bus:
    """One raw connection to a bus (or to the proxy) on a unix socket."""

    def __init__(self, path, timeout=5.0, sock=None):
        self.sock = sock or socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        if sock is None:
            try:
                self.sock.settimeout(timeout)
                self.sock.connect(path)
            except OSError:
                self.sock.close()
                raise
        self.timeout = timeout
        self.serial = 0
        self.buffer = bytearray()

    def close(self):
        self.sock.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def fill(self, deadline):
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise TimeoutError("no answer in time")
        self.sock.settimeout(remaining)
        chunk = self.sock.recv(1 << 16)
        if not chunk:
            raise Closed("the other end closed the connection")
        self.buffer += chunk

    def read_line(self, deadline):
        while b"\r\n" not in self.buffer:
            if len(self.buffer) > 16384:
                raise BusError("an authentication line without end")
            self.fill(deadline)
        line, _, rest = bytes(self.buffer).partition(b"\r\n")
        self.buffer = bytearray(rest)
        return line.decode(errors="replace")

    def authenticate(self, negotiate_fds=False):
        """EXTERNAL with our uid, then BEGIN; returns the answer to NEGOTIATE_UNIX_FD if asked."""
        deadline = time.monotonic() + self.timeout
        self.sock.sendall(b"\0AUTH EXTERNAL " + str(os.getuid()).encode().hex().encode() + b"\r\n")
        line = self.read_line(deadline)
        if not line.startswith("OK "):
            raise BusError(f"authentication answered {line!r}")
        answer = None
        if negotiate_fds:
            self.sock.sendall(b"NEGOTIATE_UNIX_FD\r\n")
            answer = self.read_line(deadline)
        self.sock.sendall(b"BEGIN\r\n")
        return answer

    def next_serial(self):
        self.serial += 1
        return self.serial

    def send_call(self, destination, path, interface, member, signature="", args=(), flags=0):
        serial = self.next_serial()
        self.sock.sendall(encode_call(serial, destination, path, interface, member, signature, args, flags))
        return serial

    def take_message(self):
        """A whole message from what has been read, or None."""
        length = message_length(self.buffer)
        if length is None or len(self.buffer) < length:
            if length is not None and length > LARGEST_READ:
                raise BusError(f"a message of {length} bytes")
            return None
        data = bytes(self.buffer[:length])
        del self.buffer[:length]
        return Message(data)

    def read_message(self, deadline):
        while True:
            message = self.take_message()
            if message is not None:
                return message
            self.fill(deadline)

    def reply_to(self, serial, deadline):
        for _ in range(100000):  # signals in between are skipped
            message = self.read_message(deadline)
            if message.kind in (METHOD_RETURN, ERROR) and message.reply_serial == serial:
                return message
        raise BusError("no reply among 100,000 messages")

    def call(self, destination, path, interface, member, signature="", args=(), timeout=None):
        serial = self.send_call(destination, path, interface, member, signature, args)
        return self.reply_to(serial, time.monotonic() + (timeout or self.timeout))

    def hello(self):
        reply = self.call(DRIVER, DRIVER_PATH, DRIVER, "Hello")
        if reply.kind != METHOD_RETURN:
            raise BusError("Hello: " + reply.describe())
        return reply.first

    def read_device_count(self):
        return self.call(XPUD_NAME, XPUD_PATH, PROPERTIES, "Get", "ss", [MANAGER, "DeviceCount"])


def read_device_count(path, timeout=5.0):
    """Root's read on a fresh connection: connect, authenticate, Hello, Get DeviceCount.
    (ok, seconds, what happened)."""
    started = time.monotonic()
    try:
        with Bus(path, timeout) as bus:
            bus.authenticate()
            bus.hello()
            reply = bus.read_device_count()
        took = time.monotonic() - started
        return reply.kind == METHOD_RETURN and reply.first == 8, took, reply.describe()
    except (OSError, BusError) as e:
        return False, time.monotonic() - started, f"{type(e).__name__}: {e}"


def time_reads(path, count):
    """(seconds of the reads that worked, failures, the last failure)."""
    times, failures, last = [], 0, ""
    for _ in range(count):
        ok, took, what = read_device_count(path)
        if ok:
            times.append(took)
        else:
            failures += 1
            last = what
    return times, failures, last


def reads_figure(times, failures):
    return f"{ms(percentile(times, .5))} / {ms(percentile(times, .99))}" + (f" ({failures} failed)" if failures else "")


READ_TIMEOUT_S = 5.0  # read_device_count's: each step of a read (connect, AUTH, Hello, the call)


def reads_answered(times, failures, last, baseline):
    """Every read answered, each step within the client's timeout: what a user of the proxy sees.
    How fast is a figure, not a check (a loaded machine slows every read, attack or not): p99, and
    its ratio to root's p99 measured in the same run before any attack (`baseline`, times)."""
    p99 = percentile(times, .99)
    ratio = p99 / percentile(baseline, .99) if baseline else float("nan")
    return failures == 0, (f"p99 {ms(p99)} ms ({ratio:.1f}x the same run's {ms(percentile(baseline, .99))} ms "
                           f"without an attack), {failures} failed{(' (' + last + ')') if last else ''}")


def reads_ratio_figure(times, baseline):
    """p99 against the same run's p99 without an attack, for the figures."""
    return f"{percentile(times, .99) / percentile(baseline, .99):.1f}x" if times and baseline else "-"


# --- What a client does; run by root here and by uid 65534 in the worker alike. ---------------
# Each takes `held`, the caller's dict of connections kept open between commands.

def socket_of(thing):
    return thing.sock if isinstance(thing, Bus) else thing


def open_idle(held, key, path, count):
    """`count` connections that send nothing."""
    sockets, errors = [], collections.Counter()
    for _ in range(count):
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(2)
        try:
            s.connect(path)
            sockets.append(s)
        except OSError as e:
            errors[type(e).__name__] += 1
            s.close()
    held.setdefault(key, []).extend(sockets)
    held[key + " since"] = time.monotonic()
    return {"opened": len(sockets), "errors": dict(errors)}


def open_with_hello(held, key, path, count, add_match, timeout=2.0, give_up_after=0):
    """`count` connections made first, then each authenticated with Hello (and AddMatch, which is
    its first call) in turn; the ones that got through are kept."""
    connected, errors = [], collections.Counter()
    for _ in range(count):
        try:
            connected.append(Bus(path, timeout))
        except OSError as e:
            errors["connect: " + type(e).__name__] += 1
    served, consecutive_failures = [], 0
    deadline = time.monotonic() + 30
    for bus in connected:
        if time.monotonic() > deadline or (give_up_after and consecutive_failures >= give_up_after):
            bus.close()
            errors["not tried"] += 1
            continue
        try:
            bus.authenticate()
            bus.hello()
            if add_match:
                reply = bus.call(DRIVER, DRIVER_PATH, DRIVER, "AddMatch", "s", ["type='signal'"])
                if reply.kind != METHOD_RETURN:
                    raise BusError("AddMatch: " + reply.describe())
            served.append(bus)
            consecutive_failures = 0
        except (OSError, BusError) as e:
            bus.close()
            errors[type(e).__name__] += 1
            consecutive_failures += 1
    held.setdefault(key, []).extend(served)
    held[key + " since"] = time.monotonic()
    return {"served": len(served), "errors": dict(errors)}


def closed_by_peer(sock):
    poller = select.poll()
    poller.register(sock, select.POLLIN | select.POLLRDHUP)
    events = poller.poll(0)
    return bool(events and events[0][1] & (select.POLLHUP | select.POLLRDHUP | select.POLLERR))


def count_open(held, key):
    """How many of the connections under `key` the proxy has not closed."""
    return sum(1 for thing in held.get(key, []) if not closed_by_peer(socket_of(thing)))


def wait_all_closed(held, key, seconds):
    """Waits until the proxy closed every connection under `key`, at most until `seconds` after
    they were opened: {"closed_at": seconds after opening, or None, "open": how many are not}."""
    since = held.get(key + " since", time.monotonic())
    while True:
        still = count_open(held, key)
        now = time.monotonic()
        if still == 0:
            return {"closed_at": now - since, "open": 0}
        if now - since > seconds:
            return {"closed_at": None, "open": still}
        time.sleep(0.05)


def close_all(held, key):
    for thing in held.pop(key, []):
        socket_of(thing).close()
    held.pop(key + " since", None)
    return True


class ChunkSender:
    """Writes the chunks of a generator to a non-blocking socket as fast as it takes them."""

    def __init__(self, chunks):
        self.source = chunks
        self.pending = memoryview(next(chunks))
        self.sent = 0

    def done(self):
        return self.pending is None

    def send_some(self, sock):
        """Sends what the socket takes now (OSError when it is closed on us)."""
        try:
            n = sock.send(self.pending)
        except BlockingIOError:
            n = 0
        self.sent += n
        self.pending = self.pending[n:]
        if not len(self.pending):
            nxt = next(self.source, None)
            self.pending = memoryview(nxt) if nxt is not None else None


def big_call(held, path, size, seconds=20.0):
    """GetMetrics with one string argument, `size` bytes in all, read from as it is written (the
    answer may come before the end). Then DeviceCount on the same connection."""
    started = time.monotonic()
    deadline = started + seconds
    out = {"answer": "", "text": "", "sent": 0, "seconds": None, "after": None}
    try:
        bus = Bus(path, 5)
    except OSError as e:
        out["answer"] = f"connect: {type(e).__name__}: {e}"
        return out
    with bus:
        try:
            bus.authenticate()
            bus.hello()
            serial = bus.next_serial()
            probe = encode_call(serial, XPUD_NAME, XPUD_PATH, MANAGER, "GetMetrics", "s", body_length=0)
            string_length = size - len(probe) - 5  # the string's length, its bytes and its NUL
            header = encode_call(serial, XPUD_NAME, XPUD_PATH, MANAGER, "GetMetrics", "s",
                                 body_length=4 + string_length + 1)
            block = b"A" * MIB
            reply = None

            def chunks():
                yield header + struct.pack("<I", string_length)
                left = string_length
                while left > 0:
                    n = min(left, len(block))
                    left -= n
                    yield block if n == len(block) else block[:n]
                yield b"\0"

            sender = ChunkSender(chunks())
            poller = select.poll()
            poller.register(bus.sock, select.POLLIN | select.POLLOUT)
            bus.sock.setblocking(False)
            while not sender.done() and time.monotonic() < deadline:
                for _, events in poller.poll(500):
                    if events & select.POLLIN:
                        try:
                            chunk = bus.sock.recv(1 << 16)
                        except BlockingIOError:
                            chunk = None
                        if chunk == b"":
                            raise Closed("closed while the call was being sent")
                        if chunk:
                            bus.buffer += chunk
                            while (message := bus.take_message()) is not None:
                                if message.reply_serial == serial:
                                    reply = message
                    elif events & (select.POLLHUP | select.POLLERR):
                        raise Closed("closed while the call was being sent")
                    if events & select.POLLOUT:
                        sender.send_some(bus.sock)
                        out["sent"] = sender.sent
            if not sender.done():
                out["answer"] = f"timeout after sending {out['sent'] >> 20} MiB"
                return out
            if reply is None:
                reply = bus.reply_to(serial, deadline)
            out["seconds"] = time.monotonic() - started
            out["answer"] = reply.error_name if reply.kind == ERROR else "a method return"
            out["text"] = str(reply.first)
            after = bus.read_device_count()
            out["after"] = after.first if after.kind == METHOD_RETURN else after.describe()
        except (OSError, BusError) as e:
            out["answer"] = out["answer"] or f"{type(e).__name__}: {e}"
    return out


def start_slow_reader(held, path):
    """Hello, AddMatch for every signal, one call answered; then never reads again."""
    bus = Bus(path, 5)
    bus.authenticate()
    bus.hello()
    bus.call(DRIVER, DRIVER_PATH, DRIVER, "AddMatch", "s", ["type='signal'"])
    reply = bus.read_device_count()
    held["slow"] = [bus]
    return reply.first


def connect_raw(path):
    """A unix socket connected to `path` (5 s to connect) and None, or None and what failed."""
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(5)
    try:
        s.connect(path)
    except OSError as e:
        s.close()
        return None, f"connect: {type(e).__name__}"
    return s, None


def garbage(held, path, kind):
    """Sends one kind of garbage; then waits (7 s at most) for the proxy to close the connection.
    {"closed_after": seconds or None, "answer": the first bytes it sent back}."""
    s, failed = connect_raw(path)
    if s is None:
        return {"closed_after": None, "answer": failed}
    started = time.monotonic()
    try:
        if kind == "random bytes before authentication":
            s.sendall(b"\xff" + os.urandom(4095))
        elif kind == "a 20 KiB authentication line without CRLF":
            s.sendall(b"\0AUTH EXTERNAL " + b"3" * 20480)
        elif kind in ("a bad message header after BEGIN", "a header claiming a 100 MiB body, then hang-up"):
            bus = Bus(None, 5, sock=s)
            bus.authenticate()
            if kind == "a bad message header after BEGIN":
                s.sendall(b"X" * 16)
            else:
                bus.hello()
                s.sendall(encode_call(2, XPUD_NAME, XPUD_PATH, MANAGER, "GetMetrics", "s",
                                      body_length=100 * MIB) + b"\0" * 4096)
                s.close()
                return {"closed_after": None, "answer": "(we hung up)"}
    except (OSError, BusError):
        pass  # closed while we were still writing: what is measured below
    answer = b""
    closed_after = None
    try:
        while time.monotonic() - started < 7:
            s.settimeout(max(0.01, 7 - (time.monotonic() - started)))
            chunk = s.recv(4096)
            if not chunk:
                closed_after = time.monotonic() - started
                break
            answer += chunk
    except OSError as e:
        if not isinstance(e, TimeoutError):
            closed_after = time.monotonic() - started
    s.close()
    return {"closed_after": closed_after, "answer": repr(answer[:60])}


def smuggle_chunks(size):
    """The smuggle's bytes in pieces: "\\0BEGIN\\r\\n" (BEGIN before any AUTH: sd-bus answers ERROR
    and stays in its authentication), a small call whose body reads to sd-bus as lines ("AUTH
    EXTERNAL 30", "BEGIN") and then the header of a call of `size` bytes, then that call's body
    as small well-formed calls of 64 KiB each (each under the proxy's limit, so a filter that
    took the first BEGIN passes every byte)."""
    big = encode_call(9, XPUD_NAME, XPUD_PATH, MANAGER, "GetMetrics", "ay", body_length=0)
    body_length = size - len(big)
    big = encode_call(9, XPUD_NAME, XPUD_PATH, MANAGER, "GetMetrics", "ay", body_length=body_length)
    lines = b"\r\nAUTH EXTERNAL " + str(os.getuid()).encode().hex().encode() + b"\r\nBEGIN\r\n"
    payload = lines + big + struct.pack("<I", body_length - 4)  # the array's length, then its bytes
    yield b"\0BEGIN\r\n" + encode_call(1, DRIVER, DRIVER_PATH, DRIVER, "Hello", "ay",
                                         body_length=len(payload)) + payload
    piece = 64 * 1024
    header_length = len(encode_call(2, DRIVER, DRIVER_PATH, DRIVER, "Ping", "ay", body_length=0))
    left, serial = body_length - 4, 2
    filler = b"x" * piece
    while left > 0:
        n = left if left < piece + header_length else piece  # the last one takes the rest
        yield encode_call(serial, DRIVER, DRIVER_PATH, DRIVER, "Ping", "ay",
                          body_length=n - header_length) + filler[:n - header_length]
        left -= n
        serial += 1


def smuggle(held, path, size):
    """Sends the smuggle (smuggle_chunks) as fast as the proxy takes it, reading what comes back;
    then waits (7 s at most) for the proxy to close. {"sent", "closed_after", "answer"}."""
    out = {"sent": 0, "closed_after": None, "answer": b""}
    s, failed = connect_raw(path)
    if s is None:
        return dict(out, answer=failed)
    started = time.monotonic()
    s.setblocking(False)
    sender = ChunkSender(smuggle_chunks(size))
    poller = select.poll()
    poller.register(s, select.POLLIN | select.POLLOUT)
    try:
        while time.monotonic() - started < 30 and out["closed_after"] is None:
            for _, events in poller.poll(500):
                if events & (select.POLLIN | select.POLLHUP | select.POLLERR):
                    try:
                        chunk = s.recv(65536)
                    except BlockingIOError:
                        chunk = None
                    if chunk == b"":
                        out["closed_after"] = time.monotonic() - started
                        break
                    if chunk:
                        out["answer"] += chunk
                if not sender.done() and events & select.POLLOUT:
                    sender.send_some(s)
                    if sender.done():
                        poller.modify(s, select.POLLIN)
                if sender.done() and time.monotonic() - started > 7:
                    break
    except OSError:
        out["closed_after"] = time.monotonic() - started  # EPIPE, ECONNRESET: closed on us
    out["sent"] = sender.sent
    s.close()
    out["answer"] = repr(bytes(out["answer"][:80]))
    return out


def pass_fds(held, path, counts):
    """NEGOTIATE_UNIX_FD during authentication, then DeviceCount calls carrying descriptors."""
    out = {"negotiate": None, "replies": []}
    with Bus(path, 5) as bus:
        out["negotiate"] = bus.authenticate(negotiate_fds=True)
        bus.hello()
        for count in counts:
            fds = [os.open("/dev/null", os.O_RDONLY) for _ in range(count)]
            try:
                serial = bus.next_serial()
                data = encode_call(serial, XPUD_NAME, XPUD_PATH, PROPERTIES, "Get", "ss", [MANAGER, "DeviceCount"])
                socket.send_fds(bus.sock, [data], fds)
            finally:
                for fd in fds:
                    os.close(fd)
            try:
                out["replies"].append(bus.reply_to(serial, time.monotonic() + 5).describe())
            except (OSError, BusError) as e:
                out["replies"].append(f"{type(e).__name__}: {e}")
                break
    return out


def try_connect(held, path):
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
            s.settimeout(2)
            s.connect(path)
        return "connected"
    except OSError as e:
        return type(e).__name__


def configure_vfs(held, path):
    """Manager.ConfigureVirtualFunctions(0, 1): what the proxy answers."""
    try:
        with Bus(path, 5) as bus:
            bus.authenticate()
            bus.hello()
            return bus.call(XPUD_NAME, XPUD_PATH, MANAGER, "ConfigureVirtualFunctions", "uu", [0, 1]).describe()
    except (OSError, BusError) as e:
        return f"{type(e).__name__}: {e}"


def encode_signal(serial, path, interface, member, signature, args, destination=None):
    fields = [(FIELD_PATH, "o", path), (FIELD_INTERFACE, "s", interface), (FIELD_MEMBER, "s", member),
              (FIELD_SIGNATURE, "g", signature)]
    if destination:
        fields.append((FIELD_DESTINATION, "s", destination))
    return encode_message(serial, SIGNAL, fields, marshal(signature, args))


def unique_name_of(bus, pid):
    """The unique name of `pid`'s connection, as any client of the bus can learn it."""
    for name in bus.call(DRIVER, DRIVER_PATH, DRIVER, "ListNames").first or []:
        if name.startswith(":"):
            reply = bus.call(DRIVER, DRIVER_PATH, DRIVER, "GetConnectionUnixProcessID", "s", [name])
            if reply.kind == METHOD_RETURN and reply.first == pid:
                return name
    return None


def forge_xpud_signals(held, bus_path, proxy_pid, count):
    """On the system bus: a NameOwnerChanged naming ourselves the owner of xpud's name, then
    `count` DeviceHealthChanged, each addressed to the proxy's connection alone."""
    with Bus(bus_path, 5) as bus:
        bus.authenticate()
        ours = bus.hello()
        proxy = unique_name_of(bus, proxy_pid)
        if proxy is None:
            raise BusError(f"no connection of pid {proxy_pid} on the bus")
        xpud = bus.call(DRIVER, DRIVER_PATH, DRIVER, "GetNameOwner", "s", [XPUD_NAME]).first
        bus.sock.sendall(encode_signal(bus.next_serial(), DRIVER_PATH, DRIVER, "NameOwnerChanged", "sss",
                                       [XPUD_NAME, xpud, ours], proxy))
        for i in range(count):
            bus.sock.sendall(encode_signal(bus.next_serial(), XPUD_PATH, MANAGER, "DeviceHealthChanged", "oss",
                                           [f"{XPUD_PATH}/devices/xpu{i % 8}", "Unhealthy", f"forged {i}"], proxy))
        # Answered once the bus has routed all of the above: what xpud sends later comes after.
        bus.call(DRIVER, DRIVER_PATH, DRIVER, "GetId")
    return {"ours": ours, "proxy": proxy, "xpud": xpud}


COMMANDS = {f.__name__: f for f in (open_idle, open_with_hello, count_open, wait_all_closed, close_all,
                                    big_call, start_slow_reader, garbage, pass_fds, try_connect,
                                    configure_vfs, forge_xpud_signals, smuggle)}


class WorkerError(Exception):
    pass


class Worker:
    """A forked child running as another uid that does what it is told over a pipe, one command
    at a time, and keeps its connections between commands. Forked before any other process or
    connection exists, so it holds nothing of ours; it dies with us (PR_SET_PDEATHSIG)."""

    def __init__(self, uid):
        to_child, from_parent = os.pipe()
        from_child, to_parent = os.pipe()
        pid = os.fork()
        if pid == 0:
            try:
                os.close(from_parent)
                os.close(from_child)
                ctypes.CDLL(None, use_errno=True).prctl(1, int(signal.SIGKILL))  # PR_SET_PDEATHSIG
                os.setgroups([])
                os.setgid(uid)
                os.setuid(uid)
                Worker.serve(to_child, to_parent)
            finally:
                os._exit(0)
        os.close(to_child)
        os.close(to_parent)
        self.pid, self.requests, self.replies, self.pending = pid, from_parent, from_child, b""

    @staticmethod
    def serve(requests, replies):
        held = {}
        with os.fdopen(requests, "r") as commands, os.fdopen(replies, "w") as answers:
            for line in commands:
                name, args = json.loads(line)
                try:
                    answer = {"ok": COMMANDS[name](held, *args)}
                except Exception as e:  # reported to the parent, which fails the check
                    answer = {"error": f"{type(e).__name__}: {e}"}
                answers.write(json.dumps(answer) + "\n")
                answers.flush()

    def do(self, name, *args, timeout=60):
        os.write(self.requests, (json.dumps([name, list(args)]) + "\n").encode())
        deadline = time.monotonic() + timeout
        while b"\n" not in self.pending:
            remaining = deadline - time.monotonic()
            if remaining <= 0 or not select.select([self.replies], [], [], remaining)[0]:
                raise WorkerError(f"{name}: no answer within {timeout} s")
            chunk = os.read(self.replies, 65536)
            if not chunk:
                raise WorkerError(f"{name}: the worker is gone")
            self.pending += chunk
        line, _, self.pending = self.pending.partition(b"\n")
        answer = json.loads(line)
        if "error" in answer:
            raise WorkerError(f"{name}: {answer['error']}")
        return answer["ok"]

    def stop(self):
        try:
            os.kill(self.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        os.waitpid(self.pid, 0)
        os.close(self.requests)
        os.close(self.replies)


def attempt(description, action, fallback):
    """Runs `action`; a failure of the worker or the connection is reported and `fallback` used,
    so that one broken step fails its checks and the script goes on."""
    try:
        return action()
    except (WorkerError, OSError, BusError) as e:
        print(f"  ({description}: {type(e).__name__}: {e})", flush=True)
        return fallback


# --- The stack. -------------------------------------------------------------------------------

class SetupError(Exception):
    pass


BUS_CONFIG = """<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<!-- The system bus's type and authentication; no <limit>: dbus-daemon's built-in defaults are the
     system bus's (see /usr/share/dbus-1/system.conf). -->
<busconfig>
  <type>system</type>
  <listen>unix:path={path}</listen>
  <auth>EXTERNAL</auth>
  <policy context="default">
    <allow user="*"/>
    <allow own="*"/>
    <allow send_destination="*"/>
    <allow receive_sender="*"/>
  </policy>
</busconfig>
"""


class Stack:
    def __init__(self, run):
        self.run = run
        self.bus_path = f"{run}/bus"
        self.sockets = f"{run}/sockets"
        self.api = f"{self.sockets}/api.sock"
        self.sriov = f"{self.sockets}/sriov.sock"
        self.procs = []
        self.starts = 0
        with open(f"{run}/bus.conf", "w") as f:
            f.write(BUS_CONFIG.format(path=self.bus_path))
        with open(f"{run}/xpud.conf", "w") as f:
            f.write("[daemon]\nbackend = sim\n[sampling]\ninterval_ms = 200\n")
        os.mkdir(self.sockets, 0o755)
        os.chown(self.sockets, NOBODY, NOBODY)
        os.chmod(self.sockets, 0o755)
        helped = subprocess.run([PROXY, "--help"], capture_output=True, text=True, env=child_environment())
        if helped.returncode != 0:
            print(f"{PROXY} --help failed ({helped.returncode}): {helped.stderr.strip()[:300]}", flush=True)
        self.has_sriov = "--listen-sriov" in helped.stdout
        self.proxy = None
        self.baseline_reads = []  # root's read times before any attack (main)

    def start_bus_and_xpud(self):
        self.starts += 1
        if os.path.exists(self.bus_path):
            os.unlink(self.bus_path)
        self.bus = Process(["dbus-daemon", f"--config-file={self.run}/bus.conf", "--nofork", "--nopidfile"],
                           f"{self.run}/dbus{self.starts}.log")
        self.procs.append(self.bus)
        if not wait_until(lambda: os.path.exists(self.bus_path), 10):
            raise SetupError("dbus-daemon did not come up:\n" + self.bus.output())
        self.xpud = Process([XPUD, "--bus-address", f"unix:path={self.bus_path}", "--config", f"{self.run}/xpud.conf"],
                            f"{self.run}/xpud{self.starts}.log")
        self.procs.append(self.xpud)
        if not wait_until(lambda: read_device_count(self.bus_path)[0], 15):
            raise SetupError("xpud did not answer on the bus:\n" + self.xpud.output()[-3000:])

    def stop_bus_and_xpud(self):
        self.xpud.stop()
        self.bus.stop()

    def start_proxy(self):
        args = ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups", "--", PROXY,
                "--bus-address", f"unix:path={self.bus_path}", "--listen", self.api, "--log-level", "debug"]
        if self.has_sriov:
            args += ["--listen-sriov", self.sriov]
        self.proxy = Process(args, f"{self.run}/proxy.log", nofile=UNIT_NOFILE)
        self.procs.append(self.proxy)
        if not wait_until(lambda: read_device_count(self.api)[0] or not self.proxy.alive(), 15) \
                or not read_device_count(self.api)[0]:
            raise SetupError("the proxy does not serve DeviceCount:\n" + self.proxy.output()[-3000:])
        self.pid = self.proxy.proc.pid  # setpriv execs the proxy: the same pid

    def proxy_figures(self):
        return f"{fd_count(self.pid)} / {proc_status(self.pid, 'VmRSS')} / {proc_status(self.pid, 'VmHWM')}"

    def stop(self):
        # The proxy first: it would log the bus going away, and try to reach it again.
        for p in ([self.proxy] if self.proxy else []) + list(reversed(self.procs)):
            p.stop()


def xpud_listed(path):
    try:
        with Bus(path, 5) as bus:
            bus.authenticate()
            bus.hello()
            reply = bus.call(DRIVER, DRIVER_PATH, DRIVER, "ListNames")
            return reply.kind == METHOD_RETURN and XPUD_NAME in (reply.first or []), reply.describe()
    except (OSError, BusError) as e:
        return False, f"{type(e).__name__}: {e}"


def still_serving(stack, label):
    ok, took, what = read_device_count(stack.api)
    check(f"{label}: the proxy (same pid) still serves root's read", stack.proxy.alive() and ok,
          f"{'running' if stack.proxy.alive() else 'exited ' + str(stack.proxy.proc.returncode)}, {what}")


# --- The checks. ------------------------------------------------------------------------------

def idle_connections(stack, nobody):
    """a. 1,000 idle connections, and 4 that say Hello and nothing more."""
    hello_only = attempt("Hello-only connections",
                         lambda: nobody.do("open_with_hello", "hello only", stack.api, 4, False),
                         {"served": 0, "errors": {}})
    opened = attempt("idle connections", lambda: nobody.do("open_idle", "idle", stack.api, 1000), {"opened": 0})
    time.sleep(1.0)
    held_idle = attempt("counting", lambda: nobody.do("count_open", "idle"), -1)
    held_hello = attempt("counting", lambda: nobody.do("count_open", "hello only"), -1)
    times, failures, last = time_reads(stack.api, 50)
    during = stack.proxy_figures()
    not_closed = {"closed_at": None, "open": -1}
    # Waited for long past the deadline: a loaded machine runs the proxy's timer late, and what
    # matters is that they are closed, not held; the lower bound is what shows the deadline.
    idle_closed = attempt("waiting", lambda: nobody.do("wait_all_closed", "idle", CLOSED_BY_S), not_closed)
    hello_closed = attempt("waiting", lambda: nobody.do("wait_all_closed", "hello only", CLOSED_BY_S), not_closed)
    attempt("closing", lambda: nobody.do("close_all", "idle") and nobody.do("close_all", "hello only"), None)

    figures.append(("a. idle connections opened / held after 1 s (of 1,000)", f"{opened['opened']} / {held_idle}"))
    figures.append(("a. Hello-only connections served / held after 1 s (of 4)",
                    f"{hello_only['served']} / {held_hello}"))
    figures.append(("a. root's read p50/p99 ms (50, fresh connections) meanwhile", reads_figure(times, failures)))
    figures.append(("a. root's read p99 meanwhile / without an attack", reads_ratio_figure(times, stack.baseline_reads)))
    figures.append(("a. proxy fds / VmRSS / VmHWM KiB with them", during))
    closed_at = lambda r: f"{r['closed_at']:.1f} s" if r["closed_at"] is not None else f"{r['open']} still open"
    figures.append(("a. held idle ones all closed after (from connecting)", closed_at(idle_closed)))
    figures.append(("a. Hello-only ones all closed after (from their Hello)", closed_at(hello_closed)))
    check(f"1,000 idle connections and 4 Hello-only ones from uid {NOBODY}: at most {PER_UID} held",
          0 <= held_idle + held_hello <= PER_UID and opened["opened"] == 1000,
          f"{held_idle} idle + {held_hello} Hello-only held, {opened['opened']} opened")
    ok, detail = reads_answered(times, failures, last, stack.baseline_reads)
    check(f"root's reads meanwhile: all answered (each step within {READ_TIMEOUT_S:.0f} s)", ok, detail)
    in_window = lambda r: r["closed_at"] is not None and DEADLINE_S - 0.5 <= r["closed_at"] <= CLOSED_BY_S
    check(f"the held idle connections are closed {DEADLINE_S} s after connecting (no Hello)", in_window(idle_closed),
          closed_at(idle_closed))
    check(f"the Hello-only connections are closed {DEADLINE_S} s after their Hello (no call)",
          hello_only["served"] > 0 and in_window(hello_closed),
          f"{hello_only['served']} served, {closed_at(hello_closed)}")


def watchers(stack, nobody):
    """b. 1,000 connections that say Hello and AddMatch; root's own connections beside them."""
    opened = attempt("watchers", lambda: nobody.do("open_with_hello", "watchers", stack.api, 1000, True),
                     {"served": 0, "errors": {}})
    time.sleep(0.5)
    held = attempt("counting", lambda: nobody.do("count_open", "watchers"), -1)
    times, failures, last = time_reads(stack.api, 50)
    root = {}
    first = open_with_hello(root, "root", stack.api, 40, True)
    more = open_with_hello(root, "root more", stack.api, MAX_CLIENTS - PER_UID - 40, True, timeout=0.5, give_up_after=3)
    root_held = count_open(root, "root") + count_open(root, "root more")
    with_root = stack.proxy_figures()
    close_all(root, "root")
    close_all(root, "root more")
    still = attempt("counting", lambda: nobody.do("count_open", "watchers"), -1)
    attempt("closing", lambda: nobody.do("close_all", "watchers"), None)

    figures.append(("b. Hello+AddMatch connections served / held (of 1,000)", f"{opened['served']} / {held}"))
    figures.append(("b. root's read p50/p99 ms meanwhile", reads_figure(times, failures)))
    figures.append(("b. root's read p99 meanwhile / without an attack", reads_ratio_figure(times, stack.baseline_reads)))
    root_errors = dict(first["errors"], **more["errors"]) or "none"
    figures.append(("b. root's connections held at once (asked 40, then up to 112)",
                    f"{first['served']} + {more['served']} (errors: {root_errors})"))
    figures.append(("b. proxy fds / VmRSS / VmHWM KiB with them", with_root))
    check(f"1,000 Hello+AddMatch connections from uid {NOBODY}: exactly {PER_UID} held", held == PER_UID,
          f"{opened['served']} served, {held} held; refused: {opened['errors']}")
    ok, detail = reads_answered(times, failures, last, stack.baseline_reads)
    check(f"root's reads meanwhile: all answered (each step within {READ_TIMEOUT_S:.0f} s)", ok, detail)
    check("root holds 40 connections at once beside them (more than the per-uid cap)", first["served"] == 40,
          f"{first['served']} served: {first['errors']}")
    check(f"root holds all {MAX_CLIENTS - PER_UID} connections that {MAX_CLIENTS} clients leave beside uid "
          f"{NOBODY}'s {PER_UID}, under the unit's LimitNOFILE={UNIT_NOFILE}",
          root_held == MAX_CLIENTS - PER_UID,
          f"{root_held} held; fds with them {with_root.split(' / ')[0]} (limit {UNIT_NOFILE}); proxy log: "
          f"{stack.proxy.output().count('Too many open files')} warnings 'Too many open files'")
    check(f"uid {NOBODY}'s watchers, having made their first call, are still held", still == held,
          f"{still} of {held}")


class PeakWatcher:
    """The proxy's VmHWM, looked at every 10 ms while it runs: a proxy that a large call brings
    down takes its peak with it."""

    def __init__(self, pid):
        self.pid, self.peak, self.done = pid, -1, threading.Event()
        self.thread = threading.Thread(target=self.watch)
        self.thread.start()

    def watch(self):
        while not self.done.is_set():
            self.peak = max(self.peak, proc_status(self.pid, "VmHWM"))
            self.done.wait(0.01)

    def stop(self):
        self.done.set()
        self.thread.join()
        return self.peak


def big_messages(stack, nobody):
    """c. A 100 MiB and a 40 MiB call, from uid 65534 and from root."""
    watcher = PeakWatcher(stack.pid)
    try:
        big_message_calls(stack, nobody)
    finally:
        hwm = watcher.stop()
    figures.append(("c. proxy VmHWM KiB, the most seen while the large calls ran", str(hwm)))
    check(f"the proxy's peak RSS stays under its MemoryMax ({MEMORY_MAX_KIB >> 10} MiB)", 0 < hwm < MEMORY_MAX_KIB,
          f"VmHWM {hwm} KiB")
    still_serving(stack, "after the large calls")
    listed, what = xpud_listed(stack.api)
    check("xpud is still listed through the proxy", listed, what)
    lost = "lost the connection to the system bus" in stack.proxy.output()
    check("the proxy kept its system bus connection (nothing over 32 MiB reached the bus)",
          not lost and stack.proxy.alive(),
          "its log says it lost the system bus" if lost else "")


def big_message_calls(stack, nobody):
    """Each answered LimitsExceeded, and the same connection reads DeviceCount after it."""
    for who, size in ((f"uid {NOBODY}", 100 * MIB), (f"uid {NOBODY}", 40 * MIB),
                      ("root", 100 * MIB), ("root", 40 * MIB)):
        if who == "root":
            r = big_call({}, stack.api, size, 20.0)
        else:
            r = attempt("big call", lambda: nobody.do("big_call", stack.api, size, 20.0, timeout=40),
                        {"answer": "worker failed", "text": "", "sent": 0, "seconds": None, "after": None})
        took = f"{r['seconds']:.2f} s" if r["seconds"] is not None else "-"
        figures.append((f"c. {size >> 20} MiB call from {who}: answer, time, MiB sent",
                        f"{(r['answer'] or '').rsplit('.', 1)[-1]}, {took}, {r['sent'] / MIB:.0f}"))
        check(f"a {size >> 20} MiB call from {who}: LimitsExceeded naming the limit, and the connection goes on",
              r["answer"] == LIMITS_EXCEEDED and TOO_LARGE_TEXT in r["text"] and r["after"] == 8,
              f"{r['answer']}: {r['text'][:160]!r}; DeviceCount after: {r['after']}")


def slow_reader(stack, nobody):
    """d. A client that stops reading while root floods xpud with health changes."""
    first = attempt("slow reader", lambda: nobody.do("start_slow_reader", stack.api), None)
    check("the slow reader is set up (Hello, AddMatch, one call answered)", first == 8, f"DeviceCount {first}")
    if first != 8:
        return  # nothing to flood it with
    stack.proxy.logged_since_last_look("stopped reading")  # only what comes from here on counts
    calls = answered = errors = 0
    times, failures, last = [], 0, ""
    dropped_after = None
    rounds = 0
    started = time.monotonic()
    flood = Bus(stack.bus_path, 10)
    with flood:
        flood.authenticate()
        flood.hello()
        # Rounds of one call per card, pipelined, then a pause of 2 ms for xpud's sampling cycle
        # to publish them (measured: 30,000 calls pipelined without pauses brought 102 health
        # changes, at the flood's pauses only). A new reason each time: xpud signals a change of
        # reason as of health (1,000 bytes, under its 1,024), so each cycle tells of all 8 cards.
        while calls < 30000 and time.monotonic() - started < 60:
            health = "Unhealthy" if rounds % 2 == 0 else "Healthy"
            batch = b"".join(encode_call(flood.next_serial(), XPUD_NAME, XPUD_PATH, SIMULATOR, "SetHealth", "uss",
                                         [card, health, f"flood {calls + card} ".ljust(1000, "x")])
                             for card in range(8))
            flood.sock.settimeout(10)
            flood.sock.sendall(batch)
            calls += 8
            rounds += 1
            while answered < calls:
                message = flood.read_message(time.monotonic() + 10)
                if message.kind in (METHOD_RETURN, ERROR):
                    answered += 1
                    errors += message.kind == ERROR
            time.sleep(0.002)
            if rounds % 10 == 0:
                ok, took, what = read_device_count(stack.api)
                if ok:
                    times.append(took)
                else:
                    failures += 1
                    last = what
                if stack.proxy.logged_since_last_look("stopped reading"):
                    dropped_after = time.monotonic() - started
                    break
        for card in range(8):
            flood.call(XPUD_NAME, XPUD_PATH, SIMULATOR, "SetHealth", "uss", [card, "Healthy", "flood over"])
    if dropped_after is None and wait_until(lambda: stack.proxy.logged_since_last_look("stopped reading"), 10):
        dropped_after = time.monotonic() - started
    closed = attempt("slow reader", lambda: nobody.do("count_open", "slow") == 0, False)
    attempt("closing", lambda: nobody.do("close_all", "slow"), None)
    hwm = proc_status(stack.pid, "VmHWM")
    rss = proc_status(stack.pid, "VmRSS")
    line = next((l for l in stack.proxy.output().splitlines() if "stopped reading" in l), "")
    line = re.sub(r'.*msg="(.*)"$', r"\1", line.strip())

    figures.append(("d. SetHealth calls sent directly to xpud (errors) until the drop",
                    f"{calls} ({errors}) in {time.monotonic() - started:.1f} s"))
    figures.append(("d. slow reader dropped after", f"{dropped_after:.1f} s" if dropped_after is not None else "never"))
    figures.append(("d. root's read p50/p99 ms during the flood",
                    reads_figure(times, failures) + f", {len(times) + failures} reads"))
    figures.append(("d. root's read p99 during the flood / without an attack",
                    reads_ratio_figure(times, stack.baseline_reads)))
    figures.append(("d. proxy VmRSS / VmHWM KiB after the flood", f"{rss} / {hwm}"))
    check(f"the client that stopped reading is dropped ('stopped reading' in the proxy's log)",
          dropped_after is not None and closed, line[-160:] or f"not dropped after {calls} calls")
    check(f"the proxy's peak RSS stays under {MEMORY_MAX_KIB >> 10} MiB through the flood", 0 < hwm < MEMORY_MAX_KIB,
          f"VmHWM {hwm} KiB")
    ok, detail = reads_answered(times, failures, last, stack.baseline_reads)
    check(f"root's reads during the flood: all answered (each step within {READ_TIMEOUT_S:.0f} s)",
          ok and len(times) >= 3,
          f"{detail}, {len(times)} reads")
    still_serving(stack, "after the flood")


def garbage_streams(stack, nobody):
    """e. Streams that are no D-Bus client's."""
    for kind in ("random bytes before authentication", "a 20 KiB authentication line without CRLF",
                 "a bad message header after BEGIN", "a header claiming a 100 MiB body, then hang-up"):
        r = attempt(kind, lambda: nobody.do("garbage", stack.api, kind, timeout=20),
                    {"closed_after": None, "answer": "worker failed"})
        ok, took, what = read_device_count(stack.api)
        hung_up = r["answer"] == "(we hung up)"
        figures.append((f"e. {kind}: closed after", "(we hung up)" if hung_up else
                        f"{r['closed_after'] * 1000:.1f} ms" if r["closed_after"] is not None else
                        r["answer"] if r["answer"].startswith(("connect:", "worker")) else "not closed in 7 s"))
        check(f"{kind}: {'' if hung_up else f'closed for it (before the {DEADLINE_S} s Hello deadline), '}"
              "then root is served",
              (hung_up or (r["closed_after"] is not None and r["closed_after"] < DEADLINE_S)) and ok
              and stack.proxy.alive(),
              f"closed after {'-' if r['closed_after'] is None else format(r['closed_after'] * 1000, '.1f') + ' ms'}, "
              f"answered {r['answer']}; root: {what}")
    hwm = proc_status(stack.pid, "VmHWM")
    check(f"the proxy's peak RSS stays under {MEMORY_MAX_KIB >> 10} MiB after the garbage", 0 < hwm < MEMORY_MAX_KIB,
          f"VmHWM {hwm} KiB")


def reset_peak_rss(pid):
    """Sets VmHWM back to the current RSS (clear_refs "5", Linux 4.0), so that a figure is the
    peak of one attack; False when the kernel does not let us."""
    try:
        with open(f"/proc/{pid}/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


def auth_smuggle(stack, nobody):
    """s. The authentication smuggle: a 100 MiB call past the filter."""
    reset = reset_peak_rss(stack.pid)
    before = proc_status(stack.pid, "VmHWM")
    stack.proxy.logged_since_last_look("before sd-bus had accepted an AUTH")
    watcher = PeakWatcher(stack.pid)
    try:
        r = attempt("smuggle", lambda: nobody.do("smuggle", stack.api, 100 * MIB, timeout=60),
                    {"sent": 0, "closed_after": None, "answer": "worker failed"})
    finally:
        hwm = watcher.stop()
    named = wait_until(lambda: stack.proxy.logged_since_last_look("before sd-bus had accepted an AUTH"), 10)
    closed = f"{r['closed_after'] * 1000:.0f} ms" if r["closed_after"] is not None else "not closed"
    figures.append(("s. smuggled 100 MiB call: proxy VmHWM KiB before / the most seen",
                    f"{before} / {hwm}{'' if reset else ' (VmHWM not reset: the peak of the whole run)'}"))
    figures.append(("s. smuggled 100 MiB call: MiB sent, closed after, answered",
                    f"{r['sent'] / MIB:.1f}, {closed}, {r['answer'][:60]}"))
    bound = MEMORY_MAX_KIB // 2
    check(f"the smuggled 100 MiB call: the proxy's peak RSS stays under {bound >> 10} MiB "
          f"(half its MemoryMax)", 0 < hwm < bound, f"VmHWM {hwm} KiB")
    check(f"the smuggle's connection is closed at its first BEGIN (before the {DEADLINE_S} s Hello deadline), "
          "before sd-bus answers anything, and the log names why",
          r["closed_after"] is not None and r["closed_after"] < DEADLINE_S and r["answer"] == "b''" and named,
          f"closed after {closed}, answered {r['answer']}, "
          f"{'the log names it' if named else 'no BEGIN-before-AUTH in the log'}")
    still_serving(stack, "after the smuggle")


def fd_passing(stack, nobody):
    """f. Descriptors offered and sent."""
    time.sleep(0.5)  # earlier clients reaped
    before = fd_count(stack.pid)
    r = attempt("fd passing", lambda: nobody.do("pass_fds", stack.api, [10, 200], timeout=30),
                {"negotiate": None, "replies": []})
    back = wait_until(lambda: fd_count(stack.pid) == before, 3)
    after = fd_count(stack.pid)
    figures.append(("f. proxy fds before / after a client sent 10 and 200 descriptors", f"{before} / {after}"))
    figures.append(("f. answers to the calls that carried them", "; ".join(r["replies"])[:70] or "-"))
    check("NEGOTIATE_UNIX_FD is answered ERROR", (r["negotiate"] or "").startswith("ERROR"),
          f"answered {r['negotiate']!r}")
    check("descriptors sent anyway are closed: the proxy's descriptor count is back", back and before > 0,
          f"{before} before, {after} after")
    still_serving(stack, "after fd passing")


def sriov_socket(stack, nobody):
    """g. The SR-IOV socket."""
    if not stack.has_sriov:
        for name in ("the SR-IOV socket is mode 0600", f"uid {NOBODY} is refused ConfigureVirtualFunctions on it",
                     f"uid {NOBODY} cannot connect to root's SR-IOV socket", "root reads DeviceCount through it"):
            check(name, False, "this proxy has no --listen-sriov")
        return
    mode = stat.S_IMODE(os.stat(stack.sriov).st_mode) if os.path.exists(stack.sriov) else None
    check("the SR-IOV socket is mode 0600", mode == 0o600, f"mode {oct(mode) if mode is not None else 'missing'}")
    # Bound by the proxy here, it is the proxy's uid's, which is uid 65534's too: the second lock
    # (SO_PEERCRED uid 0) is what refuses it.
    answer = attempt("ConfigureVirtualFunctions", lambda: nobody.do("configure_vfs", stack.sriov), "worker failed")
    check(f"uid {NOBODY} is refused ConfigureVirtualFunctions on it", answer.startswith(ACCESS_DENIED), answer)
    # As xpud-api-proxy-sriov.socket makes it: root's, 0600.
    os.chown(stack.sriov, 0, 0)
    reached = attempt("connecting", lambda: nobody.do("try_connect", stack.sriov), "worker failed")
    check(f"uid {NOBODY} cannot connect to root's SR-IOV socket", reached == "PermissionError", reached)
    ok, took, what = read_device_count(stack.sriov)
    check("root reads DeviceCount through it", ok, f"{what} in {ms(took)} ms")


def reconnect(stack):
    """h. dbus-daemon and xpud restarted."""
    stack.stop_bus_and_xpud()
    restarted = time.monotonic()
    stack.start_bus_and_xpud()
    served = wait_until(lambda: read_device_count(stack.api)[0], 20, step=0.1)
    took = time.monotonic() - restarted
    figures.append(("h. root's read through the proxy again after the bus restarted",
                    f"{took:.1f} s" if served else "never (20 s)"))
    check("after dbus-daemon and xpud restart, the same proxy serves root within 20 s", served and stack.proxy.alive(),
          f"{'running' if stack.proxy.alive() else 'exited'}, {read_device_count(stack.api)[2]}")


def stock_bus_config(bus_path):
    """Debian's /usr/share/dbus-1/system.conf with the package's policy, listening at `bus_path`."""
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "../packaging"))
    from private_system_bus import bus_config
    policy = os.path.join(os.path.dirname(os.path.abspath(__file__)), "../../dbus/com.kunlunxin.xpud1.conf")
    return bus_config(bus_path, [policy])


def health_signals(bus, until, wanted):
    """Reads `bus` until `wanted` (a predicate on the signals so far) or the deadline `until`:
    every DeviceHealthChanged and NameOwnerChanged that arrived, as (member, args)."""
    seen = []
    try:
        while not wanted(seen):
            message = bus.read_message(until)
            if message.kind == SIGNAL and message.fields.get(FIELD_MEMBER) in ("DeviceHealthChanged",
                                                                               "NameOwnerChanged"):
                seen.append((message.fields[FIELD_MEMBER], message.args))
    except TimeoutError:
        pass
    return seen


def forged_owner(stack, nobody):
    """forged owner. A peer of the system bus claims xpud's name to the proxy alone (stock policy)."""
    run = f"{stack.run}/stock"
    os.mkdir(run, 0o755)
    os.chmod(run, 0o755)
    stock = Stack(run)
    with open(f"{run}/bus.conf", "w") as f:
        f.write(stock_bus_config(stock.bus_path))
    forged_count, received = 10, []

    def is_real(member, args):
        # xpud's own: what is not the forger's ("forged N"); xpud sends no reason once healthy.
        return member == "DeviceHealthChanged" and len(args) > 2 and not args[2].startswith("forged")

    try:
        stock.start_bus_and_xpud()
        stock.start_proxy()
        with Bus(stock.api, 10) as client, Bus(stock.bus_path, 10) as host:
            client.authenticate()
            client.hello()
            reply = client.call(DRIVER, DRIVER_PATH, DRIVER, "AddMatch", "s", ["type='signal'"])
            check("a client of the proxy subscribes to signals", reply.kind == METHOD_RETURN, reply.describe())
            attack = attempt("forging", lambda: nobody.do("forge_xpud_signals", stock.bus_path, stock.pid,
                                                          forged_count), None)
            check(f"uid {NOBODY} sent the proxy's connection a NameOwnerChanged and {forged_count} "
                  "DeviceHealthChanged (the stock policy lets it)", attack is not None, str(attack))
            host.authenticate()
            host.hello()
            # xpud's own changes, made after the forgery: every card unhealthy, then healthy again.
            for health in ("Unhealthy", "Healthy"):
                for card in range(8):
                    answer = host.call(XPUD_NAME, XPUD_PATH, SIMULATOR, "SetHealth", "uss",
                                       [card, health, f"real {health} {card}"])
                    if answer.kind != METHOD_RETURN:
                        raise BusError("SetHealth: " + answer.describe())
                received += health_signals(client, time.monotonic() + 10,
                                           lambda seen: sum(1 for m, a in seen if is_real(m, a) and a[1] == health) >= 8)
        ours = (attack or {}).get("ours")
        forged = sum(1 for m, a in received if m == "DeviceHealthChanged" and len(a) > 2 and a[2].startswith("forged"))
        genuine = sum(1 for m, a in received if is_real(m, a))
        announced = sum(1 for m, a in received if m == "NameOwnerChanged" and ours and ours in a)
        figures.append((f"forged owner. forged DeviceHealthChanged a proxy client received (of {forged_count})",
                        str(forged)))
        figures.append(("forged owner. NameOwnerChanged naming the forger xpud, received", str(announced)))
        figures.append(("forged owner. xpud's own DeviceHealthChanged received after it (of 16)", str(genuine)))
        check("no forged DeviceHealthChanged reaches a client of the proxy", forged == 0, f"{forged} arrived")
        check("no client is told the forger owns xpud's name", announced == 0, f"{announced} NameOwnerChanged")
        check("every one of xpud's own health changes after the forgery reaches the client", genuine == 16,
              f"{genuine} of 16 arrived")
        ok, _, what = read_device_count(stock.api)
        check("the proxy still serves xpud's reads", ok and stock.proxy.alive(), what)
    except SetupError as e:
        check("the stack on the stock system.conf starts", False, str(e).splitlines()[0])
    finally:
        stock.stop()
        if any_failed() and stock.proxy:
            print("---- the stock stack's proxy.log (last 3000 characters)\n" + stock.proxy.output()[-3000:])


def main():
    if os.geteuid() != 0:
        print("api_proxy_hostile.py: run as root (it runs clients and the proxy as other uids)", file=sys.stderr)
        return 2
    for binary in (XPUD, PROXY):
        if not os.access(binary, os.X_OK):
            print(f"api_proxy_hostile.py: {binary} is not executable (build first)", file=sys.stderr)
            return 2
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, 16384), hard))

    run = tempfile.mkdtemp(prefix="xpu-api-hostile.")
    os.chmod(run, 0o755)  # uid 65534 reaches the bus and the proxy's sockets
    nobody = Worker(NOBODY)
    stack = Stack(run)
    began = time.monotonic()
    try:
        stack.start_bus_and_xpud()
        stack.start_proxy()
        figures.append(("proxy fds / VmRSS / VmHWM KiB at start", stack.proxy_figures()))
        # Root's reads before any attack, in this run on this machine as loaded as it is: what the
        # reads during the attacks are compared with (reads_answered).
        stack.baseline_reads, _, _ = time_reads(stack.api, 50)
        figures.append(("root's read p50/p99 ms (50, fresh connections) without an attack",
                        reads_figure(stack.baseline_reads, 0)))
        if not stack.has_sriov:
            print(f"{PROXY} has no --listen-sriov: an older proxy, the SR-IOV checks fail", flush=True)
        for step in (idle_connections, watchers, big_messages, slow_reader, garbage_streams, auth_smuggle,
                     fd_passing, sriov_socket, reconnect, forged_owner):
            print(f"-- {step.__doc__.splitlines()[0]}", flush=True)
            try:
                step(stack, nobody) if step is not reconnect else step(stack)
            except (OSError, BusError, WorkerError) as e:
                check(f"{step.__doc__.splitlines()[0]} ran to its end", False, f"{type(e).__name__}: {e}")
        figures.append(("proxy fds / VmRSS / VmHWM KiB at the end", stack.proxy_figures()))
        check("the proxy is still running, the same process", stack.proxy.alive(), "")
    except SetupError as e:
        print(f"api_proxy_hostile.py: {e}", file=sys.stderr)
        check("the stack starts", False, str(e).splitlines()[0])
    finally:
        nobody.stop()
        stack.stop()
        print_logs_if_failed(run)
        shutil.rmtree(run, ignore_errors=True)

    figures.append(("the whole run", f"{time.monotonic() - began:.0f} s"))
    return finish("unix sockets, this machine")


if __name__ == "__main__":
    sys.exit(main())
