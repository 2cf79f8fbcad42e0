package prom

import (
	"errors"

	"github.com/prometheus/client_golang/prometheus"
)

// CounterVec returns a new counter vector with the given name, help text
// and label names.
func CounterVec(name, help string, labels ...string) *prometheus.CounterVec {
	return prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help}, labels)
}

// GaugeVec returns a new gauge vector with the given name, help text and
// label names.
func GaugeVec(name, help string, labels ...string) *prometheus.GaugeVec {
	return prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: name, Help: help}, labels)
}

// Register registers *c on reg. When a collector of the same type is
// already registered under the same name, *c is replaced by that one, so
// the caller counts into the existing series. Any other registration
// error is returned unchanged and *c is left as it was.
func Register[C prometheus.Collector](reg prometheus.Registerer, c *C) error {
	err := reg.Register(*c)
	if err == nil {
		return nil
	}
	var are prometheus.AlreadyRegisteredError
	if errors.As(err, &are) {
		if existing, ok := are.ExistingCollector.(C); ok {
			*c = existing
			return nil
		}
	}
	return err
}

// HistogramVec returns a new histogram vector with the given name, help
// text, buckets and label names.
func HistogramVec(name, help string, buckets []float64, labels ...string) *prometheus.HistogramVec {
	return prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: name, Help: help, Buckets: buckets}, labels)
}
