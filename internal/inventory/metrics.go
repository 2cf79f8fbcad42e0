package inventory

import (
	"github.com/prometheus/client_golang/prometheus"

	"syncd.dev/syncd/internal/prom"
)

// metrics are the inventory's Prometheus series.
type metrics struct {
	// blocked counts prunes (or, for per-object guards, objects) a guard
	// refused, by reason.
	blocked *prometheus.CounterVec
	// pruned counts objects deleted or orphaned by prune.
	pruned *prometheus.CounterVec
}

// newMetrics builds the series and registers them on reg; several
// Managers in one process share them (prom.Register).
func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		blocked: prom.CounterVec("syncd_prune_blocked_total",
			"Prunes, or objects of a prune, that a guard refused, by reason (source-failed, render-failed, cluster-unreachable, apply-incomplete, empty-render, budget, protected, unowned, not-member, changed, error, disabled).",
			"reason"),
		pruned: prom.CounterVec("syncd_pruned_total",
			"Objects removed from an app by prune, by action (deleted, orphaned).", "action"),
	}
	if err := prom.Register(reg, &m.blocked); err != nil {
		return nil, err
	}
	if err := prom.Register(reg, &m.pruned); err != nil {
		return nil, err
	}
	return m, nil
}
