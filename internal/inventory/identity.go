package inventory

import (
	"sync"

	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"

	"syncd.dev/syncd/internal/identity"
)

// memberClients are the clients an app's members are read, watched,
// deleted and patched through: metadata for reads, deletes and patches,
// dynamic for the live cache's watches.
type memberClients struct {
	md  metadata.Interface
	dyn dynamic.Interface
}

// appClients holds the clients that impersonate apps' service accounts,
// one pair per user, made on first use. The zero value is ready.
type appClients struct {
	mu     sync.Mutex
	byUser map[string]memberClients
}

// members returns the metadata client an app's members are read, deleted
// and patched through (see clientsOf).
func (m *Manager) members(app App) (metadata.Interface, error) {
	c, err := m.clientsOf(app)
	return c.md, err
}

// clientsOf returns the clients an app's members are read, watched,
// deleted and patched through: the Manager's own for an app without
// serviceAccountName, else ones impersonating it (made from
// Options.Config; without it the app's runs fail, they never fall back to
// syncd's identity). The parent Secrets never go through them.
func (m *Manager) clientsOf(app App) (memberClients, error) {
	user := identity.User(app.Tenant)
	if user == "" {
		return memberClients{md: m.md, dyn: m.watchDyn}, nil
	}
	m.tenants.mu.Lock()
	defer m.tenants.mu.Unlock()
	if c, ok := m.tenants.byUser[user]; ok {
		return c, nil
	}
	cfg, err := identity.Config(m.opts.Config, app.Tenant)
	if err != nil {
		return memberClients{}, err
	}
	md, err := metadata.NewForConfig(cfg)
	if err != nil {
		return memberClients{}, err
	}
	dyn, err := dynamic.NewForConfig(watchConfig(cfg))
	if err != nil {
		return memberClients{}, err
	}
	if m.tenants.byUser == nil {
		m.tenants.byUser = map[string]memberClients{}
	}
	c := memberClients{md: md, dyn: dyn}
	m.tenants.byUser[user] = c
	return c, nil
}

// watchClient returns the client the live cache's informers of syncd's
// own identity list and watch through: dyn's cluster without gzip
// (watchConfig), made from cfg; dyn itself when there is no cfg.
func watchClient(dyn dynamic.Interface, cfg *rest.Config) (dynamic.Interface, error) {
	if cfg == nil {
		return dyn, nil
	}
	return dynamic.NewForConfig(watchConfig(cfg))
}

// watchConfig is cfg for the live cache's lists and watches: without
// gzip. A watch holds its response's gzip reader (about 40 KB of
// decompressor state) for as long as it runs, and syncd keeps one watch
// per app, resource and namespace: 150 watches of 50 apps held 6 MB of
// decompressors. Their events are single objects, and in the cluster
// the bytes cost less than the memory.
func watchConfig(cfg *rest.Config) *rest.Config {
	c := rest.CopyConfig(cfg)
	c.DisableCompression = true
	return c
}
