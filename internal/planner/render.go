package planner

import (
	"fmt"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"

	"sigs.k8s.io/kustomize/api/konfig"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/api/types"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"
)

// Render reads the manifests of dir. When dir holds a kustomization
// (kustomization.yaml, kustomization.yml or Kustomization) it is built with
// kustomize's krusty; otherwise the YAML and JSON files below dir are read
// with ReadDir.
//
// A kustomization is built safely: the directory is first copied into
// memory (so the build cannot read anything outside it, and symlinks out of
// it are errors), loading is restricted to the directory, only kustomize's
// built-in generators and transformers run (no exec, Go or container
// plugins, no KRM functions), Helm inflation is off, and remote resources,
// bases and components are refused before the build starts. Missing
// targets, references leaving the directory and cycles between
// kustomizations are errors naming the kustomization file.
//
// Errors are ManifestErrors.
func Render(dir string) ([]Manifest, error) {
	if kustomizationFile(dir) == "" {
		return ReadDir(dir)
	}
	files, errs, err := walkTree(dir)
	if err != nil {
		return nil, err
	}
	if len(errs) > 0 {
		return nil, errs
	}
	return buildKustomization(files)
}

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

// memRoot is where the app directory lives in the in-memory file system.
const memRoot = "/app"

func buildKustomization(files []treeFile) ([]Manifest, error) {
	fsys := filesys.MakeFsInMemory()
	var total int64
	for _, f := range files {
		total += f.size
		if total > MaxTreeSize {
			return nil, ManifestErrors{{File: f.rel, Err: fmt.Errorf("the app directory is larger than the %d MiB limit for kustomizations: move unrelated files out of it", MaxTreeSize>>20)}}
		}
		data, err := f.read()
		if err != nil {
			return nil, ManifestErrors{{File: f.rel, Err: err}}
		}
		if err := fsys.WriteFile(path.Join(memRoot, f.rel), data); err != nil {
			return nil, ManifestErrors{{File: f.rel, Err: fmt.Errorf("copy for kustomize: %w", err)}}
		}
	}
	if errs := checkKustomizations(fsys, files); len(errs) > 0 {
		return nil, errs
	}
	top := kustomizationIn(fsys, memRoot)
	opts := krusty.MakeDefaultOptions()
	opts.LoadRestrictions = types.LoadRestrictionsRootOnly
	opts.PluginConfig = types.DisabledPluginConfig()
	opts.PluginConfig.HelmConfig.Enabled = false
	resMap, err := krusty.MakeKustomizer(opts).Run(fsys, memRoot)
	if err != nil {
		return nil, ManifestErrors{{File: top, Err: fmt.Errorf("kustomize build: %s", strings.ReplaceAll(err.Error(), memRoot+"/", ""))}}
	}
	var out []Manifest
	var errs ManifestErrors
	for i, r := range resMap.Resources() {
		file := top
		if o, err := r.GetOrigin(); err == nil && o != nil && o.Path != "" && o.Repo == "" {
			file = o.Path
		}
		doc, err := r.AsYAML()
		if err != nil {
			errs = append(errs, &ManifestError{File: file, Index: i + 1, Err: fmt.Errorf("kustomize output: %w", err)})
			continue
		}
		obj, err := decodeDocument(doc)
		if err != nil {
			errs = append(errs, &ManifestError{File: file, Index: i + 1, Object: describe(obj), Err: err})
			continue
		}
		out = append(out, Manifest{File: file, Index: i + 1, Object: obj})
	}
	if len(errs) > 0 {
		return nil, errs
	}
	return out, nil
}

// kustomizationIn returns the relative path of the kustomization file in
// the in-memory directory dir, or "".
func kustomizationIn(fsys filesys.FileSystem, dir string) string {
	for _, name := range konfig.RecognizedKustomizationFileNames() {
		p := path.Join(dir, name)
		if fsys.Exists(p) && !fsys.IsDir(p) {
			return strings.TrimPrefix(p, memRoot+"/")
		}
	}
	return ""
}

