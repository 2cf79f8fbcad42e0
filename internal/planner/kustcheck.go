package planner

import (
	"fmt"
	"path"
	"regexp"
	"strings"

	"sigs.k8s.io/kustomize/api/konfig"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/api/types"
	"sigs.k8s.io/yaml"
)

// kustomizationDoc is a kustomization as kustomize itself decodes it
// (types.Kustomization, the schema kustomize builds from), so that the
// checks read every field that names a file, a directory or a URL exactly
// as the build will. refs lists those fields.
type kustomizationDoc types.Kustomization

// ref is one path a kustomization names, with the field it is in.
type ref struct {
	field string // "configMapGenerator[0].files[1]"
	entry string // as written
	path  string // the part that is a path ("k=v" files: after "=")
	kind  refKind
}

type refKind int

const (
	refFile   refKind = iota // a file that must exist
	refBase                  // a file, or a directory holding a kustomization
	refPlugin                // generators, transformers, validators: inline, a file or a kustomization
	refInline                // patchesStrategicMerge: a file or an inline patch
)

// refs lists every path the kustomization names.
func (k kustomizationDoc) refs() []ref {
	var out []ref
	add := func(field, entry, path string, kind refKind) {
		out = append(out, ref{field: field, entry: entry, path: path, kind: kind})
	}
	for _, l := range []struct {
		field   string
		entries []string
		kind    refKind
	}{
		{"resources", k.Resources, refBase}, {"bases", k.Bases, refBase}, {"components", k.Components, refBase},
		{"crds", k.Crds, refFile}, {"configurations", k.Configurations, refFile},
		{"generators", k.Generators, refPlugin}, {"transformers", k.Transformers, refPlugin}, {"validators", k.Validators, refPlugin},
	} {
		for i, e := range l.entries {
			add(fmt.Sprintf("%s[%d]", l.field, i), e, e, l.kind)
		}
	}
	for i, p := range k.PatchesStrategicMerge {
		add(fmt.Sprintf("patchesStrategicMerge[%d]", i), string(p), string(p), refInline)
	}
	if p, ok := k.OpenAPI["path"]; ok {
		add("openapi.path", p, p, refFile)
	}
	for _, pf := range []struct {
		field   string
		patches []types.Patch
	}{{"patches", k.Patches}, {"patchesJson6902", k.PatchesJson6902}} {
		for i, p := range pf.patches {
			if p.Path != "" {
				add(fmt.Sprintf("%s[%d].path", pf.field, i), p.Path, p.Path, refFile)
			}
		}
	}
	for i, r := range k.Replacements {
		if r.Path != "" {
			add(fmt.Sprintf("replacements[%d].path", i), r.Path, r.Path, refFile)
		}
	}
	for i, g := range k.ConfigMapGenerator {
		out = append(out, sourceRefs(fmt.Sprintf("configMapGenerator[%d]", i), g.KvPairSources)...)
	}
	for i, g := range k.SecretGenerator {
		out = append(out, sourceRefs(fmt.Sprintf("secretGenerator[%d]", i), g.KvPairSources)...)
	}
	return out
}

// sourceRefs lists the files the key/value sources of the generator in
// field name.
func sourceRefs(field string, s types.KvPairSources) []ref {
	var out []ref
	for j, f := range s.FileSources {
		p := f
		if _, after, ok := strings.Cut(f, "="); ok {
			p = after // key=path
		}
		out = append(out, ref{field: fmt.Sprintf("%s.files[%d]", field, j), entry: f, path: p, kind: refFile})
	}
	for j, e := range s.EnvSources {
		out = append(out, ref{field: fmt.Sprintf("%s.envs[%d]", field, j), entry: e, path: e, kind: refFile})
	}
	if s.EnvSource != "" {
		out = append(out, ref{field: field + ".env", entry: s.EnvSource, path: s.EnvSource, kind: refFile})
	}
	return out
}

// maxKustomizationDepth bounds how deeply kustomizations may include each
// other (a symlink loop could otherwise look like an endless chain).
const maxKustomizationDepth = 64

// checkKustomizations refuses what Render does not build, before
// kustomize sees it, for the kustomization in dir and every kustomization
// it reaches: remote references, absolute paths, paths leaving the
// repository (through ".." or a symlink), missing targets, cycles, Helm,
// and generators, transformers and validators that are not kustomize
// built-ins or ask for KRM functions. Every error names the kustomization
// file and the field.
func checkKustomizations(fsys *repoFS, dir string) ManifestErrors {
	return inspectKustomizations(fsys, dir).errs
}

// inspectKustomizations visits the kustomization in dir and every
// kustomization it reaches, checking each (checkKustomizations) and
// noting what the build needs to know of them.
func inspectKustomizations(fsys *repoFS, dir string) *checker {
	c := &checker{fsys: fsys, done: map[string]bool{}, namespaces: namespaceSetters{}}
	c.visit(dir, nil)
	return c
}

