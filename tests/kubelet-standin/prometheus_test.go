package main

// End-to-end tests of `xpu-k8s-shim exporter`: the real xpud (sim backend) on a private bus, the
// real exporter, the pod-resources stand-in (official k8s.io/kubelet v1 code) handing a card to
// pod "demo", and a real Prometheus server scraping the exporter every second.

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A scrape must answer within about a second even when xpud or the kubelet hangs (the exporter
// waits at most 0.5 s for xpud and 0.4 s for the kubelet); the slack is for a loaded CI machine.
const scrapeBound = 1500 * time.Millisecond

// The exporter's --xpud-grace-period in TestExporterWithPrometheus.
const exporterGrace = 2 * time.Second

// exporterCardUUID asks xpud over the bus, like any client, for card index's UUID.
func exporterCardUUID(t *testing.T, bus *PrivateBus, index int) string {
	t.Helper()
	out, err := Busctl(bus.Address, "get-property", xpudBusName, fmt.Sprintf("%s/devices/xpu%d", xpudManagerPath, index),
		xpudBusName+".Device", "Uuid")
	if err != nil {
		t.Fatal(err)
	}
	return strings.Trim(strings.TrimPrefix(strings.TrimSpace(out), "s "), `"`)
}

// startExporter runs the exporter on a kernel-chosen loopback port, with any further flags, and
// returns it with the port it logged.
func startExporter(t *testing.T, dir, bin string, bus *PrivateBus, podResourcesSocket string, flags ...string) (*Process, int) {
	t.Helper()
	args := append([]string{"--listen", "127.0.0.1:0", "--podresources-socket", podResourcesSocket}, flags...)
	proc := StartShim(t, dir, bin, bus, "exporter", args...)
	servingOn := regexp.MustCompile(`serving /metrics on \S+ \(port (\d+)\)`)
	port := 0
	if err := WaitFor(15*time.Second, func() (bool, string) {
		if !proc.Running() {
			return false, "exporter exited: " + proc.Output()
		}
		if m := servingOn.FindStringSubmatch(proc.Output()); m != nil {
			port, _ = strconv.Atoi(m[1])
			return true, ""
		}
		return false, "exporter has not logged its port"
	}); err != nil {
		t.Fatal(err)
	}
	return proc, port
}

type scrapeResult struct {
	body string
	took time.Duration
}

func scrape(port int) (scrapeResult, error) {
	client := http.Client{Timeout: 5 * time.Second}
	started := time.Now()
	resp, err := client.Get(fmt.Sprintf("http://127.0.0.1:%d/metrics", port))
	if err != nil {
		return scrapeResult{}, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	took := time.Since(started)
	if err != nil {
		return scrapeResult{}, err
	}
	if resp.StatusCode != http.StatusOK {
		return scrapeResult{}, fmt.Errorf("GET /metrics: %s", resp.Status)
	}
	return scrapeResult{string(body), took}, nil
}

// samples returns the sample lines of one family ("name{...} value" or "name value").
func samples(body, family string) []string {
	var out []string
	for _, line := range strings.Split(body, "\n") {
		if strings.HasPrefix(line, family+"{") || strings.HasPrefix(line, family+" ") {
			out = append(out, line)
		}
	}
	return out
}

// waitScrape scrapes until cond holds, failing the test if any scrape takes longer than
// scrapeBound or the deadline passes.
func waitScrape(t *testing.T, port int, timeout time.Duration, what string, cond func(body string) bool) string {
	t.Helper()
	var last scrapeResult
	var slow []time.Duration
	var slowest time.Duration
	err := WaitFor(timeout, func() (bool, string) {
		result, err := scrape(port)
		if err != nil {
			return false, err.Error()
		}
		last = result
		slowest = max(slowest, result.took)
		if result.took > scrapeBound {
			slow = append(slow, result.took)
		}
		return cond(result.body), what
	})
	if err != nil {
		t.Fatalf("%v\nlast scrape:\n%s", err, last.body)
	}
	if len(slow) > 0 {
		t.Fatalf("%s: scrapes took %v (bound %v)", what, slow, scrapeBound)
	}
	t.Logf("%s: slowest scrape %v", what, slowest)
	return last.body
}

// scrapeDuration is the exporter's own xpu_exporter_scrape_duration_seconds in body.
func scrapeDuration(body string) time.Duration {
	lines := samples(body, "xpu_exporter_scrape_duration_seconds")
	if len(lines) != 1 {
		return 0
	}
	seconds, err := strconv.ParseFloat(strings.TrimPrefix(lines[0], "xpu_exporter_scrape_duration_seconds "), 64)
	if err != nil {
		return 0
	}
	return time.Duration(seconds * float64(time.Second))
}

func freeLoopbackPort(t *testing.T) int {
	t.Helper()
	listener, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer listener.Close()
	return listener.Addr().(*net.TCPAddr).Port
}

func requireTool(t *testing.T, name string) string {
	t.Helper()
	path, err := exec.LookPath(name)
	if err != nil {
		t.Fatalf("%s is required (Debian package prometheus): %v", name, err)
	}
	return path
}

// prometheusAPI GETs a Prometheus HTTP API path and decodes the "data" member into out.
func prometheusAPI(port int, path string, out any) error {
	client := http.Client{Timeout: 5 * time.Second}
	resp, err := client.Get(fmt.Sprintf("http://127.0.0.1:%d%s", port, path))
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	var envelope struct {
		Status string          `json:"status"`
		Error  string          `json:"error"`
		Data   json.RawMessage `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&envelope); err != nil {
		return err
	}
	if envelope.Status != "success" {
		return fmt.Errorf("%s: %s %s", path, envelope.Status, envelope.Error)
	}
	return json.Unmarshal(envelope.Data, out)
}

type promSeries struct {
	Metric map[string]string `json:"metric"`
	Value  []any             `json:"value"`
}

// startPrometheus runs Debian's Prometheus scraping the exporter every second, as job
// xpu-exporter (the job the chart's alert rules name); with rulesFile it also evaluates those
// rules every second.
func startPrometheus(t *testing.T, dir string, exporterPort int, rulesFile string) int {
	t.Helper()
	bin := requireTool(t, "prometheus")
	port := freeLoopbackPort(t)
	config := filepath.Join(dir, "prometheus.yml")
	rules := ""
	if rulesFile != "" {
		rules = fmt.Sprintf("  evaluation_interval: 1s\nrule_files:\n  - %s\n", rulesFile)
	}
	content := fmt.Sprintf(`global:
  scrape_interval: 1s
  scrape_timeout: 1s
%sscrape_configs:
  - job_name: xpu-exporter
    static_configs:
      - targets: ['127.0.0.1:%d']
`, rules, exporterPort)
	if err := os.WriteFile(config, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	StartProcess(t, dir, "prometheus", []string{bin, "--config.file=" + config,
		"--storage.tsdb.path=" + filepath.Join(dir, "prometheus-data"),
		"--web.listen-address=127.0.0.1:" + strconv.Itoa(port), "--log.level=warn"})
	return port
}

func writePods(t *testing.T, podsFile string, pods []podEntry) {
	t.Helper()
	data, err := json.Marshal(podsDocument{Pods: pods})
	if err != nil {
		t.Fatal(err)
	}
	writeAtomically(t, podsFile, string(data))
}

func xpuContainer(name, resource string, ids ...string) containerEntry {
	return containerEntry{Name: name, Devices: []deviceEntry{{ResourceName: resource, DeviceIDs: ids}}}
}

func TestExporterWithPrometheus(t *testing.T) {
	xpudBin := BinaryFromEnv(t, "XPUD_BIN")
	shimBin := BinaryFromEnv(t, "XPU_K8S_SHIM_BIN")
	promtool := requireTool(t, "promtool")
	dir := ShortTempDir(t)
	bus := StartPrivateBus(t, dir)
	xpud := StartXpud(t, dir, xpudBin, bus)
	const demoCard = 2
	demoUUID := exporterCardUUID(t, bus, demoCard)

	podsFile := filepath.Join(dir, "pods.json")
	socket := filepath.Join(dir, "kubelet.sock")
	writePods(t, podsFile, []podEntry{
		{Namespace: "default", Name: "demo", Containers: []containerEntry{
			xpuContainer("main", "kunlunxin.com/xpu", demoUUID),
			xpuContainer("nic", "example.com/nic", "nic-0"),
		}},
		{Namespace: "default", Name: "cpu-only", Containers: []containerEntry{{Name: "main"}}},
	})
	stopKubelet := servePodResources(t, socket, podsFile, 0)

	// A grace period shorter than the default 10 s, so "xpud stopped" sees it run out.
	exporter, port := startExporter(t, dir, shimBin, bus, socket, "--xpud-grace-period", strconv.Itoa(int(exporterGrace/time.Second)))
	body := waitScrape(t, port, 15*time.Second, "card allocated to pod demo", func(body string) bool {
		return strings.Contains(body, `pod="demo"`)
	})

	t.Run("promtool check metrics", func(t *testing.T) {
		cmd := exec.Command(promtool, "check", "metrics")
		cmd.Stdin = strings.NewReader(body)
		out, err := cmd.CombinedOutput()
		if err != nil || len(out) != 0 {
			t.Fatalf("promtool check metrics: %v\n%s\non:\n%s", err, out, body)
		}
	})

	t.Run("labels and families", func(t *testing.T) {
		for _, family := range []string{"xpu_info", "xpu_healthy", "xpu_utilization_ratio", "xpu_memory_utilization_ratio",
			"xpu_memory_used_bytes", "xpu_memory_total_bytes", "xpu_temperature_celsius", "xpu_power_watts",
			"xpu_clock_hertz", "xpu_processes"} {
			if got := len(samples(body, family)); got != simCards {
				t.Errorf("%s: %d series, want one per card (%d)", family, got, simCards)
			}
		}
		for _, line := range samples(body, "xpu_memory_used_bytes") {
			allocated := strings.Contains(line, `uuid="`+demoUUID+`"`)
			wantLabels := fmt.Sprintf(`xpu="%d",uuid="%s",model="R200",pci_bus_id="`, demoCard, demoUUID)
			switch {
			case allocated && !(strings.Contains(line, wantLabels) && strings.Contains(line, `namespace="default",pod="demo",container="main"}`)):
				t.Errorf("allocated card without its pod labels: %s", line)
			case !allocated && strings.Contains(line, "pod="):
				t.Errorf("unallocated card with pod labels: %s", line)
			}
		}
		for _, family := range []string{"xpu_exporter_xpud_up", "xpu_exporter_podresources_up"} {
			if got := samples(body, family); len(got) != 1 || got[0] != family+" 1" {
				t.Errorf("%s = %v, want 1", family, got)
			}
		}
	})

	t.Run("prometheus query by pod", func(t *testing.T) {
		promPort := startPrometheus(t, dir, port, "")
		if err := WaitFor(60*time.Second, func() (bool, string) {
			var targets struct {
				ActiveTargets []struct {
					Health    string `json:"health"`
					LastError string `json:"lastError"`
				} `json:"activeTargets"`
			}
			if err := prometheusAPI(promPort, "/api/v1/targets", &targets); err != nil {
				return false, err.Error()
			}
			if len(targets.ActiveTargets) != 1 || targets.ActiveTargets[0].Health != "up" {
				return false, fmt.Sprintf("targets: %+v", targets.ActiveTargets)
			}
			return true, ""
		}); err != nil {
			t.Fatal(err)
		}
		query := "/api/v1/query?query=" + url.QueryEscape(`xpu_memory_used_bytes{pod="demo"}`)
		var result struct {
			ResultType string       `json:"resultType"`
			Result     []promSeries `json:"result"`
		}
		if err := WaitFor(15*time.Second, func() (bool, string) {
			if err := prometheusAPI(promPort, query, &result); err != nil {
				return false, err.Error()
			}
			return len(result.Result) > 0, "no series yet"
		}); err != nil {
			t.Fatal(err)
		}
		if len(result.Result) != 1 {
			t.Fatalf("want exactly the allocated card, got %+v", result.Result)
		}
		series := result.Result[0].Metric
		if series["uuid"] != demoUUID || series["xpu"] != strconv.Itoa(demoCard) || series["namespace"] != "default" ||
			series["container"] != "main" || series["model"] != "R200" || series["pci_bus_id"] == "" {
			t.Fatalf("series labels %v, want card %d (%s) in default/demo/main", series, demoCard, demoUUID)
		}
	})

	t.Run("reply above 4 MiB", func(t *testing.T) {
		pods := []podEntry{{Namespace: "default", Name: "demo-big", Containers: []containerEntry{
			xpuContainer("main", "kunlunxin.com/xpu", demoUUID)}}}
		padding := strings.Repeat("x", 300)
		for i := 0; i < 16000; i++ {
			pods = append(pods, podEntry{Namespace: "filler", Name: fmt.Sprintf("pod-%05d", i), Containers: []containerEntry{
				xpuContainer("main", "example.com/nic", fmt.Sprintf("nic-%05d-%s", i, padding))}})
		}
		writePods(t, podsFile, pods)
		if info, err := os.Stat(podsFile); err != nil || info.Size() < 5<<20 {
			t.Fatalf("pods file is not big enough: %v %v", info.Size(), err)
		}
		waitScrape(t, port, 15*time.Second, "card moved to demo-big", func(body string) bool {
			return strings.Contains(body, `pod="demo-big"`) && !strings.Contains(body, `pod="demo"`)
		})
	})

	t.Run("hung kubelet", func(t *testing.T) {
		stopKubelet()
		stopKubelet = servePodResources(t, socket, podsFile, time.Hour)
		// A scrape that sat out the List deadline (not one that failed fast while the exporter
		// reconnected) and still answered in time.
		waitScrape(t, port, 15*time.Second, "podresources_up 0 after waiting on a hung kubelet", func(body string) bool {
			return strings.Contains(body, "\nxpu_exporter_podresources_up 0\n") && !strings.Contains(body, "pod=") &&
				strings.Contains(body, "\nxpu_exporter_xpud_up 1\n") && scrapeDuration(body) >= 300*time.Millisecond
		})
	})

	t.Run("kubelet stopped and back", func(t *testing.T) {
		stopKubelet()
		waitScrape(t, port, 15*time.Second, "podresources_up 0 with the kubelet gone", func(body string) bool {
			return strings.Contains(body, "\nxpu_exporter_podresources_up 0\n") && len(samples(body, "xpu_info")) == simCards
		})
		writePods(t, podsFile, []podEntry{{Namespace: "default", Name: "demo", Containers: []containerEntry{
			xpuContainer("main", "kunlunxin.com/xpu", demoUUID)}}})
		stopKubelet = servePodResources(t, socket, podsFile, 0)
		waitScrape(t, port, 10*time.Second, "podresources_up 1 once the kubelet is back", func(body string) bool {
			return strings.Contains(body, "\nxpu_exporter_podresources_up 1\n") && strings.Contains(body, `pod="demo"`)
		})
	})

	t.Run("hung xpud", func(t *testing.T) {
		if err := syscall.Kill(xpud.Pid(), syscall.SIGSTOP); err != nil {
			t.Fatal(err)
		}
		defer syscall.Kill(xpud.Pid(), syscall.SIGCONT)
		// No readings while xpud does not answer (none repeated from an older answer); the cards
		// themselves stay, with their health.
		waitScrape(t, port, 10*time.Second, "xpud_up 0 after waiting on a hung xpud", func(body string) bool {
			return strings.Contains(body, "\nxpu_exporter_xpud_up 0\n") && len(samples(body, "xpu_utilization_ratio")) == 0 &&
				len(samples(body, "xpu_info")) == simCards && scrapeDuration(body) >= 400*time.Millisecond
		})
		// Scrapes at the same moment (two Prometheus replicas, an operator's curl) share one
		// GetMetrics: none waits for another's timeout before starting its own.
		results := make(chan error, 4)
		for i := 0; i < 4; i++ {
			go func() {
				result, err := scrape(port)
				switch {
				case err != nil:
					results <- err
				case result.took > scrapeBound:
					results <- fmt.Errorf("concurrent scrape took %v (bound %v)", result.took, scrapeBound)
				case !strings.Contains(result.body, "\nxpu_exporter_xpud_up 0\n"):
					results <- fmt.Errorf("concurrent scrape without xpud_up 0:\n%s", result.body)
				default:
					results <- nil
				}
			}()
		}
		for i := 0; i < 4; i++ {
			if err := <-results; err != nil {
				t.Error(err)
			}
		}
		syscall.Kill(xpud.Pid(), syscall.SIGCONT)
		waitScrape(t, port, 10*time.Second, "xpud_up 1 once xpud runs again", func(body string) bool {
			return strings.Contains(body, "\nxpu_exporter_xpud_up 1\n") && len(samples(body, "xpu_info")) == simCards
		})
	})

	t.Run("xpud stopped", func(t *testing.T) {
		if status, err := xpud.Stop(10 * time.Second); err != nil || status != 0 {
			t.Fatalf("xpud stop: status %d, %v", status, err)
		}
		// Past the grace period every card says xpud is unreachable, as the device plugin and
		// the DRA driver then have it; no readings at any time.
		body := waitScrape(t, port, exporterGrace+10*time.Second, "every card unhealthy past the grace period", func(body string) bool {
			unhealthy := 0
			for _, line := range samples(body, "xpu_healthy") {
				if strings.HasSuffix(line, "} 0") {
					unhealthy++
				}
			}
			return strings.Contains(body, "\nxpu_exporter_xpud_up 0\n") && unhealthy == simCards
		})
		if n := len(samples(body, "xpu_health_reason_info")); n != simCards {
			t.Errorf("%d xpu_health_reason_info series, want %d", n, simCards)
		}
		for _, line := range samples(body, "xpu_health_reason_info") {
			if !strings.Contains(line, `reason="xpud_unreachable"`) {
				t.Errorf("a card unhealthy for another reason: %s", line)
			}
		}
		for _, line := range strings.Split(body, "\n") {
			if line == "" || strings.HasPrefix(line, "#") || strings.HasPrefix(line, "xpu_exporter_") {
				continue
			}
			// The counters xpud keeps per card (health transitions, resets) stay at their last
			// known counts, as a counter may; no reading of the card's state is shown.
			if family, _, _ := strings.Cut(line, "{"); family != "xpu_info" && family != "xpu_healthy" &&
				family != "xpu_health_transitions_total" && family != "xpu_resets_total" &&
				family != "xpu_health_reason_info" {
				t.Errorf("a reading with xpud down: %s", line)
			}
		}
	})

	t.Run("SIGTERM", func(t *testing.T) {
		status, err := exporter.Stop(5 * time.Second)
		if err != nil || status != 0 {
			t.Fatalf("exporter exit status %d, %v\n%s", status, err, exporter.Output())
		}
	})
}

