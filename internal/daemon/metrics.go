package daemon

import (
	"github.com/prometheus/client_golang/prometheus"

	"syncd.dev/syncd/internal/applier"
	"syncd.dev/syncd/internal/config"
	"syncd.dev/syncd/internal/prom"
	"syncd.dev/syncd/internal/reconcile"
	"syncd.dev/syncd/internal/source"
)

// Metrics are the daemon's Prometheus metrics.
type Metrics struct {
	ReconcileDuration *prometheus.HistogramVec
	Objects           *prometheus.GaugeVec
	Conflicts         *prometheus.CounterVec
	Errors            *prometheus.CounterVec
	SourceRevision    *prometheus.GaugeVec
	SourceFailures    *prometheus.GaugeVec
	SourceNextPoll    *prometheus.GaugeVec
	LastSuccess       *prometheus.GaugeVec
	DriftFindings     *prometheus.GaugeVec
	// SourceRewinds counts the rewinds an app met (a revision not
	// descending from the one last applied and pruned).
	SourceRewinds *prometheus.CounterVec
	// DependencyWaiting is 1 for each dependency an app waits for before
	// it applies, labelled with the reason (depends.go).
	DependencyWaiting *prometheus.GaugeVec
	// SourceFetch is each poll's duration (list the remote's refs, fetch
	// what moved), by result (ok, failed).
	SourceFetch *prometheus.HistogramVec
	// AppResult is 1 for the result of each app's last reconcile (ok,
	// conflicts, failed, unhealthy): the apps by state, at a glance.
	AppResult *prometheus.GaugeVec
}

// NewMetrics creates the metrics and registers them on reg (nil: a new
// private registry, for tests).
func NewMetrics(reg prometheus.Registerer) *Metrics {
	if reg == nil {
		reg = prometheus.NewRegistry()
	}
	m := &Metrics{
		ReconcileDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "syncd_reconcile_duration_seconds",
			Help:    "Time one reconcile of an app took (render, apply, prune), by result.",
			Buckets: prometheus.ExponentialBuckets(0.05, 2, 12),
		}, []string{"app", "cluster", "result"}),
		Objects: prom.GaugeVec("syncd_objects",
			"Objects of an app by the action of its last reconcile (created, configured, unchanged, conflict, ...).",
			"app", "cluster", "action"),
		Conflicts: prom.CounterVec("syncd_conflicts_total",
			"Field conflicts met while applying, by app and policy outcome (fail, force, yield).",
			"app", "cluster", "outcome"),
		Errors: prom.CounterVec("syncd_reconcile_errors_total",
			"Failed reconciles by app, cluster and stage (source, render, cluster, apply, prune).",
			"app", "cluster", "stage"),
		SourceRevision: prom.GaugeVec("syncd_source_revision_info",
			"The revision each source resolved last (value 1).",
			"source", "revision"),
		SourceFailures: prom.GaugeVec("syncd_source_consecutive_failures",
			"Consecutive failed polls of a source (0 after a successful poll).",
			"source"),
		SourceNextPoll: prom.GaugeVec("syncd_source_next_poll_timestamp_seconds",
			"Unix time of a source's next poll: the retry with backoff while it fails, else its interval or schedule.",
			"source"),
		LastSuccess: prom.GaugeVec("syncd_last_success_timestamp_seconds",
			"Unix time of the last fully successful reconcile of an app.",
			"app", "cluster"),
		DriftFindings: prom.GaugeVec("syncd_drift_findings",
			"Current drift findings of an app by class (taken-over, shared, value-drift, ...).",
			"app", "cluster", "class"),
		SourceRewinds: prom.CounterVec("syncd_source_rewinds_total",
			"Revisions of an app that did not descend from the one last applied and pruned (force-push, rollback); their prune is refused unless the app sets allowRewinds.",
			"app", "cluster"),
		DependencyWaiting: prom.GaugeVec("syncd_dependency_waiting",
			"1 for each dependency (dependsOn) an app waits for before it applies its revision, by reason (no-revision, not-applied, failed, waiting, other-shard).",
			"app", "cluster", "dependency", "reason"),
		SourceFetch: prom.HistogramVec("syncd_source_fetch_duration_seconds",
			"Time one poll of a source took (list its refs, fetch what moved), by result (ok, failed).",
			prometheus.ExponentialBuckets(0.01, 2, 14), "source", "result"),
		AppResult: prom.GaugeVec("syncd_app_result",
			"1 for the result of an app's last reconcile (ok, conflicts, failed, unhealthy).",
			"app", "cluster", "result"),
	}
	reg.MustRegister(m.ReconcileDuration, m.Objects, m.Conflicts, m.Errors, m.SourceRevision, m.SourceFailures, m.SourceNextPoll, m.LastSuccess, m.DriftFindings, m.SourceRewinds, m.DependencyWaiting, m.SourceFetch, m.AppResult)
	return m
}

func (m *Metrics) countError(app config.App, stage reconcile.Stage) {
	m.Errors.WithLabelValues(app.Name, app.ClusterName(), string(stage)).Inc()
}

// countConflicts counts n field conflicts of app that the policy decided
// as outcome, the outcome label of syncd_conflicts_total.
func (m *Metrics) countConflicts(app config.App, outcome applier.ConflictAction, n int) {
	m.Conflicts.WithLabelValues(app.Name, app.ClusterName(), string(outcome)).Add(float64(n))
}

// observePoll records how long a poll took and whether it failed.
func (m *Metrics) observePoll(ev source.Event) {
	result := "ok"
	if ev.Err != nil {
		result = "failed"
	}
	m.SourceFetch.WithLabelValues(ev.Source, result).Observe(ev.Finished.Sub(ev.Started).Seconds())
}

// setResult makes result the one state of app in syncd_app_result.
func (m *Metrics) setResult(app config.App, result reconcile.Result) {
	m.AppResult.DeletePartialMatch(map[string]string{"app": app.Name})
	m.AppResult.WithLabelValues(app.Name, app.ClusterName(), string(result)).Set(1)
}
