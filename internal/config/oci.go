package config

import (
	"net"
	"net/url"
	"regexp"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// OCISource says where an OCI artifact is (oci://host/repository), which
// version of it to follow and how often to look. The artifact holds plain
// manifests or a kustomization as one tar+gzip layer (the format flux push
// artifact writes) or a Helm chart; apps read it like a Git source's tree.
type OCISource struct {
	// URL is oci://host[:port]/repository, without a tag or digest.
	URL string `json:"url"`

	OCIRef `json:",inline"`

	Auth *OCIAuth `json:"auth,omitempty"`
	// CAFile is a PEM file of CA certificates trusted for the registry,
	// beside the system's.
	CAFile string `json:"caFile,omitempty"`
	// Insecure allows plain HTTP to a registry that is not on loopback;
	// default false (plain HTTP only to localhost/127.0.0.0/8/::1).
	Insecure bool `json:"insecure,omitempty"`
}

// OCIRef says which version of an OCI artifact to follow and how often
// to look. It is the one definition of these fields: sources[].oci
// embeds it, and so does the OCISource custom resource's spec (package
// api/v1alpha1), so the file and the object cannot drift apart. Exactly
// one of Tag, Semver and Digest is set, and Interval is required.
//
// The +kubebuilder markers are the OCISource CRD's validation
// (controller-gen, hack/generate.sh); the file's is validate.go.
//
// +kubebuilder:object:generate=true
type OCIRef struct {
	// Tag to follow (e.g. latest or v1.2.0); a re-pushed tag is followed.
	// Exactly one of tag, semver and digest is set.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=128
	// +kubebuilder:validation:XValidation:rule=`self.matches('^[A-Za-z0-9_][A-Za-z0-9._-]*$')`,messageExpression=`'"' + self + '" is not an OCI tag (letters, digits, \'_\', \'.\', \'-\', at most 128, not starting with \'.\' or \'-\')'`
	Tag string `json:"tag,omitempty"`
	// Semver is a constraint over the repository's tags; the highest
	// matching tag is followed (e.g. ">=1.2.0 <2.0.0" or "~1.4").
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=1024
	Semver string `json:"semver,omitempty"`
	// Digest pins a manifest digest (sha256: and 64 lower-case hex
	// digits); nothing is asked of the registry while it is in force.
	// +kubebuilder:validation:MaxLength=1024
	// +kubebuilder:validation:XValidation:rule=`self.matches('^sha256:[0-9a-f]{64}$')`,messageExpression=`'"' + self + '" is not a manifest digest; write sha256: and 64 lower-case hex digits'`
	Digest string `json:"digest,omitempty"`

	// Interval is how often the tag is resolved (one manifest HEAD
	// request), as a duration (e.g. 5m); required.
	// +kubebuilder:validation:MaxLength=1024
	// +kubebuilder:validation:XValidation:rule=`duration(self) > duration('0s')`,message=`interval must be positive, e.g. 5m`
	// +kubebuilder:validation:Type=string
	Interval *metav1.Duration `json:"interval,omitempty"`
}

// OCIAuth names files holding registry credentials, re-read on every poll.
// Set one of DockerConfigFile, PasswordFile (with Username) and TokenFile.
type OCIAuth struct {
	// DockerConfigFile is a file in ~/.docker/config.json format; the
	// entry under "auths" for the registry's host is used.
	DockerConfigFile string `json:"dockerConfigFile,omitempty"`
	// Username and PasswordFile are HTTP basic credentials.
	Username     string `json:"username,omitempty"`
	PasswordFile string `json:"passwordFile,omitempty"`
	// TokenFile holds a bearer token sent as is.
	TokenFile string `json:"tokenFile,omitempty"`
}

// SourceKind is which kind of place a source reads from.
type SourceKind string

// Source kinds.
const (
	SourceGit  SourceKind = "git"
	SourceOCI  SourceKind = "oci"
	SourceHelm SourceKind = "helm"
)

// Kind returns which kind of source s is: SourceHelm when its helm
// section is set, SourceOCI when its oci section is, SourceGit otherwise.
func (s Source) Kind() SourceKind {
	switch {
	case s.Helm != nil:
		return SourceHelm
	case s.OCI != nil:
		return SourceOCI
	}
	return SourceGit
}

// URL returns the source's URL, whatever its kind.
func (s Source) URL() string {
	switch {
	case s.Helm != nil:
		return s.Helm.URL
	case s.OCI != nil:
		return s.OCI.URL
	}
	return s.Git.URL
}

// gitSet reports whether any field of a git section is set.
func gitSet(g GitSource) bool {
	return g.URL != "" || g.Branch != "" || g.Tag != "" || g.Semver != "" || g.Commit != "" ||
		g.Interval != nil || g.Schedule != "" || g.Auth != nil || g.Verify != nil
}

var (
	ociDigestRE = regexp.MustCompile(`^sha256:[0-9a-f]{64}$`)
	// ociTagRE is the distribution spec's tag grammar.
	ociTagRE = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9._-]{0,127}$`)
	// ociRepoRE is the distribution spec's repository name grammar.
	ociRepoRE = regexp.MustCompile(`^[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*(?:/[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*)*$`)
)

// oci checks a source's oci section.
func (v *validator) oci(p string, o OCISource) {
	loopback := v.ociURL(p+".url", o.URL)
	v.exactlyOne(p, []groupField{{"tag", o.Tag}, {"semver", o.Semver}, {"digest", o.Digest}},
		"no version to follow; set one of tag, semver or digest",
		"keep exactly one of tag, semver and digest")
	if o.Tag != "" && !ociTagRE.MatchString(o.Tag) {
		v.errorf(p+".tag", "%q is not an OCI tag (letters, digits, '_', '.', '-', at most 128, not starting with '.' or '-')", o.Tag)
	}
	if o.Semver != "" {
		v.semverRange(p+".semver", o.Semver)
	}
	if o.Digest != "" && !ociDigestRE.MatchString(o.Digest) {
		v.errorf(p+".digest", "%q is not a manifest digest; write sha256: and 64 lower-case hex digits", o.Digest)
	}
	v.requiredInterval(p+".interval", o.Interval, "how often the tag is resolved, each poll one manifest request", "5m")
	v.ociAuth(p+".auth", o, loopback)
}

// ociURL checks an oci:// URL and reports whether its host is loopback.
// Problems never repeat the URL, which may embed a secret.
func (v *validator) ociURL(field, raw string) (loopback bool) {
	const form = "write oci://host[:port]/repository, e.g. oci://ghcr.io/org/manifests"
	if raw == "" {
		v.errorf(field, "url is required; %s", form)
		return false
	}
	u, err := url.Parse(raw)
	switch {
	case err != nil:
		v.errorf(field, "the URL is not valid; %s", form)
		return false
	case u.Scheme != "oci":
		v.errorf(field, "the URL scheme must be oci; %s", form)
		return false
	case u.User != nil:
		v.errorf(field, "the URL embeds credentials; remove them and set auth instead")
		return false
	case u.Host == "" || u.RawQuery != "" || u.Fragment != "":
		v.errorf(field, "the URL needs a host and no query; %s", form)
		return false
	}
	repo := strings.TrimPrefix(u.Path, "/")
	if strings.ContainsAny(repo, ":@") {
		v.errorf(field, "the URL names a tag or digest; put it in tag, semver or digest, not in the URL")
	} else if !ociRepoRE.MatchString(repo) {
		v.errorf(field, "the repository %q is not a valid OCI repository name (lower-case letters, digits, separators '.', '_', '-', '/'); %s", repo, form)
	}
	host := u.Hostname()
	ip := net.ParseIP(host)
	return host == "localhost" || (ip != nil && ip.IsLoopback())
}

// ociAuth checks a source's oci credentials: one kind at a time, and none
// sent over plain HTTP to a registry that is not on loopback.
func (v *validator) ociAuth(p string, o OCISource, loopback bool) {
	a := o.Auth
	if a == nil {
		return
	}
	set := v.exactlyOne(p, []groupField{{"dockerConfigFile", a.DockerConfigFile}, {"passwordFile", a.PasswordFile}, {"tokenFile", a.TokenFile}},
		"auth sets no credentials; set dockerConfigFile, username with passwordFile, or tokenFile, or remove auth",
		"keep one kind of credentials")
	if (a.Username != "") != (a.PasswordFile != "") {
		v.errorf(p+".username", "username and passwordFile go together (HTTP basic auth); set both or neither")
	}
	if o.Insecure && !loopback && len(set) > 0 {
		v.errorf(p, "credentials would be sent unencrypted: insecure (plain HTTP) is set for a registry that is not on loopback; use TLS (caFile for a private CA)")
	}
}

// ociSource checks a source whose oci section is set: no git section
// beside it.
func (v *validator) ociSource(p string, s Source) {
	if gitSet(s.Git) {
		v.errorf(p+".git", "git and oci are both set; a source reads from one place: keep one")
	}
	v.oci(p+".oci", *s.OCI)
}

// ociFiles makes the OCI file names relative to the config absolute.
func (o *OCISource) resolveFiles(abs func(*string)) {
	abs(&o.CAFile)
	if o.Auth != nil {
		abs(&o.Auth.DockerConfigFile)
		abs(&o.Auth.PasswordFile)
		abs(&o.Auth.TokenFile)
	}
}

// requiredInterval checks the poll interval of a source kind that has no
// default: set, and positive. what says what the interval paces.
func (v *validator) requiredInterval(field string, d *metav1.Duration, what, example string) {
	switch {
	case d == nil:
		v.errorf(field, "interval is required: %s, e.g. %s", what, example)
	case d.Duration <= 0:
		v.errorf(field, "interval must be positive, e.g. %s; got %s", example, d.Duration)
	}
}
