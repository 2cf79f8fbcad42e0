package config

import (
	"fmt"
	"net"
	"net/url"
	"strings"

	"github.com/Masterminds/semver/v3"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// HelmSource is a Helm chart repository served over HTTP(S): a server
// holding index.yaml and the chart archives it lists (helm repo add).
type HelmSource struct {
	// URL is the repository's base URL; index.yaml is read from
	// <url>/index.yaml.
	URL string `json:"url"`
	// Interval is how often index.yaml is polled (required, e.g. 10m).
	Interval *metav1.Duration `json:"interval,omitempty"`
	// Auth, when set, names the files holding credentials and the CA.
	Auth *HelmAuth `json:"auth,omitempty"`
}

// HelmAuth names files holding a Helm repository's credentials; the files
// are re-read on every poll. At most one of PasswordFile (HTTP basic
// auth, with Username), BearerTokenFile and DockerConfigFile (oci://
// repositories only) is set; CAFile may be set with any or alone.
type HelmAuth struct {
	// Username is the HTTP basic auth user sent with PasswordFile.
	Username string `json:"username,omitempty"`
	// PasswordFile holds the HTTP basic auth password.
	PasswordFile string `json:"passwordFile,omitempty"`
	// BearerTokenFile holds a token sent as "Authorization: Bearer" (to a
	// registry: the registry token, as oci.auth.tokenFile).
	BearerTokenFile string `json:"bearerTokenFile,omitempty"`
	// DockerConfigFile is a file in ~/.docker/config.json format whose
	// "auths" entry for the registry's host is used (credential helpers
	// are never run); only for a repository at an oci:// URL.
	DockerConfigFile string `json:"dockerConfigFile,omitempty"`
	// CAFile holds PEM certificates trusted for the repository's TLS
	// (in place of the system's roots).
	CAFile string `json:"caFile,omitempty"`
}

// helmSourceOf checks a Helm repository source: its helm section, and
// that it sets no git or oci section beside it.
func (v *validator) helmSourceOf(p string, s Source) {
	if gitSet(s.Git) {
		v.errorf(p+".helm", "git and helm are both set; a source is a Git repository (git), an OCI artifact (oci) or a Helm chart repository (helm): split it into two sources")
	}
	if s.OCI != nil {
		v.errorf(p+".helm", "oci and helm are both set; a source is a Git repository (git), an OCI artifact (oci) or a Helm chart repository (helm): split it into two sources")
	}
	v.helmSource(p+".helm", *s.Helm)
}

// resolveHelmFiles makes the helm source's file names absolute with abs.
func (s *Source) resolveHelmFiles(abs func(*string)) {
	if s.Helm == nil || s.Helm.Auth == nil {
		return
	}
	a := s.Helm.Auth
	abs(&a.PasswordFile)
	abs(&a.BearerTokenFile)
	abs(&a.DockerConfigFile)
	abs(&a.CAFile)
}

// helmURLProblem returns what is wrong with a Helm repository URL ("" when
// nothing) and whether it points at this machine. Problems never repeat
// the URL, which may embed a secret.
func helmURLProblem(raw string) (problem string, loopback bool) {
	const form = "write the repository's base URL, e.g. https://charts.example.com/stable (index.yaml is read below it)"
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return "the URL is not valid; " + form, false
	}
	if u.User != nil {
		return "the URL embeds credentials; remove them, put the password in a file and set auth.username and auth.passwordFile", false
	}
	switch strings.ToLower(u.Scheme) {
	case "https", "http", "oci":
	default:
		return fmt.Sprintf("the URL scheme %q is not supported for a Helm repository; %s, or oci://registry/path for charts pushed with helm push", u.Scheme, form), false
	}
	if u.RawQuery != "" || u.Fragment != "" {
		return "the URL has a query or fragment; " + form, false
	}
	host := u.Hostname()
	ip := net.ParseIP(host)
	return "", host == "localhost" || (ip != nil && ip.IsLoopback())
}

// helmSource checks a source's helm section; p is its field.
func (v *validator) helmSource(p string, h HelmSource) {
	loopback := false
	if h.URL == "" {
		v.errorf(p+".url", "url is required, e.g. https://charts.example.com/stable")
	} else {
		var prob string
		prob, loopback = helmURLProblem(h.URL)
		if prob != "" {
			v.errorf(p+".url", "%s", prob)
		}
	}
	v.requiredInterval(p+".interval", h.Interval, "how often index.yaml is polled", "10m")
	v.helmAuth(p+".auth", h, loopback)
}

