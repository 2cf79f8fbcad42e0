package source

import (
	gitclient "github.com/go-git/go-git/v5/plumbing/transport/client"
	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"

	"syncd.dev/syncd/internal/egress"
)

// Git over HTTP(S) goes through egress.Transport, as every other client
// syncd builds does. go-git's own default client holds the
// http.DefaultTransport of its package initialization, which works only
// because that runs before main installs the network block; this does
// not depend on the order. go-git reads its protocol table per fetch and
// never writes it, so installing the clients once, at package
// initialization, before any goroutine fetches, is safe.
func init() {
	c := githttp.NewClient(egress.Client())
	gitclient.InstallProtocol("http", c)
	gitclient.InstallProtocol("https", c)
}
