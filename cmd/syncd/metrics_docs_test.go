package main

import (
	"bufio"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"

	"syncd.dev/syncd/internal/alert"
	"syncd.dev/syncd/internal/daemon"
	"syncd.dev/syncd/internal/inventory"
	"syncd.dev/syncd/internal/webhook"
)

// TestMetricsDocumented: the metrics table of docs/operations.md lists
// every series syncd run registers, with its labels, and nothing else.
// test/monitoring checks the dashboard's and alert rules' queries against
// that table, so a metric renamed here fails one of the two.
func TestMetricsDocumented(t *testing.T) {
	if diff := cmp.Diff(documentedMetrics(t), registeredMetrics(t)); diff != "" {
		t.Errorf("docs/operations.md metrics (-documented +registered):\n%s", diff)
	}
}

// registeredMetrics builds each part of syncd run that registers series,
// on a registry that records them, and returns name → labels of syncd's
// own (the Go runtime's and the process's are documented as a group).
func registeredMetrics(t *testing.T) map[string]string {
	t.Helper()
	rec := &recordingRegisterer{Registerer: prometheus.NewRegistry()}
	if err := processMetrics(rec); err != nil {
		t.Fatal(err)
	}
	daemon.NewMetrics(rec)
	webhook.NewHandler(nil, nil, rec)
	n, err := alert.New(nil, alert.Options{Registerer: rec})
	if err != nil {
		t.Fatal(err)
	}
	n.Close(t.Context())
	cfg := &rest.Config{Host: "https://127.0.0.1:1"} // never contacted
	if _, err := inventory.New(dynamic.NewForConfigOrDie(cfg), metadata.NewForConfigOrDie(cfg), meta.NewDefaultRESTMapper(nil), inventory.Options{Namespace: "syncd-system", Registerer: rec}); err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, c := range rec.collectors {
		ch := make(chan *prometheus.Desc, 64)
		go func() { c.Describe(ch); close(ch) }()
		for d := range ch {
			name, labels := describe(t, d)
			if strings.HasPrefix(name, "syncd_") {
				out[name] = labels
			}
		}
	}
	return out
}

// descPattern reads a Desc's name and variable labels from its String
// form, the only way client_golang shows them.
var descPattern = regexp.MustCompile(`fqName: "([^"]+)".*variableLabels: \{([^}]*)\}`)

func describe(t *testing.T, d *prometheus.Desc) (name, labels string) {
	t.Helper()
	m := descPattern.FindStringSubmatch(d.String())
	if m == nil {
		t.Fatalf("cannot read %s", d)
	}
	return m[1], strings.ReplaceAll(m[2], ",", ", ")
}

// recordingRegisterer keeps every collector registered through it.
type recordingRegisterer struct {
	prometheus.Registerer
	collectors []prometheus.Collector
}

func (r *recordingRegisterer) Register(c prometheus.Collector) error {
	r.collectors = append(r.collectors, c)
	return r.Registerer.Register(c)
}

func (r *recordingRegisterer) MustRegister(cs ...prometheus.Collector) {
	for _, c := range cs {
		if err := r.Register(c); err != nil {
			panic(err)
		}
	}
}

// metricRow is a row of the metrics table: | `name` | labels | meaning |.
var metricRow = regexp.MustCompile("^\\| `(syncd_[a-z_]+)` \\| ([^|]*) \\|")

// documentedMetrics reads name → labels from docs/operations.md.
func documentedMetrics(t *testing.T) map[string]string {
	t.Helper()
	fh, err := os.Open("../../docs/operations.md")
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	out := map[string]string{}
	sc := bufio.NewScanner(fh)
	for sc.Scan() {
		if m := metricRow.FindStringSubmatch(sc.Text()); m != nil {
			out[m[1]] = strings.TrimSpace(m[2])
		}
	}
	return out
}
