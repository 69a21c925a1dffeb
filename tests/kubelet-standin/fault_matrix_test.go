package main

// The fault matrix: one row per fault, one column per thing an operator looks at.
//
//	kubelet  what the kubelet stand-in sees of the device plugin (ListAndWatch health, registration)
//	metrics  what a scrape of the exporter's /metrics says
//	auth     what the XPU runtime finds in token-sync's destination (/xpu-runtime/auth)
//	journal  the roles' log lines on stderr, which is what systemd's journal captures from a unit
//	         (with JOURNAL_STREAM set they go to the journal directly, same text and priority)
//
// Every row starts its own node: a private dbus-daemon, xpud on the fake libxpuml (so that a
// driver call can hang and a card can be lost), the device plugin, the exporter and token-sync,
// and the stand-in kubelet (device plugin registration and pod-resources). The fault is
// injected, every "during" observation is waited for with a deadline, the fault is undone (or
// the failed process restarted, as systemd's Restart= would), and every "after" observation is
// waited for. The time from injection to each observation is the detection time, from the
// repair to each observation the recovery time; the table at the end has one line per row.

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"
)

const (
	matrixCards      = 4
	matrixGrace      = 2 * time.Second // the device plugin's and the exporter's --xpud-grace-period
	matrixDemoCard   = 0               // held by pod default/demo
	matrixLostCard   = 1
	matrixNormalCase = "devices 4\ndriver_version 5.0.21.21\n"
	// xpud samples every 200 ms, gives a driver call 300 ms, and marks every card Unhealthy when
	// a call has not returned within 1 s (the test's [sampling] settings, shorter than the
	// defaults so that the matrix runs in under a minute).
	matrixXpudConfig = "[daemon]\nbackend = xpuml\n[sampling]\ninterval_ms = 200\ncall_timeout_ms = 300\n" +
		"failure_threshold = 2\nstall_grace_ms = 1000\n[xpuml]\nlibrary = %s\n[sysfs]\nroot = %s\n"
)

// faultNode is one node's worth of roles under test.
type faultNode struct {
	t                  *testing.T
	dir                string
	xpudBin, shimBin   string
	bus                *PrivateBus
	xpud               *Xpud
	xpudArgs           []string
	scenario           string
	pluginDir          string
	plugin             *Process
	kubelet            *DevicePluginKubelet
	podSocket          string
	podsFile           string
	stopPodResources   func()
	exporter           *Process
	exporterPort       int
	tokenSync          *Process
	sourceDir, destDir string // destDir as this process sees it
	uuids              []string
	logMarks           map[string]int64
}

type faultNodeOptions struct {
	// authOnTmpfs puts token-sync's destination on a tmpfs of this many bytes, mounted in a
	// mount namespace of token-sync's own (0: a plain directory).
	authOnTmpfs int
}

func (n *faultNode) setScenario(text string) {
	n.t.Helper()
	writeAtomically(n.t, n.scenario, text)
}

// writeProjectedVolume writes the service-account files the way the kubelet's projected volume
// has them: a timestamped directory, ..data pointing at it, each file a link through ..data.
func writeProjectedVolume(t *testing.T, dir, token string) {
	t.Helper()
	stamp := fmt.Sprintf("..%d", time.Now().UnixNano())
	files := map[string]string{
		"token":     token,
		"namespace": "xpu-system",
		"ca.crt":    "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n",
	}
	if err := os.MkdirAll(filepath.Join(dir, stamp), 0o755); err != nil {
		t.Fatal(err)
	}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, stamp, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(stamp, filepath.Join(dir, "..data_tmp")); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(filepath.Join(dir, "..data_tmp"), filepath.Join(dir, "..data")); err != nil {
		t.Fatal(err)
	}
	for name := range files {
		link := filepath.Join(dir, name)
		if _, err := os.Lstat(link); err == nil {
			continue
		}
		if err := os.Symlink(filepath.Join("..data", name), link); err != nil {
			t.Fatal(err)
		}
	}
}

