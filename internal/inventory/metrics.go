package inventory

import (
	"errors"

	"github.com/prometheus/client_golang/prometheus"
)

// metrics are the inventory's Prometheus series.
type metrics struct {
	// blocked counts prunes (or, for per-object guards, objects) a guard
	// refused, by reason.
	blocked *prometheus.CounterVec
	// pruned counts objects deleted or orphaned by prune.
	pruned *prometheus.CounterVec
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		blocked: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "syncd_prune_blocked_total",
			Help: "Prunes, or objects of a prune, that a guard refused, by reason (source-failed, render-failed, apply-incomplete, empty-render, budget, protected, unowned, not-member, changed, error, disabled).",
		}, []string{"reason"}),
		pruned: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "syncd_pruned_total",
			Help: "Objects removed from an app by prune, by action (deleted, orphaned).",
		}, []string{"action"}),
	}
	var err error
	if m.blocked, err = register(reg, m.blocked); err != nil {
		return nil, err
	}
	if m.pruned, err = register(reg, m.pruned); err != nil {
		return nil, err
	}
	return m, nil
}

// register registers c, or returns the collector already registered under
// its name (several Managers in one process share the series).
func register(reg prometheus.Registerer, c *prometheus.CounterVec) (*prometheus.CounterVec, error) {
	if err := reg.Register(c); err != nil {
		var are prometheus.AlreadyRegisteredError
		if errors.As(err, &are) {
			if existing, ok := are.ExistingCollector.(*prometheus.CounterVec); ok {
				return existing, nil
			}
		}
		return nil, err
	}
	return c, nil
}
