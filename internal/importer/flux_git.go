package importer

import (
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"syncd.dev/syncd/internal/api/v1alpha1"
	"syncd.dev/syncd/internal/config"
)

// defaultInterval is the polling interval of a source whose imported
// object sets none.
const defaultInterval = 5 * time.Minute

// fluxDefaultBranch is the branch a GitRepository without spec.ref
// follows.
const fluxDefaultBranch = "master"

// gitRepository maps a Flux GitRepository onto a GitSource of the same
// name.
func (im *importer) gitRepository(d Document) {
	spec := im.fields(d, "spec")
	url, hadCredentials := withoutCredentials(spec.str("url"))
	src := &v1alpha1.GitSource{
		TypeMeta:   typeMeta(v1alpha1.KindGitSource),
		ObjectMeta: im.objectMeta(d, d.Object.GetName()),
		Spec:       v1alpha1.GitSourceSpec{URL: url},
	}
	src.Spec.GitRef = fluxGitRef(spec.sub("ref"))
	src.Spec.Interval = spec.duration("interval")
	if src.Spec.Interval == nil {
		spec.im.warn(d, "spec.interval", "not set: the GitSource polls every %s", defaultInterval)
		src.Spec.Interval = &metav1.Duration{Duration: defaultInterval}
	}
	src.Spec.SecretRef = gitSecretRef(spec, src.Spec.URL)
	if hadCredentials {
		im.moveCredentials(d, spec.field("url"), source{kind: v1alpha1.KindGitSource, namespace: src.Namespace, name: src.Name, url: url}, &src.Spec.SecretRef)
	}
	src.Spec.Verify = gitVerify(spec.sub("verify"), src.Spec.GitRef)
	gitRepositoryUnmapped(spec)
	spec.done()
	if im.claim(d, v1alpha1.KindGitSource, src.ObjectMeta) {
		im.res.GitSources = append(im.res.GitSources, src)
	}
}

// fluxGitRef maps spec.ref, in Flux's order of precedence (commit, name,
// semver, tag, branch); syncd follows exactly one.
func fluxGitRef(ref *fields) config.GitRef {
	commit, name, semver, tag, branch := ref.str("commit"), ref.str("name"), ref.str("semver"), ref.str("tag"), ref.str("branch")
	var r config.GitRef
	switch {
	case commit != "":
		r.Commit = commit
		if branch != "" {
			ref.warn("branch", "ignored: the commit is pinned (Flux fetches the branch to find it; syncd fetches the commit)")
		}
	case name != "":
		r = gitRefName(ref, name)
	case semver != "":
		r.Semver = semver
	case tag != "":
		r.Tag = tag
	case branch != "":
		r.Branch = branch
	default:
		ref.im.warn(ref.d, ref.path, "not set: Flux follows branch %q, and so does the GitSource (check that this is the branch you mean)", fluxDefaultBranch)
		r.Branch = fluxDefaultBranch
	}
	ref.done()
	return r
}

// gitRefName maps spec.ref.name, a full Git reference.
func gitRefName(ref *fields, name string) config.GitRef {
	switch {
	case strings.HasPrefix(name, "refs/heads/"):
		return config.GitRef{Branch: strings.TrimPrefix(name, "refs/heads/")}
	case strings.HasPrefix(name, "refs/tags/"):
		return config.GitRef{Tag: strings.TrimPrefix(name, "refs/tags/")}
	}
	ref.warn("name", "%q is neither a branch (refs/heads/) nor a tag (refs/tags/), which is all syncd follows; the GitSource follows branch %q instead: set the branch, tag or commit you mean", name, fluxDefaultBranch)
	return config.GitRef{Branch: fluxDefaultBranch}
}

