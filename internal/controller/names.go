package controller

import (
	"fmt"
	"sync"
)

// Names are the app names in use in one process: the file config's apps
// and the Apps the controller runs. An App whose AppName is taken by a
// file app or by another App is not run (NameCollision): the two would
// share an inventory and field managers and prune each other's objects.
type Names struct {
	mu    sync.Mutex
	file  map[string]bool
	owner map[string]string // app name → App key that holds it
}

// NewNames returns an empty set of names.
func NewNames() *Names {
	return &Names{file: map[string]bool{}, owner: map[string]string{}}
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

// release gives up the names the App key holds.
func (n *Names) release(key string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	for name, k := range n.owner {
		if k == key {
			delete(n.owner, name)
		}
	}
}
