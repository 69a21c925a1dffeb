package main

// The soak: every role of one node under steady churn for XPU_SOAK_SECONDS (skipped when unset;
// ctest's `soak` runs a few minutes, an hour or a day is the same test run by hand):
//
//	xpud, sim backend, 64 cards        scraped through the exporter at 10 Hz
//	a health flap every 3 s            one card Unhealthy, then Healthy again, in turn
//	a kubelet restart every minute     the stand-in kubelet deletes its sockets and serves anew
//	a token rotation every 10 s        a new projected-volume generation, the old one deleted
//
// It asserts what would hurt an operator after days of this: memory, file descriptors or
// threads that grow; a health change that never reaches the kubelet or the transition counter;
// a scrape that fails; the runtime reading a missing, partial or stale token. It prints the
// resource curve and the latencies it saw.

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"
)

const (
	soakCards          = 64
	soakScrapeEvery    = 100 * time.Millisecond
	soakFlapEvery      = 3 * time.Second
	soakKubeletEvery   = time.Minute
	soakRotateEvery    = 10 * time.Second
	soakTokenReadEvery = 5 * time.Millisecond
	// A health change reaches the kubelet within this, kubelet restart included.
	soakHealthDeadline = 15 * time.Second
	// How much a role's anonymous RSS may rise from the end of the warm-up to the end of the run.
	soakRssSlackKiB = 1536
	// File descriptors and threads come and go with the kubelet's restarts and gRPC's pools.
	soakCountSlack = 4
)

// soakFigures is one sample of one process.
// rssKiB is shown; anonKiB is what the growth check reads: a leak is memory the role allocated,
// while file pages (code and read-only data mapped from its program, gRPC linked in) grow when a
// code path first runs, as teardown's do at the very end, and stay the program's size.
type soakFigures struct{ rssKiB, anonKiB, fds, threads int }

func sampleProcess(p *Process) (soakFigures, error) {
	rss, err := p.StatusField("VmRSS")
	if err != nil {
		return soakFigures{}, err
	}
	anon, err := p.StatusField("RssAnon")
	if err != nil {
		return soakFigures{}, err
	}
	threads, err := p.StatusField("Threads")
	if err != nil {
		return soakFigures{}, err
	}
	fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", p.Pid()))
	if err != nil {
		return soakFigures{}, err
	}
	return soakFigures{rssKiB: rss, anonKiB: anon, fds: len(fds), threads: threads}, nil
}

// soakNode is the node under test; the loops below each own one kind of churn.
type soakNode struct {
	t          *testing.T
	dir        string
	bus        *PrivateBus
	roles      map[string]*Process // by name, in soakRoleOrder
	kubelet    *DevicePluginKubelet
	port       int
	uuids      []string
	sourceDir  string
	destToken  string
	generation string // the projected volume's current timestamped directory
}

var soakRoleOrder = []string{"xpud", "device-plugin", "exporter", "token-sync"}

