package main

// End-to-end tests of `xpu-k8s-shim device-plugin`: the real xpud (sim backend) on a private bus,
// the real shim, and this stand-in playing the kubelet with the official v1beta1 code.

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"
)

const (
	defaultResource = "kunlunxin.com/xpu"
	defaultSocket   = "kunlunxin-xpu.sock"
	simCards        = 8
)

// deviceUUIDs asks xpud (over the bus, like any client) for the UUID of every card, by index.
func deviceUUIDs(t *testing.T, bus *PrivateBus) []string {
	t.Helper()
	uuids := make([]string, simCards)
	for i := range uuids {
		out, err := Busctl(bus.Address, "get-property", xpudBusName, fmt.Sprintf("%s/devices/xpu%d", xpudManagerPath, i),
			xpudBusName+".Device", "Uuid")
		if err != nil {
			t.Fatal(err)
		}
		// `s "6d26..."`
		uuids[i] = strings.Trim(strings.TrimPrefix(strings.TrimSpace(out), "s "), `"`)
	}
	return uuids
}

func healthOf(devices []*pluginapi.Device) map[string]string {
	m := map[string]string{}
	for _, d := range devices {
		m[d.ID] = d.Health
	}
	return m
}

// allHealth: every one of uuids is reported with health h, and nothing else is reported.
func allHealth(uuids []string, h string) func([]*pluginapi.Device) bool {
	return func(devices []*pluginapi.Device) bool {
		if len(devices) != len(uuids) {
			return false
		}
		m := healthOf(devices)
		for _, id := range uuids {
			if m[id] != h {
				return false
			}
		}
		return true
	}
}

// onlyUnhealthy: card `bad` Unhealthy, every other one Healthy.
func onlyUnhealthy(uuids []string, bad int) func([]*pluginapi.Device) bool {
	return func(devices []*pluginapi.Device) bool {
		m := healthOf(devices)
		if len(m) != len(uuids) {
			return false
		}
		for i, id := range uuids {
			want := pluginapi.Healthy
			if i == bad {
				want = pluginapi.Unhealthy
			}
			if m[id] != want {
				return false
			}
		}
		return true
	}
}

func sorted(ids []string) []string {
	out := slices.Clone(ids)
	sort.Strings(out)
	return out
}

func pick(uuids []string, indices ...int) []string {
	var out []string
	for _, i := range indices {
		out = append(out, uuids[i])
	}
	return out
}

type devicePluginEnv struct {
	dir, pluginDir string
	xpudBin        string
	bus            *PrivateBus
	xpud           *Xpud
	shim           *Process
	kubelet        *DevicePluginKubelet
	uuids          []string
}

// startDevicePluginEnv: bus, xpud, then the shim (before any kubelet exists), then the kubelet.
func startDevicePluginEnv(t *testing.T, shimArgs ...string) *devicePluginEnv {
	t.Helper()
	return startDevicePluginEnvWith(t, "", shimArgs...)
}

// startDevicePluginEnvWith is startDevicePluginEnv with xpud reading xpudConfig (when not
// empty) from a file in the test's directory, which {dir} in it names.
func startDevicePluginEnvWith(t *testing.T, xpudConfig string, shimArgs ...string) *devicePluginEnv {
	t.Helper()
	e := &devicePluginEnv{xpudBin: BinaryFromEnv(t, "XPUD_BIN")}
	shimBin := BinaryFromEnv(t, "XPU_K8S_SHIM_BIN")
	e.dir = ShortTempDir(t)
	e.pluginDir = filepath.Join(e.dir, "device-plugins")
	if err := os.Mkdir(e.pluginDir, 0o755); err != nil {
		t.Fatal(err)
	}
	var xpudArgs []string
	if xpudConfig != "" {
		path := filepath.Join(e.dir, "xpud.conf")
		if err := os.WriteFile(path, []byte(strings.ReplaceAll(xpudConfig, "{dir}", e.dir)), 0o644); err != nil {
			t.Fatal(err)
		}
		xpudArgs = []string{"--config", path}
	}
	e.bus = StartPrivateBus(t, e.dir)
	e.xpud = StartXpud(t, e.dir, e.xpudBin, e.bus, xpudArgs...)
	e.uuids = deviceUUIDs(t, e.bus)
	args := append([]string{"--plugin-dir", e.pluginDir}, shimArgs...)
	e.shim = StartShim(t, e.dir, shimBin, e.bus, "device-plugin", args...)
	return e
}

