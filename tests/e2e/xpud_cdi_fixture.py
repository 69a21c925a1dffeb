"""What the CDI reference tests share: tests/cdi-check built from the Go module proxy
(build_go_program, which the device metadata reference test uses too), and the real
xpud (sim backend) on a private dbus-daemon writing its CDI spec into a directory of the test's.

    fixture = XpudWithCdi(source_dir, build_dir, work, cards=2)   # builds, starts, waits
    fixture.uuids                 # the cards' UUIDs, by index
    fixture.cdi_check(*names)     # (exit code, cdi-check's JSON report) over fixture.spec_dir
    fixture.stop()
"""

import json
import os
import subprocess
import time


def wait_for(what, seconds, condition):
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {seconds} s waiting for {what}")
        time.sleep(0.05)


def build_go_program(source_dir, name, work, timeout=600):
    """tests/<name> built into work/<name> (the module proxy on the first run); its path."""
    env = dict(os.environ, GOFLAGS="-mod=mod")
    output = os.path.join(work, name)
    built = subprocess.run([os.path.join(source_dir, "scripts", "go"), "build", "-o", output, "."],
                           cwd=os.path.join(source_dir, "tests", name), env=env,
                           capture_output=True, text=True, timeout=timeout)
    if built.returncode != 0:
        raise AssertionError(f"building tests/{name} failed: {built.stderr}")
    return output


class XpudWithCdi:
    def __init__(self, source_dir, build_dir, work, cards):
        self.work = work
        self.processes = []
        build_go_program(source_dir, "cdi-check", work)
        self.spec_dir = os.path.join(work, "cdi")
        bus = os.path.join(work, "bus")
        self.address = f"unix:path={bus}"
        config = os.path.join(work, "xpud.conf")
        with open(config, "w", encoding="utf-8") as f:
            f.write(f"[daemon]\nbackend = sim\n[sim]\ndevices = {cards}\n"
                    f"[cdi]\nenabled = true\ndirectory = {self.spec_dir}\n")
        try:
            self.start(["dbus-daemon", "--session", "--nofork", "--nopidfile", f"--address={self.address}"], "dbus")
            wait_for("the private bus", 10, lambda: os.path.exists(bus))
            self.start([os.path.join(build_dir, "xpud", "xpud"), "--bus-address", self.address,
                        "--config", config], "xpud")
            self.spec = os.path.join(self.spec_dir, "kunlunxin-xpu.json")
            wait_for("xpud's CDI spec", 20, lambda: os.path.exists(self.spec) and self.uuid_of(cards - 1))
        except BaseException:
            self.stop()
            raise
        self.uuids = [self.uuid_of(i) for i in range(cards)]

    def start(self, argv, name):
        with open(os.path.join(self.work, name + ".log"), "w", encoding="utf-8") as log:
            process = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT)
        self.processes.append(process)
        return process

    def uuid_of(self, index):
        result = subprocess.run(["busctl", f"--address={self.address}", "get-property", "com.kunlunxin.xpud1",
                                 f"/com/kunlunxin/xpud1/devices/xpu{index}", "com.kunlunxin.xpud1.Device", "Uuid"],
                                capture_output=True, text=True, timeout=10)
        return result.stdout.split('"')[1] if result.returncode == 0 else None

    def cdi_check(self, *names, directory=None):
        """cdi-check over `directory` (default: xpud's spec directory): (exit code, report)."""
        result = subprocess.run([os.path.join(self.work, "cdi-check"), directory or self.spec_dir, *names],
                                capture_output=True, text=True, timeout=60)
        try:
            report = json.loads(result.stdout)
        except json.JSONDecodeError as error:
            raise AssertionError(f"cdi-check printed no report ({error}): {result.stdout}{result.stderr}")
        return result.returncode, report

    def stop(self):
        for process in reversed(self.processes):
            process.terminate()
            try:
                process.wait(10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        self.processes = []
