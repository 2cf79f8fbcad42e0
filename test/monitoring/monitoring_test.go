package monitoring

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/rulefmt"
	"github.com/prometheus/prometheus/promql/parser"
	"sigs.k8s.io/yaml"
)

const (
	dashboardFile = "../../manifests/monitoring/syncd-dashboard.json"
	rulesFile     = "../../manifests/monitoring/prometheusrule.yaml"
	metricsDoc    = "../../docs/operations.md"
)

// targetLabels are the labels Prometheus adds to every series it scrapes
// through a ServiceMonitor (the target's), beside syncd's own.
var targetLabels = []string{"job", "instance", "namespace", "pod", "service", "container", "endpoint"}

// standardSeries are the series the dashboard reads that syncd does not
// define: Prometheus's own up, and the Go runtime's and process's
// collectors syncd run registers (client_golang's names).
var standardSeries = map[string][]string{
	"up":                            nil,
	"process_resident_memory_bytes": nil,
	"go_memstats_heap_inuse_bytes":  nil,
}

// TestDashboardQueries: every query of the dashboard (panels and
// variables) parses and reads only metrics and labels syncd exports.
func TestDashboardQueries(t *testing.T) {
	catalogue := readCatalogue(t)
	queries := dashboardQueries(t)
	if len(queries) < 20 {
		t.Fatalf("found %d queries in %s; the dashboard has more: is the walk broken?", len(queries), dashboardFile)
	}
	for where, q := range queries {
		for _, err := range checkQuery(catalogue, q) {
			t.Errorf("%s: %s: %v", where, q, err)
		}
	}
}

// TestAlertRules: the PrometheusRule's groups pass Prometheus's own rule
// file checks (promtool's), and each expression reads only metrics and
// labels syncd exports.
func TestAlertRules(t *testing.T) {
	catalogue := readCatalogue(t)
	data, err := os.ReadFile(rulesFile)
	if err != nil {
		t.Fatal(err)
	}
	var rule struct {
		Spec struct {
			Groups []map[string]any `json:"groups"`
		} `json:"spec"`
	}
	if err := yaml.Unmarshal(data, &rule); err != nil {
		t.Fatal(err)
	}
	groups, err := yaml.Marshal(map[string]any{"groups": rule.Spec.Groups})
	if err != nil {
		t.Fatal(err)
	}
	parsed, errs := rulefmt.Parse(groups, false, model.UTF8Validation, parser.NewParser(parser.Options{}), nil)
	for _, err := range errs {
		t.Errorf("%s: %v", rulesFile, err)
	}
	if parsed == nil {
		return
	}
	n := 0
	for _, g := range parsed.Groups {
		for _, r := range g.Rules {
			n++
			for _, err := range checkQuery(catalogue, r.Expr) {
				t.Errorf("%s: alert %s: %s: %v", rulesFile, r.Alert, r.Expr, err)
			}
		}
	}
	if n < 5 {
		t.Errorf("found %d rules in %s; want the app, source and process alerts", n, rulesFile)
	}
}

// TestCheckQueryRefuses: the check fails a query that reads a metric or
// a label syncd does not export, so the two tests above can fail.
func TestCheckQueryRefuses(t *testing.T) {
	catalogue := map[string][]string{"syncd_objects": {"app", "cluster", "action"}}
	tests := map[string]string{
		`syncd_objects{app="a"}`:                   "",
		`syncd_object{app="a"}`:                    `metric syncd_object: not a series syncd exports`,
		`syncd_objects{application="a"}`:           `label application: not a label of syncd_objects`,
		`sum by (verb) (syncd_objects)`:            `grouping label verb: not a label of syncd_objects`,
		`sum by (pod) (syncd_objects)`:             "",
		`histogram_quantile(0.9, syncd_objects_`:   "parse",
		`rate(syncd_objects_bucket{le="1"}[5m])`:   `metric syncd_objects_bucket: not a series syncd exports`,
		`max by (app) (syncd_objects) == bool 1`:   "",
		`label_values(syncd_objects, nonexisting)`: "parse",
	}
	for q, want := range tests {
		errs := checkQuery(catalogue, q)
		got := ""
		if len(errs) > 0 {
			got = errs[0].Error()
		}
		if want == "parse" {
			if !strings.Contains(got, "parse") {
				t.Errorf("%s: got %q, want a parse error", q, got)
			}
			continue
		}
		if got != want {
			t.Errorf("%s: got %q, want %q", q, got, want)
		}
	}
}

// checkQuery parses q and checks each selector's metric and labels, and
// each aggregation's grouping labels, against the catalogue.
func checkQuery(catalogue map[string][]string, q string) []error {
	expr, err := parser.NewParser(parser.Options{}).ParseExpr(q)
	if err != nil {
		return []error{fmt.Errorf("parse: %w", err)}
	}
	var errs []error
	parser.Inspect(expr, func(node parser.Node, _ []parser.Node) error {
		switch n := node.(type) {
		case *parser.VectorSelector:
			errs = append(errs, checkSelector(catalogue, n)...)
		case *parser.AggregateExpr:
			errs = append(errs, checkGrouping(catalogue, n)...)
		}
		return nil
	})
	return errs
}