func startFaultNode(t *testing.T, options faultNodeOptions) *faultNode {
	t.Helper()
	n := &faultNode{t: t, xpudBin: BinaryFromEnv(t, "XPUD_BIN"), shimBin: BinaryFromEnv(t, "XPU_K8S_SHIM_BIN"),
		logMarks: map[string]int64{}}
	fakeLibrary := BinaryFromEnv(t, "XPUML_FAKE_LIBRARY")
	n.dir = ShortTempDir(t)

	n.scenario = filepath.Join(n.dir, "scenario")
	n.setScenario(matrixNormalCase)
	t.Setenv("XPUML_FAKE_SCRIPT", n.scenario)
	config := filepath.Join(n.dir, "xpud.conf")
	if err := os.WriteFile(config, []byte(fmt.Sprintf(matrixXpudConfig, fakeLibrary, n.dir)), 0o644); err != nil {
		t.Fatal(err)
	}
	n.bus = StartPrivateBus(t, n.dir)
	n.xpudArgs = []string{"--backend", "xpuml", "--config", config}
	n.xpud = StartXpud(t, n.dir, n.xpudBin, n.bus, n.xpudArgs...)
	for i := 0; i < matrixCards; i++ {
		n.uuids = append(n.uuids, exporterCardUUID(t, n.bus, i))
	}

	n.pluginDir = filepath.Join(n.dir, "device-plugins")
	if err := os.Mkdir(n.pluginDir, 0o755); err != nil {
		t.Fatal(err)
	}
	k, err := NewDevicePluginKubelet(n.pluginDir)
	if err != nil {
		t.Fatal(err)
	}
	n.kubelet = k
	t.Cleanup(k.Stop)
	n.plugin = StartShim(t, n.dir, n.shimBin, n.bus, "device-plugin", "--plugin-dir", n.pluginDir,
		"--xpud-grace-period", strconv.Itoa(int(matrixGrace/time.Second)))

	n.podsFile = filepath.Join(n.dir, "pods.json")
	n.podSocket = filepath.Join(n.dir, "pod-resources.sock")
	writePods(t, n.podsFile, []podEntry{{Namespace: "default", Name: "demo", Containers: []containerEntry{
		xpuContainer("main", defaultResource, n.uuids[matrixDemoCard])}}})
	n.stopPodResources = servePodResources(t, n.podSocket, n.podsFile, 0)
	n.exporter, n.exporterPort = startExporter(t, n.dir, n.shimBin, n.bus, n.podSocket,
		"--xpud-grace-period", strconv.Itoa(int(matrixGrace/time.Second)))

	n.sourceDir = filepath.Join(n.dir, "serviceaccount")
	writeProjectedVolume(t, n.sourceDir, "token-1")
	dest := filepath.Join(n.dir, "auth")
	argv := []string{n.shimBin, "token-sync", "--source-dir", n.sourceDir, "--dest-dir", dest}
	if options.authOnTmpfs > 0 {
		if err := os.Mkdir(dest, 0o700); err != nil {
			t.Fatal(err)
		}
		// A user namespace maps this user to root in it, so an unprivileged run may mount too.
		probe := exec.Command("unshare", "-rm", "sh", "-c", "mount -t tmpfs -o size=4k tmpfs "+dest)
		if out, err := probe.CombinedOutput(); err != nil {
			t.Skipf("cannot mount a tmpfs in a user and mount namespace here (unshare -rm: %v: %s); "+
				"the disk-full row needs one (CI runs as root, where it works)", err, strings.TrimSpace(string(out)))
		}
		mount := fmt.Sprintf("mount -t tmpfs -o size=%d,mode=0700 tmpfs %s && exec \"$@\"", options.authOnTmpfs, dest)
		argv = append([]string{"unshare", "-rm", "sh", "-c", mount, "sh"}, argv...)
	}
	n.tokenSync = StartProcess(t, n.dir, "xpu-k8s-shim-token-sync", argv,
		"KUBERNETES_SERVICE_HOST=10.0.0.1", "KUBERNETES_SERVICE_PORT=443")
	n.destDir = dest
	if options.authOnTmpfs > 0 {
		// The tmpfs exists in token-sync's mount namespace only; /proc/PID/root is that view.
		n.destDir = fmt.Sprintf("/proc/%d/root%s", n.tokenSync.Pid(), dest)
	}

	// Steady state: everything every row starts from.
	n.waitAll("steady state", time.Now(), 20*time.Second, n.steadyState())
	return n
}