type checker struct {
	fsys *repoFS
	done map[string]bool
	errs ManifestErrors
	// deprecated are kustomize's warnings about the deprecated fields
	// each kustomization visited uses (see KustomizeWarnings).
	deprecated []Warning
	// namespaces are the namespace: fields of the kustomizations
	// visited (see kustnamespace.go).
	namespaces namespaceSetters
}

// visit checks the kustomization in dir and those it reaches. stack holds
// the kustomization directories that led here.
func (c *checker) visit(dir string, stack []string) {
	for i, d := range stack {
		if d == dir {
			var chain []string
			for _, s := range append(stack[i:], dir) {
				chain = append(chain, repoRel(kustomizationIn(c.fsys, s)))
			}
			c.add(kustomizationIn(c.fsys, stack[len(stack)-1]), "kustomizations form a cycle: %s: remove one of the references", strings.Join(chain, " -> "))
			return
		}
	}
	if c.done[dir] {
		return
	}
	c.done[dir] = true
	file := kustomizationIn(c.fsys, dir)
	if file == "" {
		c.add(kustomizationLink(c.fsys, dir), "cannot be read: it is a symlink that leads out of the repository, or a broken one; commit the file itself")
		return
	}
	if len(stack) >= maxKustomizationDepth {
		c.add(file, "kustomizations include each other more than %d levels deep: look for a symlink loop", maxKustomizationDepth)
		return
	}
	data, err := c.fsys.ReadFile(file)
	if err != nil {
		c.add(file, "%s", trimRepoRoot(err.Error()))
		return
	}
	var k kustomizationDoc
	if err := yaml.Unmarshal(data, &k); err != nil {
		c.add(file, "invalid kustomization: %v", err)
		return
	}
	c.noteDeprecated(file, k)
	c.namespaces.note(k.Namespace, file)
	if len(k.HelmCharts) > 0 || len(k.HelmChartInflationGenerator) > 0 || k.HelmGlobals != nil {
		c.add(file, "helmCharts: Helm chart inflation is disabled: render the chart into plain manifests and commit them")
	}
	for _, r := range k.refs() {
		for _, next := range c.checkRef(file, dir, r) {
			c.visit(next, append(stack[:len(stack):len(stack)], dir))
		}
	}
}

// noteDeprecated records kustomize's own warning for each deprecated field
// the kustomization in file uses ('bases', 'commonLabels',
// 'patchesStrategicMerge', ...), naming the file, which kustomize's
// message does not.
func (c *checker) noteDeprecated(file string, k kustomizationDoc) {
	tk := types.Kustomization(k)
	msgs := tk.CheckDeprecatedFields()
	if msgs == nil {
		return
	}
	for _, msg := range *msgs {
		c.deprecated = append(c.deprecated, Warning{Object: repoRel(file), Message: strings.TrimPrefix(msg, "# Warning: ")})
	}
}

func (c *checker) add(file, format string, args ...any) {
	c.errs = append(c.errs, &ManifestError{File: repoRel(file), Err: fmt.Errorf(format, args...)})
}

// checkRef checks one reference of the kustomization file in dir and
// returns the kustomization directories it leads to.
func (c *checker) checkRef(file, dir string, r ref) []string {
	bad := func(format string, args ...any) []string {
		sep := " "
		if strings.HasPrefix(format, ":") {
			sep = ""
		}
		c.add(file, "%s: %q"+sep+format, append([]any{r.field, r.entry}, args...)...)
		return nil
	}
	inline := strings.Contains(r.entry, "\n") || strings.HasPrefix(strings.TrimSpace(r.entry), "{")
	if r.kind == refPlugin && inline {
		if msg := checkPluginConfig([]byte(r.entry)); msg != "" {
			c.add(file, "%s: inline configuration: %s", r.field, msg)
		}
		return nil
	}
	if r.kind == refInline && inline {
		return nil
	}
	if inGitDir(path.Clean(r.path)) {
		return bad("is inside .git: Git's own files (which may hold credentials) are not manifests")
	}
	if isRemote(r.entry) || isRemote(r.path) {
		return bad("is a remote reference, which is refused (a render fetches nothing over the network): vendor it into the repository and reference it by a relative path")
	}
	if path.IsAbs(r.path) {
		return bad("is an absolute path: use a path relative to the kustomization")
	}
	target := path.Join(dir, r.path)
	if target != repoRoot && !strings.HasPrefix(target, repoRoot+"/") {
		return bad("leaves the repository: a kustomization may use anything inside the repository, nothing outside it")
	}
	info, err := c.fsys.stat(target)
	if err != nil {
		if strings.Contains(err.Error(), "leads out of the repository") {
			return bad("leads out of the repository through a symlink: copy what it points at into the repository")
		}
		return bad("does not exist (looked for %s)", repoRel(target))
	}
	if !info.IsDir() {
		if r.kind == refPlugin {
			data, err := c.fsys.ReadFile(target)
			if err != nil {
				return bad(": %s", trimRepoRoot(err.Error()))
			}
			if msg := checkPluginConfig(data); msg != "" {
				return bad(": %s", msg)
			}
		}
		return nil
	}
	if r.kind != refBase && r.kind != refPlugin {
		return bad("is a directory; the field takes a file")
	}
	if kustomizationIn(c.fsys, target) == "" {
		return bad("is a directory without a kustomization.yaml")
	}
	return []string{target}
}

