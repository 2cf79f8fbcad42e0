// Package prom builds syncd's Prometheus series and registers them
// with one rule: a series already registered under the same name is
// shared, not refused, so a component rebuilt after a config reload (or
// several components in one process) count into the same series.
//
// It does not choose names, help texts or labels (each stage owns its
// series) and it does not serve them: cmd/syncd exposes the registry.
package prom
