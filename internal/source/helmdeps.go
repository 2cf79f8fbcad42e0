package source

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/Masterminds/semver/v3"
	chart "helm.sh/helm/v4/pkg/chart/v2"
	chartutil "helm.sh/helm/v4/pkg/chart/v2/util"
)

// fetchDependencies puts each remote dependency the chart in chartDir
// lists and does not vendor (charts/) into its charts/ directory, fetched
// through the Helm repository source of syncd's config whose URL is the
// dependency's repository. A dependency from anywhere else is an error
// naming the chart and the dependency: syncd downloads nothing from a
// repository the config does not declare.
func (r *HelmRepo) fetchDependencies(ctx context.Context, chartName, chartDir string) error {
	md, err := chartutil.LoadChartfile(filepath.Join(chartDir, "Chart.yaml"))
	if err != nil {
		return r.newError(KindFetch, "read chart "+chartName, fmt.Errorf("Chart.yaml: %w", err), "")
	}
	for _, dep := range md.Dependencies {
		if dep == nil || vendored(chartDir, dep.Name) {
			continue
		}
		if err := r.fetchDependency(ctx, chartName, chartDir, dep); err != nil {
			return err
		}
	}
	return nil
}

// vendored reports whether charts/ holds the dependency name, as a
// directory or an archive (<name>-<version>.tgz).
func vendored(chartDir, name string) bool {
	entries, err := os.ReadDir(filepath.Join(chartDir, "charts"))
	if err != nil {
		return false
	}
	for _, e := range entries {
		n := e.Name()
		if (e.IsDir() && n == name) || (strings.HasPrefix(n, name+"-") && strings.HasSuffix(n, ".tgz")) {
			return true
		}
	}
	return false
}

// fetchDependency fetches one dependency through the declared source at
// its repository URL.
func (r *HelmRepo) fetchDependency(ctx context.Context, chartName, chartDir string, dep *chart.Dependency) error {
	from := r.repos.lookup(dep.Repository)
	if from == nil {
		return r.newError(KindRefNotFound, "chart "+chartName, fmt.Errorf("dependency %q (version %q, repository %q) is neither vendored in charts/ nor in a Helm repository source of the config", dep.Name, dep.Version, dep.Repository),
			"declare its repository as a source (sources[].helm.url: the dependency's repository URL), or vendor it with helm dependency build")
	}
	data, version, err := from.dependencyArchive(ctx, ChartRef{Chart: dep.Name, Version: dep.Version})
	if err != nil {
		return fmt.Errorf("chart %s: dependency %q: %w", chartName, dep.Name, err)
	}
	dir := filepath.Join(chartDir, "charts")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return r.newError(KindCache, "write chart "+chartName, err, "")
	}
	if err := os.WriteFile(filepath.Join(dir, dep.Name+"-"+version+".tgz"), data, 0o644); err != nil {
		return r.newError(KindCache, "write chart "+chartName, err, "")
	}
	return nil
}

// dependencyArchive resolves and fetches a chart of this repository for
// another chart's dependency (with this source's own credentials).
func (r *HelmRepo) dependencyArchive(ctx context.Context, ref ChartRef) ([]byte, string, error) {
	if r.oci != nil {
		return nil, "", fmt.Errorf("source %q is an oci:// repository: dependencies are not fetched from registries; vendor them with helm dependency build before helm push", r.spec.Name)
	}
	v := ref.Version
	if v == "" {
		v = "*"
	}
	con, err := semver.NewConstraint(v)
	if err != nil {
		return nil, "", fmt.Errorf("version %q is not a version or semver range: %w", ref.Version, err)
	}
	creds, err := r.readHelmCredentials()
	if err != nil {
		return nil, "", err
	}
	client, err := r.helmClient(creds)
	if err != nil {
		return nil, "", err
	}
	idx, err := r.fetchIndex(ctx, client, creds)
	if err != nil {
		return nil, "", err
	}
	cv, err := resolveChart(idx.file, ref, con, r.spec.Name)
	if err != nil {
		return nil, "", r.newError(KindRefNotFound, "resolve chart", err, "")
	}
	data, _, err := r.archive(ctx, client, creds, cv)
	return data, cv.Version, err
}