// steadyState: the kubelet has all cards Healthy, /metrics has xpud and the kubelet up with the
// demo pod on its card, and the runtime has token-1.
func (n *faultNode) steadyState() []observation {
	return []observation{kubeletAllHealthy, metricsAllUp, authHas("token-1")}
}

// markLogs remembers where every role's log ends, so journal observations see only new lines.
func (n *faultNode) markLogs() {
	entries, _ := os.ReadDir(n.dir)
	for _, entry := range entries {
		if name, ok := strings.CutSuffix(entry.Name(), ".log"); ok {
			if info, err := entry.Info(); err == nil {
				n.logMarks[name] = info.Size()
			}
		}
	}
}

// logSinceMark is what role wrote since markLogs (its log file survives restarts: it is opened
// for appending by every process of that name).
func (n *faultNode) logSinceMark(role string) string {
	data, _ := os.ReadFile(filepath.Join(n.dir, role+".log"))
	mark := n.logMarks[role]
	if int64(len(data)) < mark {
		return ""
	}
	return string(data[mark:])
}

// restartXpudIfExited starts xpud again when it has exited with a failure status, as systemd
// does for Restart=on-failure; an exit with status 0 would not be restarted, so it fails the row.
func (n *faultNode) restartXpudIfExited() {
	n.t.Helper()
	if n.xpud.Running() {
		return
	}
	status, _ := n.xpud.Wait(time.Second)
	if status == 0 {
		n.t.Errorf("xpud exited with status 0: systemd's Restart=on-failure would leave it stopped")
	}
	n.xpud = StartXpud(n.t, n.dir, n.xpudBin, n.bus, n.xpudArgs...)
}

// observation is one cell of the matrix: what a column must show, and how to check it now.
type observation struct {
	column string // kubelet, metrics, auth or journal
	what   string // as docs/development.md's table says it
	holds  func(n *faultNode) (bool, string)
	steady bool // "unchanged": must hold when the others do, and is not timed
}

// unchanged is o as a column the fault must not disturb.
func unchanged(o observation) observation {
	o.steady = true
	return o
}

// kubeletDevices: the health of every device in the current plugin connection's last message.
func kubeletDevices(n *faultNode) (map[string]string, bool, string) {
	p := n.kubelet.Plugin(defaultResource)
	if p == nil {
		return nil, false, "no plugin registered with the kubelet"
	}
	if ended, err := p.StreamEnded(); ended {
		return nil, false, fmt.Sprintf("ListAndWatch ended: %v", err)
	}
	last, ok := p.Latest()
	if !ok {
		return nil, false, "no ListAndWatch message yet"
	}
	return healthOf(last.Devices), true, ""
}

func kubeletCards(want func(i int) string, what string) observation {
	return observation{column: "kubelet", what: what, holds: func(n *faultNode) (bool, string) {
		health, ok, why := kubeletDevices(n)
		if !ok {
			return false, why
		}
		if len(health) != len(n.uuids) {
			return false, fmt.Sprintf("kubelet sees %d devices, want %d: %v", len(health), len(n.uuids), health)
		}
		for i, id := range n.uuids {
			if health[id] != want(i) {
				return false, fmt.Sprintf("kubelet sees card %d %s, want %s", i, health[id], want(i))
			}
		}
		return true, ""
	}}
}

