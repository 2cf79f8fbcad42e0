package egress

import (
	"net/http"

	"k8s.io/client-go/rest"
)

// OwnRESTTransport makes client-go build a transport of its own for cfg.
// Without TLS settings, a proxy, a dialer or a transport, client-go
// sends through http.DefaultTransport, which Forbid refuses (a plain
// http:// API server, as in a kubeconfig for a local proxy). Setting
// Proxy to client-go's own default (http.ProxyFromEnvironment) changes
// nothing else.
func OwnRESTTransport(cfg *rest.Config) {
	if cfg.Transport != nil || cfg.Proxy != nil || cfg.Dial != nil {
		return
	}
	if tlsCfg, err := rest.TLSConfigFor(cfg); err == nil && tlsCfg != nil {
		return
	}
	cfg.Proxy = http.ProxyFromEnvironment
}
