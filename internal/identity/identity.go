package identity

import (
	"fmt"

	"k8s.io/client-go/rest"
)

// Syncd names syncd's own identity in messages.
const Syncd = "syncd"

// Tenant is whom one app's requests for its objects run as.
type Tenant struct {
	// App is the app's name, for errors.
	App string
	// Namespace is the namespace of the service account.
	Namespace string
	// ServiceAccount is the service account's name; empty: syncd's own
	// identity.
	ServiceAccount string
}

// User returns the Kubernetes user an app's requests for its objects run
// as: "system:serviceaccount:<namespace>:<serviceAccountName>", or "" for
// an app without serviceAccountName (syncd's own identity).
func User(t Tenant) string {
	if t.ServiceAccount == "" {
		return ""
	}
	return "system:serviceaccount:" + t.Namespace + ":" + t.ServiceAccount
}

// Name returns who an app's requests run as, for messages: User, or
// Syncd.
func Name(t Tenant) string {
	if u := User(t); u != "" {
		return u
	}
	return Syncd
}

// Config returns the client config an app's requests for its objects go
// through: base itself for an app without serviceAccountName, otherwise
// a copy impersonating the service account. An app with
// serviceAccountName and no base is an error: its requests never fall
// back to syncd's identity.
func Config(base *rest.Config, t Tenant) (*rest.Config, error) {
	user := User(t)
	if user == "" {
		return base, nil
	}
	if base == nil {
		return nil, fmt.Errorf("app %s: serviceAccountName %q needs impersonation, but no client config was given", t.App, t.ServiceAccount)
	}
	cfg := rest.CopyConfig(base)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: user}
	return cfg, nil
}
