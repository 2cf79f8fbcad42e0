package kubemetrics

import (
	"context"
	"errors"
	"net/url"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/tools/metrics"

	"syncd.dev/syncd/internal/prom"
)

// latencyBuckets span a fast GET (a few milliseconds) to a slow
// list or a request held by API Priority and Fairness (tens of seconds).
var latencyBuckets = prometheus.ExponentialBuckets(0.005, 2, 14)

var (
	// requests counts requests by the API server's status code (or
	// <error> when none came back), HTTP method and host. 429 is the
	// server's throttling (API Priority and Fairness).
	requests = prom.CounterVec("syncd_kube_requests_total",
		"Requests to Kubernetes API servers by status code (<error>: no answer), method and host; code 429 is the server throttling syncd.",
		"code", "method", "host")
	// latency is each request's duration, by verb.
	latency = prom.HistogramVec("syncd_kube_request_duration_seconds",
		"Duration of requests to Kubernetes API servers, by verb.",
		latencyBuckets, "verb")
	// throttled is the time a request waited in syncd's own client-side
	// rate limiter before it was sent, by verb.
	throttled = prom.HistogramVec("syncd_kube_rate_limiter_duration_seconds",
		"Time requests waited in syncd's client-side rate limiter (--kube-qps, --kube-burst) before being sent, by verb.",
		latencyBuckets, "verb")
)

// Register makes client-go report to syncd's series (once per process)
// and registers the series on reg.
func Register(reg prometheus.Registerer) error {
	metrics.Register(metrics.RegisterOpts{
		RequestResult:      result{requests},
		RequestLatency:     duration{latency},
		RateLimiterLatency: duration{throttled},
	})
	return errors.Join(prom.Register(reg, &requests), prom.Register(reg, &latency), prom.Register(reg, &throttled))
}

// result counts a request's outcome (client-go's metrics.ResultMetric).
type result struct{ c *prometheus.CounterVec }

func (r result) Increment(_ context.Context, code, method, host string) {
	r.c.WithLabelValues(code, method, host).Inc()
}

// duration observes a request's time by verb (client-go's
// metrics.LatencyMetric). The URL is left out: its path names objects,
// an unbounded label.
type duration struct{ h *prometheus.HistogramVec }

func (d duration) Observe(_ context.Context, verb string, _ url.URL, took time.Duration) {
	d.h.WithLabelValues(verb).Observe(took.Seconds())
}
