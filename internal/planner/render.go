package planner

import (
	"context"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"

	"sigs.k8s.io/kustomize/api/konfig"
	"sigs.k8s.io/kustomize/api/resource"

	"syncd.dev/syncd/internal/decrypt"
)

// Tree names what Render reads: an app's directory and the tree a
// kustomize build may read from.
type Tree struct {
	// Root is the top of what a kustomize build may read: the revision's
	// checkout for a Git source, the enclosing repository for a local
	// directory (see LocalTree). Empty means Dir: nothing outside the app
	// directory may be read.
	Root string
	// Dir is the app's directory: Root or a directory below it.
	Dir string
	// Helm says how a chart in Dir (a Dir holding Chart.yaml) is rendered.
	Helm HelmOptions
	// Decryption holds the app's keys for SOPS-encrypted files (see
	// decrypt.go); nil refuses every such file. The keys never enter
	// the file system a build reads.
	Decryption *decrypt.Keys
	// Content names what Root holds by its content, when that is known
	// (the Git tree hash of a revision's checkout; empty for a local
	// directory): two trees of equal Content, Dir at the same place in
	// them, render alike.
	Content string
}

// LocalTree is the Tree of a local directory (syncd's --path): Root is
// the working tree of the Git repository dir is in, found by walking up
// to the nearest directory holding .git (a directory, or a file for
// worktrees and submodules), or dir itself when it is not in a repository.
func LocalTree(dir string) (Tree, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return Tree{}, fmt.Errorf("%s: %w", dir, err)
	}
	if resolved, err := filepath.EvalSymlinks(abs); err == nil {
		abs = resolved
	}
	for d := abs; ; d = filepath.Dir(d) {
		if _, err := os.Lstat(filepath.Join(d, ".git")); err == nil {
			return Tree{Root: d, Dir: abs}, nil
		}
		if filepath.Dir(d) == d {
			return Tree{Root: abs, Dir: abs}, nil
		}
	}
}

// resolved returns the tree with both paths absolute and free of
// symlinks, and the app directory's slash-separated path relative to Root
// ("." for Root itself).
func (t Tree) resolved() (Tree, string, error) {
	if t.Root == "" {
		t.Root = t.Dir
	}
	for _, p := range []*string{&t.Root, &t.Dir} {
		real, err := realPath(*p)
		if err != nil {
			return t, "", fmt.Errorf("%s: read manifests: %w", *p, err)
		}
		*p = real
	}
	rel, err := filepath.Rel(t.Root, t.Dir)
	if inside, _ := within(t.Root, t.Dir); err != nil || !inside {
		return t, "", fmt.Errorf("%s: read manifests: the app directory is not inside the repository root %s", t.Dir, t.Root)
	}
	return t, filepath.ToSlash(rel), nil
}

// realPath returns p absolute and free of symlinks.
func realPath(p string) (string, error) {
	abs, err := filepath.Abs(p)
	if err != nil {
		return "", err
	}
	return filepath.EvalSymlinks(abs)
}

// KustomizeTimeout is how long one kustomize build may run (less when the
// caller's context ends sooner); the checks before it have the same limit.
// Time spent waiting for other apps' builds does not count. A build that
// runs longer fails with the kustomization named, and its next file read
// fails too.
const KustomizeTimeout = 60 * time.Second

// buildTimeout is KustomizeTimeout; tests shorten it.
var buildTimeout = KustomizeTimeout

// buildDeadline is when a build (or its checks) starting now must end.
func buildDeadline(ctx context.Context) time.Time {
	deadline := time.Now().Add(buildTimeout)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	return deadline
}

// Render reads the manifests of t.Dir. When it holds a kustomization
// (kustomization.yaml, kustomization.yml or Kustomization) it is built
// with kustomize's krusty; otherwise the YAML and JSON files below t.Dir
// (and nothing else) are read with ReadDir.
//
// A kustomization is built safely (see buildKustomization and
// docs/kustomize.md): the build reads through a read-only file system
// confined to t.Root, sees the repository at the virtual path /syncd-repo (file
// names in errors and origins are relative to t.Root), runs only
// kustomize's built-in generators and transformers, inflates no Helm
// charts, fetches nothing over the network, and stops after
// KustomizeTimeout. Before the build every kustomization it reaches is
// checked: remote references, absolute paths, paths leaving t.Root,
// missing targets, cycles, Helm, plugins and KRM functions are refused
// with the kustomization file and field named. A panic in kustomize is
// this render's error.
//
// Files SOPS encrypted (YAML and JSON manifests, and every file a
// kustomize build reads: resources, patches, generators' envs and files)
// are decrypted in memory as they are read, with t.Decryption; a file
// that cannot be decrypted fails the render with the file named (see
// decrypt.go). The returned manifests name the fields that hold decrypted
// values (Manifest.Decrypted).
//
// Errors are ManifestErrors, except a directory that cannot be read.
func Render(ctx context.Context, t Tree) ([]Manifest, error) {
	t, rel, err := t.resolved()
	if err != nil {
		return nil, err
	}
	if IsChart(t.Dir) {
		return renderHelm(ctx, t, rel)
	}
	sec := newSecrets(t.Decryption)
	if kustomizationFile(t.Dir) == "" {
		ms, err := readDir(t.Dir, sec)
		if err != nil {
			return nil, err
		}
		sec.mark(ms)
		return ms, nil
	}
	return buildKustomization(ctx, t.Root, rel, sec)
}

