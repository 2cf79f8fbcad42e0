package kubemetrics

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// TestRequestsCountedByCode: a client's requests are counted by the
// server's status code, a 429 (the server throttling syncd) among them,
// and timed.
func TestRequestsCountedByCode(t *testing.T) {
	reg := prometheus.NewRegistry()
	if err := Register(reg); err != nil {
		t.Fatal(err)
	}
	throttle := false
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if throttle {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusTooManyRequests)
			_, _ = w.Write([]byte(`{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"TooManyRequests","code":429}`))
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"major":"1","minor":"37","gitVersion":"v1.37.2"}`))
	}))
	defer srv.Close()
	cs, err := kubernetes.NewForConfig(&rest.Config{Host: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cs.Discovery().ServerVersion(); err != nil {
		t.Fatal(err)
	}
	throttle = true
	if _, err := cs.CoreV1().Namespaces().Get(context.Background(), "x", metav1.GetOptions{}); err == nil {
		t.Fatal("the throttled request succeeded")
	}
	host := strings.TrimPrefix(srv.URL, "http://")
	got := map[string]float64{
		"200": testutil.ToFloat64(requests.WithLabelValues("200", "GET", host)),
		"429": testutil.ToFloat64(requests.WithLabelValues("429", "GET", host)),
	}
	if diff := cmp.Diff(map[string]float64{"200": 1, "429": 1}, got); diff != "" {
		t.Errorf("syncd_kube_requests_total by code (-want +got):\n%s", diff)
	}
	if n := testutil.CollectAndCount(latency, "syncd_kube_request_duration_seconds"); n == 0 {
		t.Error("no request was timed")
	}
}
