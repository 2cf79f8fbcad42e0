package config

import (
	"fmt"

	"syncd.dev/syncd/internal/redact"
)

// HelmSpec says how an app's Helm chart is rendered: a directory holding
// Chart.yaml in a Git source, or a chart of a Helm repository source
// (Chart and Version). Every field but Chart (for a Helm repository
// source) is optional.
type HelmSpec struct {
	// Chart is the chart's name in the Helm repository source's
	// index.yaml; required for an app of a Helm repository source and
	// refused for an app of a Git source.
	Chart string `json:"chart,omitempty"`
	// Version is an exact chart version ("1.2.3") or a semver range
	// ("~1.2", ">=1.0.0 <2.0.0", Masterminds/semver as Helm reads it):
	// the highest version index.yaml lists that matches is rendered;
	// default: the highest version that is not a prerelease.
	Version string `json:"version,omitempty"`
	// ReleaseName is .Release.Name; default: the app's name.
	ReleaseName string `json:"releaseName,omitempty"`
	// Namespace is .Release.Namespace; default: the app's namespace. When
	// both are set they must be equal (objects that set no namespace go
	// to the app's namespace, as for every app).
	Namespace string `json:"namespace,omitempty"`
	// Values are merged over the values files (inline values win).
	Values HelmValues `json:"values,omitempty"`
	// ValuesFiles are slash-separated paths merged in order over the
	// chart's values.yaml, as helm's -f flags are. They are relative to:
	// the repository root of ValuesSource when it is set; else the
	// repository root of the app's Git source (a chart directory in Git);
	// else the chart package (the expanded chart of a Helm repository or
	// OCI source, e.g. values-production.yaml), as Flux's HelmRelease
	// valuesFiles are.
	ValuesFiles []string `json:"valuesFiles,omitempty"`
	// ValuesSource names a Git source (sources[].git) whose tree holds
	// ValuesFiles, for an app of a Helm repository or OCI chart source
	// (Argo CD's ref: values with $values/...). The app renders at both
	// sources' revisions and is reconciled when either moves. Default:
	// none.
	ValuesSource string `json:"valuesSource,omitempty"`
	// IncludeCRDs renders the chart's crds/ directories (the chart's and
	// its subcharts'); default true.
	IncludeCRDs *bool `json:"includeCRDs,omitempty"`
}

// HelmValues are inline chart values. They often hold secrets, so they
// print as redact.Marker: formatting a config never shows them.
type HelmValues map[string]any

// String returns the redaction marker.
func (HelmValues) String() string { return redact.Marker }

// GoString returns the redaction marker, for %#v.
func (HelmValues) GoString() string { return redact.Marker }

// HelmReleaseName returns the chart's release name: helm.releaseName, or
// the app's name.
func (a App) HelmReleaseName() string {
	if a.Helm != nil && a.Helm.ReleaseName != "" {
		return a.Helm.ReleaseName
	}
	return a.Name
}

// HelmNamespace returns the chart's release namespace: helm.namespace,
// or the app's namespace.
func (a App) HelmNamespace() string {
	if a.Helm != nil && a.Helm.Namespace != "" {
		return a.Helm.Namespace
	}
	return a.Namespace
}

// HelmIncludesCRDs reports whether the chart's crds/ directories are
// rendered (helm.includeCRDs, default true).
func (a App) HelmIncludesCRDs() bool {
	return a.Helm == nil || a.Helm.IncludeCRDs == nil || *a.Helm.IncludeCRDs
}

// helm checks an app's helm section.
func (v *validator) helm(p string, a App) {
	h := a.Helm
	if h == nil {
		return
	}
	if h.ReleaseName != "" {
		v.dnsLabel(p+".releaseName", "release name", h.ReleaseName)
	}
	if h.Namespace != "" {
		v.dnsLabel(p+".namespace", "namespace", h.Namespace)
		if a.Namespace != "" && a.Namespace != h.Namespace {
			v.errorf(p+".namespace", "%q differs from the app's namespace %q: objects that set no namespace go to the app's namespace, so set the namespace once (apps[].namespace)", h.Namespace, a.Namespace)
		}
	}
	for i, f := range h.ValuesFiles {
		if f == "" {
			v.errorf(fmt.Sprintf("%s.valuesFiles[%d]", p, i), "is empty: write a path inside the repository, e.g. deploy/values-prod.yaml")
			continue
		}
		if prob := treePathProblem(f); prob != "" {
			v.errorf(fmt.Sprintf("%s.valuesFiles[%d]", p, i), "%s", prob)
		}
	}
}
