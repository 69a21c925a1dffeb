package main

// The Grafana dashboard (charts/xpu-k8s-shim/files/xpu-dashboard.json) against what it will be
// pointed at: the real xpud (sim backend, one card Unhealthy), the real exporter, the
// pod-resources stand-in handing a card to pod default/demo, and a real Prometheus that scrapes
// the exporter every second and evaluates the chart's alert rules. Every panel's query must
// return data, with the template variables at "All" and at one concrete value each, and the
// JSON must have the structure of the schema version it declares.

import (
	"encoding/json"
	"fmt"
	"math"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The schema version the dashboard declares. Since version 16 a dashboard is a flat "panels"
// list placed by gridPos on a 24-column grid, rows being panels of type "row"; queries are
// "targets" with a refId and, for Prometheus, an expr.
const dashboardSchemaVersion = 39

type dashboardTarget struct {
	RefID   string `json:"refId"`
	Expr    string `json:"expr"`
	Instant bool   `json:"instant"`
}

type gridPos struct {
	H, W, X, Y *int
}

type dashboardPanel struct {
	ID         *int              `json:"id"`
	Type       string            `json:"type"`
	Title      string            `json:"title"`
	GridPos    *gridPos          `json:"gridPos"`
	Datasource map[string]string `json:"datasource"`
	Targets    []dashboardTarget `json:"targets"`
	Panels     []dashboardPanel  `json:"panels"` // a collapsed row's panels
}

type dashboardVariable struct {
	Name     string `json:"name"`
	Type     string `json:"type"`
	Query    any    `json:"query"`
	AllValue string `json:"allValue"`
}

type dashboard struct {
	UID           string           `json:"uid"`
	Title         string           `json:"title"`
	SchemaVersion int              `json:"schemaVersion"`
	Panels        []dashboardPanel `json:"panels"`
	Rows          json.RawMessage  `json:"rows"`
	Templating    struct {
		List []dashboardVariable `json:"list"`
	} `json:"templating"`
}

func chartDir() string {
	if dir := os.Getenv("XPU_CHART_DIR"); dir != "" {
		return dir
	}
	return filepath.Join("..", "..", "charts", "xpu-k8s-shim")
}

func loadDashboard(t *testing.T) dashboard {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(chartDir(), "files", "xpu-dashboard.json"))
	if err != nil {
		t.Fatal(err)
	}
	var d dashboard
	decoder := json.NewDecoder(strings.NewReader(string(data)))
	if err := decoder.Decode(&d); err != nil {
		t.Fatalf("xpu-dashboard.json: %v", err)
	}
	return d
}

// allPanels flattens rows (open rows list their panels after them, collapsed ones inside).
func allPanels(panels []dashboardPanel) []dashboardPanel {
	var out []dashboardPanel
	for _, p := range panels {
		out = append(out, p)
		out = append(out, allPanels(p.Panels)...)
	}
	return out
}

var variableRef = regexp.MustCompile(`\$(\w+)|\$\{(\w+)(?::\w+)?\}`)