var (
	kubeletAllHealthy   = kubeletCards(func(int) string { return pluginapi.Healthy }, "all Healthy")
	kubeletAllUnhealthy = kubeletCards(func(int) string { return pluginapi.Unhealthy }, "all Unhealthy")
	kubeletLostCard     = kubeletCards(func(i int) string {
		if i == matrixLostCard {
			return pluginapi.Unhealthy
		}
		return pluginapi.Healthy
	}, fmt.Sprintf("xpu%d Unhealthy, others Healthy", matrixLostCard))
	// While the kubelet is down the plugin serves a new socket (the kubelet's start deleted the
	// old one) and waits for kubelet.sock.
	kubeletPluginWaits = observation{column: "kubelet", what: "(down) plugin serves a new socket", holds: func(n *faultNode) (bool, string) {
		info, err := os.Stat(filepath.Join(n.pluginDir, defaultSocket))
		if err != nil || info.Mode()&os.ModeSocket == 0 {
			return false, fmt.Sprintf("no plugin socket: %v", err)
		}
		return true, ""
	}}
	kubeletReregistered = observation{column: "kubelet", what: "registered again, all Healthy", holds: func(n *faultNode) (bool, string) {
		epoch := n.kubelet.Epoch()
		registered := false
		for _, r := range n.kubelet.Registrations() {
			registered = registered || r.Epoch == epoch
		}
		if !registered {
			return false, fmt.Sprintf("no registration in kubelet epoch %d", epoch)
		}
		return kubeletAllHealthy.holds(n)
	}}
)

// metricsBody scrapes once; a scrape slower than the exporter's bound fails the observation.
func metricsBody(n *faultNode) (string, bool, string) {
	result, err := scrape(n.exporterPort)
	if err != nil {
		return "", false, err.Error()
	}
	if result.took > scrapeBound {
		return "", false, fmt.Sprintf("scrape took %v (bound %v)", result.took, scrapeBound)
	}
	return result.body, true, ""
}

var healthyLine = regexp.MustCompile(`^xpu_healthy\{xpu="(\d+)".* (\d+)$`)

// cardHealth: xpu index to the value of its xpu_healthy series.
func cardHealth(body string) map[int]string {
	out := map[int]string{}
	for _, line := range samples(body, "xpu_healthy") {
		if m := healthyLine.FindStringSubmatch(line); m != nil {
			i, _ := strconv.Atoi(m[1])
			out[i] = m[2]
		}
	}
	return out
}

func metricsCheck(what string, check func(body string) (bool, string)) observation {
	return observation{column: "metrics", what: what, holds: func(n *faultNode) (bool, string) {
		body, ok, why := metricsBody(n)
		if !ok {
			return false, why
		}
		return check(body)
	}}
}

func gauge(body, name string) string {
	for _, line := range samples(body, name) {
		if value, ok := strings.CutPrefix(line, name+" "); ok {
			return value
		}
	}
	return "absent"
}

func cardsWithHealth(body string, want func(i int) string) (bool, string) {
	health := cardHealth(body)
	if len(health) != matrixCards {
		return false, fmt.Sprintf("%d xpu_healthy series, want %d", len(health), matrixCards)
	}
	for i := 0; i < matrixCards; i++ {
		if health[i] != want(i) {
			return false, fmt.Sprintf("xpu_healthy{xpu=%d} %s, want %s", i, health[i], want(i))
		}
	}
	return true, ""
}