// podOf returns the "namespace/pod/container" an exporter's xpu_info series gives card uuid, or ""
// when the series carries no pod labels.
func podOf(body, uuid string) string {
	labels := regexp.MustCompile(`namespace="([^"]*)",pod="([^"]*)",container="([^"]*)"`)
	for _, line := range samples(body, "xpu_info") {
		if strings.Contains(line, `uuid="`+uuid+`"`) {
			if m := labels.FindStringSubmatch(line); m != nil {
				return m[1] + "/" + m[2] + "/" + m[3]
			}
		}
	}
	return ""
}

// Shared mode (device IDs `<uuid>::<n>`) and a customised resource name: the kubelet lists the
// cards under names other than kunlunxin.com/xpu, and the pods must keep their labels.
func TestExporterResourceNames(t *testing.T) {
	xpudBin := BinaryFromEnv(t, "XPUD_BIN")
	shimBin := BinaryFromEnv(t, "XPU_K8S_SHIM_BIN")
	dir := ShortTempDir(t)
	bus := StartPrivateBus(t, dir)
	StartXpud(t, dir, xpudBin, bus)
	uuids := make([]string, 4)
	for i := range uuids {
		uuids[i] = exporterCardUUID(t, bus, i)
	}

	podsFile := filepath.Join(dir, "pods.json")
	socket := filepath.Join(dir, "kubelet.sock")
	writePods(t, podsFile, []podEntry{
		{Namespace: "ml", Name: "shared", Containers: []containerEntry{
			xpuContainer("main", "kunlunxin.com/xpu-shared", uuids[0]+"::0", uuids[0]+"::3")}},
		{Namespace: "ml", Name: "shared-per-model", Containers: []containerEntry{
			xpuContainer("main", "kunlunxin.com/R200-shared", uuids[1]+"::1")}},
		{Namespace: "ml", Name: "custom", Containers: []containerEntry{
			xpuContainer("main", "example.com/accel", uuids[2])}},
		{Namespace: "ml", Name: "custom-shared", Containers: []containerEntry{
			xpuContainer("main", "example.com/xpu-shared", uuids[3]+"::2")}},
	})
	servePodResources(t, socket, podsFile, 0)

	for _, c := range []struct {
		name  string
		flags []string
		want  []string // pod per card 0..3
	}{
		{"defaults", nil, []string{"ml/shared/main", "ml/shared-per-model/main", "", ""}},
		{"customised name", []string{"--resource-name", "example.com/accel"},
			[]string{"", "", "ml/custom/main", "ml/custom-shared/main"}},
		{"customised name per model", []string{"--resource-per-model", "--resource-name", "example.com/xpu"},
			[]string{"", "", "ml/custom/main", "ml/custom-shared/main"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			argv := append([]string{shimBin, "--bus-address", bus.Address, "exporter", "--listen", "127.0.0.1:0",
				"--podresources-socket", socket}, c.flags...)
			// A log of its own: each run looks for the port it logged.
			proc := StartProcess(t, dir, "exporter-"+strings.ReplaceAll(c.name, " ", "-"), argv)
			servingOn := regexp.MustCompile(`serving /metrics on \S+ \(port (\d+)\)`)
			port := 0
			if err := WaitFor(15*time.Second, func() (bool, string) {
				if m := servingOn.FindStringSubmatch(proc.Output()); m != nil {
					port, _ = strconv.Atoi(m[1])
					return true, ""
				}
				return false, "exporter has not logged its port: " + proc.Output()
			}); err != nil {
				t.Fatal(err)
			}
			var got []string
			waitScrape(t, port, 15*time.Second, fmt.Sprintf("pods %q", c.want), func(body string) bool {
				got = got[:0]
				for _, uuid := range uuids {
					got = append(got, podOf(body, uuid))
				}
				return strings.Join(got, ",") == strings.Join(c.want, ",")
			})
			if status, err := proc.Stop(5 * time.Second); err != nil || status != 0 {
				t.Fatalf("exporter exit status %d, %v\n%s", status, err, proc.Output())
			}
		})
	}
}

