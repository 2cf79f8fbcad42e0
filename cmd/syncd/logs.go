package main

import (
	"log/slog"

	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"
)

// clientLog receives what connect decides about the API server client (its
// rate limit). The one-shot commands keep it quiet; the daemon routes it
// into its own log (routeClientLogs).
var clientLog = slog.New(slog.DiscardHandler)

// routeClientLogs sends client-go's klog output (leader election,
// reflectors, request retries) and connect's decisions through log, so
// every line the daemon writes is structured by the same handler (JSON by
// default). klog's verbosity (-v) still filters what client-go emits; klog
// lines arrive as slog records at their level, with klog's key/value
// pairs as attributes. The API server's warnings become warn records, each
// once.
func routeClientLogs(log *slog.Logger) {
	klog.SetSlogLogger(log)
	rest.SetDefaultWarningHandler(logWarnings(log))
	clientLog = log
}