var (
	metricsAllUp = metricsCheck("xpud_up 1, podresources_up 1, all xpu_healthy 1, demo pod labelled", func(body string) (bool, string) {
		if v := gauge(body, "xpu_exporter_xpud_up"); v != "1" {
			return false, "xpu_exporter_xpud_up " + v
		}
		if v := gauge(body, "xpu_exporter_podresources_up"); v != "1" {
			return false, "xpu_exporter_podresources_up " + v
		}
		if !strings.Contains(body, `pod="demo"`) {
			return false, "no series labelled pod=demo"
		}
		return cardsWithHealth(body, func(int) string { return "1" })
	})
	metricsXpudDown = metricsCheck("xpud_up 0, all xpu_healthy 0 (xpud_unreachable), no readings", func(body string) (bool, string) {
		if v := gauge(body, "xpu_exporter_xpud_up"); v != "0" {
			return false, "xpu_exporter_xpud_up " + v
		}
		if n := len(samples(body, "xpu_utilization_ratio")); n != 0 {
			return false, fmt.Sprintf("%d xpu_utilization_ratio series with xpud down", n)
		}
		if n := strings.Count(body, `reason="xpud_unreachable"} 1`); n != matrixCards {
			return false, fmt.Sprintf("%d cards with reason xpud_unreachable, want %d", n, matrixCards)
		}
		return cardsWithHealth(body, func(int) string { return "0" })
	})
	metricsPodResourcesDown = metricsCheck("podresources_up 0, cards without pod labels", func(body string) (bool, string) {
		if v := gauge(body, "xpu_exporter_podresources_up"); v != "0" {
			return false, "xpu_exporter_podresources_up " + v
		}
		if strings.Contains(body, `pod="`) {
			return false, "pod labels while the kubelet does not answer"
		}
		return cardsWithHealth(body, func(int) string { return "1" })
	})
	metricsAllUnhealthy = metricsCheck("xpud_up 1, all xpu_healthy 0", func(body string) (bool, string) {
		if v := gauge(body, "xpu_exporter_xpud_up"); v != "1" {
			return false, "xpu_exporter_xpud_up " + v
		}
		return cardsWithHealth(body, func(int) string { return "0" })
	})
	metricsLostCard = metricsCheck(fmt.Sprintf("xpu_healthy{xpu=\"%d\"} 0, others 1", matrixLostCard), func(body string) (bool, string) {
		return cardsWithHealth(body, func(i int) string {
			if i == matrixLostCard {
				return "0"
			}
			return "1"
		})
	})
)

func authHas(token string) observation {
	return observation{column: "auth", what: "token " + token, holds: func(n *faultNode) (bool, string) {
		data, err := os.ReadFile(filepath.Join(n.destDir, "token"))
		if err != nil {
			return false, err.Error()
		}
		if string(data) != token {
			return false, fmt.Sprintf("token file holds %q, want %q", data, token)
		}
		if _, err := os.Stat(filepath.Join(n.destDir, "kubeconfig")); err != nil {
			return false, err.Error()
		}
		return true, ""
	}}
}

// journal: role logged a line matching pattern since the fault (or the repair).
func journal(role, pattern string) observation {
	re := regexp.MustCompile(pattern)
	return observation{column: "journal", what: strings.TrimPrefix(role, "xpu-k8s-shim-") + ": " + pattern, holds: func(n *faultNode) (bool, string) {
		if re.MatchString(n.logSinceMark(role)) {
			return true, ""
		}
		return false, fmt.Sprintf("no line matching %q from %s", pattern, role)
	}}
}

const (
	roleXpud     = "xpud"
	rolePlugin   = "xpu-k8s-shim-device-plugin"
	roleExporter = "xpu-k8s-shim-exporter"
	roleToken    = "xpu-k8s-shim-token-sync"
)

