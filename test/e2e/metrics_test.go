package e2e

import (
	"bytes"
	"fmt"
	"io"
	"sort"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"syncd.dev/syncd/internal/testenv/gitserver"
)

// TestJourneyMetricsForDashboards: after `syncd run` applied an app, its
// /metrics has the series manifests/monitoring's dashboard and alert
// rules read for it: the app's state, the source's fetch time and the
// requests syncd made to the API server, by status code.
func TestJourneyMetricsForDashboards(t *testing.T) {
	w := newWorkspace(t)
	ensureNamespace(t, "metrics-e2e")
	srv := gitserver.StartTest(t)
	repo := srv.NewTestRepo(t, "metrics")
	if _, err := repo.Commit("one map", map[string][]byte{"app/cm.yaml": []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: metered}\ndata: {a: b}\n")}); err != nil {
		t.Fatal(err)
	}
	w.writeConfig(fmt.Sprintf(`apiVersion: syncd/v1alpha1
kind: Config
sources:
  - name: metered
    git: {url: %s, branch: main, interval: 1m}
apps:
  - name: metered
    source: metered
    path: app
    namespace: metrics-e2e
`, repo.URL))
	d := w.startDaemon()
	d.waitApplied("metered", func(string) bool { return true })

	// /status can show the result a moment before the reconcile's
	// metrics are recorded: scrape until every series is there.
	var missing []string
	waitFor(t, "the dashboards' series in /metrics", 30*time.Second, func() (bool, string) {
		missing = missingSeries(scrape(t, d.addr))
		return len(missing) == 0, strings.Join(missing, "\n")
	})
}

// missingSeries names the series the dashboards read for the app
// "metered" that families lacks.
func missingSeries(families map[string]*dto.MetricFamily) []string {
	checks := map[string]bool{
		`syncd_app_result{app="metered",result="ok"} 1`:                              value(families, "syncd_app_result", map[string]string{"app": "metered", "result": "ok"}) == 1,
		`syncd_source_fetch_duration_seconds{source="metered",result="ok"} observed`: count(families, "syncd_source_fetch_duration_seconds", map[string]string{"source": "metered", "result": "ok"}) >= 1,
		`syncd_kube_requests_total{code="200"} > 0`:                                  value(families, "syncd_kube_requests_total", map[string]string{"code": "200"}) > 0,
		`syncd_kube_request_duration_seconds observed`:                               count(families, "syncd_kube_request_duration_seconds", nil) > 0,
	}
	var missing []string
	for name, ok := range checks {
		if !ok {
			missing = append(missing, name)
		}
	}
	sort.Strings(missing)
	return missing
}

// scrape reads the daemon's /metrics in Prometheus's text format.
func scrape(t *testing.T, addr string) map[string]*dto.MetricFamily {
	t.Helper()
	resp, err := loopback.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(bytes.NewReader(body))
	if err != nil {
		t.Fatalf("/metrics: %v", err)
	}
	return families
}

// value sums the gauge or counter series of name whose labels include
// want.
func value(families map[string]*dto.MetricFamily, name string, want map[string]string) float64 {
	sum := 0.0
	for _, m := range matching(families, name, want) {
		switch {
		case m.GetGauge() != nil:
			sum += m.GetGauge().GetValue()
		case m.GetCounter() != nil:
			sum += m.GetCounter().GetValue()
		}
	}
	return sum
}

// count sums the observations of the histogram series of name whose
// labels include want.
func count(families map[string]*dto.MetricFamily, name string, want map[string]string) uint64 {
	var n uint64
	for _, m := range matching(families, name, want) {
		n += m.GetHistogram().GetSampleCount()
	}
	return n
}

// matching returns the series of name whose labels include want.
func matching(families map[string]*dto.MetricFamily, name string, want map[string]string) []*dto.Metric {
	f := families[name]
	if f == nil {
		return nil
	}
	var out []*dto.Metric
	for _, m := range f.GetMetric() {
		have := map[string]string{}
		for _, l := range m.GetLabel() {
			have[l.GetName()] = l.GetValue()
		}
		if includes(have, want) {
			out = append(out, m)
		}
	}
	return out
}

func includes(have, want map[string]string) bool {
	for k, v := range want {
		if have[k] != v {
			return false
		}
	}
	return true
}
