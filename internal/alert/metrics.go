package alert

import (
	"errors"
	"fmt"

	"github.com/prometheus/client_golang/prometheus"

	"syncd.dev/syncd/internal/prom"
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
		sent: prom.CounterVec("syncd_alerts_sent_total",
			"Alerts delivered, by sink and event type.", "sink", "type"),
		failed: prom.CounterVec("syncd_alerts_failed_total",
			"Alerts given up on after retries, by sink and reason.", "sink", "reason"),
		dropped: prom.CounterVec("syncd_alerts_dropped_total",
			"Alerts dropped before being sent, by sink and reason (queue_full, closed, shutdown).", "sink", "reason"),
		retries: prom.CounterVec("syncd_alerts_retries_total",
			"Delivery attempts retried, by sink and reason.", "sink", "reason"),
		suppressed: prom.CounterVec("syncd_alerts_suppressed_total",
			"Events not sent because the same finding was already alerted, or a resolution matched no alerted finding, by sink.", "sink"),
		queued: prom.GaugeVec("syncd_alerts_queue_length",
			"Alerts waiting to be sent, by sink.", "sink"),
	}
	if reg == nil {
		return m, nil
	}
	// A Notifier rebuilt after a config reload shares the counters of the
	// one before (prom.Register).
	err := errors.Join(
		prom.Register(reg, &m.sent),
		prom.Register(reg, &m.failed),
		prom.Register(reg, &m.dropped),
		prom.Register(reg, &m.retries),
		prom.Register(reg, &m.suppressed),
		prom.Register(reg, &m.queued),
	)
	if err != nil {
		return nil, fmt.Errorf("alert: register metrics: %w", err)
	}
	return m, nil
}
