package importer

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
	"path"
	"regexp"
	"slices"
	"strings"

	"syncd.dev/syncd/internal/api/v1alpha1"
	"syncd.dev/syncd/internal/config"
)

// Patterns of Argo CD targetRevisions.
var (
	commitRE  = regexp.MustCompile(`^([0-9a-fA-F]{40}|[0-9a-fA-F]{64})$`)
	semverRE  = regexp.MustCompile(`[*^~<>=xX]|\s-\s|\|\|`)
	versionRE = regexp.MustCompile(`^v?[0-9]+(\.[0-9]+){1,2}([-+].*)?$`)
)

// argoDefaultBranch is the branch an Application following HEAD is
// taken to follow.
const argoDefaultBranch = "main"

// argoGitSource returns the name of the GitSource of a Git source's
// repository and revision, making it on first use.
func (im *importer) argoGitSource(d Document, s argoSource) string {
	ref := argoGitRef(s)
	ns := im.namespace(d)
	key := ns + " " + s.repoURL + "@" + ref.Branch + ref.Tag + ref.Semver + ref.Commit
	if made, ok := im.argoMade[key]; ok {
		im.argoCredentials(d, s, made)
		return made.src.name
	}
	name := im.repoSourceName(v1alpha1.KindGitSource, ns, s.repoURL, ref.Branch+ref.Tag+ref.Semver+ref.Commit)
	src := &v1alpha1.GitSource{
		TypeMeta:   typeMeta(v1alpha1.KindGitSource),
		ObjectMeta: im.objectMeta(d, name),
		Spec:       v1alpha1.GitSourceSpec{URL: s.repoURL, GitRef: ref},
	}
	src.Spec.Interval = mustDuration(argoDefaultInterval)
	made := argoMade{src: source{kind: v1alpha1.KindGitSource, namespace: ns, name: name, url: s.repoURL}, secretRef: &src.Spec.SecretRef}
	im.argoMade[key] = made
	im.taken[v1alpha1.KindGitSource+"/"+ns+"/"+name] = d.File
	im.res.GitSources = append(im.res.GitSources, src)
	im.argoSourceMade(d, s, made)
	return name
}

// argoMade is a source made from Argo CD sources, found again by
// repository (and revision): its name, and where its secretRef is.
type argoMade struct {
	src       source
	secretRef **v1alpha1.LocalObjectReference
}

// argoSourceMade warns that the source s became made, and where its
// credentials go: Argo CD finds them by URL, syncd by the source (the
// Secret it names, or the files of the syncd.yaml). Over ssh there are
// always credentials, an SSH key: the source names a Secret for them.
func (im *importer) argoSourceMade(d Document, s argoSource, made argoMade) {
	byURL := "Argo CD finds repository credentials by URL, syncd by the " + made.src.kind + "'s secretRef"
	if im.opts.Form == ConfigForm {
		byURL = "Argo CD finds repository credentials by URL, a syncd.yaml by the source's auth"
	}
	switch {
	case s.hadCredentials:
		im.argoCredentials(d, s, made)
	case made.src.kind == v1alpha1.KindGitSource && isSSHURL(made.src.url):
		secret := made.src.requireSecret(made.secretRef)
		im.warn(d, s.f.field("repoURL"), "became %s; %s, and over ssh it needs an SSH key: %s", im.sourceWords(made.src), byURL, im.credentialAdvice(made.src, secret))
	default:
		im.warn(d, s.f.field("repoURL"), "became %s; %s: for a private repository, %s", im.sourceWords(made.src), byURL, im.privateAdvice(made.src))
	}
}

// sourceWords names the source s in the output form: "GitSource ns/name",
// or "source name of the syncd.yaml".
func (im *importer) sourceWords(s source) string {
	if im.opts.Form == ConfigForm {
		return "source " + s.name + " of the syncd.yaml"
	}
	return s.kind + " " + s.namespace + "/" + s.name
}

// privateAdvice says how to give s credentials, should its repository
// be private.
func (im *importer) privateAdvice(s source) string {
	secret := s.authSecretName()
	if im.opts.Form == ConfigForm {
		return "put " + credentialFiles(s, path.Join(SecretsDir, secret))
	}
	return fmt.Sprintf("create Secret %s/%s with %s, and name it in spec.secretRef", s.namespace, secret, credentialKeys(s))
}

// argoCredentials moves the credentials s's repoURL held into the
// Secret of the source made of it.
func (im *importer) argoCredentials(d Document, s argoSource, made argoMade) {
	if s.hadCredentials {
		im.moveCredentials(d, s.f.field("repoURL"), made.src, made.secretRef)
	}
}

