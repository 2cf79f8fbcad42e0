// Package config reads and validates syncd.yaml (apiVersion syncd/v1alpha1,
// kind Config): the Git sources, the apps applied from them with their field
// managers, split rules and conflict policy, and the alert sinks.
//
// It guarantees that a Config it returns passed validation: names are
// unique, every app names a known source, manager names are stable, and each
// source sets exactly one ref and one schedule. It does not touch the
// network or the cluster: files named in the config (tokens, keys, URLs) are
// not read here, and field paths are only checked for syntax.
package config
