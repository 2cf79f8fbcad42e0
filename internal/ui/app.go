package ui

import (
	"context"
	"fmt"
	"slices"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	"syncd.dev/syncd/internal/api/v1alpha1"
	"syncd.dev/syncd/internal/applier"
	"syncd.dev/syncd/internal/apptree"
	"syncd.dev/syncd/internal/inventory"
	"syncd.dev/syncd/internal/ownership"
	"syncd.dev/syncd/internal/planner"
	"syncd.dev/syncd/internal/redact"
)

// appPage is what the App page shows.
type appPage struct {
	Row *AppRow
	// Objects are the app's tree (what `syncd tree app` prints), one
	// row per object in apply order.
	Objects []treeRow
	// History is the app's applies (what `syncd history app` prints),
	// newest first.
	History  []inventory.HistoryEntry
	Handoffs []handoffRow
	// Last is the outcome of the app's last reconcile; nil when none is
	// recorded.
	Last *lastOutcome
}

// treeRow is one object of an app's tree with its page's address.
type treeRow struct {
	Stage  string
	Kind   string
	Object apptree.Object
	Ref    planner.ObjectRef
}

// handoffRow is one pending handoff: fields one of the app's managers
// dropped, held at their live value by its handoff manager until
// another manager owns them (docs/handoff.md).
type handoffRow struct {
	Object string
	// Ref is the object when the UI can link it; nil otherwise.
	Ref     *planner.ObjectRef
	Manager string
	Fields  []string
}

// lastOutcome is what the app's last reconcile did: an App's status, or
// a file app's last recorded apply.
type lastOutcome struct {
	Revision string
	Time     *metav1.Time
	// Result is the Ready condition's reason of an App, the recorded
	// result of a file app's apply.
	Result string
	// Objects says what the reconcile changed ("2 changed, 1
	// conflicts, 0 failed").
	Objects  string
	Prune    string
	Warnings []string
}

// app builds the App page: the app's row (its status), its tree, history,
// pending handoffs and last outcome.
func (s *Server) app(ctx context.Context, ref AppRef) (*appPage, error) {
	rows, _, err := s.appRows(ctx)
	if err != nil {
		return nil, err
	}
	page := &appPage{}
	for i := range rows {
		if rows[i].Ref == ref {
			page.Row = &rows[i]
		}
	}
	if page.Row == nil {
		return nil, errNotFound
	}
	inv, err := s.opts.Inventory.Load(ctx, ref.Inventory())
	if err != nil {
		return nil, err
	}
	lives := &liveObjects{byRef: map[planner.ObjectRef]*unstructured.Unstructured{}}
	tree, err := apptree.Build(ctx, inv, lives.getter(s.get))
	if err != nil {
		return nil, err
	}
	page.Objects = treeRows(tree, inv)
	page.History = newestFirst(inv.History)
	if ref.File() {
		if n := s.driftCount(ctx, ref); n >= 0 {
			page.Row.Drift = n
		}
		page.Handoffs = liveHandoffs(ref, inv, lives)
		page.Last = fileOutcome(inv.History)
		return page, nil
	}
	app, err := s.appObject(ctx, ref)
	if err != nil {
		return nil, err
	}
	page.Handoffs = statusHandoffs(app.Status.Handoffs, inv)
	page.Last = appOutcome(app)
	return page, nil
}

// driftCount is the number of a file app's drift findings when the drift
// source knows the app, else -1 (unknown).
func (s *Server) driftCount(ctx context.Context, ref AppRef) int {
	if s.opts.Drift == nil {
		return -1
	}
	rep, err := s.opts.Drift.Drift(ctx, ref)
	if err != nil || rep == nil {
		return -1
	}
	n := 0
	for _, f := range rep.Findings {
		if f.Class.IsDrift() {
			n++
		}
	}
	return n
}

// get reads one live object with the user's credentials (an
// apptree.Getter).
func (s *Server) get(ctx context.Context, ref planner.ObjectRef) (*unstructured.Unstructured, error) {
	mapping, err := s.opts.Mapper.RESTMapping(ref.GroupKind(), ref.Version)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", ref, err)
	}
	ri := s.opts.Dynamic.Resource(mapping.Resource)
	if ref.Namespace == "" {
		return ri.Get(ctx, ref.Name, metav1.GetOptions{})
	}
	return ri.Namespace(ref.Namespace).Get(ctx, ref.Name, metav1.GetOptions{})
}

// appObject reads an App object.
func (s *Server) appObject(ctx context.Context, ref AppRef) (*v1alpha1.App, error) {
	u, err := s.opts.Dynamic.Resource(v1alpha1.AppResource).Namespace(ref.Namespace).Get(ctx, ref.Name, metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("App %s: %w", ref, err)
	}
	app := &v1alpha1.App{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, app); err != nil {
		return nil, fmt.Errorf("App %s: decode: %w", ref, err)
	}
	return app, nil
}

// liveObjects keeps the objects a tree's build read, so that the page
// reads each object once.
type liveObjects struct {
	mu    sync.Mutex
	byRef map[planner.ObjectRef]*unstructured.Unstructured
}