// argoGitRef maps targetRevision: HEAD (or none) is taken as branch
// main, a full hash is a commit, a range is a semver constraint, a
// version a tag, anything else a branch.
func argoGitRef(s argoSource) config.GitRef {
	rev := strings.TrimSpace(s.revision)
	switch {
	case rev == "" || rev == "HEAD":
		s.f.warn("targetRevision", "%q follows the repository's default branch, and syncd follows a named branch: the GitSource follows %q; change it if the default branch is another", rev, argoDefaultBranch)
		return config.GitRef{Branch: argoDefaultBranch}
	case commitRE.MatchString(rev):
		return config.GitRef{Commit: rev}
	case semverRE.MatchString(rev):
		return config.GitRef{Semver: rev}
	case versionRE.MatchString(rev):
		s.f.warn("targetRevision", "%q is taken as a tag (Argo CD resolves branches and tags alike); make it the GitSource's branch if it is one", rev)
		return config.GitRef{Tag: rev}
	case strings.HasPrefix(rev, "refs/"):
		s.f.warn("targetRevision", "%q is a full reference; the GitSource follows branch %q (change it to the branch or tag you mean)", rev, path.Base(rev))
		return config.GitRef{Branch: path.Base(rev)}
	}
	return config.GitRef{Branch: rev}
}

// repoSourceName names the source of kind of the repository url in ns
// followed at rev: the repository's name, then with the revision, then
// with a hash, whichever is free.
func (im *importer) repoSourceName(kind, ns, url, rev string) string {
	base := dnsLabel(strings.TrimSuffix(path.Base(strings.TrimRight(url, "/")), ".git"))
	if base == "" {
		base = "repo"
	}
	rev = dnsLabel(rev)
	sum := sha256.Sum256([]byte(url + "@" + rev))
	for _, name := range []string{base, base + "-" + rev, base + "-" + hex.EncodeToString(sum[:4])} {
		name = strings.TrimRight(truncate(name, 63), "-")
		if _, ok := im.taken[kind+"/"+ns+"/"+name]; !ok && name != "" {
			return name
		}
	}
	return base + "-" + hex.EncodeToString(sum[:8])
}

// dnsLabel makes s a lowercase DNS label (characters other than
// letters, digits and - become -).
func dnsLabel(s string) string {
	return strings.Trim(regexp.MustCompile(`[^a-z0-9-]+`).ReplaceAllString(strings.ToLower(s), "-"), "-")
}

// truncate cuts s to n bytes.
func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}

// argoKustomize warns about a source's kustomize section: its
// overrides belong in the kustomization.yaml.
func argoKustomize(k *fields) {
	for _, key := range slices.Sorted(maps.Keys(k.m)) {
		k.none(key, "write it in the kustomization.yaml of the App's path: syncd renders the directory as kustomize build does")
	}
}

// argoDirectory maps a source's directory section. syncd reads a plain
// directory recursively, and Argo CD only its top unless recurse is
// true (its default is false): the importer cannot see the repository,
// so it warns whenever the source may be a plain directory and recurse
// is not true.
func argoDirectory(s argoSource) {
	dir := s.f.sub("directory")
	if recurse, _ := dir.boolean("recurse"); !recurse && mayBePlainDirectory(s) {
		dir.warn("recurse", "%s: Argo CD applies only the manifests at the top of %s (recurse defaults to false), and syncd applies every manifest below it, subdirectories included: move subdirectories that must not be applied out of the App's path", plainDirectoryWhen(dir), pathWords(s.path))
	}
	dir.none("include", "syncd applies every manifest of the App's path; move the files that must not be applied out of it")
	dir.none("exclude", "syncd applies every manifest of the App's path; move the files that must not be applied out of it")
	dir.none("jsonnet", "Jsonnet is not rendered: render it into YAML in the repository")
	dir.done()
}

// mayBePlainDirectory reports whether Argo CD may render s as a plain
// directory: it is no chart and has no helm or kustomize section (what
// else decides, a kustomization.yaml or a Chart.yaml in the path, the
// importer cannot see).
func mayBePlainDirectory(s argoSource) bool {
	return s.chart == "" && !s.f.has("helm") && !s.f.has("kustomize")
}

// plainDirectoryWhen says when the recurse warning holds: always with a
// directory section, else if the path is a plain directory.
func plainDirectoryWhen(dir *fields) string {
	if dir.m != nil {
		return "not true"
	}
	return "not set, and if the path is a plain directory (no kustomization.yaml or Chart.yaml)"
}

