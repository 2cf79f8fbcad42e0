package main

import (
	"net/http"

	"k8s.io/client-go/rest"

	"syncd.dev/syncd/internal/planner"
)

// ownTransport is the HTTP transport syncd's own clients use where they
// would otherwise fall back to http.DefaultTransport (alert sinks, a
// kubeconfig without TLS settings). It is Go's default transport as it was
// at package initialization, before main replaced http.DefaultTransport
// with planner.ForbidDefaultNetwork's refusing one.
var ownTransport = http.DefaultTransport

// forbidDefaultNetwork is syncd's defence in depth against a kustomize
// build reaching the network (see planner.ForbidDefaultNetwork). What
// syncd itself sends does not use http.DefaultTransport afterwards:
//   - Git sources: go-git's HTTP client copied the default transport when
//     its package initialized;
//   - the API server: client-go builds its own transport for TLS settings,
//     and useOwnTransport gives a config without them one too;
//   - alert sinks: the daemon gets a client on ownTransport.
func forbidDefaultNetwork() error {
	_, err := planner.ForbidDefaultNetwork()
	return err
}

// useOwnTransport makes client-go build a transport of its own for cfg.
// Without TLS settings, a proxy, a dialer or a transport client-go would
// send through http.DefaultTransport, which syncd refuses. Setting Proxy
// to client-go's own default (http.ProxyFromEnvironment) changes nothing
// else.
func useOwnTransport(cfg *rest.Config) {
	if cfg.Transport != nil || cfg.Proxy != nil || cfg.Dial != nil {
		return
	}
	if tlsCfg, err := rest.TLSConfigFor(cfg); err == nil && tlsCfg != nil {
		return
	}
	cfg.Proxy = http.ProxyFromEnvironment
}