// getter wraps get, keeping what it reads.
func (l *liveObjects) getter(get apptree.Getter) apptree.Getter {
	return func(ctx context.Context, ref planner.ObjectRef) (*unstructured.Unstructured, error) {
		u, err := get(ctx, ref)
		if err == nil {
			l.mu.Lock()
			l.byRef[ref] = u
			l.mu.Unlock()
		}
		return u, err
	}
}

// treeRows flattens a tree into rows, each with the full reference of
// its object (the tree's kinds carry no version; the inventory's
// members do).
func treeRows(t *apptree.Tree, inv *inventory.Inventory) []treeRow {
	versions := map[planner.ObjectRef]string{}
	for _, m := range inv.Members {
		r := m.Ref()
		versions[unversioned(r)] = r.Version
	}
	var out []treeRow
	for _, st := range t.Stages {
		for _, k := range st.Kinds {
			for _, o := range k.Objects {
				ref := planner.ObjectRef{Group: k.Group, Kind: k.Kind, Namespace: o.Namespace, Name: o.Name}
				ref.Version = versions[ref]
				out = append(out, treeRow{Stage: st.Name, Kind: kindName(k), Object: o, Ref: ref})
			}
		}
	}
	return out
}

func unversioned(r planner.ObjectRef) planner.ObjectRef {
	r.Version = ""
	return r
}

// kindName is Kind.group, or Kind for the core group.
func kindName(k apptree.Kind) string {
	if k.Group == "" {
		return k.Kind
	}
	return k.Kind + "." + k.Group
}

// newestFirst returns the history newest first.
func newestFirst(h []inventory.HistoryEntry) []inventory.HistoryEntry {
	out := slices.Clone(h)
	slices.Reverse(out)
	return out
}

// liveHandoffs are a file app's pending handoffs, read from its live
// objects: the fields each of the app's handoff managers holds (a file
// app has no status that lists them).
func liveHandoffs(app AppRef, inv *inventory.Inventory, lives *liveObjects) []handoffRow {
	var out []handoffRow
	for _, m := range inv.Members {
		live := lives.byRef[m.Ref()]
		if live == nil {
			continue
		}
		own := ownership.Decode(live)
		for _, am := range applier.AppManagers(live, app.Inventory()) {
			held := own.Applied(string(applier.HandoffManager(am)))
			if held.Empty() {
				continue
			}
			ref := m.Ref()
			var fields []string
			held.Leaves().Iterate(func(p fieldpath.Path) { fields = append(fields, p.String()) })
			out = append(out, handoffRow{Object: ref.String(), Ref: &ref, Manager: string(am), Fields: fields})
		}
	}
	return out
}

// statusHandoffs are an App's pending handoffs as its status lists them,
// linked to the objects of its inventory.
func statusHandoffs(hs []v1alpha1.PendingHandoff, inv *inventory.Inventory) []handoffRow {
	byName := map[string]planner.ObjectRef{}
	for _, m := range inv.Members {
		byName[m.Ref().String()] = m.Ref()
	}
	var out []handoffRow
	for _, h := range hs {
		row := handoffRow{Object: h.Object, Manager: h.Manager, Fields: h.Fields}
		if ref, ok := byName[h.Object]; ok {
			row.Ref = &ref
		}
		out = append(out, row)
	}
	return out
}

// appOutcome is an App's last reconcile as its status tells it.
func appOutcome(app *v1alpha1.App) *lastOutcome {
	st := app.Status
	if st.LastReconcileTime == nil {
		return nil
	}
	out := &lastOutcome{Revision: st.LastAttemptedRevision, Time: st.LastReconcileTime, Warnings: redactAll(st.Warnings)}
	for _, c := range st.Conditions {
		if c.Type == string(v1alpha1.ConditionReady) {
			out.Result = c.Reason
		}
	}
	if o := st.Objects; o != nil {
		out.Objects = fmt.Sprintf("%d of %d changed, %d held back by conflicts, %d failed", o.Changed, o.Total, o.Conflicts, o.Failed)
	}
	if p := st.LastPrune; p != nil {
		out.Prune = fmt.Sprintf("%s (%s, revision %s)", redact.Known(p.Message), p.Time.UTC().Format("2006-01-02T15:04:05Z"), shortRevision(p.Revision))
	}
	return out
}

// fileOutcome is a file app's last apply as its inventory recorded it.
func fileOutcome(h []inventory.HistoryEntry) *lastOutcome {
	if len(h) == 0 {
		return nil
	}
	e := h[len(h)-1]
	return &lastOutcome{Revision: e.Revision, Time: &e.Time, Result: string(e.Result),
		Objects: e.Writes.String(), Prune: historyPrune(e)}
}

// historyPrune says what an apply's prune did.
func historyPrune(e inventory.HistoryEntry) string {
	switch {
	case e.PruneRefused != "":
		return fmt.Sprintf("refused (%s); %d pruned, %d orphaned", e.PruneRefused, e.Pruned, e.Orphaned)
	case e.Pruned+e.Orphaned > 0:
		return fmt.Sprintf("%d pruned, %d orphaned", e.Pruned, e.Orphaned)
	}
	return ""
}

func redactAll(ss []string) []string {
	var out []string
	for _, s := range ss {
		out = append(out, redact.Known(s))
	}
	return out
}
