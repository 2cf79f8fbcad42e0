package install

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"syncd.dev/syncd/internal/config"
	"syncd.dev/syncd/internal/egress"
)

// SourceType is how a source is fetched, hence how it is probed.
type SourceType string

// The source types Probe knows.
const (
	GitType  SourceType = "git"
	HelmType SourceType = "helm"
	OCIType  SourceType = "oci"
)

// Endpoint is one source to probe: its name as the user knows it, its
// type and URL.
type Endpoint struct {
	Name string
	Type SourceType
	URL  string
}

// Prober checks that a source's server answers, without credentials.
type Prober struct {
	// Client sends the HTTP requests; its transport should be
	// egress.Transport's, the one syncd fetches with.
	Client *http.Client
	// Dial opens the TCP connections of SSH URLs.
	Dial func(ctx context.Context, network, addr string) (net.Conn, error)
	// Timeout bounds each probe.
	Timeout time.Duration
}

// NewProber returns a Prober over syncd's own egress transport, following
// no redirect, with timeout per probe.
func NewProber(timeout time.Duration) *Prober {
	client := &http.Client{
		Transport:     egress.Transport(),
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	d := &net.Dialer{}
	return &Prober{Client: client, Dial: d.DialContext, Timeout: timeout}
}

// ProbeAll probes each endpoint, in order.
func (p *Prober) ProbeAll(ctx context.Context, eps []Endpoint) []Result {
	out := make([]Result, 0, len(eps))
	for _, ep := range eps {
		r := Result{Check: ep.Name}
		r.State, r.Detail = p.Probe(ctx, ep)
		out = append(out, r)
	}
	return out
}

// Probe checks one endpoint: an HTTP answer below 500 (a 401 included:
// the server is there, credentials are the source's business), or a TCP
// connection for SSH. The URL is shown without user information; an
// answer's body is never read.
func (p *Prober) Probe(ctx context.Context, ep Endpoint) (State, string) {
	ctx, cancel := context.WithTimeout(ctx, p.Timeout)
	defer cancel()
	target, err := probeTarget(ep)
	if err != nil {
		return Fail, err.Error()
	}
	shown := redactURL(ep.URL)
	switch {
	case target.skip != "":
		return Skip, shown + ": " + target.skip
	case target.dial != "":
		conn, err := p.Dial(ctx, "tcp", target.dial)
		if err != nil {
			return Fail, fmt.Sprintf("%s: no connection to %s: %s", shown, target.dial, egress.Failure(err))
		}
		conn.Close()
		return Pass, fmt.Sprintf("%s: %s answers", shown, target.dial)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, target.http, nil)
	if err != nil {
		return Fail, fmt.Sprintf("%s: %v", shown, err)
	}
	resp, err := p.Client.Do(req)
	if err != nil {
		return Fail, fmt.Sprintf("%s: %s", shown, egress.Failure(err))
	}
	resp.Body.Close()
	if resp.StatusCode >= 500 {
		return Fail, fmt.Sprintf("%s: the server answers HTTP %d", shown, resp.StatusCode)
	}
	return Pass, fmt.Sprintf("%s: answers (HTTP %d)", shown, resp.StatusCode)
}

// target is what to probe for an endpoint: one of an HTTP URL, a TCP
// address, or a reason to skip it.
type target struct {
	http, dial, skip string
}

// probeTarget picks the request a fetch of ep starts with: Git's
// ls-remote (info/refs), a Helm repository's index.yaml, an OCI
// registry's /v2/ API root, or a TCP connection for SSH.
func probeTarget(ep Endpoint) (target, error) {
	if host, ok := scpLike(ep.URL); ok {
		return target{dial: net.JoinHostPort(host, "22")}, nil
	}
	u, err := url.Parse(ep.URL)
	if err != nil {
		return target{}, fmt.Errorf("%s: not a URL", redactURL(ep.URL))
	}
	switch u.Scheme {
	case "file":
		return target{skip: "a local path, not checked"}, nil
	case "ssh":
		port := u.Port()
		if port == "" {
			port = "22"
		}
		return target{dial: net.JoinHostPort(u.Hostname(), port)}, nil
	case "oci":
		return target{http: "https://" + u.Host + "/v2/"}, nil
	case "http", "https":
	default:
		return target{}, fmt.Errorf("%s: scheme %q is not probed", redactURL(ep.URL), u.Scheme)
	}
	u.User = nil
	switch ep.Type {
	case GitType:
		u.Path = strings.TrimSuffix(u.Path, "/") + "/info/refs"
		u.RawQuery = "service=git-upload-pack"
	case HelmType:
		u.Path = strings.TrimSuffix(u.Path, "/") + "/index.yaml"
	}
	return target{http: u.String()}, nil
}

// scpLike reports whether s is Git's scp-like "user@host:path", and its
// host.
func scpLike(s string) (string, bool) {
	if strings.Contains(s, "://") {
		return "", false
	}
	at, colon := strings.Index(s, "@"), strings.Index(s, ":")
	if colon < 0 || (at >= 0 && at > colon) {
		return "", false
	}
	return s[at+1 : colon], true
}

// redactURL is u without its password (and without a query, which may
// carry a token).
func redactURL(s string) string {
	u, err := url.Parse(s)
	if err != nil || u.Scheme == "" {
		return s
	}
	u.RawQuery = ""
	return u.Redacted()
}

// ConfigEndpoints are the sources of a syncd.yaml.
func ConfigEndpoints(cfg *config.Config) []Endpoint {
	var out []Endpoint
	for _, s := range cfg.Sources {
		name := fmt.Sprintf("source %s (%s)", s.Name, cfg.File)
		switch {
		case s.Helm != nil:
			out = append(out, Endpoint{Name: name, Type: HelmType, URL: s.Helm.URL})
		case s.OCI != nil:
			out = append(out, Endpoint{Name: name, Type: OCIType, URL: s.OCI.URL})
		default:
			out = append(out, Endpoint{Name: name, Type: GitType, URL: s.Git.URL})
		}
	}
	return out
}

// sourceKinds maps the syncd.dev source kinds to how they are fetched.
var sourceKinds = map[string]SourceType{"GitSource": GitType, "HelmSource": HelmType, "OCISource": OCIType}

// clusterSources lists the source objects of every served syncd.dev
// source kind, in every namespace. A kind not served yet is no error.
func clusterSources(ctx context.Context, cl Cluster) ([]Endpoint, []Result) {
	lists, err := cl.Discovery.ServerResourcesForGroupVersion("syncd.dev/v1alpha1")
	if err != nil {
		return nil, nil // no CRDs: no source objects; the CRD checks say so
	}
	var out []Endpoint
	var fails []Result
	for _, res := range lists.APIResources {
		typ, ok := sourceKinds[res.Kind]
		if !ok || strings.Contains(res.Name, "/") {
			continue
		}
		gvr := schema.GroupVersionResource{Group: "syncd.dev", Version: "v1alpha1", Resource: res.Name}
		items, err := cl.Dynamic.Resource(gvr).List(ctx, metav1.ListOptions{})
		if err != nil {
			fails = append(fails, Result{Check: res.Kind + " objects", State: Fail, Detail: "list: " + err.Error()})
			continue
		}
		for _, it := range items.Items {
			u, _, _ := unstructured.NestedString(it.Object, "spec", "url")
			out = append(out, Endpoint{Name: fmt.Sprintf("%s %s/%s", res.Kind, it.GetNamespace(), it.GetName()), Type: typ, URL: u})
		}
	}
	return out, fails
}