func startSoakNode(t *testing.T) *soakNode {
	t.Helper()
	n := &soakNode{t: t, dir: ShortTempDir(t), roles: map[string]*Process{}}
	xpudBin, shimBin := BinaryFromEnv(t, "XPUD_BIN"), BinaryFromEnv(t, "XPU_K8S_SHIM_BIN")
	config := filepath.Join(n.dir, "xpud.conf")
	if err := os.WriteFile(config, []byte(fmt.Sprintf("[sim]\ndevices = %d\n", soakCards)), 0o644); err != nil {
		t.Fatal(err)
	}
	n.bus = StartPrivateBus(t, n.dir)
	n.roles["xpud"] = StartXpud(t, n.dir, xpudBin, n.bus, "--config", config).Process
	for i := 0; i < soakCards; i++ {
		n.uuids = append(n.uuids, exporterCardUUID(t, n.bus, i))
	}

	pluginDir := filepath.Join(n.dir, "device-plugins")
	if err := os.Mkdir(pluginDir, 0o755); err != nil {
		t.Fatal(err)
	}
	k, err := NewDevicePluginKubelet(pluginDir)
	if err != nil {
		t.Fatal(err)
	}
	n.kubelet = k
	t.Cleanup(k.Stop)
	n.roles["device-plugin"] = StartShim(t, n.dir, shimBin, n.bus, "device-plugin", "--plugin-dir", pluginDir)

	podsFile := filepath.Join(n.dir, "pods.json")
	podSocket := filepath.Join(n.dir, "pod-resources.sock")
	writePods(t, podsFile, []podEntry{{Namespace: "default", Name: "demo", Containers: []containerEntry{
		xpuContainer("main", defaultResource, n.uuids[0])}}})
	servePodResources(t, podSocket, podsFile, 0)
	n.roles["exporter"], n.port = startExporter(t, n.dir, shimBin, n.bus, podSocket)

	n.sourceDir = filepath.Join(n.dir, "serviceaccount")
	if err := os.Mkdir(n.sourceDir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := n.rotateToken(0); err != nil {
		t.Fatal(err)
	}
	dest := filepath.Join(n.dir, "auth")
	n.destToken = filepath.Join(dest, "token")
	n.roles["token-sync"] = StartProcess(t, n.dir, "xpu-k8s-shim-token-sync",
		[]string{shimBin, "token-sync", "--source-dir", n.sourceDir, "--dest-dir", dest},
		"KUBERNETES_SERVICE_HOST=10.0.0.1", "KUBERNETES_SERVICE_PORT=443")

	if err := WaitFor(30*time.Second, func() (bool, string) {
		health, why := n.kubeletHealth()
		if health == nil {
			return false, why
		}
		for _, id := range n.uuids {
			if health[id] != pluginapi.Healthy {
				return false, fmt.Sprintf("kubelet sees %s %q", id, health[id])
			}
		}
		token, err := os.ReadFile(n.destToken)
		return err == nil && string(token) == soakToken(0), fmt.Sprintf("runtime token: %q, %v", token, err)
	}); err != nil {
		t.Fatal(err)
	}
	return n
}

func soakToken(generation int) string { return fmt.Sprintf("token-%d", generation) }

// rotateToken does what the kubelet does to a projected volume: a new timestamped directory,
// ..data swapped to it atomically, the old directory deleted.
func (n *soakNode) rotateToken(generation int) error {
	stamp := fmt.Sprintf("..soak_%d_%d", generation, time.Now().UnixNano())
	files := map[string]string{"token": soakToken(generation), "namespace": "xpu-system",
		"ca.crt": "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"}
	if err := os.Mkdir(filepath.Join(n.sourceDir, stamp), 0o755); err != nil {
		return err
	}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(n.sourceDir, stamp, name), []byte(content), 0o644); err != nil {
			return err
		}
	}
	if err := os.Symlink(stamp, filepath.Join(n.sourceDir, "..data_tmp")); err != nil {
		return err
	}
	if err := os.Rename(filepath.Join(n.sourceDir, "..data_tmp"), filepath.Join(n.sourceDir, "..data")); err != nil {
		return err
	}
	for name := range files {
		link := filepath.Join(n.sourceDir, name)
		if _, err := os.Lstat(link); err != nil {
			if err := os.Symlink(filepath.Join("..data", name), link); err != nil {
				return err
			}
		}
	}
	if n.generation != "" {
		if err := os.RemoveAll(filepath.Join(n.sourceDir, n.generation)); err != nil {
			return err
		}
	}
	n.generation = stamp
	return nil
}

// kubeletHealth: the device health in the current plugin connection's last ListAndWatch message
// (nil, with why, while the plugin is not registered).
func (n *soakNode) kubeletHealth() (map[string]string, string) {
	p := n.kubelet.Plugin(defaultResource)
	if p == nil {
		return nil, "no plugin registered with the kubelet"
	}
	last, ok := p.Latest()
	if !ok {
		return nil, "no ListAndWatch message yet"
	}
	return healthOf(last.Devices), ""
}

// soakLog gathers what the loops saw; every field behind mu.
type soakLog struct {
	mu             sync.Mutex
	errors         []string
	scrapes        []time.Duration
	healthLatency  []time.Duration
	reregistration []time.Duration
	tokenLag       []time.Duration
	flapsPerCard   map[int]int
}