// IsKustomization reports whether dir holds a kustomization file (one of
// the names kustomize recognises), as IsChart does for Chart.yaml.
func IsKustomization(dir string) bool { return kustomizationFile(dir) != "" }

// kustomizationFile returns the name of the kustomization file in dir, or
// "" when there is none.
func kustomizationFile(dir string) string {
	for _, name := range konfig.RecognizedKustomizationFileNames() {
		if info, err := os.Stat(filepath.Join(dir, name)); err == nil && !info.IsDir() {
			return name
		}
	}
	return ""
}

// buildKustomization checks and builds the kustomization in the directory
// rel of root.
func buildKustomization(ctx context.Context, root, rel string, sec *secrets) ([]Manifest, error) {
	fsys, err := openRepoFS(root, buildDeadline(ctx))
	if err != nil {
		return nil, fmt.Errorf("%s: read manifests: %w", root, err)
	}
	defer fsys.Close()
	fsys.secrets = sec
	dir := path.Join(repoRoot, rel)
	seen := inspectKustomizations(fsys, dir)
	if len(seen.errs) > 0 {
		return nil, seen.errs
	}
	return runBuild(ctx, fsys, dir, seen.namespaces)
}

// runBuild builds dir with kustomize (see kustomize.go) and turns its
// output into Manifests named after the files they came from (see
// kustorigin.go), marking the namespaces that setters set (see
// kustnamespace.go).
func runBuild(ctx context.Context, fsys *repoFS, dir string, setters namespaceSetters) ([]Manifest, error) {
	file := kustomizationIn(fsys, dir)
	out := buildOutput{dir: dir, top: repoRel(file), setters: setters, origins: serveTracked(fsys, file)}
	resMap, err := kustomize(ctx, fsys, dir)
	if err != nil {
		return nil, ManifestErrors{{File: out.top, Err: fsys.secrets.mask(err)}}
	}
	var ms []Manifest
	var errs ManifestErrors
	for i, r := range resMap.Resources() {
		m, err := out.manifest(r, i+1)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		ms = append(ms, m)
	}
	if len(errs) > 0 {
		return nil, errs
	}
	fsys.secrets.mark(ms)
	return ms, nil
}

// serveTracked makes fsys serve the kustomization file with origin
// tracking turned on (see kustorigin.go), and returns what was done. A
// file it cannot read is served as it is: the build reports why.
func serveTracked(fsys *repoFS, file string) originTracking {
	data, err := fsys.ReadFile(file)
	if err != nil {
		return originTracking{}
	}
	t := trackOrigins(data)
	if t.content != nil {
		fsys.served = map[string][]byte{file: t.content}
	}
	return t
}

// buildOutput turns one build's output objects into Manifests.
type buildOutput struct {
	dir     string // the built directory, below repoRoot
	top     string // its kustomization file, relative to the repository root
	setters namespaceSetters
	origins originTracking
}

// manifest is the Manifest of the object at position pos (1-based) of
// the build's output. It is named after the file the object came from
// (Index 0: kustomize's origin names no document), or after the top
// kustomization and the position when that is unknown.
func (b buildOutput) manifest(r *resource.Resource, pos int) (Manifest, *ManifestError) {
	file, index := b.top, pos
	if src := sourceOf(r, b.dir); src != "" {
		file, index = src, 0
	}
	if !b.origins.keep {
		if err := r.SetOrigin(nil); err != nil {
			return Manifest{}, &ManifestError{File: file, Index: index, Object: resourceName(r), Err: fmt.Errorf("kustomize output: remove the origin annotation: %w", err)}
		}
	}
	doc, err := r.AsYAML()
	if err != nil {
		return Manifest{}, &ManifestError{File: file, Index: index, Object: resourceName(r), Err: fmt.Errorf("kustomize output: %w", withholdYAMLQuotes(err))}
	}
	obj, err := decodeDocument(doc)
	if err != nil {
		return Manifest{}, &ManifestError{File: file, Index: index, Object: describe(obj), Err: err}
	}
	markSetNamespace(obj, b.setters)
	return Manifest{File: file, Index: index, Object: obj}, nil
}

// repoRel turns a path of the build's file system into one relative to
// the repository root.
func repoRel(p string) string {
	if p == repoRoot {
		return "."
	}
	return strings.TrimPrefix(p, repoRoot+"/")
}

// trimRepoRoot removes the virtual root from a message kustomize wrote.
func trimRepoRoot(msg string) string {
	msg = strings.ReplaceAll(msg, repoRoot+"/", "")
	return strings.ReplaceAll(msg, repoRoot, ".")
}
