package alert

import (
	"errors"
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
)

// Reasons used as the "reason" label of the failed and dropped counters.
const (
	// ReasonHTTP4xx: the provider refused the request (not 408 or 429).
	ReasonHTTP4xx = "http_4xx"
	// ReasonHTTP5xx: the provider kept failing with 5xx (or 408).
	ReasonHTTP5xx = "http_5xx"
	// ReasonRateLimited: the provider kept answering 429, or asked to wait
	// longer than Options.MaxRetryAfter.
	ReasonRateLimited = "rate_limited"
	// ReasonNetwork: the request never got an HTTP answer (connection
	// refused, timeout, TLS error).
	ReasonNetwork = "network"
	// ReasonConfig: the URL or HMAC key file could not be read or is
	// invalid.
	ReasonConfig = "config"
	// ReasonRender: the payload could not be built.
	ReasonRender = "render"
	// ReasonQueueFull: the alert was the oldest in a full queue and was
	// dropped to make room.
	ReasonQueueFull = "queue_full"
	// ReasonClosed: Notify was called after Close.
	ReasonClosed = "closed"
	// ReasonShutdown: Close's context ended before the alert was sent.
	ReasonShutdown = "shutdown"
)

// metrics are the counters a Notifier updates.
type metrics struct {
	sent       *prometheus.CounterVec
	failed     *prometheus.CounterVec
	dropped    *prometheus.CounterVec
	retries    *prometheus.CounterVec
	suppressed *prometheus.CounterVec
	queued     *prometheus.GaugeVec
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		sent: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "syncd_alerts_sent_total",
			Help: "Alerts delivered, by sink and event type.",
		}, []string{"sink", "type"}),
		failed: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "syncd_alerts_failed_total",
			Help: "Alerts given up on after retries, by sink and reason.",
		}, []string{"sink", "reason"}),
		dropped: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "syncd_alerts_dropped_total",
			Help: "Alerts dropped before being sent, by sink and reason (queue_full, closed, shutdown).",
		}, []string{"sink", "reason"}),
		retries: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "syncd_alerts_retries_total",
			Help: "Delivery attempts retried, by sink and reason.",
		}, []string{"sink", "reason"}),
		suppressed: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "syncd_alerts_suppressed_total",
			Help: "Events not sent because the same finding was already alerted, or a resolution matched no alerted finding, by sink.",
		}, []string{"sink"}),
		queued: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "syncd_alerts_queue_length",
			Help: "Alerts waiting to be sent, by sink.",
		}, []string{"sink"}),
	}
	if reg == nil {
		return m, nil
	}
	var err error
	if m.sent, err = register(reg, m.sent); err != nil {
		return nil, err
	}
	if m.failed, err = register(reg, m.failed); err != nil {
		return nil, err
	}
	if m.dropped, err = register(reg, m.dropped); err != nil {
		return nil, err
	}
	if m.retries, err = register(reg, m.retries); err != nil {
		return nil, err
	}
	if m.suppressed, err = register(reg, m.suppressed); err != nil {
		return nil, err
	}
	if m.queued, err = register(reg, m.queued); err != nil {
		return nil, err
	}
	return m, nil
}

// register registers c, or returns the collector already registered under
// the same name (a Notifier rebuilt after a config reload shares the
// counters of the one before).
func register[C prometheus.Collector](reg prometheus.Registerer, c C) (C, error) {
	err := reg.Register(c)
	if err == nil {
		return c, nil
	}
	var are prometheus.AlreadyRegisteredError
	if errors.As(err, &are) {
		if existing, ok := are.ExistingCollector.(C); ok {
			return existing, nil
		}
	}
	return c, fmt.Errorf("alert: register metrics: %w", err)
}