// helmAuth checks a helm source's auth section; p is its field.
func (v *validator) helmAuth(p string, h HelmSource, loopback bool) {
	a := h.Auth
	if a == nil {
		return
	}
	basic, bearer, docker := a.PasswordFile != "", a.BearerTokenFile != "", a.DockerConfigFile != ""
	switch {
	case basic && bearer:
		v.errorf(p, "passwordFile and bearerTokenFile are both set; a repository takes one: HTTP basic auth (username, passwordFile) or a bearer token (bearerTokenFile)")
	case docker && (basic || bearer):
		other := "bearerTokenFile"
		if basic {
			other = "passwordFile"
		}
		v.errorf(p, "dockerConfigFile and %s are both set; a registry takes one kind of credentials: keep one of them", other)
	case !basic && !bearer && !docker && a.CAFile == "":
		v.errorf(p, "auth sets nothing; set username and passwordFile, bearerTokenFile, dockerConfigFile (oci:// only), or caFile, or remove auth")
	}
	if docker && !strings.HasPrefix(strings.ToLower(h.URL), "oci://") {
		v.errorf(p+".dockerConfigFile", "dockerConfigFile holds registry credentials and is read only for a Helm repository at an oci:// URL; for an https:// repository set username and passwordFile, or bearerTokenFile")
	}
	if basic && a.Username == "" {
		v.errorf(p+".username", "username is required with passwordFile (HTTP basic auth)")
	}
	if a.Username != "" && !basic {
		v.errorf(p+".username", "username is only used with passwordFile (HTTP basic auth); set passwordFile or remove username")
	}
	if (basic || bearer) && strings.HasPrefix(strings.ToLower(h.URL), "http://") && !loopback {
		v.errorf(p, "the credentials would be sent unencrypted over http://; use an https:// URL (plain http is allowed only to localhost)")
	}
}

// helmChart checks the chart an app picks from a Helm repository source,
// and refuses chart and version on an app of a Git source; src is the
// app's source (ok false: not declared, reported by appSource); ap is
// the app's field.
func (v *validator) helmChart(ap string, a App, src Source, ok bool) {
	h, p := a.Helm, ap+".helm"
	if !ok {
		return
	}
	if src.Kind() != SourceHelm {
		if h != nil && (h.Chart != "" || h.Version != "") {
			v.errorf(p+".chart", "chart and version pick a chart from a Helm repository source, but source %q is not a Helm repository; point path at the chart's directory and remove chart and version", a.Source)
		}
		if h != nil && h.ValuesSource != "" {
			v.errorf(p+".valuesSource", "valuesSource is for charts of a sources[].helm source (an https:// or oci:// chart repository), and source %q is a %s source: write valuesFiles relative to its own tree and remove valuesSource", a.Source, src.Kind())
		}
		return
	}
	if h == nil || h.Chart == "" {
		v.errorf(p+".chart", "chart is required: source %q is a Helm repository; name the chart to render from it (helm.chart), e.g. podinfo", a.Source)
		return
	}
	if strings.ContainsAny(h.Chart, "/\\") || h.Chart == "." || h.Chart == ".." {
		v.errorf(p+".chart", "%q is not a chart name: give the name index.yaml lists, without the repository", h.Chart)
	}
	if h.Version != "" {
		if _, err := semver.NewConstraint(h.Version); err != nil {
			v.errorf(p+".version", "chart %s: %q is not a version or semver range (%v); write e.g. 1.2.3, \"~1.2\" or \">=1.0.0 <2.0.0\"", h.Chart, h.Version, err)
		}
	}
	if a.Path != "" {
		v.errorf(ap+".path", "path is for Git sources; the chart of a Helm repository source is named by helm.chart: remove path")
	}
}

// valuesSource checks the Git source an app of a Helm repository source
// reads its values files from (helm.valuesSource); c holds the sources.
func (v *validator) valuesSource(ap string, a App, c *Config) {
	h, p := a.Helm, ap+".helm.valuesSource"
	if h == nil || h.ValuesSource == "" {
		return
	}
	src, ok := c.Source(h.ValuesSource)
	switch {
	case !ok:
		v.errorf(p, "source %q is not declared; name a Git source of sources[] that holds the values files", h.ValuesSource)
	case src.Kind() != SourceGit:
		v.errorf(p, "source %q is not a Git source (it is %s): values files are read from a Git repository's tree; name a sources[].git source", h.ValuesSource, src.Kind())
	case len(h.ValuesFiles) == 0:
		v.errorf(p, "valuesSource is set but helm.valuesFiles is empty: list the values files to read from source %q, e.g. [apps/web/values-prod.yaml], or remove valuesSource", h.ValuesSource)
	}
}
