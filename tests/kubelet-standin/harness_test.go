package main

// A small process harness for end-to-end tests: a private dbus-daemon, xpud with the sim backend,
// xpu-k8s-shim roles, busctl helpers and waiting on a condition with a deadline. Every process is
// stopped when its test ends (t.Cleanup); its output goes to a log file that a failing test
// prints. Binary paths come from the environment (set by ctest):
//
//	XPUD_BIN          the xpud binary
//	XPU_K8S_SHIM_BIN  the xpu-k8s-shim binary

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Process is one child process with its output in a log file.
type Process struct {
	Name    string
	Cmd     *exec.Cmd
	LogPath string
	done    chan struct{}
	err     error // set when done is closed
}

// StartProcess starts argv with extra environment entries ("KEY=value") and output to
// dir/<name>.log. The process is killed at the end of the test if still running.
func StartProcess(t testing.TB, dir, name string, argv []string, env ...string) *Process {
	t.Helper()
	logPath := filepath.Join(dir, name+".log")
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatalf("create %s: %v", logPath, err)
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdout = logFile
	cmd.Stderr = logFile
	cmd.Env = append(os.Environ(), env...)
	if err := cmd.Start(); err != nil {
		logFile.Close()
		t.Fatalf("start %s (%s): %v", name, strings.Join(argv, " "), err)
	}
	p := &Process{Name: name, Cmd: cmd, LogPath: logPath, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		logFile.Close()
		close(p.done)
	}()
	t.Cleanup(func() {
		p.Kill()
		if t.Failed() {
			t.Logf("---- %s output (%s) ----\n%s", name, logPath, p.Output())
		}
	})
	return p
}

// Pid of the process.
func (p *Process) Pid() int { return p.Cmd.Process.Pid }

// Output is everything the process wrote so far.
func (p *Process) Output() string {
	data, _ := os.ReadFile(p.LogPath)
	return string(data)
}

// Running reports whether the process has not exited yet.
func (p *Process) Running() bool {
	select {
	case <-p.done:
		return false
	default:
		return true
	}
}

// Wait waits up to timeout for the process to exit and returns its exit status (128+N when
// killed by signal N), or an error on timeout.
func (p *Process) Wait(timeout time.Duration) (int, error) {
	select {
	case <-p.done:
	case <-time.After(timeout):
		return -1, fmt.Errorf("%s (pid %d) still running after %v", p.Name, p.Pid(), timeout)
	}
	if p.err == nil {
		return 0, nil
	}
	var exit *exec.ExitError
	if errors.As(p.err, &exit) {
		if status, ok := exit.Sys().(syscall.WaitStatus); ok && status.Signaled() {
			return 128 + int(status.Signal()), nil
		}
		return exit.ExitCode(), nil
	}
	return -1, p.err
}

// Stop sends SIGTERM and waits for the exit status.
func (p *Process) Stop(timeout time.Duration) (int, error) {
	if p.Running() {
		_ = p.Cmd.Process.Signal(syscall.SIGTERM)
	}
	return p.Wait(timeout)
}

// Kill sends SIGKILL (if still running) and reaps the process.
func (p *Process) Kill() {
	if p.Running() {
		_ = p.Cmd.Process.Kill()
	}
	<-p.done
}

// StatusField reads one field of /proc/<pid>/status in kB (VmRSS, VmHWM, ...).
func (p *Process) StatusField(field string) (int, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", p.Pid()))
	if err != nil {
		return 0, err
	}
	defer f.Close()
	scanner := bufio.NewScanner(f)
	for scanner.Scan() {
		key, value, ok := strings.Cut(scanner.Text(), ":")
		if !ok || key != field {
			continue
		}
		fields := strings.Fields(value)
		if len(fields) == 0 {
			break
		}
		return strconv.Atoi(fields[0])
	}
	return 0, fmt.Errorf("no %s in /proc/%d/status", field, p.Pid())
}