func TestDashboardStructure(t *testing.T) {
	d := loadDashboard(t)
	if d.SchemaVersion != dashboardSchemaVersion {
		t.Fatalf("schemaVersion %d, this test checks the structure of %d", d.SchemaVersion, dashboardSchemaVersion)
	}
	if d.UID == "" || d.Title == "" {
		t.Errorf("uid %q, title %q: both are needed to provision the dashboard", d.UID, d.Title)
	}
	if len(d.Rows) > 0 && string(d.Rows) != "null" {
		t.Errorf(`"rows" is the layout of schema versions before 16`)
	}
	variables := map[string]dashboardVariable{}
	for _, v := range d.Templating.List {
		if v.Name == "" || v.Type == "" {
			t.Errorf("template variable without name or type: %+v", v)
		}
		variables[v.Name] = v
	}
	if ds, ok := variables["datasource"]; !ok || ds.Type != "datasource" || ds.Query != "prometheus" {
		t.Errorf("no Prometheus datasource variable: %+v", ds)
	}
	ids := map[int]string{}
	type box struct {
		title      string
		x, y, w, h int
	}
	var boxes []box
	panels := allPanels(d.Panels)
	if len(panels) == 0 {
		t.Fatal("no panels")
	}
	titles := map[string]bool{} // an operator finds a panel by its title; so does the query test
	for _, p := range panels {
		if p.ID == nil || p.Type == "" || p.Title == "" {
			t.Errorf("panel without id, type or title: %+v", p)
			continue
		}
		if titles[p.Title] {
			t.Errorf("two panels titled %q", p.Title)
		}
		titles[p.Title] = true
		if other, dup := ids[*p.ID]; dup {
			t.Errorf("panels %q and %q share id %d", other, p.Title, *p.ID)
		}
		ids[*p.ID] = p.Title
		g := p.GridPos
		if g == nil || g.H == nil || g.W == nil || g.X == nil || g.Y == nil {
			t.Errorf("%q: gridPos needs h, w, x and y: %+v", p.Title, g)
			continue
		}
		if *g.W < 1 || *g.X < 0 || *g.X+*g.W > 24 || *g.H < 1 || *g.Y < 0 {
			t.Errorf("%q: gridPos %d,%d %dx%d is off the 24-column grid", p.Title, *g.X, *g.Y, *g.W, *g.H)
		}
		for _, b := range boxes {
			if *g.X < b.x+b.w && b.x < *g.X+*g.W && *g.Y < b.y+b.h && b.y < *g.Y+*g.H {
				t.Errorf("panels %q and %q overlap", b.title, p.Title)
			}
		}
		boxes = append(boxes, box{p.Title, *g.X, *g.Y, *g.W, *g.H})
		if p.Type == "row" {
			if len(p.Targets) != 0 {
				t.Errorf("row %q has targets", p.Title)
			}
			continue
		}
		if p.Datasource["uid"] != "${datasource}" {
			t.Errorf("%q: datasource %v, want the ${datasource} variable", p.Title, p.Datasource)
		}
		if len(p.Targets) == 0 {
			t.Errorf("%q has no targets", p.Title)
		}
		refs := map[string]bool{}
		for _, target := range p.Targets {
			if target.Expr == "" || target.RefID == "" || refs[target.RefID] {
				t.Errorf("%q: target needs an expr and a refId of its own: %+v", p.Title, target)
			}
			refs[target.RefID] = true
			for _, m := range variableRef.FindAllStringSubmatch(target.Expr, -1) {
				name := m[1] + m[2]
				if _, ok := variables[name]; !ok {
					t.Errorf("%q: %s uses $%s, which the templating list does not define", p.Title, target.Expr, name)
				}
			}
		}
	}
}

// substitute replaces template variables in expr by values (a regex each, as Grafana does for
// multi-value variables in =~ matchers).
func substitute(expr string, values map[string]string) string {
	return variableRef.ReplaceAllStringFunc(expr, func(ref string) string {
		m := variableRef.FindStringSubmatch(ref)
		if value, ok := values[m[1]+m[2]]; ok {
			return value
		}
		return ref
	})
}

// promQuery runs expr as Grafana would (a range query over the last 30 s at 1 s steps, or an
// instant query) and returns the series with their newest value.
func promQuery(port int, expr string, instant bool) (map[string]float64, error) {
	var path string
	if instant {
		path = "/api/v1/query?query=" + url.QueryEscape(expr)
	} else {
		now := time.Now()
		path = fmt.Sprintf("/api/v1/query_range?query=%s&start=%d&end=%d&step=1", url.QueryEscape(expr),
			now.Add(-30*time.Second).Unix(), now.Unix())
	}
	var data struct {
		Result []struct {
			Metric map[string]string `json:"metric"`
			Value  []any             `json:"value"`
			Values [][]any           `json:"values"`
		} `json:"result"`
	}
	if err := prometheusAPI(port, path, &data); err != nil {
		return nil, err
	}
	out := map[string]float64{}
	for _, series := range data.Result {
		sample := series.Value
		if len(series.Values) > 0 {
			sample = series.Values[len(series.Values)-1]
		}
		value := math.NaN()
		if len(sample) == 2 {
			if s, ok := sample[1].(string); ok {
				value, _ = strconv.ParseFloat(s, 64)
			}
		}
		labels := make([]string, 0, len(series.Metric))
		for k, v := range series.Metric {
			labels = append(labels, k+"="+v)
		}
		sort.Strings(labels)
		out["{"+strings.Join(labels, ",")+"}"] = value
	}
	return out, nil
}

