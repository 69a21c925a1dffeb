"""What the hostile suites (label `hostile`) share: named checks that print as they go, figures
collected for the closing table, waiting on a condition with a deadline, and the closing lines
(the logs of a failed run, the figures, 'N passed, M failed'); and the programs under test, each
run with its output in a log."""

import os
import resource
import signal
import subprocess
import time

results = []  # (name, ok, detail)
figures = []  # (what, value)


def check(name, ok, detail=""):
    results.append((name, bool(ok), detail))
    print(f"{'PASS' if ok else 'FAIL'}: {name}{(' - ' + detail) if detail else ''}", flush=True)


def wait_until(condition, seconds, step=0.05):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(step)
    return condition()


def child_environment():
    """Ours without what would make a child talk to our own service manager or journal."""
    env = dict(os.environ)
    for name in ("NOTIFY_SOCKET", "JOURNAL_STREAM", "LISTEN_FDS", "LISTEN_PID", "LISTEN_FDNAMES",
                 "WATCHDOG_USEC", "WATCHDOG_PID", "DBUS_SYSTEM_BUS_ADDRESS", "DBUS_SESSION_BUS_ADDRESS"):
        env.pop(name, None)
    return env


class Process:
    def __init__(self, args, log, nofile=None):
        self.log = log
        self.read_to = 0
        self.carry = b""

        def limit_descriptors():
            resource.setrlimit(resource.RLIMIT_NOFILE, (nofile, nofile))

        self.proc = subprocess.Popen(args, stdout=open(log, "wb"), stderr=subprocess.STDOUT,
                                     env=child_environment(), preexec_fn=limit_descriptors if nofile else None)

    def output(self):
        with open(self.log, "rb") as f:
            return f.read().decode(errors="replace")

    def logged_since_last_look(self, needle):
        """Whether `needle` appeared in the log since the previous call (reads only what is new)."""
        with open(self.log, "rb") as f:
            f.seek(self.read_to)
            new = f.read()
        self.read_to += len(new)
        text = self.carry + new
        self.carry = text[-len(needle):]
        return needle.encode() in text

    def alive(self):
        return self.proc.poll() is None

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def any_failed():
    return any(not ok for _, ok, _ in results)


def print_logs_if_failed(directory, tail=3000):
    """Every *.log in `directory`, its last `tail` characters, when a check failed."""
    if not any_failed():
        return
    for log in sorted(os.listdir(directory)):
        if log.endswith(".log"):
            with open(os.path.join(directory, log), errors="replace") as f:
                text = f.read()
            print(f"---- {log} (last {tail} of {len(text)} characters)\n" + text[-tail:])


def finish(where):
    """Prints the figures (measured `where`) and the count; the exit status (1 on any failure)."""
    if figures:
        print(f"\nfigures ({where}):")
        for what, value in figures:
            print(f"  {what:<72} {value}")
    passed = sum(1 for _, ok, _ in results if ok)
    failed = len(results) - passed
    print(f"\n{passed} passed, {failed} failed")
    return 1 if failed else 0
