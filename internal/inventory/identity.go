package inventory

import (
	"sync"

	"k8s.io/client-go/metadata"

	"syncd.dev/syncd/internal/config"
	"syncd.dev/syncd/internal/identity"
)

// appClients holds the metadata clients that impersonate apps' service
// accounts, one per user, made on first use. The zero value is ready.
type appClients struct {
	mu     sync.Mutex
	byUser map[string]metadata.Interface
}

// members returns the metadata client an app's members are read,
// watched, deleted and patched through: the Manager's own for an app
// without serviceAccountName, else one impersonating it (made from
// Options.Config; without it the app's runs fail, they never fall back
// to syncd's identity). The parent Secrets never go through it.
func (m *Manager) members(app config.App) (metadata.Interface, error) {
	user := identity.User(app)
	if user == "" {
		return m.md, nil
	}
	m.tenants.mu.Lock()
	defer m.tenants.mu.Unlock()
	if md := m.tenants.byUser[user]; md != nil {
		return md, nil
	}
	cfg, err := identity.Config(m.opts.Config, app)
	if err != nil {
		return nil, err
	}
	md, err := metadata.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	if m.tenants.byUser == nil {
		m.tenants.byUser = map[string]metadata.Interface{}
	}
	m.tenants.byUser[user] = md
	return md, nil
}
