package identity

import (
	"fmt"

	"k8s.io/client-go/rest"

	"syncd.dev/syncd/internal/config"
)

// Syncd names syncd's own identity in messages.
const Syncd = "syncd"

// User returns the Kubernetes user an app's requests for its objects run
// as: "system:serviceaccount:<namespace>:<serviceAccountName>", or "" for
// an app without serviceAccountName (syncd's own identity).
func User(app config.App) string {
	if app.ServiceAccountName == "" {
		return ""
	}
	return "system:serviceaccount:" + app.Namespace + ":" + app.ServiceAccountName
}

// Name returns who an app's requests run as, for messages: User, or
// Syncd.
func Name(app config.App) string {
	if u := User(app); u != "" {
		return u
	}
	return Syncd
}

// Config returns the client config an app's requests for its objects go
// through: base itself for an app without serviceAccountName, otherwise
// a copy impersonating the service account. An app with
// serviceAccountName and no base is an error: its requests never fall
// back to syncd's identity.
func Config(base *rest.Config, app config.App) (*rest.Config, error) {
	user := User(app)
	if user == "" {
		return base, nil
	}
	if base == nil {
		return nil, fmt.Errorf("app %s: serviceAccountName %q needs impersonation, but no client config was given", app.Name, app.ServiceAccountName)
	}
	cfg := rest.CopyConfig(base)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: user}
	return cfg, nil
}
