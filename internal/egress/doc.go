// Package egress is where syncd's own outgoing HTTP gets its transport,
// and where the process-wide network block is installed.
//
// syncd replaces http.DefaultTransport with one that refuses every
// request (Forbid), so that a kustomize build, which sends remote
// references through a bare http.Client, cannot reach the network. Every
// client syncd itself builds (Helm repositories, OCI registries, Git over
// HTTP, alert sinks, the API server without TLS settings) therefore takes
// a transport from Transport, which never reads http.DefaultTransport and
// is always a *http.Transport, so nothing has to type-assert a
// RoundTripper it did not make.
//
// For a server whose address someone other than the operator chooses (a
// remote cluster's kubeconfig from a Secret), WithholdErrorBodies keeps
// that server's error answers out of client-go's errors unless they are
// a Kubernetes status, and follows no redirect; Failure names a failed
// request by its kind (DNS, refused, TLS, timeout, HTTP status) in fixed
// words. Neither decides which addresses may be reached: the kubeconfig
// rules (package reconcile) and the NetworkPolicy do.
//
// It does not guarantee that third-party code in the process cannot open
// a connection of its own (a net.Dial, an http.Transport it builds): it
// closes the default path, the one library code falls back on.
package egress