// checkSelector checks a selector's metric name and label matchers.
func checkSelector(catalogue map[string][]string, v *parser.VectorSelector) []error {
	known, ok := labelsOf(catalogue, v.Name)
	if !ok {
		return []error{fmt.Errorf("metric %s: not a series syncd exports", v.Name)}
	}
	var errs []error
	for _, m := range v.LabelMatchers {
		if m.Name != labels.MetricName && !contains(known, m.Name) {
			errs = append(errs, fmt.Errorf("label %s: not a label of %s", m.Name, v.Name))
		}
	}
	return errs
}

// checkGrouping checks that an aggregation groups by labels its input
// series have.
func checkGrouping(catalogue map[string][]string, a *parser.AggregateExpr) []error {
	var names []string
	var known []string
	parser.Inspect(a.Expr, func(node parser.Node, _ []parser.Node) error {
		if v, ok := node.(*parser.VectorSelector); ok {
			l, _ := labelsOf(catalogue, v.Name)
			names = append(names, v.Name)
			known = append(known, l...)
		}
		return nil
	})
	var errs []error
	for _, g := range a.Grouping {
		if !contains(known, g) {
			errs = append(errs, fmt.Errorf("grouping label %s: not a label of %s", g, strings.Join(names, ", ")))
		}
	}
	return errs
}

// labelsOf returns the labels a series of name may have: its own, a
// histogram's le on _bucket, and the target's. A histogram's _bucket,
// _count and _sum series are those of the histogram.
func labelsOf(catalogue map[string][]string, name string) ([]string, bool) {
	if l, ok := catalogue[name]; ok {
		return append(append([]string{}, l...), targetLabels...), true
	}
	if l, ok := standardSeries[name]; ok {
		return append(append([]string{}, l...), targetLabels...), true
	}
	for _, suffix := range []string{"_bucket", "_count", "_sum"} {
		base := strings.TrimSuffix(name, suffix)
		if l, ok := catalogue[base]; ok && base != name && strings.HasSuffix(base, "_seconds") {
			extra := targetLabels
			if suffix == "_bucket" {
				extra = append([]string{"le"}, targetLabels...)
			}
			return append(append([]string{}, l...), extra...), true
		}
	}
	return nil, false
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// metricRow is a row of docs/operations.md's metrics table.
var metricRow = regexp.MustCompile("^\\| `(syncd_[a-z_]+)` \\| ([^|]*) \\|")

// readCatalogue reads metric → labels from docs/operations.md.
func readCatalogue(t *testing.T) map[string][]string {
	t.Helper()
	fh, err := os.Open(metricsDoc)
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	out := map[string][]string{}
	sc := bufio.NewScanner(fh)
	for sc.Scan() {
		if m := metricRow.FindStringSubmatch(sc.Text()); m != nil {
			out[m[1]] = strings.Split(strings.TrimSpace(m[2]), ", ")
		}
	}
	if len(out) < 10 {
		t.Fatalf("%s: found %d metrics in its table; has the table's form changed?", metricsDoc, len(out))
	}
	return out
}

// grafanaVariables are replaced by values of the same kind before a
// query is parsed: a range for the interval, a regex for a variable
// used in =~.
var grafanaVariables = strings.NewReplacer(
	"$__rate_interval", "5m",
	"$__interval", "1m",
	"$__range", "1h",
	"${app}", ".*", "$app", ".*",
	"${cluster}", ".*", "$cluster", ".*",
)

// labelValues is a Grafana variable query: label_values(selector, label).
var labelValues = regexp.MustCompile(`^label_values\((.*),\s*([a-zA-Z_][a-zA-Z0-9_]*)\)$`)

// dashboardQueries returns where → query for each panel target and query
// variable of the dashboard, Grafana's variables replaced. A variable
// label_values(selector, label) becomes the selector, grouped by label.
func dashboardQueries(t *testing.T) map[string]string {
	t.Helper()
	data, err := os.ReadFile(dashboardFile)
	if err != nil {
		t.Fatal(err)
	}
	var dash struct {
		Panels     []panel `json:"panels"`
		Templating struct {
			List []struct {
				Name  string `json:"name"`
				Type  string `json:"type"`
				Query any    `json:"query"`
			} `json:"list"`
		} `json:"templating"`
	}
	if err := json.Unmarshal(data, &dash); err != nil {
		t.Fatalf("%s: %v", dashboardFile, err)
	}
	out := map[string]string{}
	collectPanels(dash.Panels, out)
	for _, v := range dash.Templating.List {
		q, ok := v.Query.(string)
		if v.Type != "query" || !ok {
			continue
		}
		if m := labelValues.FindStringSubmatch(q); m != nil {
			q = fmt.Sprintf("count by (%s) (%s)", m[2], m[1])
		}
		out["variable "+v.Name] = grafanaVariables.Replace(q)
	}
	return out
}

// panel is the part of a Grafana panel the check reads; a row holds
// panels of its own when collapsed.
type panel struct {
	Title   string  `json:"title"`
	Panels  []panel `json:"panels"`
	Targets []struct {
		RefID string `json:"refId"`
		Expr  string `json:"expr"`
	} `json:"targets"`
}

func collectPanels(panels []panel, out map[string]string) {
	for _, p := range panels {
		for _, tg := range p.Targets {
			out[fmt.Sprintf("panel %q target %s", p.Title, tg.RefID)] = grafanaVariables.Replace(tg.Expr)
		}
		collectPanels(p.Panels, out)
	}
}
