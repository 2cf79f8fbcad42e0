package controller

import (
	"fmt"
	"sync"
)

// Names are the app names in use in one process: the file config's apps
// and the Apps the controller runs. An App whose AppName is taken by a
// file app or by another App is not run (NameCollision): the two would
// share an inventory and field managers and prune each other's objects.
//
// The field managers are held the same way: an App may not apply as a
// manager of a file app or of another App (it would take their fields),
// whichever name it reaches it by (spec.manager, spec.split[].manager, or
// its default manager).
type Names struct {
	mu    sync.Mutex
	file  map[string]bool
	owner map[string]string // app name → App key that holds it
	// fileManagers are the file apps' managers (manager → app name);
	// managers are the Apps' (manager → App key).
	fileManagers map[string]string
	managers     map[string]string
}

// NewNames returns an empty set of names.
func NewNames() *Names {
	return &Names{file: map[string]bool{}, owner: map[string]string{}, fileManagers: map[string]string{}, managers: map[string]string{}}
}

// SetFileManagers replaces the field managers of the file config's apps
// (manager → app name).
func (n *Names) SetFileManagers(managers map[string]string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.fileManagers = map[string]string{}
	for m, app := range managers {
		n.fileManagers[m] = app
	}
}

// claimManagers takes the field managers an App applies as, in place of
// those it held before; an error names the app that holds one, and then
// the App keeps none.
func (n *Names) claimManagers(key string, managers []string) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.dropManagers(key)
	for _, m := range managers {
		if app, ok := n.fileManagers[m]; ok {
			return fmt.Errorf("App %s: field manager %q is also app %q's in the syncd config file; the App would take that app's fields: set spec.manager (or the split's manager) to a name of its own", key, m, app)
		}
		if other, ok := n.managers[m]; ok && other != key {
			return fmt.Errorf("App %s: field manager %q is also App %s's; the two would take each other's fields: set spec.manager (or the split's manager) to a name of its own", key, m, other)
		}
	}
	for _, m := range managers {
		n.managers[m] = key
	}
	return nil
}

// dropManagers gives up the managers the App key holds (n.mu held).
func (n *Names) dropManagers(key string) {
	for m, k := range n.managers {
		if k == key {
			delete(n.managers, m)
		}
	}
}

// SetFile replaces the names of the file config's apps.
func (n *Names) SetFile(names []string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.file = map[string]bool{}
	for _, name := range names {
		n.file[name] = true
	}
}

// Collision says which App object was refused because it has the file
// app's name, or "" (for daemon.Options.Collision).
func (n *Names) Collision(fileApp string) string {
	n.mu.Lock()
	defer n.mu.Unlock()
	if key, ok := n.owner[fileApp]; ok && n.file[fileApp] {
		return fmt.Sprintf("App %s has this app's name (<namespace>-<name>); it is refused while this app exists: rename one of them", key)
	}
	return ""
}

// claim takes an app name for the App key; an error names who holds it.
func (n *Names) claim(name, key string) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.file[name] {
		n.owner[name] = key
		return fmt.Errorf("App %s: its app name %q is also the name of an app in the syncd config file; the two would share an inventory and field managers: rename the App or the file's app", key, name)
	}
	if other, ok := n.owner[name]; ok && other != key {
		return fmt.Errorf("App %s: its app name %q (<namespace>-<name>) is also App %s's; rename one of them", key, name, other)
	}
	n.owner[name] = key
	return nil
}

// release gives up the names and managers the App key holds.
func (n *Names) release(key string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	for name, k := range n.owner {
		if k == key {
			delete(n.owner, name)
		}
	}
	n.dropManagers(key)
}
