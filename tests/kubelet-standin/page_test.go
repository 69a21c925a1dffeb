package main

// The exporter's `/` page in a real browser: headless Chromium (Debian's package) loads the page
// from the real exporter, with xpud's sim backend holding one card unhealthy (its reason laced
// with markup) and the pod-resources stand-in handing another card to a pod. The test reads the
// DOM Chromium built and takes screenshots at a desktop and a phone width.
//
//	CHROMIUM              the browser (default: chromium on PATH)
//	XPU_SCREENSHOT_DIR    where exporter-page.png and exporter-page-phone.png go (default: the
//	                      test's temporary folder); ctest sets the build directory

import (
	"bytes"
	"context"
	"fmt"
	"image/png"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/html"
)

// A reason with markup in it: the page must show it as text, never as elements.
const hostileReason = `ECC <b>uncorrectable</b> & "retired" <img src=x> pages`

func chromiumPath(t *testing.T) string {
	t.Helper()
	if path := os.Getenv("CHROMIUM"); path != "" {
		return path
	}
	path, err := exec.LookPath("chromium")
	if err != nil {
		t.Fatalf("chromium is required (Debian package chromium): %v", err)
	}
	return path
}

// runChromium runs headless Chromium with a profile of its own and returns its stdout.
func runChromium(t *testing.T, chromium, profile string, args ...string) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	argv := append([]string{"--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
		"--disable-extensions", "--disable-background-networking", "--hide-scrollbars",
		"--user-data-dir=" + profile}, args...)
	cmd := exec.CommandContext(ctx, chromium, argv...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout = &stdout
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("chromium %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return stdout.Bytes()
}

func attr(n *html.Node, name string) (string, bool) {
	for _, a := range n.Attr {
		if a.Key == name {
			return a.Val, true
		}
	}
	return "", false
}

func findAll(n *html.Node, match func(*html.Node) bool) []*html.Node {
	var found []*html.Node
	var walk func(*html.Node)
	walk = func(n *html.Node) {
		if match(n) {
			found = append(found, n)
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(n)
	return found
}

func element(tag string) func(*html.Node) bool {
	return func(n *html.Node) bool { return n.Type == html.ElementNode && n.Data == tag }
}

// text is what a reader sees of n: its text nodes joined, spaces collapsed.
func text(n *html.Node) string {
	var b strings.Builder
	for _, t := range findAll(n, func(n *html.Node) bool { return n.Type == html.TextNode }) {
		b.WriteString(t.Data)
		b.WriteString(" ")
	}
	return strings.Join(strings.Fields(b.String()), " ")
}

// cells of a row by their data-label.
func cells(row *html.Node) map[string]*html.Node {
	out := map[string]*html.Node{}
	for _, td := range findAll(row, element("td")) {
		if label, ok := attr(td, "data-label"); ok {
			out[label] = td
		}
	}
	return out
}

func getPage(url string) (string, error) {
	client := http.Client{Timeout: 5 * time.Second}
	resp, err := client.Get(url)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return "", err
	}
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return string(body), nil
}

func checkScreenshot(t *testing.T, path string, width int) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatalf("no screenshot: %v", err)
	}
	defer f.Close()
	config, err := png.DecodeConfig(f)
	if err != nil {
		t.Fatalf("%s is not a PNG: %v", path, err)
	}
	if config.Width != width {
		t.Fatalf("%s is %d pixels wide, want %d", path, config.Width, width)
	}
	t.Logf("screenshot %s (%dx%d)", path, config.Width, config.Height)
}