func (l *soakLog) fail(format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.errors) < 20 {
		l.errors = append(l.errors, time.Now().Format("15:04:05.000")+" "+fmt.Sprintf(format, args...))
	}
}

func (l *soakLog) add(list *[]time.Duration, d time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	*list = append(*list, d)
}

// every runs f at each tick of period until stop closes.
func every(period time.Duration, stop <-chan struct{}, wg *sync.WaitGroup, f func(tick int)) {
	wg.Add(1)
	go func() {
		defer wg.Done()
		ticker := time.NewTicker(period)
		defer ticker.Stop()
		for tick := 1; ; tick++ {
			select {
			case <-stop:
				return
			case <-ticker.C:
				f(tick)
			}
		}
	}()
}

var transitionLine = regexp.MustCompile(`^xpu_health_transitions_total\{[^}]*xpu="(\d+)"[^}]*to="Unhealthy"[^}]*\} (\d+)`)

// unhealthyTransitions: card index to its xpu_health_transitions_total{to="Unhealthy"}.
func unhealthyTransitions(body string) map[int]int {
	out := map[int]int{}
	for _, line := range strings.Split(body, "\n") {
		if m := transitionLine.FindStringSubmatch(line); m != nil {
			i, _ := strconv.Atoi(m[1])
			v, _ := strconv.Atoi(m[2])
			out[i] = v
		}
	}
	return out
}

