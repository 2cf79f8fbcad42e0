package reconcile

import (
	"context"
	"fmt"

	"syncd.dev/syncd/internal/config"
	"syncd.dev/syncd/internal/planner"
	"syncd.dev/syncd/internal/source"
)

// helmOptions returns how the app's chart in dir is rendered at rev
// (HelmOptionsAt), with the target cluster's capabilities when the Runner
// has a cluster config (Helm's client defaults otherwise, see
// planner.DefaultHelmCapabilities). The target is the app's cluster.
func (r *Runner) helmOptions(ctx context.Context, t *Target, app config.App, rev source.Revision, dir string) (planner.HelmOptions, error) {
	opts, err := HelmOptionsAt(app, rev, dir)
	if err != nil || opts.ReleaseName == "" || t.discovery == nil {
		return opts, err
	}
	caps, err := planner.ClusterHelmCapabilities(ctx, t.discovery)
	if err != nil {
		return planner.HelmOptions{}, err
	}
	opts.Capabilities = &caps
	return opts, nil
}

// HelmOptions returns the planner's Helm options an app's config asks for
// when dir is a chart (the zero options otherwise), without capabilities
// (the caller's: a cluster's, or Helm's defaults). A helm section on an
// app whose directory is not a chart is refused.
func HelmOptions(app config.App, dir string) (planner.HelmOptions, error) {
	if !planner.IsChart(dir) {
		if app.Helm != nil {
			return planner.HelmOptions{}, fmt.Errorf("helm is set but %s holds no %s: point path at the chart's directory, or remove the helm section", app.TreePath(), planner.ChartFile)
		}
		return planner.HelmOptions{}, nil
	}
	opts := planner.HelmOptions{
		ReleaseName: app.HelmReleaseName(),
		Namespace:   app.HelmNamespace(),
		ExcludeCRDs: !app.HelmIncludesCRDs(),
	}
	if app.Helm != nil {
		opts.Values = app.Helm.Values
		opts.ValuesFiles = app.Helm.ValuesFiles
	}
	return opts, nil
}

// HelmOptionsAt is HelmOptions with the values files read where the app
// reads them at rev (withValuesRoot); rev is zero for a local directory
// (--path).
func HelmOptionsAt(app config.App, rev source.Revision, dir string) (planner.HelmOptions, error) {
	opts, err := HelmOptions(app, dir)
	if err != nil {
		return planner.HelmOptions{}, err
	}
	return withValuesRoot(opts, app, rev, dir), nil
}

// chartDirAt is the directory of the chart a Helm repository source
// resolved for the app at rev (the chart's expanded archive is its
// tree), labelled chart-version@sha256:digest, then +values@commit when
// rev joins a values source's.
func chartDirAt(app config.App, rev source.Revision, ref source.ChartRef) (dir, label string, err error) {
	cr, ok := rev.Chart(ref)
	if !ok {
		return "", "", fmt.Errorf("app %s: chart %s: source %q did not resolve it at revision %s; the next poll of the source fetches it", app.Name, ref, app.Source, ShortSHA(rev.SHA))
	}
	return cr.ChartDir, fmt.Sprintf("%s-%s@sha256:%s%s", ref.Chart, cr.Version, ShortSHA(cr.Digest), valuesLabel(rev)), nil
}

// renderWhat names what an app renders in errors: its chart and source,
// or its path.
func renderWhat(app config.App) string {
	if ref, ok := ChartRefOf(app); ok {
		return fmt.Sprintf("chart %s of source %s", ref, app.Source)
	}
	return app.TreePath()
}
