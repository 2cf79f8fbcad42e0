package planner

import (
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"path"
	"strings"

	"helm.sh/helm/v4/pkg/chart/loader/archive"
	chart "helm.sh/helm/v4/pkg/chart/v2"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	"helm.sh/helm/v4/pkg/ignore"
)

// utf8BOM is stripped from the start of chart files, as helm does.
var utf8BOM = []byte{0xEF, 0xBB, 0xBF}

// loadChart reads the chart in the directory rel of the repository
// through fsys (read-only, confined to the repository, size limits and
// deadline applied: see repoFS), honouring its .helmignore, and loads it
// with Helm's loader from memory. Vendored dependencies (charts/, as
// directories or .tgz archives) are part of it; one that Chart.yaml lists
// and the values enable must be vendored (checkVendored, at render).
func loadChart(fsys *repoFS, rel string) (*chart.Chart, error) {
	where := path.Join(rel, ChartFile)
	files, err := chartFiles(fsys, rel)
	if err != nil {
		return nil, ManifestErrors{{File: rel, Err: err}}
	}
	ch, err := loadFiles(files)
	if err != nil {
		return nil, ManifestErrors{{File: where, Err: helmError("load chart", err)}}
	}
	if err := ch.Validate(); err != nil {
		return nil, ManifestErrors{{File: where, Err: helmError("chart", err)}}
	}
	return ch, nil
}

// loadFiles is Helm's loader over in-memory files, a panic included in
// its error.
func loadFiles(files []*archive.BufferedFile) (ch *chart.Chart, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("helm's loader failed: %v", r)
		}
	}()
	return loader.LoadFiles(files)
}

// chartFiles reads every file of the chart directory rel that its
// .helmignore (and Helm's default rules) keep, named relative to the
// chart directory.
func chartFiles(fsys *repoFS, rel string) ([]*archive.BufferedFile, error) {
	top := path.Join(repoRoot, rel)
	rules, err := helmIgnore(fsys, top)
	if err != nil {
		return nil, err
	}
	var files []*archive.BufferedFile
	err = fsys.Walk(top, func(name string, info fs.FileInfo, err error) error {
		if err != nil {
			return err
		}
		n := strings.TrimPrefix(name, top+"/")
		if name == top {
			return nil
		}
		if rules.Ignore(n, info) {
			if info.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		if info.IsDir() {
			return nil
		}
		if !info.Mode().IsRegular() && info.Mode()&os.ModeSymlink == 0 {
			return fmt.Errorf("%s: not a regular file: a chart holds files and directories only", repoRel(name))
		}
		data, err := fsys.ReadFile(name)
		if err != nil {
			return fmt.Errorf("%s: %s", repoRel(name), trimRepoRoot(err.Error()))
		}
		files = append(files, &archive.BufferedFile{Name: n, Data: bytes.TrimPrefix(data, utf8BOM)})
		return nil
	})
	return files, err
}

// helmIgnore returns the chart's .helmignore rules with Helm's defaults.
func helmIgnore(fsys *repoFS, top string) (*ignore.Rules, error) {
	rules := ignore.Empty()
	name := path.Join(top, ignore.HelmIgnore)
	if fsys.Exists(name) {
		data, err := fsys.ReadFile(name)
		if err != nil {
			return nil, fmt.Errorf("%s: %s", repoRel(name), trimRepoRoot(err.Error()))
		}
		if rules, err = ignore.Parse(bytes.NewReader(data)); err != nil {
			return nil, fmt.Errorf("%s: %w", repoRel(name), err)
		}
	}
	rules.AddDefaults()
	return rules, nil
}

// vendorError is a dependency a chart lists that is not in its charts/
// directory.
type vendorError struct {
	file string // the Chart.yaml listing it, relative to the repository
	dep  *chart.Dependency
}

func (e *vendorError) Error() string {
	repo := ""
	if e.dep.Repository != "" {
		repo = " from " + e.dep.Repository
	}
	enabled, disable := "", ""
	switch {
	case e.dep.Condition != "":
		enabled = fmt.Sprintf(" is enabled (condition %s) but", e.dep.Condition)
		disable = fmt.Sprintf(", or set %s to false if the chart is to render without it", strings.Split(e.dep.Condition, ",")[0])
	case len(e.dep.Tags) > 0:
		enabled = fmt.Sprintf(" is enabled (tags %s) but", strings.Join(e.dep.Tags, ", "))
	}
	return fmt.Sprintf("dependency %q (version %q%s)%s is not vendored in charts/: a render never downloads one; run `helm dependency build` and commit the charts/ directory%s", e.dep.Name, e.dep.Version, repo, enabled, disable)
}

// vendorErrors are the enabled dependencies of a chart and its
// subcharts that are not vendored, every one of them: a run that named
// only the first would make the operator vendor them one run at a time.
type vendorErrors []*vendorError

// Error lists the missing dependencies one per line.
func (e vendorErrors) Error() string {
	lines := make([]string, len(e))
	for i, v := range e {
		lines[i] = v.file + ": " + v.Error()
	}
	return strings.Join(lines, "\n")
}

// manifestErrors reports each missing dependency at the Chart.yaml that
// lists it.
func (e vendorErrors) manifestErrors() ManifestErrors {
	out := make(ManifestErrors, len(e))
	for i, v := range e {
		out[i] = &ManifestError{File: v.file, Err: v}
	}
	return out
}

// checkVendored finds every dependency a chart (or subchart) lists in
// its Chart.yaml that is not among its loaded subcharts, in Chart.yaml
// order, a chart's before its subcharts': rendering without one would
// silently leave out its objects. Called on a chart whose dependencies
// Helm processed (chartutil.ProcessDependencies), it checks the enabled
// ones only: a dependency its condition or tags disable renders nothing,
// vendored or not.
func checkVendored(ch *chart.Chart, rel string) vendorErrors {
	have := map[string]bool{}
	for _, sub := range ch.Dependencies() {
		have[sub.Name()] = true
	}
	var missing vendorErrors
	for _, dep := range ch.Metadata.Dependencies {
		if dep.Enabled && !have[dep.Name] {
			missing = append(missing, &vendorError{file: path.Join(rel, ChartFile), dep: dep})
		}
	}
	for _, sub := range ch.Dependencies() {
		missing = append(missing, checkVendored(sub, path.Join(rel, "charts", sub.Name()))...)
	}
	return missing
}

var (
	_ error = (*vendorError)(nil)
	_ error = vendorErrors(nil)
)