var labelValues = regexp.MustCompile(`^label_values\((?:(.*),\s*)?(\w+)\)$`)

// alertRulesFile is the chart's rules file, for Prometheus to evaluate.
func alertRulesFile(t *testing.T) string {
	t.Helper()
	rules, err := filepath.Abs(filepath.Join(chartDir(), "files", "xpu-alerts.rules.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	return rules
}

func TestDashboardQueries(t *testing.T) {
	xpudBin := BinaryFromEnv(t, "XPUD_BIN")
	shimBin := BinaryFromEnv(t, "XPU_K8S_SHIM_BIN")
	d := loadDashboard(t)
	dir := ShortTempDir(t)
	bus := StartPrivateBus(t, dir)
	StartXpud(t, dir, xpudBin, bus)
	const demoCard, badCard = 2, 3
	demoUUID := exporterCardUUID(t, bus, demoCard)
	podsFile := filepath.Join(dir, "pods.json")
	socket := filepath.Join(dir, "kubelet.sock")
	writePods(t, podsFile, []podEntry{{Namespace: "default", Name: "demo", Containers: []containerEntry{
		xpuContainer("main", "kunlunxin.com/xpu", demoUUID)}}})
	servePodResources(t, socket, podsFile, 0)
	_, exporterPort := startExporter(t, dir, shimBin, bus, socket)
	if err := bus.SetHealth(badCard, "Unhealthy", "dashboard test"); err != nil {
		t.Fatal(err)
	}
	waitScrape(t, exporterPort, 15*time.Second, "card 3 unhealthy, card 2 held by default/demo", func(body string) bool {
		return strings.Contains(body, `pod="demo"`) &&
			strings.Contains(body, fmt.Sprintf(`xpu_healthy{xpu="%d",`, badCard)) &&
			regexp.MustCompile(fmt.Sprintf(`xpu_healthy\{xpu="%d",[^}]*\} 0`, badCard)).MatchString(body)
	})
	promPort := startPrometheus(t, dir, exporterPort, alertRulesFile(t))
	instance := "127.0.0.1:" + strconv.Itoa(exporterPort)

	// Data is in: every card scraped a few times and the rules evaluated (XPUUnhealthy pending).
	if err := WaitFor(60*time.Second, func() (bool, string) {
		count, err := promQuery(promPort, `count_over_time(xpu_info[1m])`, true)
		if err != nil {
			return false, err.Error()
		}
		scraped := 0
		for _, n := range count {
			if n >= 3 {
				scraped++
			}
		}
		alerts, err := promQuery(promPort, fmt.Sprintf(`ALERTS{alertname="XPUUnhealthy",xpu="%d"}`, badCard), true)
		if err != nil {
			return false, err.Error()
		}
		return scraped == simCards && len(alerts) == 1, fmt.Sprintf("%d cards scraped 3 times, XPUUnhealthy %v", scraped, alerts)
	}); err != nil {
		t.Fatal(err)
	}

	variables := map[string]dashboardVariable{}
	for _, v := range d.Templating.List {
		variables[v.Name] = v
	}
	all := map[string]string{}
	for name, v := range variables {
		if v.Type == "query" {
			if v.AllValue != ".*" {
				t.Errorf("variable %s: allValue %q, the queries below assume .*", name, v.AllValue)
			}
			all[name] = ".*"
		}
	}
	// Grafana escapes a single-value regex variable the way a PromQL string needs it: every regex
	// metacharacter gets a backslash, itself written \\ inside the quoted matcher.
	one := map[string]string{"instance": strings.ReplaceAll(regexp.QuoteMeta(instance), `\`, `\\`),
		"xpu": strconv.Itoa(demoCard), "namespace": "default"}
	for name := range all {
		if _, ok := one[name]; !ok {
			t.Fatalf("variable %s has no concrete value in this test", name)
		}
	}

	t.Run("variables", func(t *testing.T) {
		want := map[string]string{"instance": instance, "xpu": strconv.Itoa(badCard), "namespace": "default"}
		for name, v := range variables {
			if v.Type != "query" {
				continue
			}
			query, _ := v.Query.(string)
			m := labelValues.FindStringSubmatch(query)
			if m == nil {
				t.Errorf("variable %s: query %q is not label_values(...)", name, query)
				continue
			}
			path := "/api/v1/label/" + m[2] + "/values"
			if m[1] != "" {
				path += "?match[]=" + url.QueryEscape(substitute(m[1], all))
			}
			var values []string
			if err := prometheusAPI(promPort, path, &values); err != nil {
				t.Errorf("variable %s: %v", name, err)
				continue
			}
			found := false
			for _, value := range values {
				found = found || value == want[name]
			}
			if !found {
				t.Errorf("variable %s: %q gives %v, want %q among them", name, query, values, want[name])
			}
			if name == "xpu" && len(values) != simCards {
				t.Errorf("variable xpu: %v, want the %d cards", values, simCards)
			}
		}
	})

	results := map[string]map[string]float64{} // panel title -> series of its first target, at "All"
	for _, pass := range []struct {
		name   string
		values map[string]string
	}{{"all", all}, {"one", one}} {
		t.Run("panels with "+pass.name, func(t *testing.T) {
			for _, p := range allPanels(d.Panels) {
				for _, target := range p.Targets {
					expr := substitute(target.Expr, pass.values)
					var got map[string]float64
					var queryErr error
					err := WaitFor(20*time.Second, func() (bool, string) {
						got, queryErr = promQuery(promPort, expr, target.Instant)
						if queryErr != nil {
							// A query Prometheus cannot parse will not parse later either.
							return strings.Contains(queryErr.Error(), "invalid parameter"), queryErr.Error()
						}
						return len(got) > 0, "no data"
					})
					if err == nil && queryErr != nil {
						err = queryErr
					}
					if err != nil {
						t.Errorf("panel %q, target %s: %s: %v", p.Title, target.RefID, expr, err)
						continue
					}
					if pass.name == "all" && target.RefID == "A" {
						results[p.Title] = got
					}
				}
			}
		})
	}

	t.Run("fleet figures", func(t *testing.T) {
		// A few panels whose numbers are known here: the queries must not only return data.
		single := func(title string) float64 {
			series := results[title]
			if len(series) != 1 {
				t.Errorf("panel %q: %v, want one value", title, series)
				return math.NaN()
			}
			for _, v := range series {
				return v
			}
			return math.NaN()
		}
		for title, want := range map[string]float64{"Nodes": 1, "XPUs": simCards, "Unhealthy XPUs": 1, "XPUs held by pods": 1} {
			if got := single(title); got != want {
				t.Errorf("panel %q shows %v, want %v", title, got, want)
			}
		}
		for labels, value := range results["Health timeline"] {
			unhealthy := strings.Contains(labels, fmt.Sprintf("xpu=%d,", badCard)) || strings.HasSuffix(labels, fmt.Sprintf("xpu=%d}", badCard))
			if (value == 0) != unhealthy {
				t.Errorf("Health timeline %s = %v", labels, value)
			}
		}
		if pods := results["Utilisation by pod"]; len(pods) != 1 {
			t.Errorf("Utilisation by pod: %v, want pod default/demo alone", pods)
		} else {
			for labels := range pods {
				if labels != "{namespace=default,pod=demo}" {
					t.Errorf("Utilisation by pod: %s, want default/demo", labels)
				}
			}
		}
	})
}
