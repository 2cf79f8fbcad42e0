package appmetrics

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"syncd.dev/syncd/internal/applier"
	"syncd.dev/syncd/internal/drift"
	"syncd.dev/syncd/internal/prom"
	"syncd.dev/syncd/internal/reconcile"
)

// Apps are the per-app series of reconciles, unregistered until
// Register.
type Apps struct {
	ReconcileDuration *prometheus.HistogramVec
	Objects           *prometheus.GaugeVec
	Conflicts         *prometheus.CounterVec
	// Validations counts the objects validated before a write by how
	// (applier.Validation).
	Validations   *prometheus.CounterVec
	Errors        *prometheus.CounterVec
	LastSuccess   *prometheus.GaugeVec
	DriftFindings *prometheus.GaugeVec
	// AppResult is 1 for the result of each app's last reconcile (ok,
	// conflicts, failed, unhealthy): the apps by state, at a glance.
	AppResult *prometheus.GaugeVec
}

// New creates the series; Register adds them to a registry.
func New() *Apps {
	return &Apps{
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
		Validations: prom.CounterVec("syncd_validations_total",
			"Objects validated before a write, by how: dry_run (the API server's dry run), judged (a new ConfigMap judged by syncd without one), known (an accepted dry run of the same body against the same object).",
			"app", "cluster", "how"),
		Errors: prom.CounterVec("syncd_reconcile_errors_total",
			"Failed reconciles by app, cluster and stage (source, render, cluster, apply, prune).",
			"app", "cluster", "stage"),
		LastSuccess: prom.GaugeVec("syncd_last_success_timestamp_seconds",
			"Unix time of the last fully successful reconcile of an app.",
			"app", "cluster"),
		DriftFindings: prom.GaugeVec("syncd_drift_findings",
			"Current drift findings of an app by class (taken-over, shared, value-drift, ...).",
			"app", "cluster", "class"),
		AppResult: prom.GaugeVec("syncd_app_result",
			"1 for the result of an app's last reconcile (ok, conflicts, failed, unhealthy).",
			"app", "cluster", "result"),
	}
}

// Register adds the series to reg.
func (m *Apps) Register(reg prometheus.Registerer) {
	reg.MustRegister(m.ReconcileDuration, m.Objects, m.Conflicts, m.Validations, m.Errors, m.LastSuccess, m.DriftFindings, m.AppResult)
}

// Reconcile is how one reconcile of an app ended, as the series record
// it.
type Reconcile struct {
	App, Cluster string
	Result       reconcile.Result
	// Stage is where a failed reconcile failed ("" when it did not).
	Stage reconcile.Stage
	Took  time.Duration
	// ChangeSet is the apply's outcome (nil when nothing was applied).
	ChangeSet *applier.ChangeSet
	Now       time.Time
}

// Reconciled records one reconcile: its duration and result, the error
// stage, the last success, the objects by action and the conflicts.
func (m *Apps) Reconciled(r Reconcile) {
	if r.Stage != "" {
		m.Failed(r.App, r.Cluster, r.Stage)
	}
	m.ReconcileDuration.WithLabelValues(r.App, r.Cluster, string(r.Result)).Observe(r.Took.Seconds())
	m.AppResult.DeletePartialMatch(prometheus.Labels{"app": r.App})
	m.AppResult.WithLabelValues(r.App, r.Cluster, string(r.Result)).Set(1)
	if r.Result == reconcile.ResultOK {
		m.LastSuccess.WithLabelValues(r.App, r.Cluster).Set(float64(r.Now.Unix()))
	}
	if r.ChangeSet != nil {
		m.changes(r.App, r.Cluster, r.ChangeSet)
		m.validations(r.App, r.Cluster, r.ChangeSet.Validation)
	}
}

// validations counts an apply's validations by how they were judged.
func (m *Apps) validations(app, cluster string, v applier.Validation) {
	m.Validations.WithLabelValues(app, cluster, "dry_run").Add(float64(v.DryRuns))
	m.Validations.WithLabelValues(app, cluster, "judged").Add(float64(v.Judged))
	m.Validations.WithLabelValues(app, cluster, "known").Add(float64(v.Known))
}

// changes records an apply's objects by action and its conflicts by
// policy outcome.
func (m *Apps) changes(app, cluster string, cs *applier.ChangeSet) {
	counts := map[applier.Action]int{}
	for _, c := range cs.Changes {
		counts[c.Action]++
		res := c.Resolution()
		m.conflicts(app, cluster, applier.ConflictForce, len(res.Forced))
		m.conflicts(app, cluster, applier.ConflictYield, len(res.Yielded))
		m.conflicts(app, cluster, applier.ConflictFail, len(c.Conflicts))
	}
	m.Objects.DeletePartialMatch(prometheus.Labels{"app": app})
	for a, n := range counts {
		m.Objects.WithLabelValues(app, cluster, string(a)).Set(float64(n))
	}
}

// conflicts counts n field conflicts the policy decided as outcome.
func (m *Apps) conflicts(app, cluster string, outcome applier.ConflictAction, n int) {
	m.Conflicts.WithLabelValues(app, cluster, string(outcome)).Add(float64(n))
}

// Failed counts a failed reconcile of app at stage.
func (m *Apps) Failed(app, cluster string, stage reconcile.Stage) {
	m.Errors.WithLabelValues(app, cluster, string(stage)).Inc()
}

// Findings makes counts the app's current drift findings by class.
func (m *Apps) Findings(app, cluster string, counts map[drift.Class]int) {
	m.DriftFindings.DeletePartialMatch(prometheus.Labels{"app": app})
	for c, n := range counts {
		m.DriftFindings.WithLabelValues(app, cluster, string(c)).Set(float64(n))
	}
}

// Forget drops every series of an app that is gone (a deleted App), so
// that a dashboard does not show it in its last state forever.
func (m *Apps) Forget(app string) {
	l := prometheus.Labels{"app": app}
	m.ReconcileDuration.DeletePartialMatch(l)
	m.Objects.DeletePartialMatch(l)
	m.Conflicts.DeletePartialMatch(l)
	m.Errors.DeletePartialMatch(l)
	m.LastSuccess.DeletePartialMatch(l)
	m.DriftFindings.DeletePartialMatch(l)
	m.AppResult.DeletePartialMatch(l)
}