func (e *devicePluginEnv) startKubelet(t *testing.T, options ...KubeletOption) {
	t.Helper()
	k, err := NewDevicePluginKubelet(e.pluginDir, options...)
	if err != nil {
		t.Fatal(err)
	}
	e.kubelet = k
	t.Cleanup(k.Stop)
}

func waitSocket(t *testing.T, path string, shim *Process) {
	t.Helper()
	if err := WaitFor(10*time.Second, func() (bool, string) {
		if !shim.Running() {
			return false, "the shim exited"
		}
		info, err := os.Stat(path)
		return err == nil && info.Mode()&os.ModeSocket != 0, path + " is not a socket yet"
	}); err != nil {
		t.Fatal(err)
	}
}

func TestDevicePluginEndToEnd(t *testing.T) {
	const grace = 2 * time.Second
	e := startDevicePluginEnv(t, "--xpud-grace-period", "2", "--memory-unit", "GiB")
	uuids := e.uuids
	// The plugin serves even before the kubelet exists, and waits for kubelet.sock.
	waitSocket(t, filepath.Join(e.pluginDir, defaultSocket), e.shim)
	e.startKubelet(t)
	plugin, err := e.kubelet.WaitPlugin(defaultResource, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}

	t.Run("registration", func(t *testing.T) {
		regs := e.kubelet.Registrations()
		if len(regs) != 1 {
			t.Fatalf("%d registrations, want 1", len(regs))
		}
		r := regs[0].Request
		if r.Version != "v1beta1" || r.Endpoint != defaultSocket || r.ResourceName != defaultResource {
			t.Errorf("Register(%v, %v, %v), want (v1beta1, %s, %s)", r.Version, r.Endpoint, r.ResourceName, defaultSocket, defaultResource)
		}
		if r.Options == nil || !r.Options.GetPreferredAllocationAvailable || r.Options.PreStartRequired {
			t.Errorf("Register options %v, want get_preferred_allocation_available only", r.Options)
		}
		if !plugin.Options.GetPreferredAllocationAvailable || plugin.Options.PreStartRequired {
			t.Errorf("GetDevicePluginOptions %v, want get_preferred_allocation_available only", plugin.Options)
		}
		first := plugin.Update(0).Devices
		if !allHealth(uuids, pluginapi.Healthy)(first) {
			t.Fatalf("first ListAndWatch message %v, want all %d cards Healthy", first, simCards)
		}
		for _, d := range first {
			i := slices.Index(uuids, d.ID)
			wantNode := int64(i / 4)
			if d.Topology == nil || len(d.Topology.Nodes) != 1 || d.Topology.Nodes[0].ID != wantNode {
				t.Errorf("card %d (%s) topology %v, want NUMA node %d", i, d.ID, d.Topology, wantNode)
			}
		}
	})

	t.Run("fault and recovery", func(t *testing.T) {
		from := len(plugin.Updates())
		if err := e.bus.SetHealth(3, "Unhealthy", "test fault"); err != nil {
			t.Fatal(err)
		}
		i, err := plugin.WaitUpdate(from, onlyUnhealthy(uuids, 3), 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		if err := e.bus.SetHealth(3, "Healthy", ""); err != nil {
			t.Fatal(err)
		}
		if _, err := plugin.WaitUpdate(i+1, allHealth(uuids, pluginapi.Healthy), 5*time.Second); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("preferred allocation", func(t *testing.T) {
		shuffled := pick(uuids, 6, 2, 7, 0, 5, 3, 1, 4)
		cases := []struct {
			available []string
			must      []string
			size      int32
			want      []string
		}{
			{shuffled, nil, 4, pick(uuids, 0, 1, 2, 3)},
			{shuffled, pick(uuids, 5), 4, pick(uuids, 4, 5, 6, 7)},
			{shuffled, pick(uuids, 5), 2, pick(uuids, 4, 5)},
			{pick(uuids, 0, 1, 3, 4, 5, 6), nil, 4, pick(uuids, 0, 1, 4, 5)}, // no half free: linked group
			{shuffled, nil, 8, uuids},
		}
		for _, c := range cases {
			got, err := plugin.Preferred(c.available, c.must, c.size)
			if err != nil {
				t.Errorf("Preferred(size %d): %v", c.size, err)
				continue
			}
			if !slices.Equal(sorted(got), sorted(c.want)) {
				t.Errorf("Preferred(available %v, must %v, size %d) = %v, want %v", c.available, c.must, c.size, got, c.want)
			}
		}
		_, err := plugin.Preferred(pick(uuids, 0, 1), pick(uuids, 7), 1)
		if status.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), uuids[7]) {
			t.Errorf("must-include outside available: %v, want InvalidArgument naming %s", err, uuids[7])
		}
	})

	t.Run("allocate", func(t *testing.T) {
		resp, err := plugin.Allocate(pick(uuids, 1, 0), pick(uuids, 5))
		if err != nil {
			t.Fatal(err)
		}
		if len(resp.ContainerResponses) != 2 {
			t.Fatalf("%d container responses, want 2", len(resp.ContainerResponses))
		}
		c := resp.ContainerResponses[0]
		var paths []string
		for _, d := range c.Devices {
			if d.HostPath != d.ContainerPath || d.Permissions != "rw" {
				t.Errorf("device spec %v: want container path = host path, permissions rw", d)
			}
			paths = append(paths, d.HostPath)
		}
		if !slices.Equal(paths, []string{"/dev/xpu0", "/dev/xpu1", "/dev/xpuctrl"}) {
			t.Errorf("device specs %v", paths)
		}
		if c.Envs["XPU_VISIBLE_DEVICES"] != "0,1" || c.Envs["CXPU_VISIBLE_DEVICES"] != "0,1" ||
			c.Envs["KUNLUNXIN_XPU_UUIDS"] != uuids[0]+","+uuids[1] {
			t.Errorf("envs %v", c.Envs)
		}
		if got := resp.ContainerResponses[1].Envs["XPU_VISIBLE_DEVICES"]; got != "5" {
			t.Errorf("second container XPU_VISIBLE_DEVICES=%q, want 5", got)
		}
		// The vendor's runtime injects what CXPU_VISIBLE_DEVICES names (its images say "all").
		if got := resp.ContainerResponses[1].Envs["CXPU_VISIBLE_DEVICES"]; got != "5" {
			t.Errorf("second container CXPU_VISIBLE_DEVICES=%q, want 5", got)
		}

		_, err = plugin.Allocate(pick(uuids, 0), []string{"no-such-card"})
		if status.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), "no-such-card") {
			t.Errorf("unknown ID: %v, want InvalidArgument naming it", err)
		}

		from := len(plugin.Updates())
		if err := e.bus.SetHealth(6, "Unhealthy", "test fault"); err != nil {
			t.Fatal(err)
		}
		i, err := plugin.WaitUpdate(from, onlyUnhealthy(uuids, 6), 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		_, err = plugin.Allocate(pick(uuids, 6, 7))
		if status.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), uuids[6]) ||
			!strings.Contains(err.Error(), "test fault") {
			t.Errorf("unhealthy ID: %v, want InvalidArgument naming %s and the reason", err, uuids[6])
		}
		if err := e.bus.SetHealth(6, "Healthy", ""); err != nil {
			t.Fatal(err)
		}
		if _, err := plugin.WaitUpdate(i+1, allHealth(uuids, pluginapi.Healthy), 5*time.Second); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("kubelet restart", func(t *testing.T) {
		restarted := time.Now()
		if err := e.kubelet.Restart(); err != nil {
			t.Fatal(err)
		}
		var reg Registration
		if err := WaitFor(5*time.Second, func() (bool, string) {
			for _, r := range e.kubelet.Registrations() {
				if r.Epoch == 1 {
					reg = r
					return true, ""
				}
			}
			return false, "no registration after the kubelet restart"
		}); err != nil {
			t.Fatal(err)
		}
		took := reg.At.Sub(restarted)
		t.Logf("re-registered %v after the kubelet restart", took)
		if took > 2*time.Second {
			t.Errorf("re-registered after %v, want within 2 s", took)
		}
		plugin, err = e.kubelet.WaitPlugin(defaultResource, 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		if !allHealth(uuids, pluginapi.Healthy)(plugin.Update(0).Devices) {
			t.Errorf("first message after restart %v, want all Healthy", plugin.Update(0).Devices)
		}
	})

	t.Run("kubelet.sock recreated", func(t *testing.T) {
		if _, err := os.Stat(filepath.Join(e.pluginDir, defaultSocket)); err != nil {
			t.Fatal(err)
		}
		recreated := time.Now()
		if err := e.kubelet.RecreateSocket(); err != nil {
			t.Fatal(err)
		}
		if err := WaitFor(5*time.Second, func() (bool, string) {
			for _, r := range e.kubelet.Registrations() {
				if r.Epoch == 2 {
					t.Logf("re-registered %v after kubelet.sock was recreated", r.At.Sub(recreated))
					return r.At.Sub(recreated) <= 2*time.Second, "re-registered later than 2 s"
				}
			}
			return false, "no registration after kubelet.sock was recreated"
		}); err != nil {
			t.Fatal(err)
		}
		plugin, err = e.kubelet.WaitPlugin(defaultResource, 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
	})

	t.Run("xpud restart", func(t *testing.T) {
		from := len(plugin.Updates())
		stopped := time.Now()
		if code, err := e.xpud.Stop(10 * time.Second); err != nil || code != 0 {
			t.Fatalf("xpud stop: status %d, %v", code, err)
		}
		i, err := plugin.WaitUpdate(from, allHealth(uuids, pluginapi.Unhealthy), grace+10*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		after := plugin.Update(i).At.Sub(stopped)
		t.Logf("all Unhealthy %v after xpud stopped (grace period %v)", after, grace)
		if after < grace-100*time.Millisecond {
			t.Errorf("devices turned Unhealthy %v after xpud stopped, before the %v grace period", after, grace)
		}
		for j := from; j < i; j++ {
			if !allHealth(uuids, pluginapi.Healthy)(plugin.Update(j).Devices) {
				t.Errorf("message %d during the grace period was not all Healthy: %v", j, plugin.Update(j).Devices)
			}
		}
		e.xpud = StartXpud(t, e.dir, e.xpudBin, e.bus)
		if _, err := plugin.WaitUpdate(i+1, allHealth(uuids, pluginapi.Healthy), 15*time.Second); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("clean stop", func(t *testing.T) {
		if n := len(e.kubelet.Registrations()); n != 3 {
			t.Errorf("%d registrations in total, want 3 (start, kubelet restart, kubelet.sock recreated)", n)
		}
		code, err := e.shim.Stop(10 * time.Second)
		if err != nil || code != 0 {
			t.Fatalf("shim stop: status %d, %v", code, err)
		}
		if _, err := os.Stat(filepath.Join(e.pluginDir, defaultSocket)); !os.IsNotExist(err) {
			t.Errorf("plugin socket still there after stop: %v", err)
		}
		if err := WaitFor(5*time.Second, func() (bool, string) {
			ended, _ := plugin.StreamEnded()
			return ended, "ListAndWatch still open"
		}); err != nil {
			t.Error(err)
		}
	})
}

func TestDevicePluginPerModel(t *testing.T) {
	e := startDevicePluginEnv(t, "--resource-per-model", "--resource-name", "baidu.com/xpu")
	e.startKubelet(t)
	plugin, err := e.kubelet.WaitPlugin("baidu.com/R200", 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if plugin.Endpoint != "kunlunxin-xpu-r200.sock" {
		t.Errorf("endpoint %s, want kunlunxin-xpu-r200.sock", plugin.Endpoint)
	}
	if !allHealth(e.uuids, pluginapi.Healthy)(plugin.Update(0).Devices) {
		t.Errorf("first message %v, want all %d cards", plugin.Update(0).Devices, simCards)
	}
	if code, err := e.shim.Stop(10 * time.Second); err != nil || code != 0 {
		t.Fatalf("shim stop: status %d, %v", code, err)
	}
}

func TestDevicePluginRegisterBackOff(t *testing.T) {
	const rejected = 4
	e := startDevicePluginEnv(t)
	e.startKubelet(t, RejectFirstRegistrations(rejected))
	if _, err := e.kubelet.WaitPlugin(defaultResource, 15*time.Second); err != nil {
		t.Fatal(err)
	}
	attempts := e.kubelet.Attempts()
	if len(attempts) != rejected+1 {
		t.Fatalf("%d Register calls, want %d rejected then 1 accepted", len(attempts), rejected)
	}
	// Back-off: every retry waits at least as long as the one before (250 ms, doubling).
	previous := time.Duration(0)
	for i := 1; i < len(attempts); i++ {
		gap := attempts[i].Sub(attempts[i-1])
		t.Logf("retry %d after %v", i, gap)
		if gap < 200*time.Millisecond || gap < previous*3/4 {
			t.Errorf("retry %d came %v after the previous attempt (before that: %v): no back-off", i, gap, previous)
		}
		previous = gap
	}
	if n := len(e.kubelet.Registrations()); n != 1 {
		t.Errorf("%d accepted registrations, want 1", n)
	}
}

// xpud starting after the plugin: the plugin registers with no devices, then advertises them.
func TestDevicePluginXpudLate(t *testing.T) {
	xpudBin := BinaryFromEnv(t, "XPUD_BIN")
	shimBin := BinaryFromEnv(t, "XPU_K8S_SHIM_BIN")
	dir := ShortTempDir(t)
	pluginDir := filepath.Join(dir, "device-plugins")
	if err := os.Mkdir(pluginDir, 0o755); err != nil {
		t.Fatal(err)
	}
	bus := StartPrivateBus(t, dir)
	StartShim(t, dir, shimBin, bus, "device-plugin", "--plugin-dir", pluginDir)
	k, err := NewDevicePluginKubelet(pluginDir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(k.Stop)
	plugin, err := k.WaitPlugin(defaultResource, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(plugin.Update(0).Devices); n != 0 {
		t.Errorf("first message lists %d devices before xpud runs, want 0", n)
	}
	StartXpud(t, dir, xpudBin, bus)
	uuids := deviceUUIDs(t, bus)
	if _, err := plugin.WaitUpdate(1, allHealth(uuids, pluginapi.Healthy), 10*time.Second); err != nil {
		t.Fatal(err)
	}
}

func TestDevicePluginBadFlags(t *testing.T) {
	shimBin := BinaryFromEnv(t, "XPU_K8S_SHIM_BIN")
	for _, args := range [][]string{
		{"--resource-name", "xpu"},
		{"--resource-name", "kubernetes.io/xpu"},
		{"--xpud-grace-period", "-1"},
		{"--xpud-grace-period", "ten"},
		{"--plugin-dir", ""},
		{"--cdi=yes"},
		{"--no-such-flag"},
	} {
		cmd := exec.Command(shimBin, append([]string{"device-plugin"}, args...)...)
		out, err := cmd.CombinedOutput()
		exit, ok := err.(*exec.ExitError)
		if !ok || exit.ExitCode() != 2 {
			t.Errorf("device-plugin %v: %v, want exit status 2", args, err)
		}
		lines := strings.Split(strings.TrimSpace(string(out)), "\n")
		if len(lines) == 0 || !strings.Contains(lines[0], "xpu-k8s-shim device-plugin") {
			t.Errorf("device-plugin %v printed %q, want a one-line error naming the program", args, out)
		}
	}
}

// TestDevicePluginHealthLatency measures what bench/README.md quotes: from a SetHealth on xpud to the
// kubelet receiving the ListAndWatch update, and the plugin's memory.
func TestDevicePluginHealthLatency(t *testing.T) {
	const injections = 20
	e := startDevicePluginEnv(t)
	e.startKubelet(t)
	plugin, err := e.kubelet.WaitPlugin(defaultResource, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	var latencies []time.Duration
	for n := 0; n < injections; n++ {
		from := len(plugin.Updates())
		health, want := "Unhealthy", onlyUnhealthy(e.uuids, 3)
		if n%2 == 1 {
			health, want = "Healthy", allHealth(e.uuids, pluginapi.Healthy)
		}
		injected := time.Now() // before busctl starts: the figure includes busctl's own start-up
		if err := e.bus.SetHealth(3, health, "latency probe"); err != nil {
			t.Fatal(err)
		}
		i, err := plugin.WaitUpdate(from, want, 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		latencies = append(latencies, plugin.Update(i).At.Sub(injected))
	}
	slices.Sort(latencies)
	rss, err := e.shim.StatusField("VmRSS")
	if err != nil {
		t.Fatal(err)
	}
	hwm, _ := e.shim.StatusField("VmHWM")
	fmt.Printf("MEASURE device-plugin SetHealth->ListAndWatch over %d injections: p50 %v, max %v (includes busctl start-up)\n",
		injections, Percentile(latencies, 50).Round(time.Microsecond), latencies[len(latencies)-1].Round(time.Microsecond))
	fmt.Printf("MEASURE device-plugin RSS %d KiB (peak %d KiB) with %d devices and one ListAndWatch stream\n", rss, hwm, simCards)
	if p50 := Percentile(latencies, 50); p50 > 100*time.Millisecond {
		t.Errorf("median latency %v, want under 100 ms", p50)
	}
}

// A card whose last process left its memory behind (xpud's release check, issue 40) reaches the
// kubelet as Unhealthy through the same health path as any other fault, and Healthy again once
// the memory is back down; the shim needs nothing of its own for it.
func TestDevicePluginKeptMemory(t *testing.T) {
	e := startDevicePluginEnvWith(t,
		"[daemon]\nbackend = sim\n[sampling]\ninterval_ms = 200\n[release_check]\ntimeout_ms = 1000\n")
	waitSocket(t, filepath.Join(e.pluginDir, defaultSocket), e.shim)
	e.startKubelet(t)
	plugin, err := e.kubelet.WaitPlugin(defaultResource, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := plugin.WaitUpdate(0, allHealth(e.uuids, pluginapi.Healthy), 10*time.Second); err != nil {
		t.Fatal(err)
	}
	from := len(plugin.Updates())
	// The simulated job holds 2 GiB on xpu5, then leaves without freeing it.
	if err := e.bus.SetMetric(5, "memory_used_bytes", 2<<30); err != nil {
		t.Fatal(err)
	}
	if err := e.bus.SetMetric(5, "process_count", 0); err != nil {
		t.Fatal(err)
	}
	i, err := plugin.WaitUpdate(from, onlyUnhealthy(e.uuids, 5), 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.bus.SetMetric(5, "memory_used_bytes", 0); err != nil {
		t.Fatal(err)
	}
	if _, err := plugin.WaitUpdate(i+1, allHealth(e.uuids, pluginapi.Healthy), 10*time.Second); err != nil {
		t.Fatal(err)
	}
}

// Cards pods hold through DRA claims (a node switched from the DRA driver back to the device
// plugin, its claims' pods still running): the plugin reads them from pod-resources before it
// registers, so its first ListAndWatch message already leaves them out, and advertises them
// again once the pods are gone.
func TestDevicePluginHeldCards(t *testing.T) {
	kubeletDir := ShortTempDir(t)
	podsFile := filepath.Join(kubeletDir, "pods.json")
	socket := filepath.Join(kubeletDir, "kubelet.sock")
	// Card 1 whole, card 3 as a memory share; another driver's device, and card 0 through the
	// device plugin itself (its own allocation, nothing to leave out).
	writeAtomically(t, podsFile, `{"pods": [
  {"namespace": "ml", "name": "train", "containers": [
    {"name": "main", "devices": [{"resource_name": "kunlunxin.com/xpu", "device_ids": []}],
     "dynamic_resources": [
       {"claim_namespace": "ml", "claim_name": "train-xpu", "claim_resources": [
         {"driver_name": "xpu.kunlunxin.com", "pool_name": "node-1", "device_name": "xpu-1"},
         {"driver_name": "gpu.example.com", "pool_name": "node-1", "device_name": "xpu-5"}]}]}]},
  {"namespace": "ml", "name": "share", "containers": [
    {"name": "main", "devices": [],
     "dynamic_resources": [
       {"claim_namespace": "ml", "claim_name": "share-xpu", "claim_resources": [
         {"driver_name": "xpu.kunlunxin.com", "pool_name": "node-1", "device_name": "xpu-3-shared"}]}]}]},
  {"namespace": "default", "name": "plugin-pod", "containers": [
    {"name": "main", "devices": [{"resource_name": "kunlunxin.com/xpu", "device_ids": ["uuid-of-card-0"]}]}]}]}`)
	servePodResources(t, socket, podsFile, 0)

	e := startDevicePluginEnv(t, "--podresources-socket", socket, "--held-cards-refresh", "1")
	uuids := e.uuids
	e.startKubelet(t)
	plugin, err := e.kubelet.WaitPlugin(defaultResource, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	free := pick(uuids, 0, 2, 4, 5, 6, 7)
	if first := plugin.Update(0).Devices; !allHealth(free, pluginapi.Healthy)(first) {
		t.Fatalf("first ListAndWatch message %v, want cards %v only (1 and 3 are held through DRA claims)",
			healthOf(first), free)
	}

	// The claims' pods end: both cards come back within the refresh.
	writeAtomically(t, podsFile, `{"pods": []}`)
	back, err := plugin.WaitUpdate(1, allHealth(uuids, pluginapi.Healthy), 10*time.Second)
	if err != nil {
		t.Fatalf("cards not advertised again after their claims' pods ended: %v\n%s", err, e.shim.Output())
	}

	// A new claim's pod holds card 6, named by its CDI name only.
	writeAtomically(t, podsFile, fmt.Sprintf(`{"pods": [{"namespace": "ml", "name": "late", "containers": [
    {"name": "main", "devices": [], "dynamic_resources": [{"claim_namespace": "ml", "claim_name": "late-xpu",
      "claim_resources": [{"driver_name": "xpu.kunlunxin.com", "pool_name": "node-1", "device_name": "",
                           "cdi_devices": ["kunlunxin.com/xpu=%s"]}]}]}]}]}`, uuids[6]))
	if _, err := plugin.WaitUpdate(back+1, allHealth(pick(uuids, 0, 1, 2, 3, 4, 5, 7), pluginapi.Healthy), 10*time.Second); err != nil {
		t.Fatalf("card 6 still advertised while a claim holds it: %v\n%s", err, e.shim.Output())
	}
	if !strings.Contains(e.shim.Output(), "pods hold them through DRA claims") {
		t.Errorf("the log does not say why cards are not advertised:\n%s", e.shim.Output())
	}
}
