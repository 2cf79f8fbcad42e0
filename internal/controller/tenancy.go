package controller

import (
	"fmt"

	"syncd.dev/syncd/internal/api/v1alpha1"
)

// Flags of syncd run that set a Tenancy; errors name them, so an
// operator knows what to change.
const (
	FlagCrossNamespaceSources = "--allow-cross-namespace-sources"
	FlagDefaultServiceAccount = "--default-service-account"
)

// Tenancy is the operator's policy between the teams' namespaces.
type Tenancy struct {
	// CrossNamespaceSources lets an App reference a source (GitSource,
	// HelmSource, OCISource) of another namespace (and so use its
	// credentials); default false: refused.
	CrossNamespaceSources bool
	// DefaultServiceAccount, when set, is the service account of the
	// App's own namespace every App without spec.serviceAccountName runs
	// as (impersonation); such an App may not target another namespace.
	DefaultServiceAccount string
}

// sourceNamespace is the namespace of the source an App references.
func sourceNamespace(app *v1alpha1.App) string {
	if ns := app.Spec.SourceRef.Namespace; ns != "" {
		return ns
	}
	return app.Namespace
}

// checkSourceRef refuses a reference to a source of another namespace
// unless the operator allows them.
func (t Tenancy) checkSourceRef(app *v1alpha1.App) error {
	ns := sourceNamespace(app)
	if ns == app.Namespace || t.CrossNamespaceSources {
		return nil
	}
	kind := app.Spec.SourceRef.Kind
	return fmt.Errorf("App %s/%s: spec.sourceRef.namespace: %s %s/%s is in another namespace, and cross-namespace references are off (syncd runs without %s); create the %s in %s, or ask the operator to start syncd with %s",
		app.Namespace, app.Name, kind, ns, app.Spec.SourceRef.Name, FlagCrossNamespaceSources, kind, app.Namespace, FlagCrossNamespaceSources)
}

// withDefaults returns the App as it runs: with the default service
// account when it names none. An App under the default service account
// that targets another namespace is refused: the account would be
// looked up there, another team's.
func (t Tenancy) withDefaults(app *v1alpha1.App) (*v1alpha1.App, error) {
	if t.DefaultServiceAccount == "" || app.Spec.ServiceAccountName != "" {
		return app, nil
	}
	if tn := app.Spec.TargetNamespace; tn != "" && tn != app.Namespace {
		return nil, fmt.Errorf("App %s/%s: spec.targetNamespace: %q is another namespace, and the App runs as the default service account %s of its own namespace (%s): unset targetNamespace or set it to %q",
			app.Namespace, app.Name, tn, t.DefaultServiceAccount, FlagDefaultServiceAccount, app.Namespace)
	}
	out := *app
	out.Spec.ServiceAccountName = t.DefaultServiceAccount
	return &out, nil
}
