// Package monitoring checks manifests/monitoring: every PromQL query of
// the Grafana dashboard and of the PrometheusRule parses (Prometheus's own
// parser and rule-file checks), and reads only metrics and labels syncd
// exports, as docs/operations.md lists them (cmd/syncd's
// TestMetricsDocumented keeps that list equal to what syncd registers).
//
// It is a module of its own so that Prometheus's server module, which the
// parser comes in, stays out of syncd's dependencies.
package monitoring