// kustomizationDoc is the part of a kustomization the safety checks read.
type kustomizationDoc struct {
	Resources             []string         `json:"resources"`
	Bases                 []string         `json:"bases"`
	Components            []string         `json:"components"`
	Crds                  []string         `json:"crds"`
	Generators            []string         `json:"generators"`
	Transformers          []string         `json:"transformers"`
	Validators            []string         `json:"validators"`
	HelmCharts            []any            `json:"helmCharts"`
	HelmGlobals           map[string]any   `json:"helmGlobals"`
	HelmChartInflationGen []map[string]any `json:"helmChartInflationGenerator"`
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

// checkKustomizations refuses what Render does not build, before kustomize
// sees it: remote references, references out of the directory, missing
// targets, cycles, Helm and non-built-in plugins.
func checkKustomizations(fsys filesys.FileSystem, files []treeFile) ManifestErrors {
	var errs ManifestErrors
	graph := map[string][]string{} // kustomization dir -> referenced kustomization dirs
	files = append([]treeFile(nil), files...)
	sort.Slice(files, func(i, j int) bool { return files[i].rel < files[j].rel })
	for _, f := range files {
		base := path.Base(f.rel)
		if !isKustomizationName(base) {
			continue
		}
		dir := path.Join(memRoot, path.Dir(f.rel))
		if kustomizationIn(fsys, dir) != f.rel {
			continue // kustomize reads only one of several names
		}
		data, err := fsys.ReadFile(path.Join(memRoot, f.rel))
		if err != nil {
			errs = append(errs, &ManifestError{File: f.rel, Err: err})
			continue
		}
		var k kustomizationDoc
		if err := yaml.Unmarshal(data, &k); err != nil {
			errs = append(errs, &ManifestError{File: f.rel, Err: fmt.Errorf("invalid kustomization: %w", err)})
			continue
		}
		bad := func(format string, args ...any) {
			errs = append(errs, &ManifestError{File: f.rel, Err: fmt.Errorf(format, args...)})
		}
		if len(k.HelmCharts) > 0 || len(k.HelmChartInflationGen) > 0 || k.HelmGlobals != nil {
			bad("helmCharts: Helm chart inflation is disabled: render the chart into plain manifests and commit them")
		}
		refs := []struct {
			field string
			list  []string
		}{{"resources", k.Resources}, {"bases", k.Bases}, {"components", k.Components}, {"crds", k.Crds}}
		for _, r := range refs {
			for _, entry := range r.list {
				if isRemote(entry) {
					bad("%s: %q is a remote reference, which is refused: vendor it into the repository and reference it by a relative path", r.field, entry)
					continue
				}
				if path.IsAbs(entry) {
					bad("%s: %q is an absolute path: use a path relative to the kustomization", r.field, entry)
					continue
				}
				target := path.Join(dir, entry)
				if target != memRoot && !strings.HasPrefix(target, memRoot+"/") {
					bad("%s: %q leaves the app directory: everything a kustomization uses must be inside the app's path", r.field, entry)
					continue
				}
				if !fsys.Exists(target) {
					bad("%s: %q does not exist", r.field, entry)
					continue
				}
				if fsys.IsDir(target) {
					if kustomizationIn(fsys, target) == "" {
						bad("%s: directory %q has no kustomization.yaml", r.field, entry)
						continue
					}
					graph[dir] = append(graph[dir], target)
				}
			}
		}
		for _, list := range []struct {
			field   string
			entries []string
		}{{"generators", k.Generators}, {"transformers", k.Transformers}, {"validators", k.Validators}} {
			for _, entry := range list.entries {
				if msg := checkPluginEntry(fsys, dir, entry); msg != "" {
					bad("%s: %s", list.field, msg)
				}
			}
		}
	}
	if len(errs) > 0 {
		return errs
	}
	// Cycles between kustomizations.
	state := map[string]int{} // 1 visiting, 2 done
	var visit func(dir string, stack []string) *ManifestError
	visit = func(dir string, stack []string) *ManifestError {
		switch state[dir] {
		case 1:
			start := 0
			for i, d := range stack {
				if d == dir {
					start = i
				}
			}
			var chain []string
			for _, d := range append(stack[start:], dir) {
				chain = append(chain, kustomizationIn(fsys, d))
			}
			return &ManifestError{File: kustomizationIn(fsys, stack[len(stack)-1]), Err: fmt.Errorf("kustomizations form a cycle: %s", strings.Join(chain, " -> "))}
		case 2:
			return nil
		}
		state[dir] = 1
		for _, next := range graph[dir] {
			if err := visit(next, append(stack, dir)); err != nil {
				return err
			}
		}
		state[dir] = 2
		return nil
	}
	dirs := make([]string, 0, len(graph))
	for d := range graph {
		dirs = append(dirs, d)
	}
	sort.Strings(dirs)
	for _, d := range dirs {
		if err := visit(d, nil); err != nil {
			return ManifestErrors{err}
		}
	}
	return nil
}

func isKustomizationName(name string) bool {
	for _, n := range konfig.RecognizedKustomizationFileNames() {
		if n == name {
			return true
		}
	}
	return false
}

// isRemote reports whether a kustomization entry names something kustomize
// would fetch over the network (a URL, a Git repo spec or a go-getter
// style address).
func isRemote(entry string) bool {
	e := strings.ToLower(entry)
	if strings.Contains(e, "://") || strings.HasPrefix(e, "git@") || strings.HasPrefix(e, "git::") ||
		strings.Contains(e, "?ref=") || strings.Contains(e, "?version=") || strings.Contains(e, ".git/") || strings.HasSuffix(e, ".git") {
		return true
	}
	for _, host := range []string{"github.com/", "gitlab.com/", "bitbucket.org/"} {
		if strings.HasPrefix(e, host) {
			return true
		}
	}
	return false
}

// checkPluginEntry refuses a generator, transformer or validator that is
// not one of kustomize's built-ins or that asks for a KRM function. It
// returns "" when the entry is acceptable.
func checkPluginEntry(fsys filesys.FileSystem, dir, entry string) string {
	var data []byte
	if strings.Contains(entry, "\n") {
		data = []byte(entry) // inline configuration
	} else {
		if isRemote(entry) {
			return fmt.Sprintf("%q is a remote reference, which is refused", entry)
		}
		target := path.Join(dir, entry)
		if !strings.HasPrefix(target, memRoot+"/") {
			return fmt.Sprintf("%q leaves the app directory", entry)
		}
		if fsys.IsDir(target) {
			return "" // a kustomization producing plugin configs; its own entries are checked
		}
		var err error
		if data, err = fsys.ReadFile(target); err != nil {
			return fmt.Sprintf("%q: %v", entry, err)
		}
	}
	docs := strings.Split(string(data), "\n---")
	for _, d := range docs {
		var cfg struct {
			Kind     string `json:"kind"`
			Metadata struct {
				Annotations map[string]string `json:"annotations"`
			} `json:"metadata"`
		}
		if err := yaml.Unmarshal([]byte(d), &cfg); err != nil {
			return fmt.Sprintf("%q: invalid plugin configuration: %v", entry, err)
		}
		if cfg.Kind == "" {
			continue
		}
		for a := range cfg.Metadata.Annotations {
			if a == "config.kubernetes.io/function" || a == "config.k8s.io/function" {
				return fmt.Sprintf("%s (%q) asks for a KRM function (exec or container): plugins are disabled; commit the generated manifests instead", cfg.Kind, entry)
			}
		}
		if cfg.Kind == "HelmChartInflationGenerator" {
			return fmt.Sprintf("%s (%q): Helm chart inflation is disabled; render the chart and commit the output", cfg.Kind, entry)
		}
		if !builtinPlugins[cfg.Kind] {
			return fmt.Sprintf("%s (%q) is not a kustomize built-in: exec, Go and container plugins are disabled; commit the generated manifests instead", cfg.Kind, entry)
		}
	}
	return ""
}
