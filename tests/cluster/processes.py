"""Background programs and waiting with deadlines, for the cluster suite."""

import os
import signal
import subprocess
import time


class Deadline(Exception):
    """A condition did not hold in time; the message says which and what was seen last."""


def wait_for(what, predicate, timeout, interval=0.25):
    """Calls predicate until it returns something true and returns that; raises Deadline with
    `what` and the last value or error when `timeout` seconds pass first."""
    deadline = time.monotonic() + timeout
    last = None
    while True:
        try:
            value = predicate()
            if value:
                return value
            last = value
        except Exception as error:  # the condition's own failure is what it saw last
            last = f"{type(error).__name__}: {error}"
        if time.monotonic() >= deadline:
            raise Deadline(f"{what}: not within {timeout:.0f} s (last seen: {last!r})")
        time.sleep(interval)


def timed(function):
    """Runs function(); returns (its value, seconds taken)."""
    start = time.monotonic()
    value = function()
    return value, time.monotonic() - start


class Program:
    """One long-running program with its output in LOG_DIR/NAME.log; restartable."""

    def __init__(self, name, argv, log_dir, env=None, user=None):
        self.name = name
        self.argv = argv
        self.log_path = os.path.join(log_dir, f"{name}.log")
        self.env = env
        self.user = user  # (uid, gid) to drop to, or None
        self.process = None

    def start(self):
        log = open(self.log_path, "ab")
        log.write(f"=== {time.strftime('%H:%M:%S')} start: {' '.join(self.argv)}\n".encode())
        log.flush()
        env = dict(os.environ)
        if self.env:
            env.update(self.env)
        kwargs = {}
        if self.user is not None:
            kwargs = {"user": self.user[0], "group": self.user[1], "extra_groups": []}
        try:
            self.process = subprocess.Popen(self.argv, stdout=log, stderr=subprocess.STDOUT,
                                            stdin=subprocess.DEVNULL, env=env,
                                            start_new_session=True, **kwargs)
        finally:
            log.close()
        return self

    def running(self):
        return self.process is not None and self.process.poll() is None

    def check_running(self):
        if not self.running():
            raise RuntimeError(f"{self.name} exited ({self.process.returncode}); "
                               f"its log {self.log_path} ends:\n{self.tail()}")

    def tail(self, lines=25):
        try:
            with open(self.log_path, "rb") as log:
                return b"".join(log.readlines()[-lines:]).decode(errors="replace")
        except OSError:
            return ""

    def signal(self, number):
        if self.running():
            os.kill(self.process.pid, number)

    def stop(self, timeout=15):
        if not self.running():
            return
        self.process.send_signal(signal.SIGTERM)
        try:
            self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()

    def kill(self):
        if self.running():
            self.process.kill()
            self.process.wait()

    def restart(self):
        self.stop()
        return self.start()


def run(argv, timeout=120, check=True, env=None, input_text=None):
    """Runs a command to completion; returns its stdout. A failure names the command and shows
    its output."""
    full_env = None
    if env:
        full_env = dict(os.environ)
        full_env.update(env)
    result = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, env=full_env,
                            input=input_text)
    if check and result.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)} exited {result.returncode}:\n"
                           f"{result.stdout[-2000:]}{result.stderr[-2000:]}")
    return result.stdout if check else result
