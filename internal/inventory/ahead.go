package inventory

import (
	"context"

	"golang.org/x/sync/errgroup"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/metadata"

	"syncd.dev/syncd/internal/planner"
)

// Ahead is what a run without the watch cache reads before its plan
// exists (ReadAhead): the app's inventory, and one LIST of each resource
// and namespace that holds listThreshold or more of its members, so that
// these reads overlap the render and the plan instead of following them.
// Begin given an Ahead (BeginAhead) uses what it read and reads the rest
// itself, as it would have.
//
// Of a member found in a LIST only its resourceVersion is kept, and
// whether its live metadata is as syncd left it (liveAsLeft); the plan
// object decides the rest (sameApplied). A member found otherwise, or a
// plan object the inventory does not record, is read by Begin or the
// applier, as without an Ahead: keeping every member's metadata until the
// plan exists would cost more memory than the reads save time.
type Ahead struct {
	app    App
	cancel context.CancelFunc
	done   chan struct{}

	// Set once done is closed; err set means nothing else is used.
	prev  *loaded
	lists map[watchKey]map[string]aheadItem
	err   error
}

// aheadItem is what Ahead keeps of one member a LIST found.
type aheadItem struct {
	resourceVersion string
	// asLeft is liveAsLeft of the member and its live metadata.
	asLeft bool
}

// ReadAhead starts reading app's inventory and its members' resources in
// the background (Ahead). It returns nil when the manager runs the watch
// cache, which Begin reads instead. Stop ends the reads when the run ends
// before Begin.
func (m *Manager) ReadAhead(ctx context.Context, app App) *Ahead {
	if !m.opts.NoWatch {
		return nil
	}
	ctx, cancel := context.WithCancel(ctx)
	a := &Ahead{app: app, cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(a.done)
		a.prev, a.lists, a.err = m.readAhead(ctx, app)
	}()
	return a
}

// Stop cancels what is still being read. It is safe on nil and after
// Begin.
func (a *Ahead) Stop() {
	if a != nil {
		a.cancel()
	}
}

// result waits for the reads and returns them; ok is false when there
// are none to use for app (no Ahead, another app, or a failed read: Begin
// then reads everything itself, and reports the error it gets).
func (a *Ahead) result(app App) (prev *loaded, lists map[watchKey]map[string]aheadItem, ok bool) {
	if a == nil || a.app.Name != app.Name || a.app.Tenant != app.Tenant {
		return nil, nil, false
	}
	<-a.done
	if a.err != nil {
		return nil, nil, false
	}
	return a.prev, a.lists, true
}

// readAhead reads app's inventory, then lists the resources and
// namespaces holding listThreshold or more of its members, keeping what
// Ahead keeps of the members found.
func (m *Manager) readAhead(ctx context.Context, app App) (*loaded, map[watchKey]map[string]aheadItem, error) {
	clients, err := m.clientsOf(app)
	if err != nil {
		return nil, nil, err
	}
	prev, err := m.store.loadFor(ctx, app)
	if err != nil {
		return nil, nil, err
	}
	r := &Run{m: m, app: app, id: prev.inv.ID, md: clients.md}
	var groups byResource[*Member]
	for _, mem := range prev.inv.Members {
		// A kind the cluster does not serve is left to Begin, which
		// decides what that means.
		if wk, ri, err := r.resource(mem.Ref()); err == nil {
			groups.add(wk, ri, mem)
		}
	}
	lists := map[watchKey]map[string]aheadItem{}
	results := make([]map[string]aheadItem, len(groups.groups))
	eg, ectx := errgroup.WithContext(ctx)
	eg.SetLimit(m.opts.Concurrency)
	for i, g := range groups.groups {
		if len(g.items) < listThreshold {
			continue
		}
		eg.Go(func() (err error) {
			results[i], err = listAhead(ectx, g.ri, g.items)
			return err
		})
	}
	if err := eg.Wait(); err != nil {
		return nil, nil, err
	}
	for i, g := range groups.groups {
		if results[i] != nil {
			lists[g.key] = results[i]
		}
	}
	return prev, lists, nil
}

// listAhead lists one resource and namespace and keeps what Ahead keeps
// of the members among what it finds; a member it does not find is
// absent.
func listAhead(ctx context.Context, ri metadata.ResourceInterface, members []*Member) (map[string]aheadItem, error) {
	byName := make(map[string]*Member, len(members))
	for _, mem := range members {
		byName[mem.Name] = mem
	}
	found := make(map[string]aheadItem, len(members))
	err := listAll(ctx, ri, "", func(live *metav1.PartialObjectMetadata) error {
		if mem := byName[live.Name]; mem != nil {
			found[live.Name] = aheadItem{resourceVersion: live.ResourceVersion, asLeft: liveAsLeft(mem, live)}
		}
		return nil
	})
	return found, err
}

// fromAhead settles what Begin knows of plan object obj, of resource and
// namespace wk, from lists when it can: absent when a LIST of wk did not
// find the member, as syncd left it when the LIST found it so and the
// plan object is the one recorded. It reports false when obj must be read
// as without an Ahead.
func (r *Run) fromAhead(lists map[watchKey]map[string]aheadItem, wk watchKey, obj *planner.Object) bool {
	found, listed := lists[wk]
	k := KeyOf(obj.Ref)
	mem := r.prevIdx[k]
	if !listed || mem == nil {
		return false
	}
	it, ok := found[obj.Ref.Name]
	switch {
	case !ok:
		r.remember(obj, nil)
		return true
	case it.asLeft && sameApplied(mem, obj):
		r.mu.Lock()
		r.known[k] = &seen{resourceVersion: it.resourceVersion, member: mem}
		r.mu.Unlock()
		return true
	default:
		return false
	}
}
