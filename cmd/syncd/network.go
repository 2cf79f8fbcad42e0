package main

import "syncd.dev/syncd/internal/egress"

// forbidDefaultNetwork is syncd's defence in depth against a kustomize
// build reaching the network (see egress.Forbid). What syncd itself sends
// does not use http.DefaultTransport afterwards: every client syncd builds
// (Helm repositories, OCI registries, Git over HTTP, alert sinks) takes
// its transport from egress.Transport, and client-go builds its own for
// the API server (egress.OwnRESTTransport for a config without TLS
// settings).
func forbidDefaultNetwork() error {
	_, err := egress.Forbid()
	return err
}