func TestExporterPageInBrowser(t *testing.T) {
	xpudBin := BinaryFromEnv(t, "XPUD_BIN")
	shimBin := BinaryFromEnv(t, "XPU_K8S_SHIM_BIN")
	chromium := chromiumPath(t)
	shots := os.Getenv("XPU_SCREENSHOT_DIR")
	dir := ShortTempDir(t)
	if shots == "" {
		shots = dir
	}
	bus := StartPrivateBus(t, dir)
	StartXpud(t, dir, xpudBin, bus)
	const heldCard, sickCard = 2, 5
	heldUUID := exporterCardUUID(t, bus, heldCard)
	podsFile := filepath.Join(dir, "pods.json")
	socket := filepath.Join(dir, "kubelet.sock")
	writePods(t, podsFile, []podEntry{{Namespace: "ml", Name: "trainer-0", Containers: []containerEntry{
		xpuContainer("main", "kunlunxin.com/xpu", heldUUID)}}})
	servePodResources(t, socket, podsFile, 0)
	if err := bus.SetHealth(sickCard, "Unhealthy", hostileReason); err != nil {
		t.Fatal(err)
	}
	_, port := startExporter(t, dir, shimBin, bus, socket)
	sick := regexp.MustCompile(fmt.Sprintf(`(?m)^xpu_healthy\{xpu="%d",[^}]*\} 0$`, sickCard))
	waitScrape(t, port, 15*time.Second, "card held by ml/trainer-0 and card 5 unhealthy", func(body string) bool {
		return strings.Contains(body, `pod="trainer-0"`) && sick.MatchString(body)
	})
	url := fmt.Sprintf("http://127.0.0.1:%d/", port)

	dom := runChromium(t, chromium, filepath.Join(dir, "profile-dom"), "--dump-dom", url)
	doc, err := html.Parse(bytes.NewReader(dom))
	if err != nil {
		t.Fatalf("the DOM does not parse: %v\n%s", err, dom)
	}
	fail := func(format string, args ...any) {
		t.Helper()
		t.Fatalf(format+"\nDOM:\n%s", append(args, dom)...)
	}

	rows := findAll(doc, func(n *html.Node) bool {
		_, ok := attr(n, "data-xpu")
		return n.Type == html.ElementNode && n.Data == "tr" && ok
	})
	if len(rows) != simCards {
		fail("%d card rows, want %d", len(rows), simCards)
	}
	for i, row := range rows {
		index, _ := attr(row, "data-xpu")
		c := cells(row)
		for _, label := range []string{"XPU", "Model", "Health", "Utilisation", "Memory", "Temperature", "Pod"} {
			if c[label] == nil {
				fail("row %s has no %s cell", index, label)
			}
		}
		if got := text(c["XPU"]); got != fmt.Sprint(i) {
			fail("row %d shows XPU %q", i, got)
		}
		if text(c["Model"]) == "" || !strings.Contains(text(c["Temperature"]), "°C") ||
			!strings.Contains(text(c["Memory"]), "GiB") || len(findAll(c["Utilisation"], element("meter"))) != 1 {
			fail("row %d lacks a model, temperature, memory or utilisation: %q", i, text(row))
		}
		health := text(c["Health"])
		class, _ := attr(row, "class")
		switch i {
		case sickCard:
			if !strings.HasPrefix(health, "Unhealthy") || class != "unhealthy" {
				fail("card %d shows %q (class %q), want Unhealthy", i, health, class)
			}
			// The reason arrives as the very text xpud was given, markup and all, as text.
			if !strings.Contains(health, hostileReason) {
				fail("card %d's reason reads %q, want %q as text", i, health, hostileReason)
			}
			if n := len(findAll(c["Health"], element("b"))) + len(findAll(c["Health"], element("img"))); n != 0 {
				fail("the reason's markup became %d elements", n)
			}
		default:
			if health != "Healthy" || class == "unhealthy" {
				fail("card %d shows %q (class %q), want Healthy", i, health, class)
			}
		}
		pod := text(c["Pod"])
		if i == heldCard {
			if pod != "ml/trainer-0 container main" {
				fail("card %d's pod reads %q", i, pod)
			}
		} else if pod != "—" {
			fail("card %d is held by nobody but reads %q", i, pod)
		}
	}
	if got := len(findAll(doc, element("img"))); got != 0 {
		fail("the page has %d img elements", got)
	}
	links := map[string]bool{}
	for _, a := range findAll(doc, element("a")) {
		href, _ := attr(a, "href")
		links[href] = true
	}
	if !links["/metrics"] || !links["/healthz"] {
		fail("links %v, want /metrics and /healthz", links)
	}
	viewport := false
	for _, meta := range findAll(doc, element("meta")) {
		if name, _ := attr(meta, "name"); name == "viewport" {
			viewport = true
		}
	}
	if !viewport {
		fail("no viewport meta")
	}
	summaries := findAll(doc, func(n *html.Node) bool { id, _ := attr(n, "id"); return id == "summary" })
	if len(summaries) != 1 || !strings.HasPrefix(text(summaries[0]), fmt.Sprintf("%d cards, %d healthy.", simCards, simCards-1)) {
		fail("want one #summary starting %d cards, %d healthy", simCards, simCards-1)
	}

	// The screenshots are for the README: a reason as a driver would word it.
	const plainReason = "ECC: uncorrectable errors on HBM stack 1"
	if err := bus.SetHealth(sickCard, "Unhealthy", plainReason); err != nil {
		t.Fatal(err)
	}
	if err := WaitFor(10*time.Second, func() (bool, string) {
		page, err := getPage(url)
		return err == nil && strings.Contains(page, plainReason), "the page does not show the new reason yet"
	}); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(shots, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, shot := range []struct {
		name          string
		width, height int
	}{{"exporter-page.png", 1100, 620}, {"exporter-page-phone.png", 390, 1300}} {
		path := filepath.Join(shots, shot.name)
		_ = os.Remove(path)
		runChromium(t, chromium, filepath.Join(dir, "profile-"+shot.name),
			fmt.Sprintf("--window-size=%d,%d", shot.width, shot.height), "--screenshot="+path, url)
		checkScreenshot(t, path, shot.width)
	}
}
