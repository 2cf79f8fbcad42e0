package reconcile

import (
	"github.com/prometheus/client_golang/prometheus"
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
		}, []string{"app", "result"}),
		Objects: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "syncd_objects",
			Help: "Objects of an app by the action of its last reconcile (created, configured, unchanged, conflict, ...).",
		}, []string{"app", "action"}),
		Conflicts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "syncd_conflicts_total",
			Help: "Field conflicts met while applying, by app and policy outcome (fail, force, yield).",
		}, []string{"app", "outcome"}),
		Errors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "syncd_reconcile_errors_total",
			Help: "Failed reconciles by app and stage (source, render, apply, prune).",
		}, []string{"app", "stage"}),
		SourceRevision: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "syncd_source_revision_info",
			Help: "The revision each source resolved last (value 1).",
		}, []string{"source", "revision"}),
		SourceFailures: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "syncd_source_consecutive_failures",
			Help: "Consecutive failed polls of a source (0 after a successful poll).",
		}, []string{"source"}),
		SourceNextPoll: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "syncd_source_next_poll_timestamp_seconds",
			Help: "Unix time of a source's next poll: the retry with backoff while it fails, else its interval or schedule.",
		}, []string{"source"}),
		LastSuccess: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "syncd_last_success_timestamp_seconds",
			Help: "Unix time of the last fully successful reconcile of an app.",
		}, []string{"app"}),
		DriftFindings: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "syncd_drift_findings",
			Help: "Current drift findings of an app by class (taken-over, shared, value-drift, ...).",
		}, []string{"app", "class"}),
		SourceRewinds: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "syncd_source_rewinds_total",
			Help: "Revisions of an app that did not descend from the one last applied and pruned (force-push, rollback); their prune is refused unless the app sets allowRewinds.",
		}, []string{"app"}),
		DependencyWaiting: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "syncd_dependency_waiting",
			Help: "1 for each dependency (dependsOn) an app waits for before it applies its revision, by reason (no-revision, not-applied, failed, waiting, other-shard).",
		}, []string{"app", "dependency", "reason"}),
	}
	reg.MustRegister(m.ReconcileDuration, m.Objects, m.Conflicts, m.Errors, m.SourceRevision, m.SourceFailures, m.SourceNextPoll, m.LastSuccess, m.DriftFindings, m.SourceRewinds, m.DependencyWaiting)
	return m
}

// Stage is the stage a reconcile failed in, the stage label of
// syncd_reconcile_errors_total.
type Stage string

// Stages of a failed reconcile.
const (
	// StageSource: the source could not be polled.
	StageSource Stage = "source"
	// StageRender: the app could not be rendered or planned.
	StageRender Stage = "render"
	// StageApply: objects failed, conflicted or were unhealthy, or the
	// prune did not complete.
	StageApply Stage = "apply"
)

// ConflictOutcome is what the conflict policy did with a field conflict,
// the outcome label of syncd_conflicts_total.
type ConflictOutcome string

// Outcomes of a field conflict.
const (
	// ConflictForced: syncd took the field over.
	ConflictForced ConflictOutcome = "force"
	// ConflictYielded: syncd left the field to its other owner.
	ConflictYielded ConflictOutcome = "yield"
	// ConflictFailed: the object was not applied.
	ConflictFailed ConflictOutcome = "fail"
)

func (m *Metrics) countError(app string, stage Stage) {
	m.Errors.WithLabelValues(app, string(stage)).Inc()
}

func (m *Metrics) countConflicts(app string, outcome ConflictOutcome, n int) {
	m.Conflicts.WithLabelValues(app, string(outcome)).Add(float64(n))
}