func TestSoak(t *testing.T) {
	seconds, _ := strconv.Atoi(os.Getenv("XPU_SOAK_SECONDS"))
	if seconds <= 0 {
		t.Skip("XPU_SOAK_SECONDS is not set (ctest -L soak sets it)")
	}
	duration := time.Duration(seconds) * time.Second
	n := startSoakNode(t)
	first, err := scrape(n.port)
	if err != nil {
		t.Fatal(err)
	}
	transitionsBefore := unhealthyTransitions(first.body)
	if len(transitionsBefore) != soakCards {
		t.Fatalf("/metrics has xpu_health_transitions_total{to=\"Unhealthy\"} for %d cards, want %d", len(transitionsBefore), soakCards)
	}

	log := &soakLog{flapsPerCard: map[int]int{}}
	stop := make(chan struct{})
	var wg sync.WaitGroup

	every(soakScrapeEvery, stop, &wg, func(int) {
		result, err := scrape(n.port)
		if err != nil {
			log.fail("scrape: %v", err)
			return
		}
		if got := len(cardHealth(result.body)); got != soakCards {
			log.fail("scrape has xpu_healthy for %d cards, want %d", got, soakCards)
		}
		log.add(&log.scrapes, result.took)
	})

	// One flap at a time, each waited through: Unhealthy reaches the kubelet, then Healthy does.
	waitKubelet := func(card int, want string) {
		started := time.Now()
		if err := WaitFor(soakHealthDeadline, func() (bool, string) {
			health, why := n.kubeletHealth()
			if health == nil {
				return false, why
			}
			return health[n.uuids[card]] == want, fmt.Sprintf("kubelet sees xpu%d %q", card, health[n.uuids[card]])
		}); err != nil {
			log.fail("xpu%d %s never reached the kubelet: %v", card, want, err)
			return
		}
		log.add(&log.healthLatency, time.Since(started))
	}
	every(soakFlapEvery, stop, &wg, func(tick int) {
		card := tick % soakCards
		if err := n.bus.SetHealth(card, "Unhealthy", "soak"); err != nil {
			log.fail("SetHealth xpu%d Unhealthy: %v", card, err)
			return
		}
		log.mu.Lock()
		log.flapsPerCard[card]++
		log.mu.Unlock()
		waitKubelet(card, pluginapi.Unhealthy)
		if err := n.bus.SetHealth(card, "Healthy", ""); err != nil {
			log.fail("SetHealth xpu%d Healthy: %v", card, err)
			return
		}
		waitKubelet(card, pluginapi.Healthy)
	})

	every(soakKubeletEvery, stop, &wg, func(int) {
		epoch := n.kubelet.Epoch() + 1
		started := time.Now()
		if err := n.kubelet.Restart(); err != nil {
			log.fail("kubelet restart: %v", err)
			return
		}
		if err := WaitFor(30*time.Second, func() (bool, string) {
			for _, r := range n.kubelet.Registrations() {
				if r.Epoch == epoch {
					return true, ""
				}
			}
			return false, fmt.Sprintf("no registration in kubelet epoch %d", epoch)
		}); err != nil {
			log.fail("after a kubelet restart: %v", err)
			return
		}
		log.add(&log.reregistration, time.Since(started))
	})

	// The runtime's view: the token file read as often as a busy runtime would, never missing,
	// never partial, and the new token there soon after each rotation.
	var rotation struct {
		sync.Mutex
		generation int
		at         time.Time // when it was written; zero once the runtime has read it
	}
	var tokenReads atomic.Int64
	rotations := 0
	every(soakRotateEvery, stop, &wg, func(tick int) {
		rotation.Lock()
		defer rotation.Unlock()
		if err := n.rotateToken(tick); err != nil {
			log.fail("token rotation %d: %v", tick, err)
			return
		}
		rotation.generation, rotation.at = tick, time.Now()
		rotations = tick
	})
	every(soakTokenReadEvery, stop, &wg, func(int) {
		rotation.Lock()
		written := rotation.generation
		rotation.Unlock()
		token, err := os.ReadFile(n.destToken)
		if err != nil {
			log.fail("runtime read of %s: %v", n.destToken, err)
			return
		}
		tokenReads.Add(1)
		var got int
		if _, err := fmt.Sscanf(string(token), "token-%d", &got); err != nil || string(token) != soakToken(got) {
			log.fail("runtime read a partial or foreign token: %q", token)
			return
		}
		if got < written-1 {
			log.fail("runtime read token-%d after token-%d had been written", got, written)
		}
		rotation.Lock()
		defer rotation.Unlock()
		if got == rotation.generation && !rotation.at.IsZero() {
			log.add(&log.tokenLag, time.Since(rotation.at))
			rotation.at = time.Time{}
		}
	})

	// The curve: every role's RSS, descriptors and threads, 20 samples over the run at least
	// every minute.
	sampleEvery := duration / 20
	if sampleEvery > time.Minute {
		sampleEvery = time.Minute
	}
	type point struct {
		at      time.Duration
		figures map[string]soakFigures
	}
	var curve []point
	started := time.Now()
	sample := func() {
		p := point{at: time.Since(started).Round(time.Second), figures: map[string]soakFigures{}}
		for _, name := range soakRoleOrder {
			figures, err := sampleProcess(n.roles[name])
			if err != nil {
				log.fail("%s: %v (exited? %s)", name, err, n.roles[name].Output())
				continue
			}
			p.figures[name] = figures
		}
		curve = append(curve, p)
	}
	sample()
	ticker := time.NewTicker(sampleEvery)
	for deadline := time.After(duration); ; {
		select {
		case <-ticker.C:
			sample()
			continue
		case <-deadline:
		}
		break
	}
	ticker.Stop()
	close(stop)
	wg.Wait()
	sample()

	// The counter xpud keeps must have counted every Unhealthy the flaps caused.
	last, err := scrape(n.port)
	if err != nil {
		t.Fatal(err)
	}
	transitionsAfter := unhealthyTransitions(last.body)
	for card, flaps := range log.flapsPerCard {
		if got := transitionsAfter[card] - transitionsBefore[card]; got != flaps {
			t.Errorf("xpu%d: %d flaps to Unhealthy, xpu_health_transitions_total{to=\"Unhealthy\"} rose by %d", card, flaps, got)
		}
	}

	printSoakCurve(t, duration, func(yield func(time.Duration, map[string]soakFigures)) {
		for _, p := range curve {
			yield(p.at, p.figures)
		}
	})
	flaps := 0
	for _, f := range log.flapsPerCard {
		flaps += f
	}
	fmt.Printf("SOAK %v: %d scrapes (p50 %v, p99 %v, max %v); %d flaps, health to kubelet p50 %v max %v; "+
		"%d kubelet restarts, re-registered p50 %v max %v; %d token rotations, %d runtime reads, new token after p50 %v max %v\n",
		duration, len(log.scrapes), Percentile(sortedDurations(log.scrapes), 50), Percentile(sortedDurations(log.scrapes), 99), Percentile(sortedDurations(log.scrapes), 100),
		flaps, Percentile(sortedDurations(log.healthLatency), 50), Percentile(sortedDurations(log.healthLatency), 100),
		len(log.reregistration), Percentile(sortedDurations(log.reregistration), 50), Percentile(sortedDurations(log.reregistration), 100),
		rotations, tokenReads.Load(), Percentile(sortedDurations(log.tokenLag), 50), Percentile(sortedDurations(log.tokenLag), 100))
	for _, e := range log.errors {
		t.Error(e)
	}
	if flaps == 0 || len(log.scrapes) == 0 || tokenReads.Load() == 0 {
		t.Errorf("the churn did not run: %d flaps, %d scrapes, %d token reads", flaps, len(log.scrapes), tokenReads.Load())
	}

	// No growth: each role's figures over the last quarter of the run against the end of the
	// warm-up (a quarter of the run), when caches, pools and the allocator's arenas have filled.
	// The last quarter's lowest figure is what is judged: a leak raises every sample after it,
	// while one sample can catch a transient peak (the last one is taken as the minute's kubelet
	// restart makes every role reconnect at once, and CI once saw the exporter's anonymous RSS 1.6
	// MiB above the sample before it there).
	if len(curve) < 8 {
		t.Fatalf("only %d samples", len(curve))
	}
	warm := curve[len(curve)/4].figures
	var lastQuarter []map[string]soakFigures
	for _, p := range curve[len(curve)*3/4:] {
		lastQuarter = append(lastQuarter, p.figures)
	}
	end := lowestFigures(lastQuarter)
	for _, name := range soakRoleOrder {
		w, e := warm[name], end[name]
		if e.anonKiB > w.anonKiB+soakRssSlackKiB {
			t.Errorf("%s anonymous RSS grew from %d KiB after the warm-up to %d KiB (all of RSS: %d to %d KiB)",
				name, w.anonKiB, e.anonKiB, w.rssKiB, e.rssKiB)
		}
		if e.fds > w.fds+soakCountSlack {
			t.Errorf("%s file descriptors grew from %d to %d", name, w.fds, e.fds)
		}
		if e.threads > w.threads+soakCountSlack {
			t.Errorf("%s threads grew from %d to %d", name, w.threads, e.threads)
		}
	}
}

