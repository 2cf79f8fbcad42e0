package egress

import (
	"fmt"
	"net/http"
	"os"
)

// GitAllowProtocol is the value Forbid gives GIT_ALLOW_PROTOCOL: a list
// naming no real protocol, so a git program the process starts may use
// none (not http, https, ssh, git, file or ext).
const GitAllowProtocol = "none"

// Forbid makes the network unreachable for code that does not choose its
// own way out, so a kustomize build cannot fetch whatever the planner's
// checks miss (a field kustomize adds later, say). kustomize's loader
// sends http(s) paths through a bare &http.Client{}, that is
// http.DefaultTransport, and clones remote bases by running git; neither
// can be replaced from outside kustomize. Forbid therefore replaces
// http.DefaultTransport with one that refuses every request, and sets
// GIT_ALLOW_PROTOCOL for every program the process starts, so any git
// binary (wherever PATH finds it) refuses every transport.
//
// main calls it once, at process start, before any goroutine uses HTTP;
// test binaries that run syncd's commands call it from TestMain
// (testenv.Main does), so a client that falls back on the default
// transport fails in the tests as it fails in production. restore puts
// back what it replaced, for a test that installs the block for itself.
func Forbid() (restore func(), err error) {
	prevTransport := http.DefaultTransport
	prevGit, hadGit := os.LookupEnv("GIT_ALLOW_PROTOCOL")
	if err := os.Setenv("GIT_ALLOW_PROTOCOL", GitAllowProtocol); err != nil {
		return nil, fmt.Errorf("set GIT_ALLOW_PROTOCOL: %w", err)
	}
	http.DefaultTransport = refusingTransport{}
	restore = func() {
		http.DefaultTransport = prevTransport
		if hadGit {
			os.Setenv("GIT_ALLOW_PROTOCOL", prevGit)
		} else {
			os.Unsetenv("GIT_ALLOW_PROTOCOL")
		}
	}
	return restore, nil
}

// refusingTransport refuses every request.
type refusingTransport struct{}

// RoundTrip implements http.RoundTripper.
func (refusingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Body != nil {
		req.Body.Close()
	}
	return nil, fmt.Errorf("%s %s: refused: syncd sends nothing through Go's default HTTP transport, "+
		"so a kustomize build cannot fetch remote references; vendor the file into the repository", req.Method, redactURL(req))
}

// redactURL is the request's address without user info or query, which
// may hold credentials.
func redactURL(req *http.Request) string {
	if req.URL == nil {
		return ""
	}
	u := *req.URL
	u.User = nil
	u.RawQuery = ""
	return u.String()
}