func TestExporterBadFlags(t *testing.T) {
	shimBin := BinaryFromEnv(t, "XPU_K8S_SHIM_BIN")
	for _, args := range [][]string{
		{"--listen", "9507"}, {"--listen", "localhost:9507"}, {"--listen", "::1:9507"}, {"--listen", ":99999"},
		{"--podresources-socket", ""}, {"--no-such-flag"}, {"extra-argument"},
		{"--resource-name", "xpu"}, {"--resource-name", "kubernetes.io/xpu"},
	} {
		cmd := exec.Command(shimBin, append([]string{"exporter"}, args...)...)
		out, err := cmd.CombinedOutput()
		var exit *exec.ExitError
		if !errors.As(err, &exit) || exit.ExitCode() != 2 {
			t.Errorf("%v: want exit status 2, got %v\n%s", args, err, out)
			continue
		}
		if lines := strings.Split(strings.TrimSpace(string(out)), "\n"); len(lines) != 1 {
			t.Errorf("%v: want a one-line error, got:\n%s", args, out)
		}
	}
}

// Per-process card memory end to end: xpud on the fake libxpuml (the one fake here: there is no
// XPU) lists two processes on card 1, one in a Kubernetes container (its cgroup, in a /proc tree
// under xpud's [sysfs] root, names a pod and a container) and one host process; the kubelet
// stand-in says pod default/demo holds card 1. Only the container's process gets pod labels.
func TestExporterProcessMemory(t *testing.T) {
	xpudBin := BinaryFromEnv(t, "XPUD_BIN")
	shimBin := BinaryFromEnv(t, "XPU_K8S_SHIM_BIN")
	fakeLibrary := BinaryFromEnv(t, "XPUML_FAKE_LIBRARY")
	promtool := requireTool(t, "promtool")
	dir := ShortTempDir(t)
	root := filepath.Join(dir, "root")
	container := strings.Repeat("c", 64)
	files := map[string]string{
		"proc/4242/cgroup": "0::/kubepods.slice/kubepods-besteffort.slice/" +
			"kubepods-besteffort-pod6f2b1c3a_1111_4222_8333_444455556666.slice/cri-containerd-" + container + ".scope\n",
		"proc/4300/cgroup": "0::/system.slice/inference-probe.service\n",
		"scenario":         "devices 2\ndevice 1\nprocess 4242 3GiB 1\nprocess 4300 256MiB\n",
		"xpud.conf": "[daemon]\nbackend = xpuml\n[xpuml]\nlibrary = " + fakeLibrary +
			"\n[sysfs]\nroot = " + root + "\n",
	}
	for name, content := range files {
		path := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("XPUML_FAKE_SCRIPT", filepath.Join(root, "scenario"))
	bus := StartPrivateBus(t, dir)
	StartXpud(t, dir, xpudBin, bus, "--backend", "xpuml", "--config", filepath.Join(root, "xpud.conf"))
	uuid := exporterCardUUID(t, bus, 1)

	podsFile := filepath.Join(dir, "pods.json")
	socket := filepath.Join(dir, "kubelet.sock")
	writePods(t, podsFile, []podEntry{{Namespace: "default", Name: "demo", Containers: []containerEntry{
		xpuContainer("main", "kunlunxin.com/xpu", uuid)}}})
	servePodResources(t, socket, podsFile, 0)
	_, port := startExporter(t, dir, shimBin, bus, socket)

	card := fmt.Sprintf(`xpu="1",uuid="%s",model="R200",pci_bus_id="0000:3c:00.0"`, uuid)
	want := []string{
		fmt.Sprintf(`xpu_process_memory_used_bytes{%s,pid="4242",namespace="default",pod="demo",container="main"} 3221225472`, card),
		fmt.Sprintf(`xpu_process_memory_used_bytes{%s,pid="4300"} 268435456`, card),
	}
	body := waitScrape(t, port, 15*time.Second, "both processes of card 1", func(body string) bool {
		return len(samples(body, "xpu_process_memory_used_bytes")) == 2
	})
	if got := samples(body, "xpu_process_memory_used_bytes"); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("process series:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	cmd := exec.Command(promtool, "check", "metrics")
	cmd.Stdin = strings.NewReader(body)
	if out, err := cmd.CombinedOutput(); err != nil || len(out) != 0 {
		t.Fatalf("promtool check metrics: %v\n%s\non:\n%s", err, out, body)
	}
}
