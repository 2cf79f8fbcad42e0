package reconcile

import (
	"context"
	"fmt"

	"syncd.dev/syncd/internal/config"
	"syncd.dev/syncd/internal/planner"
)

// helmOptions returns how the app's chart in dir is rendered
// (HelmOptions), with the target cluster's capabilities when the Runner
// has a cluster config (Helm's client defaults otherwise, see
// planner.DefaultHelmCapabilities).
func (r *Runner) helmOptions(ctx context.Context, app config.App, dir string) (planner.HelmOptions, error) {
	opts, err := HelmOptions(app, dir)
	if err != nil || opts.ReleaseName == "" || r.discovery == nil {
		return opts, err
	}
	caps, err := planner.ClusterHelmCapabilities(ctx, r.discovery)
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
