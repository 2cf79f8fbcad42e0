package planner

import "fmt"

// ChartRelease tells the planner that the manifests are a Helm chart's
// render, and with which .Release.Namespace, so that an object left
// without a namespace is reported with the cause: a chart that writes
// `namespace: {{ .Release.Namespace }}` writes an empty one when
// .Release.Namespace is empty, and the template is not what to fix.
type ChartRelease struct {
	// Namespace is .Release.Namespace: helm.namespace, else
	// apps[].namespace, else empty.
	Namespace string
}

// ChartRelease is what the planner is told of a render of t: nil unless
// t's directory is rendered as a chart (its Helm options name a release,
// which every chart's do).
func (t Tree) ChartRelease() *ChartRelease {
	if t.Helm.ReleaseName == "" {
		return nil
	}
	return &ChartRelease{Namespace: t.Helm.Namespace}
}

// noNamespaceError is the error for a namespaced object of kind that
// sets no namespace in an app that has none to give it: what to set,
// and, for a chart, what .Release.Namespace was and why.
func (p *Planner) noNamespaceError(kind string) error {
	chart := p.opts.Chart
	switch {
	case chart == nil:
		return fmt.Errorf("%s is namespaced and has no metadata.namespace: set it, or set the app's namespace", kind)
	case chart.Namespace == "":
		return fmt.Errorf("%s is namespaced and has no metadata.namespace: the chart rendered it with an empty .Release.Namespace, because neither apps[].namespace nor helm.namespace is set; set apps[].namespace (it is .Release.Namespace too, and the namespace of the objects that set none)", kind)
	default:
		return fmt.Errorf("%s is namespaced and has no metadata.namespace: helm.namespace (%s) sets .Release.Namespace only and places no object; set apps[].namespace: %s (then helm.namespace is not needed), or set the namespace in the template", kind, chart.Namespace, chart.Namespace)
	}
}