// WaitFor polls cond until it returns true or timeout passes; the error carries cond's last
// explanation.
func WaitFor(timeout time.Duration, cond func() (bool, string)) error {
	deadline := time.Now().Add(timeout)
	for {
		ok, why := cond()
		if ok {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("not within %v: %s", timeout, why)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// ShortTempDir is a short temporary directory (unix socket paths are limited to 107 bytes, and
// t.TempDir() paths can be long), removed at the end of the test.
func ShortTempDir(t testing.TB) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "xpu-e2e-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

// BinaryFromEnv returns the path in environment variable name, skipping the test when unset
// (plain `go test`), failing it when set but not executable.
func BinaryFromEnv(t testing.TB, name string) string {
	t.Helper()
	path := os.Getenv(name)
	if path == "" {
		t.Skipf("%s is not set (ctest sets it to the built binary)", name)
	}
	info, err := os.Stat(path)
	if err != nil || info.Mode()&0o111 == 0 {
		t.Fatalf("%s=%s is not an executable file: %v", name, path, err)
	}
	return path
}

// PrivateBus is a dbus-daemon of its own on a unix socket in dir.
type PrivateBus struct {
	Address string
	dir     string
	proc    *Process
	t       testing.TB
}

// StartPrivateBus starts a session-type dbus-daemon listening on dir/bus.
func StartPrivateBus(t testing.TB, dir string) *PrivateBus {
	t.Helper()
	b := &PrivateBus{dir: dir, t: t}
	b.start()
	return b
}

func (b *PrivateBus) start() {
	b.t.Helper()
	socket := filepath.Join(b.dir, "bus")
	_ = os.Remove(socket)
	b.Address = "unix:path=" + socket
	b.proc = StartProcess(b.t, b.dir, "dbus-daemon",
		[]string{"dbus-daemon", "--session", "--nofork", "--nopidfile", "--address=" + b.Address, "--print-address"})
	if err := WaitFor(10*time.Second, func() (bool, string) {
		_, err := Busctl(b.Address, "status")
		return err == nil, fmt.Sprintf("bus %s not answering: %v", b.Address, err)
	}); err != nil {
		b.t.Fatal(err)
	}
}

// Busctl runs busctl against address with args and returns its stdout.
func Busctl(address string, args ...string) (string, error) {
	out, err := exec.Command("busctl", append([]string{"--address=" + address}, args...)...).CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("busctl %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return string(out), nil
}

// NameHasOwner asks the bus whether a well-known name is owned.
func (b *PrivateBus) NameHasOwner(name string) bool {
	out, err := Busctl(b.Address, "call", "org.freedesktop.DBus", "/org/freedesktop/DBus",
		"org.freedesktop.DBus", "NameHasOwner", "s", name)
	return err == nil && strings.TrimSpace(out) == "b true"
}

// Xpud is xpud on a private bus.
type Xpud struct {
	*Process
	Bus *PrivateBus
}

const xpudBusName = "com.kunlunxin.xpud1"
const xpudManagerPath = "/com/kunlunxin/xpud1"

// StartXpud starts xpud with the sim backend on bus and waits until it owns its name.
func StartXpud(t testing.TB, dir, bin string, bus *PrivateBus, extraArgs ...string) *Xpud {
	t.Helper()
	argv := append([]string{bin, "--backend", "sim", "--bus-address", bus.Address}, extraArgs...)
	x := &Xpud{Process: StartProcess(t, dir, "xpud", argv), Bus: bus}
	if err := WaitFor(15*time.Second, func() (bool, string) {
		if !x.Running() {
			return false, "xpud exited: " + x.Output()
		}
		return bus.NameHasOwner(xpudBusName), "xpud does not own " + xpudBusName
	}); err != nil {
		t.Fatal(err)
	}
	return x
}

// SetHealth injects a health change through xpud's Simulator interface.
func (b *PrivateBus) SetHealth(index int, health, reason string) error {
	_, err := Busctl(b.Address, "call", xpudBusName, xpudManagerPath, xpudBusName+".Simulator",
		"SetHealth", "uss", strconv.Itoa(index), health, reason)
	return err
}

// SetMetric pins a metric through xpud's Simulator interface.
func (b *PrivateBus) SetMetric(index int, key string, value float64) error {
	_, err := Busctl(b.Address, "call", xpudBusName, xpudManagerPath, xpudBusName+".Simulator",
		"SetMetric", "usd", strconv.Itoa(index), key, strconv.FormatFloat(value, 'g', -1, 64))
	return err
}

// StartShim starts `xpu-k8s-shim --bus-address ADDR <role> <args...>`.
func StartShim(t testing.TB, dir, bin string, bus *PrivateBus, role string, args ...string) *Process {
	t.Helper()
	argv := append([]string{bin, "--bus-address", bus.Address, role}, args...)
	return StartProcess(t, dir, "xpu-k8s-shim-"+role, argv)
}

// Percentile of sorted durations (nearest rank).
func Percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	rank := int(p/100*float64(len(sorted))+0.5) - 1
	if rank < 0 {
		rank = 0
	}
	if rank >= len(sorted) {
		rank = len(sorted) - 1
	}
	return sorted[rank]
}
