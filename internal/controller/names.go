package controller

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/tools/cache"

	"syncd.dev/syncd/internal/api/v1alpha1"
	"syncd.dev/syncd/internal/config"
	"syncd.dev/syncd/internal/inventory"
)

// Names are the app names in use in one process: the file config's apps
// and the Apps the controller runs. An App whose AppName is taken by a
// file app or by another App is not run (NameCollision): the two would
// share an inventory and field managers and prune each other's objects.
//
// Between Apps, which one holds a name does not depend on the order
// they are reconciled in (claim): the App the name's inventory records
// as its owner, once the controller learnt it (recordOwner), else the
// oldest. A restart so keeps the same App running, and the other never
// writes the inventory (which also refuses it: inventory.OwnerError).
//
// The field managers are held the same way: an App may not apply as a
// manager of a file app or of another App (it would take their fields),
// whichever name it reaches it by (spec.manager, spec.split[].manager, or
// its default manager).
type Names struct {
	mu    sync.Mutex
	file  map[string]bool
	owner map[string]string // app name → App key that holds it
	// recorded are the App keys the inventories record as their owners
	// (app name → App key), learnt from inventory.OwnerError.
	recorded map[string]string
	// fileManagers are the file apps' managers (manager → app name);
	// managers are the Apps' (manager → App key).
	fileManagers map[string]string
	managers     map[string]string
}

