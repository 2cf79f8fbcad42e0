package config

import (
	"fmt"

	"syncd.dev/syncd/internal/redact"
)

// HelmSpec says how an app's Helm chart is rendered: a directory holding
// Chart.yaml in a Git source, or a chart of a Helm repository source
// (Chart and Version). Every field but Chart (for a Helm repository
// source) is optional.
//
// +kubebuilder:object:generate=true
type HelmSpec struct {
	// Chart is the chart's name in the Helm repository source's
	// index.yaml (syncd.yaml's sources[].helm); required for an app of a
	// Helm repository source and refused for an app of a Git source. An
	// App sets it when its source is a HelmSource (required then, and
	// refused otherwise: render a chart directory with path instead).
	// +kubebuilder:validation:MaxLength=1024
	Chart string `json:"chart,omitempty"`
	// Version goes with chart: an exact chart version ("1.2.3") or a
	// semver range ("~1.2", ">=1.0.0 <2.0.0", Masterminds/semver as Helm
	// reads it); the highest version index.yaml lists that matches is
	// rendered; default: the highest version that is not a prerelease.
	// An App sets it only when its source is a HelmSource.
	// +kubebuilder:validation:MaxLength=1024
	Version string `json:"version,omitempty"`
	// ReleaseName is .Release.Name in the chart's templates; default the
	// app's name (an App's: <namespace>-<name>).
	// +kubebuilder:validation:MaxLength=1024
	ReleaseName string `json:"releaseName,omitempty"`
	// Namespace is .Release.Namespace; default the app's namespace (an
	// App's target namespace). When both are set they must be equal
	// (objects that set no namespace go to the app's namespace, as for
	// every app).
	// +kubebuilder:validation:MaxLength=1024
	Namespace string `json:"namespace,omitempty"`
	// Values are chart values merged over the values files (inline values
	// win). They often hold secrets: syncd never prints them.
	// +kubebuilder:validation:Schemaless
	// +kubebuilder:validation:Type=object
	// +kubebuilder:pruning:PreserveUnknownFields
	Values HelmValues `json:"values,omitempty"`
	// ValuesFiles are slash-separated paths merged in order over the
	// chart's values.yaml, as helm's -f flags are. They are relative to:
	// the repository root of ValuesSource when it is set; else the
	// repository root of the app's Git source (a chart directory in Git);
	// else the chart package (the expanded chart of a Helm repository or
	// OCI source, e.g. values-production.yaml), as Flux's HelmRelease
	// valuesFiles are.
	// +kubebuilder:validation:MaxItems=100
	// +kubebuilder:validation:items:MinLength=1
	// +kubebuilder:validation:items:MaxLength=1024
	ValuesFiles []string `json:"valuesFiles,omitempty"`
	// ValuesSource names a Git source of syncd.yaml (sources[].git) whose
	// tree holds ValuesFiles, for an app of a Helm repository or OCI
	// chart source (Argo CD's ref: values with $values/...). The app
	// renders at both sources' revisions and is reconciled when either
	// moves. Default: none. It names a source of syncd.yaml, so an App
	// may not set it (refused at admission).
	// +kubebuilder:validation:MaxLength=1024
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

// DeepCopy returns a copy of the values that shares no map or slice with
// in. It is written by hand: controller-gen's deepcopy (HelmSpec's, in
// zz_generated.deepcopy.go) cannot copy values of type any.
func (in HelmValues) DeepCopy() HelmValues {
	if in == nil {
		return nil
	}
	return HelmValues(copyValue(map[string]any(in)).(map[string]any))
}

// copyValue copies the maps and slices of a decoded YAML or JSON value;
// anything else is a scalar and is returned as it is.
func copyValue(v any) any {
	switch v := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, e := range v {
			out[k] = copyValue(e)
		}
		return out
	case []any:
		out := make([]any, len(v))
		for i, e := range v {
			out[i] = copyValue(e)
		}
		return out
	}
	return v
}

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