// kustomizationIn returns the path of the kustomization file in dir of
// fsys, or "" when there is none.
func kustomizationIn(fsys *repoFS, dir string) string {
	for _, name := range konfig.RecognizedKustomizationFileNames() {
		p := path.Join(dir, name)
		if info, err := fsys.stat(p); err == nil && !info.IsDir() {
			return p
		}
	}
	return ""
}

// kustomizationLink returns the path of the first kustomization file name
// in dir that exists as a directory entry (it may be a symlink that cannot
// be followed), or the default name.
func kustomizationLink(fsys *repoFS, dir string) string {
	names := konfig.RecognizedKustomizationFileNames()
	for _, name := range names {
		p := path.Join(dir, name)
		if rel, err := fsys.rel(p); err == nil {
			if _, err := fsys.root.Lstat(rel); err == nil {
				return p
			}
		}
	}
	return path.Join(dir, names[0])
}

// scpLike matches git's user@host:path addresses.
var scpLike = regexp.MustCompile(`^[A-Za-z0-9._-]+@[A-Za-z0-9._-]+:`)

// isRemote reports whether a kustomization entry names something kustomize
// would fetch over the network: a URL, a Git repository address (git::,
// gh:, user@host:path, a .git suffix, a ?ref= query) or a go-getter style
// address on a well-known host.
func isRemote(entry string) bool {
	e := strings.ToLower(strings.TrimSpace(entry))
	if strings.Contains(e, "://") || strings.HasPrefix(e, "git::") || strings.HasPrefix(e, "gh:") || scpLike.MatchString(e) ||
		strings.Contains(e, "?ref=") || strings.Contains(e, "?version=") || strings.Contains(e, ".git/") || strings.HasSuffix(e, ".git") ||
		strings.Contains(e, "?timeout=") || strings.Contains(e, "?submodules=") {
		return true
	}
	for _, host := range []string{"github.com/", "gitlab.com/", "bitbucket.org/", "dev.azure.com/"} {
		if strings.HasPrefix(e, host) {
			return true
		}
	}
	return false
}

// builtinPlugins are the generator and transformer kinds kustomize runs
// in-process.
var builtinPlugins = func() map[string]bool {
	out := map[string]bool{}
	for _, n := range krusty.GetBuiltinPluginNames() {
		out[n] = true
	}
	return out
}()

// checkPluginConfig refuses generator, transformer or validator
// configurations that are not kustomize built-ins or that ask for a KRM
// function. It returns "" when every document is acceptable.
func checkPluginConfig(data []byte) string {
	for _, d := range strings.Split(string(data), "\n---") {
		var cfg struct {
			Kind     string `json:"kind"`
			Metadata struct {
				Annotations map[string]string `json:"annotations"`
			} `json:"metadata"`
		}
		if err := yaml.Unmarshal([]byte(d), &cfg); err != nil {
			return fmt.Sprintf("invalid plugin configuration: %v", err)
		}
		if cfg.Kind == "" {
			continue
		}
		for a := range cfg.Metadata.Annotations {
			if a == "config.kubernetes.io/function" || a == "config.k8s.io/function" {
				return fmt.Sprintf("%s asks for a KRM function (exec or container): plugins are disabled; commit the generated manifests instead", cfg.Kind)
			}
		}
		if cfg.Kind == "HelmChartInflationGenerator" {
			return fmt.Sprintf("%s: Helm chart inflation is disabled; render the chart and commit the output", cfg.Kind)
		}
		if !builtinPlugins[cfg.Kind] {
			return fmt.Sprintf("%s is not a kustomize built-in: exec, Go and container plugins are disabled; commit the generated manifests instead", cfg.Kind)
		}
	}
	return ""
}

// isKustomizationName reports whether name is one of the file names
// kustomize reads as a kustomization.
func isKustomizationName(name string) bool {
	for _, n := range konfig.RecognizedKustomizationFileNames() {
		if n == name {
			return true
		}
	}
	return false
}