// NewNames returns an empty set of names.
func NewNames() *Names {
	return &Names{file: map[string]bool{}, owner: map[string]string{}, recorded: map[string]string{}, fileManagers: map[string]string{}, managers: map[string]string{}}
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
// the App keeps none. contenders are, for each of managers, the Apps
// that declare it or derive it (key's own among them, Controller.
// managerContenders).
//
// Which App holds a manager does not depend on the order of the claims
// (managerHolder): the App whose derived default manager,
// syncd-<namespace>-<name>, it is, else the oldest. So a team cannot
// squat another namespace's default managers, even of Apps not created
// yet, and a restart keeps the same holder. An App that held a manager
// another now holds loses every manager it held and is returned as
// evicted, to be reconciled again (it is then refused).
func (n *Names) claimManagers(key string, managers []string, contenders map[string][]contender) (evicted []string, err error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.dropManagers(key)
	for _, m := range managers {
		if _, ok := n.fileManagers[m]; ok {
			return nil, fmt.Errorf("App %s: field manager %q is also the manager of an app in the syncd config file; the App would take that app's fields: set spec.manager (or the split's manager) to a name of its own", key, m)
		}
		if holder := managerHolder(m, key, contenders[m]); holder != key {
			return nil, fmt.Errorf("App %s: field manager %q is also %s's; the two would take each other's fields: set spec.manager (or the split's manager) to a name of its own", key, m, holderFor(key, holder))
		}
	}
	for _, m := range managers {
		if other, ok := n.managers[m]; ok && other != key && !slices.Contains(evicted, other) {
			evicted = append(evicted, other)
			n.dropManagers(other)
		}
		n.managers[m] = key
	}
	return evicted, nil
}

// managerHolder is the App that holds manager m among the contenders
// and key: the one m is the derived default manager of, else the oldest
// (creation time, then key).
func managerHolder(m, key string, contenders []contender) string {
	if len(contenders) == 0 {
		return key
	}
	best := contenders[0]
	for _, c := range contenders {
		if derivedManager(c.key) == m {
			return c.key
		}
		if c.created.Before(best.created) || c.created.Equal(best.created) && c.key < best.key {
			best = c
		}
	}
	return best.key
}

// derivedManager is the default field manager of the App key
// (namespace/name): syncd-<app name>, whether or not it sets
// spec.manager.
func derivedManager(key string) string {
	ns, name, _ := strings.Cut(key, "/")
	return config.App{Name: AppName(ns, name)}.DefaultManager()
}

// holderFor names the App key holder to the App key claimant: by its
// key in the claimant's own namespace, and only as "an App of another
// namespace" otherwise. The refusal reaches the claimant's status and
// Events, which its namespace's team reads; another team's App names
// are not theirs to learn (docs/security.md, App objects).
func holderFor(claimant, holder string) string {
	if sameNamespace(claimant, holder) {
		return "App " + holder
	}
	return "an App of another namespace"
}

// sameNamespace reports whether the App keys a and b (namespace/name)
// are of one namespace.
func sameNamespace(a, b string) bool {
	nsA, _, _ := strings.Cut(a, "/")
	nsB, _, _ := strings.Cut(b, "/")
	return nsA == nsB
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

// contender is an App whose app name is the one claimed.
type contender struct {
	key     string
	created time.Time
}

// claim takes an app name for the App key, given every App of that app
// name (contenders, key's own among them). The App the name's
// inventory records as its owner holds it, else the oldest (creation
// time, then key): the same App whatever the order of the claims. An
// error names the App that holds it and what to do.
func (n *Names) claim(name, key string, contenders []contender) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.file[name] {
		n.owner[name] = key
		return fmt.Errorf("App %s: its app name %q is also the name of an app in the syncd config file; the two would share an inventory and field managers: rename the App or the file's app", key, name)
	}
	winner, why := n.winner(name, key, contenders)
	if winner != key {
		if n.owner[name] == key {
			delete(n.owner, name)
		}
		if !sameNamespace(key, winner) {
			return fmt.Errorf("App %s: its app name %q (<namespace>-<name>) is also that of an App of another namespace, which holds it (%s); this App is not run and writes nothing: rename it (another name or namespace)", key, name, why)
		}
		return fmt.Errorf("App %s: its app name %q (<namespace>-<name>) is also App %s's, which holds it (%s); this App is not run and writes nothing: rename it (another name or namespace), or delete App %s", key, name, winner, why, winner)
	}
	n.owner[name] = key
	return nil
}

// winner is the App that holds an app name among the contenders and
// key, and why (n.mu held).
func (n *Names) winner(name, key string, contenders []contender) (string, string) {
	if len(contenders) == 0 {
		return key, ""
	}
	best := contenders[0]
	for _, c := range contenders {
		if rec, ok := n.recorded[name]; ok && c.key == rec {
			return rec, "the inventory of that name records it as its owner"
		}
		if c.created.Before(best.created) || c.created.Equal(best.created) && c.key < best.key {
			best = c
		}
	}
	return best.key, "it is the older of the two"
}

// recordOwner notes the App key an app name's inventory belongs to
// (inventory.OwnerError): it holds the name from now on.
func (n *Names) recordOwner(name, key string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.recorded[name] = key
	if n.owner[name] != key {
		delete(n.owner, name)
	}
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

// claimName claims the App's app name among every App of that name the
// informer holds (Names.claim).
func (c *Controller) claimName(app *v1alpha1.App) error {
	name := AppName(app.Namespace, app.Name)
	key := app.Namespace + "/" + app.Name
	contenders := []contender{{key: key, created: app.CreationTimestamp.Time}}
	for _, m := range c.namesakes(name) {
		if k := m.GetNamespace() + "/" + m.GetName(); k != key {
			contenders = append(contenders, contender{key: k, created: m.GetCreationTimestamp().Time})
		}
	}
	return c.opts.Names.claim(name, key, contenders)
}

// managerContenders are, for each of managers (the App key's), every
// App the informer holds that declares it (spec.manager, else its derived
// default, and spec.split[].manager) or derives it, with self (the App
// key, created then) among them.
func (c *Controller) managerContenders(key string, created time.Time, managers []string) map[string][]contender {
	out := map[string][]contender{}
	for _, m := range managers {
		out[m] = []contender{{key: key, created: created}}
	}
	objs, err := c.apps.List(everything)
	if err != nil {
		return out
	}
	for _, o := range objs {
		u, ok := o.(*unstructured.Unstructured)
		if !ok {
			continue
		}
		k := u.GetNamespace() + "/" + u.GetName()
		if k == key {
			continue
		}
		for _, m := range declaredManagers(u) {
			if _, ok := out[m]; ok {
				out[m] = append(out[m], contender{key: k, created: u.GetCreationTimestamp().Time})
			}
		}
	}
	return out
}

// declaredManagers are the managers an App's spec declares or derives:
// its derived default, spec.manager and spec.split[].manager.
func declaredManagers(u *unstructured.Unstructured) []string {
	out := []string{derivedManager(u.GetNamespace() + "/" + u.GetName())}
	if m, _, _ := unstructured.NestedString(u.Object, "spec", "manager"); m != "" {
		out = append(out, m)
	}
	split, _, _ := unstructured.NestedSlice(u.Object, "spec", "split")
	for _, s := range split {
		if e, ok := s.(map[string]any); ok {
			if m, ok := e["manager"].(string); ok && m != "" {
				out = append(out, m)
			}
		}
	}
	return out
}

// namesakes are the Apps the informer holds whose app name is name.
func (c *Controller) namesakes(name string) []metav1.Object {
	objs, err := c.apps.List(everything)
	if err != nil {
		return nil
	}
	var out []metav1.Object
	for _, o := range objs {
		m, err := meta.Accessor(o)
		if err == nil && AppName(m.GetNamespace(), m.GetName()) == name {
			out = append(out, m)
		}
	}
	return out
}

// ownerOf is whom an App's inventory records as its owner
// (inventory.App.Owner), for the App key namespace/name.
func ownerOf(key string) string { return "App " + key }

// ownedByAnother reports whether err says the inventory of the app name
// belongs to another App (inventory.OwnerError); then that App holds the
// name from now on (Names.recordOwner) and is queued, so it runs at
// once if this App held the name in its place.
func (c *Controller) ownedByAnother(name string, err error) bool {
	var oe *inventory.OwnerError
	if !errors.As(err, &oe) {
		return false
	}
	if key, ok := strings.CutPrefix(oe.Owner, "App "); ok {
		c.opts.Names.recordOwner(name, key)
		c.enqueueKey(key)
	}
	return true
}

// ownerRefusal is err as the App key's status and Events show it when
// the inventory of its app name belongs to another App
// (inventory.OwnerError): unchanged when that App is of key's
// namespace, else a refusal that does not name it (holderFor).
func ownerRefusal(key string, err error) error {
	var oe *inventory.OwnerError
	if !errors.As(err, &oe) {
		return err
	}
	holder, ok := strings.CutPrefix(oe.Owner, "App ")
	if ok && sameNamespace(key, holder) {
		return err
	}
	return &ownerRefusalError{key: key, err: oe}
}

// ownerRefusalError is an inventory.OwnerError told to an App of
// another namespace than the owner's: Error leaves the owner out,
// Unwrap keeps it for the code that acts on it.
type ownerRefusalError struct {
	key string
	err *inventory.OwnerError
}

func (e *ownerRefusalError) Error() string {
	return fmt.Sprintf("App %s: the inventory of its app name %s (Secret %s) belongs to an App of another namespace: this App may not write it or prune from it and is not run; rename it (another name or namespace)", e.key, e.err.App, e.err.Parent)
}

func (e *ownerRefusalError) Unwrap() error { return e.err }

// enqueueNamesakes queues the other Apps of the app name of the App key,
// which is gone: one of them may hold the name now.
func (c *Controller) enqueueNamesakes(key string) {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return
	}
	for _, m := range c.namesakes(AppName(ns, name)) {
		if k := m.GetNamespace() + "/" + m.GetName(); k != key {
			c.enqueueKey(k)
		}
	}
}