// lowestFigures gives each role's lowest anonymous RSS, descriptor and thread counts over the
// samples, each figure on its own.
func lowestFigures(samples []map[string]soakFigures) map[string]soakFigures {
	lowest := map[string]soakFigures{}
	for _, sample := range samples {
		for name, f := range sample {
			l, seen := lowest[name]
			if !seen {
				lowest[name] = f
				continue
			}
			l.rssKiB = min(l.rssKiB, f.rssKiB)
			l.anonKiB = min(l.anonKiB, f.anonKiB)
			l.fds = min(l.fds, f.fds)
			l.threads = min(l.threads, f.threads)
			lowest[name] = l
		}
	}
	return lowest
}

func sortedDurations(d []time.Duration) []time.Duration {
	out := append([]time.Duration(nil), d...)
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

// printSoakCurve prints one line per sample: RSS in MiB, descriptors and threads of each role.
func printSoakCurve(t *testing.T, duration time.Duration, points func(func(time.Duration, map[string]soakFigures))) {
	t.Helper()
	var b strings.Builder
	fmt.Fprintf(&b, "SOAK curve over %v (RSS MiB / fds / threads):\n%8s", duration, "t")
	for _, name := range soakRoleOrder {
		fmt.Fprintf(&b, " %20s", name)
	}
	b.WriteString("\n")
	points(func(at time.Duration, figures map[string]soakFigures) {
		fmt.Fprintf(&b, "%8v", at)
		for _, name := range soakRoleOrder {
			f := figures[name]
			fmt.Fprintf(&b, " %20s", fmt.Sprintf("%.1f / %d / %d", float64(f.rssKiB)/1024, f.fds, f.threads))
		}
		b.WriteString("\n")
	})
	fmt.Print(b.String())
}
