package daemon

import (
	"github.com/prometheus/client_golang/prometheus"

	"syncd.dev/syncd/internal/appmetrics"
	"syncd.dev/syncd/internal/prom"
	"syncd.dev/syncd/internal/source"
)

// Metrics are the daemon's Prometheus metrics: the per-app series it
// shares with the App controller (appmetrics.Apps) and its own.
type Metrics struct {
	*appmetrics.Apps
	SourceRevision *prometheus.GaugeVec
	SourceFailures *prometheus.GaugeVec
	SourceNextPoll *prometheus.GaugeVec
	// SourceRewinds counts the rewinds an app met (a revision not
	// descending from the one last applied and pruned).
	SourceRewinds *prometheus.CounterVec
	// DependencyWaiting is 1 for each dependency an app waits for before
	// it applies, labelled with the reason (depends.go).
	DependencyWaiting *prometheus.GaugeVec
	// SourceFetch is each poll's duration (list the remote's refs, fetch
	// what moved), by result (ok, failed).
	SourceFetch *prometheus.HistogramVec
}

// NewMetrics creates the metrics and registers them on reg (nil: a new
// private registry, for tests).
func NewMetrics(reg prometheus.Registerer) *Metrics {
	if reg == nil {
		reg = prometheus.NewRegistry()
	}
	m := &Metrics{
		Apps: appmetrics.New(),
		SourceRevision: prom.GaugeVec("syncd_source_revision_info",
			"The revision each source resolved last (value 1).",
			"source", "revision"),
		SourceFailures: prom.GaugeVec("syncd_source_consecutive_failures",
			"Consecutive failed polls of a source (0 after a successful poll).",
			"source"),
		SourceNextPoll: prom.GaugeVec("syncd_source_next_poll_timestamp_seconds",
			"Unix time of a source's next poll: the retry with backoff while it fails, else its interval or schedule.",
			"source"),
		SourceRewinds: prom.CounterVec("syncd_source_rewinds_total",
			"Revisions of an app that did not descend from the one last applied and pruned (force-push, rollback); their prune is refused unless the app sets allowRewinds.",
			"app", "cluster"),
		DependencyWaiting: prom.GaugeVec("syncd_dependency_waiting",
			"1 for each dependency (dependsOn) an app waits for before it applies its revision, by reason (no-revision, not-applied, failed, waiting, other-shard).",
			"app", "cluster", "dependency", "reason"),
		SourceFetch: prom.HistogramVec("syncd_source_fetch_duration_seconds",
			"Time one poll of a source took (list its refs, fetch what moved), by result (ok, failed).",
			prometheus.ExponentialBuckets(0.01, 2, 14), "source", "result"),
	}
	m.Apps.Register(reg)
	reg.MustRegister(m.SourceRevision, m.SourceFailures, m.SourceNextPoll, m.SourceRewinds, m.DependencyWaiting, m.SourceFetch)
	return m
}

// observePoll records how long a poll took and whether it failed.
func (m *Metrics) observePoll(ev source.Event) {
	result := "ok"
	if ev.Err != nil {
		result = "failed"
	}
	m.SourceFetch.WithLabelValues(ev.Source, result).Observe(ev.Finished.Sub(ev.Started).Seconds())
}