// pathWords names a repository path in a warning.
func pathWords(p string) string {
	if p = treePath(p); p == "" {
		return "the repository root"
	}
	return p
}

// argoHelmSource returns the name of the HelmSource of a chart source's
// repository (repoURL; without a scheme, an OCI registry), making it on
// first use.
func (im *importer) argoHelmSource(d Document, s argoSource) string {
	url := s.repoURL
	if !strings.Contains(url, "://") {
		url = "oci://" + url
	}
	ns := im.namespace(d)
	key := ns + " helm " + url
	if made, ok := im.argoMade[key]; ok {
		im.argoCredentials(d, s, made)
		return made.src.name
	}
	name := dnsLabel(truncate(strings.TrimPrefix(strings.SplitN(strings.SplitN(url, "://", 2)[1], "/", 2)[0], "www."), 63))
	if _, taken := im.taken[v1alpha1.KindHelmSource+"/"+ns+"/"+name]; taken || name == "" {
		sum := sha256.Sum256([]byte(url))
		name = truncate(name, 50) + "-" + hex.EncodeToString(sum[:4])
	}
	im.taken[v1alpha1.KindHelmSource+"/"+ns+"/"+name] = d.File
	src := &v1alpha1.HelmSource{
		TypeMeta:   typeMeta(v1alpha1.KindHelmSource),
		ObjectMeta: im.objectMeta(d, name),
		Spec:       v1alpha1.HelmSourceSpec{URL: url, Interval: mustDuration(argoDefaultInterval)},
	}
	made := argoMade{src: source{kind: v1alpha1.KindHelmSource, namespace: ns, name: name, url: url}, secretRef: &src.Spec.SecretRef}
	im.argoMade[key] = made
	im.res.HelmSources = append(im.res.HelmSources, src)
	im.argoSourceMade(d, s, made)
	return name
}

// isOCIURL reports whether an Argo CD repoURL is an OCI registry's
// (oci://).
func isOCIURL(url string) bool {
	return strings.HasPrefix(strings.ToLower(url), "oci://")
}

// argoOCISource returns the name of the OCISource of an OCI source's
// repository and revision (repoURL oci://, no chart: an artifact of
// manifests), making it on first use.
func (im *importer) argoOCISource(d Document, s argoSource) string {
	ref := argoOCIRef(s)
	ns := im.namespace(d)
	key := ns + " oci " + s.repoURL + "@" + ref.Tag + ref.Semver + ref.Digest
	if made, ok := im.argoMade[key]; ok {
		im.argoCredentials(d, s, made)
		return made.src.name
	}
	name := im.repoSourceName(v1alpha1.KindOCISource, ns, s.repoURL, ref.Tag+ref.Semver+ref.Digest)
	src := &v1alpha1.OCISource{
		TypeMeta:   typeMeta(v1alpha1.KindOCISource),
		ObjectMeta: im.objectMeta(d, name),
		Spec:       v1alpha1.OCISourceSpec{URL: s.repoURL, OCIRef: ref},
	}
	src.Spec.Interval = mustDuration(argoDefaultInterval)
	made := argoMade{src: source{kind: v1alpha1.KindOCISource, namespace: ns, name: name, url: s.repoURL}, secretRef: &src.Spec.SecretRef}
	im.argoMade[key] = made
	im.taken[v1alpha1.KindOCISource+"/"+ns+"/"+name] = d.File
	im.res.OCISources = append(im.res.OCISources, src)
	s.f.warn("repoURL", "an OCI artifact: syncd extracts its one tar+gzip content layer (as flux push artifact, oras push of a .tar.gz or any image builder write it) and refuses an artifact of several")
	im.argoSourceMade(d, s, made)
	return name
}

// argoOCIRef maps the targetRevision of an OCI source: a digest, a
// semver range, or a tag; none (or HEAD) is tag latest.
func argoOCIRef(s argoSource) config.OCIRef {
	rev := strings.TrimSpace(s.revision)
	switch {
	case rev == "" || rev == "HEAD":
		s.f.warn("targetRevision", "%q: the OCISource follows tag latest; pin a tag, a semver range or a digest", rev)
		return config.OCIRef{Tag: "latest"}
	case strings.HasPrefix(rev, "sha256:"):
		return config.OCIRef{Digest: rev}
	case semverRE.MatchString(rev):
		return config.OCIRef{Semver: rev}
	}
	return config.OCIRef{Tag: rev}
}