// gitSecretRef maps spec.secretRef. Flux keeps an HTTPS password in key
// password; syncd reads key token.
func gitSecretRef(spec *fields, url string) *v1alpha1.LocalObjectReference {
	name := spec.sub("secretRef").str("name")
	if name == "" {
		return nil
	}
	if strings.HasPrefix(url, "http://") || strings.HasPrefix(url, "https://") {
		spec.warn("secretRef", "syncd reads the password or token from key %s of Secret %s (Flux reads key password; key username is read by both): add key %s with the same value", v1alpha1.SecretKeyToken, name, v1alpha1.SecretKeyToken)
	}
	return &v1alpha1.LocalObjectReference{Name: name}
}

// gitVerify maps spec.verify: mode HEAD and Tag are syncd's head and
// tag; the keys are read from key keys of the same Secret.
func gitVerify(v *fields, ref config.GitRef) *v1alpha1.GitVerify {
	if v.m == nil {
		return nil
	}
	mode := strings.ToLower(v.str("mode"))
	switch mode {
	case "", "head":
		mode = config.VerifyHead
	case "tag":
		if ref.Tag == "" && ref.Semver == "" {
			v.warn("mode", "Tag verifies the tag being followed, but the GitSource follows a branch or a commit: syncd refuses that, so the GitSource verifies the commit (head)")
			mode = config.VerifyHead
		}
	case "tagandhead":
		v.warn("mode", "TagAndHEAD has no single syncd mode: the GitSource verifies the commit (head); use tag to verify the tag instead")
		mode = config.VerifyHead
	}
	name := v.sub("secretRef").str("name")
	if name != "" {
		v.warn("secretRef", "syncd reads the armored public keys from key %s of Secret %s (Flux reads every key): put them all in key %s", v1alpha1.SecretKeyKeys, name, v1alpha1.SecretKeyKeys)
	}
	if p := v.str("provider"); p != "" && !strings.EqualFold(p, "openpgp") {
		v.warn("provider", "%q: only OpenPGP signatures are verified (no cosign or notation)", p)
	}
	v.done()
	return &v1alpha1.GitVerify{Mode: mode, SecretRef: v1alpha1.LocalObjectReference{Name: name}}
}

// gitRepositoryUnmapped warns about a GitRepository's fields syncd has
// no equivalent of.
func gitRepositoryUnmapped(spec *fields) {
	spec.none("suspend", "a GitSource cannot be suspended; suspend its Apps (spec.suspend) instead")
	spec.none("timeout", "syncd bounds each fetch itself; there is no per-source timeout")
	cloudProvider(spec, "put a token or an SSH key in the Secret named by secretRef")
	spec.none("proxySecretRef", "no per-source proxy: syncd uses the HTTPS_PROXY of its environment")
	spec.none("ignore", "an App renders one directory of the tree; there are no ignore patterns (files outside the App's path are not read)")
	spec.none("include", "no include of other repositories: make each repository a GitSource of its own")
	spec.none("recurseSubmodules", "submodules are not fetched")
	spec.none("sparseCheckout", "the whole tree is fetched; the App's path selects the directory")
}

// cloudProvider warns about spec.provider when it names a cloud's
// workload identity (aws, azure, gcp, github), which syncd does not
// support; generic, Flux's default, is what syncd does, and is not
// warned about. advice says where the credentials go instead.
func cloudProvider(spec *fields, advice string) {
	p := spec.str("provider")
	if p == "" || p == fluxGenericProvider {
		return
	}
	spec.warn("provider", "%q: cloud workload identity is not supported: %s", p, advice)
}

// fluxGenericProvider is Flux's default provider: credentials from the
// Secret named by secretRef, as syncd reads them.
const fluxGenericProvider = "generic"

// duration reads a Go duration at key ("5m", "1h0m0s").
func (f *fields) duration(key string) *metav1.Duration {
	s := f.str(key)
	if s == "" {
		return nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d <= 0 {
		f.warn(key, "%q is not a positive duration; not imported", s)
		return nil
	}
	return &metav1.Duration{Duration: d}
}