// waitAll waits until every observation holds, each first seen at its own time, and returns
// those times from since (the fault, or the start of the repair); it fails the test naming the
// ones that did not hold within timeout of since.
func (n *faultNode) waitAll(phase string, since time.Time, timeout time.Duration, observations []observation) []time.Duration {
	n.t.Helper()
	started := since
	seen := make([]time.Duration, len(observations))
	done := make([]bool, len(observations))
	why := make([]string, len(observations))
	deadline := started.Add(timeout)
	for {
		left := 0
		for i, o := range observations {
			if done[i] && !o.steady {
				continue
			}
			if ok, reason := o.holds(n); ok {
				done[i], seen[i] = true, time.Since(started)
			} else {
				done[i] = false
				why[i] = reason
				left++
			}
		}
		if left == 0 {
			return seen
		}
		if time.Now().After(deadline) {
			for i, o := range observations {
				if !done[i] {
					n.t.Errorf("%s, %s column (%s): not within %v: %s", phase, o.column, o.what, timeout, why[i])
				}
			}
			n.t.FailNow()
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// faultRow is one row of the matrix.
type faultRow struct {
	name    string
	options faultNodeOptions
	inject  func(n *faultNode)
	during  []observation
	// within: how long detection may take at most (the slowest column).
	within time.Duration
	repair func(n *faultNode)
	after  []observation
}

// rowResult: every cell's text with its time, and the slowest column's detection and recovery.
type rowResult struct {
	name                string
	skipped             string
	detected, recovered time.Duration
	cells               map[string][]string // by column: during cells, then "→", then after cells
}

var matrixColumns = []string{"kubelet", "metrics", "auth", "journal"}

// shown is an observation as a table cell: what it says (regular expressions made readable),
// "unchanged" for a column the fault must not disturb, and its time.
func shown(o observation, took time.Duration) string {
	what := strings.NewReplacer(`.*`, "…", `\S+`, "…", `\d+`, "N", `\`, "").Replace(o.what)
	if o.steady {
		return "unchanged: " + what
	}
	return fmt.Sprintf("%s (%s)", what, seconds(took))
}

func (r *rowResult) record(phase string, observations []observation, times []time.Duration) time.Duration {
	var slowest time.Duration
	for i, o := range observations {
		cell := shown(o, times[i])
		if phase == "after" {
			cell = "→ " + cell
		}
		r.cells[o.column] = append(r.cells[o.column], cell)
		if !o.steady {
			slowest = max(slowest, times[i])
		}
	}
	return slowest
}

func seconds(d time.Duration) string { return strconv.FormatFloat(d.Seconds(), 'f', 2, 64) + " s" }

func faultRows() []faultRow {
	return []faultRow{
		{
			name:   "xpud SIGKILL, restarted",
			inject: func(n *faultNode) { _ = syscall.Kill(n.xpud.Pid(), syscall.SIGKILL) },
			during: []observation{kubeletAllUnhealthy, metricsXpudDown,
				journal(rolePlugin, `xpud is gone; devices turn Unhealthy`),
				journal(rolePlugin, `xpud has been gone for the grace period`),
				journal(roleExporter, `xpud is absent`)},
			within: matrixGrace + 5*time.Second,
			repair: func(n *faultNode) { n.restartXpudIfExited() },
			after: []observation{kubeletAllHealthy, metricsAllUp,
				journal(rolePlugin, `xpud is present`), journal(roleExporter, `\(xpuml backend\) is up`)},
		},
		{
			name:   "xpud hang (SIGSTOP, then SIGCONT)",
			inject: func(n *faultNode) { _ = syscall.Kill(n.xpud.Pid(), syscall.SIGSTOP) },
			during: []observation{kubeletAllUnhealthy, metricsXpudDown,
				journal(rolePlugin, `xpud is on the bus but does not answer`),
				journal(rolePlugin, `xpud has been gone for the grace period`),
				journal(roleExporter, `xpud is absent`)},
			// A probe every 5 s, the device plugin's 5 s call timeout, the grace period.
			within: 5*time.Second + 5*time.Second + matrixGrace + 5*time.Second,
			repair: func(n *faultNode) { _ = syscall.Kill(n.xpud.Pid(), syscall.SIGCONT) },
			after: []observation{kubeletAllHealthy, metricsAllUp,
				journal(rolePlugin, `xpud answers again`), journal(roleExporter, `\(xpuml backend\) is up`)},
		},
		{
			name:   "bus daemon restart",
			inject: func(n *faultNode) { n.bus.proc.Kill() },
			during: []observation{kubeletAllUnhealthy, metricsXpudDown,
				journal(rolePlugin, `D-Bus connection to .* lost or unavailable`),
				journal(roleExporter, `xpud is absent`),
				journal(roleXpud, `lost the bus connection`)},
			within: matrixGrace + 10*time.Second,
			repair: func(n *faultNode) {
				n.bus.start()
				if _, err := n.xpud.Wait(10 * time.Second); err != nil {
					n.t.Errorf("xpud still runs without its bus: %v", err)
				}
				n.restartXpudIfExited()
			},
			after: []observation{kubeletAllHealthy, metricsAllUp,
				journal(rolePlugin, `xpud is present`), journal(roleExporter, `\(xpuml backend\) is up`)},
		},
		{
			name: "kubelet restart",
			inject: func(n *faultNode) {
				n.stopPodResources()
				if err := n.kubelet.Crash(); err != nil {
					n.t.Fatal(err)
				}
			},
			during: []observation{kubeletPluginWaits, metricsPodResourcesDown,
				journal(rolePlugin, `kubelet\.sock was removed`),
				journal(rolePlugin, `was removed \(kubelet restart\?\); serving on a new one`),
				journal(roleExporter, `pod-resources List on .* failed`)},
			within: 10 * time.Second,
			repair: func(n *faultNode) {
				if err := n.kubelet.Serve(); err != nil {
					n.t.Fatal(err)
				}
				n.stopPodResources = servePodResources(n.t, n.podSocket, n.podsFile, 0)
			},
			after: []observation{kubeletReregistered, metricsAllUp,
				journal(rolePlugin, `registered with the kubelet`),
				journal(roleExporter, `the kubelet answers again`)},
		},
		{
			name: "kubelet.sock deleted alone",
			inject: func(n *faultNode) {
				if err := os.Remove(filepath.Join(n.pluginDir, "kubelet.sock")); err != nil {
					n.t.Fatal(err)
				}
			},
			during: []observation{unchanged(kubeletAllHealthy), unchanged(metricsAllUp),
				journal(rolePlugin, `kubelet\.sock was removed`)},
			within: 10 * time.Second,
			repair: func(n *faultNode) {
				if err := n.kubelet.RecreateSocket(); err != nil {
					n.t.Fatal(err)
				}
			},
			after: []observation{kubeletReregistered, metricsAllUp,
				journal(rolePlugin, `registered with the kubelet`)},
		},
		{
			name: "pod-resources socket gone",
			inject: func(n *faultNode) {
				n.stopPodResources()
				_ = os.Remove(n.podSocket)
			},
			during: []observation{unchanged(kubeletAllHealthy), metricsPodResourcesDown,
				journal(roleExporter, `pod-resources List on .* failed`)},
			within: 10 * time.Second,
			repair: func(n *faultNode) { n.stopPodResources = servePodResources(n.t, n.podSocket, n.podsFile, 0) },
			after: []observation{unchanged(kubeletAllHealthy), metricsAllUp,
				journal(roleExporter, `the kubelet answers again`)},
		},
		{
			name:   "driver call hang",
			inject: func(n *faultNode) { n.setScenario(matrixNormalCase + "delay xpumlDeviceGetTemperature 4000\n") },
			during: []observation{kubeletAllUnhealthy, metricsAllUnhealthy,
				journal(roleXpud, `driver stalled for \d+ ms`),
				journal(rolePlugin, `Unhealthy: driver stalled`)},
			within: 10 * time.Second,
			repair: func(n *faultNode) { n.setScenario(matrixNormalCase) },
			after: []observation{kubeletAllHealthy, metricsAllUp,
				journal(roleXpud, `driver responds again`),
				journal(rolePlugin, `Healthy again`)},
		},
		{
			name: "card lost and back",
			inject: func(n *faultNode) {
				n.setScenario(matrixNormalCase + fmt.Sprintf("device %d\nlost\n", matrixLostCard))
			},
			during: []observation{kubeletLostCard, metricsLostCard,
				journal(roleXpud, fmt.Sprintf(`xpu%d.*device lost`, matrixLostCard)),
				journal(rolePlugin, fmt.Sprintf(`xpu%d.*Unhealthy: device lost`, matrixLostCard))},
			within: 10 * time.Second,
			repair: func(n *faultNode) { n.setScenario(matrixNormalCase) },
			after: []observation{kubeletAllHealthy, metricsAllUp,
				journal(roleXpud, fmt.Sprintf(`xpu%d.*Healthy again`, matrixLostCard)),
				journal(rolePlugin, fmt.Sprintf(`xpu%d.*Healthy again`, matrixLostCard))},
		},
		{
			name:    "disk full on /xpu-runtime/auth",
			options: faultNodeOptions{authOnTmpfs: 64 << 10},
			inject: func(n *faultNode) {
				// Fill the tmpfs, then rotate the token: the new one has nowhere to go.
				filler, err := os.Create(filepath.Join(n.destDir, "filler"))
				if err != nil {
					n.t.Fatal(err)
				}
				_, _ = filler.Write(make([]byte, 128<<10))
				filler.Close()
				writeProjectedVolume(n.t, n.sourceDir, "token-2")
			},
			during: []observation{unchanged(kubeletAllHealthy), unchanged(metricsAllUp), unchanged(authHas("token-1")),
				journal(roleToken, `cannot update .*token: .*No space left on device`)},
			within: 10 * time.Second,
			repair: func(n *faultNode) {
				if err := os.Remove(filepath.Join(n.destDir, "filler")); err != nil {
					n.t.Fatal(err)
				}
			},
			after: []observation{unchanged(kubeletAllHealthy), unchanged(metricsAllUp), authHas("token-2"),
				journal(roleToken, `updated .*token`)},
		},
		{
			name: "token source missing",
			inject: func(n *faultNode) {
				if err := os.RemoveAll(n.sourceDir); err != nil {
					n.t.Fatal(err)
				}
			},
			during: []observation{unchanged(kubeletAllHealthy), unchanged(metricsAllUp), unchanged(authHas("token-1")),
				journal(roleToken, `was deleted or moved`)},
			within: 10 * time.Second,
			repair: func(n *faultNode) { writeProjectedVolume(n.t, n.sourceDir, "token-2") },
			after: []observation{unchanged(kubeletAllHealthy), unchanged(metricsAllUp), authHas("token-2"),
				journal(roleToken, `updated .*token`)},
		},
	}
}

func TestFaultMatrix(t *testing.T) {
	BinaryFromEnv(t, "XPUD_BIN")
	var results []rowResult
	for _, row := range faultRows() {
		result := rowResult{name: row.name, cells: map[string][]string{}}
		completed := false
		t.Run(row.name, func(t *testing.T) {
			n := startFaultNode(t, row.options)
			n.markLogs()
			injected := time.Now()
			row.inject(n)
			during := n.waitAll("during the fault", injected, row.within, row.during)
			n.markLogs()
			// From the start of the repair: a restart's own start-up counts.
			repaired := time.Now()
			row.repair(n)
			after := n.waitAll("after the repair", repaired, 30*time.Second, row.after)
			result.detected = result.record("during", row.during, during)
			result.recovered = result.record("after", row.after, after)
			completed = true
		})
		switch {
		case completed:
		case t.Failed():
			result.skipped = "failed"
		default:
			result.skipped = "skipped"
		}
		results = append(results, result)
	}
	printFaultTable(results)
}

// printFaultTable prints the matrix as docs/development.md has it: one line per row; in each column what
// it shows during the fault and (→) after the repair, each with the time it took to show it
// (from the fault, from the repair); the slowest of each as the row's detection and recovery.
func printFaultTable(results []rowResult) {
	fmt.Println("| fault | kubelet (ListAndWatch) | exporter /metrics | /xpu-runtime/auth | journal (stderr) | detected | recovered |")
	fmt.Println("|---|---|---|---|---|---|---|")
	for _, r := range results {
		if r.skipped != "" {
			fmt.Printf("| %s | %s | | | | | |\n", r.name, r.skipped)
			continue
		}
		line := "| " + r.name + " |"
		for _, column := range matrixColumns {
			cells := r.cells[column]
			if len(cells) == 0 {
				cells = []string{"unchanged"}
			}
			line += " " + strings.Join(cells, "<br>") + " |"
		}
		fmt.Printf("%s %s | %s |\n", line, seconds(r.detected), seconds(r.recovered))
	}
}
