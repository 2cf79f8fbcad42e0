// Package syncdrun runs syncd's pipeline (planner, inventory, applier) on
// in-memory manifests, for the benchmarks.
package syncdrun

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"

	"syncd.dev/syncd/internal/applier"
	"syncd.dev/syncd/internal/config"
	"syncd.dev/syncd/internal/identity"
	"syncd.dev/syncd/internal/inventory"
	"syncd.dev/syncd/internal/planner"
)

// Syncd is one app managed by syncd.
type Syncd struct {
	App     config.App
	mapper  meta.ResettableRESTMapper
	dyn     dynamic.Interface
	inv     *inventory.Manager
	applier *applier.Applier
	// drift is the app's drift watcher, as the daemon runs it: started
	// after the first sync, paused during every later one (WithDrift).
	drift *driftWatch
}

// CacheMappings, when true, puts a per-kind cache in front of the
// discovery REST mapper (an experiment for the memory benchmark).
var CacheMappings = false

// New returns a Syncd for app with the given applier concurrency. Its
// inventory lives in a namespace of its own, "<app namespace>-inventory"
// (created if missing), as in a real install: everything in the inventory
// namespace is syncd's own, and prune never deletes it.
func New(cfg *rest.Config, app config.App, concurrency int) (*Syncd, error) {
	return newSyncd(cfg, app, inventory.Options{Concurrency: concurrency})
}

// NewOneShot is New for one sync in a process of its own, as `syncd
// apply` runs: no watch cache, the objects read with one metadata LIST
// per resource and namespace.
func NewOneShot(cfg *rest.Config, app config.App, concurrency int) (*Syncd, error) {
	return newSyncd(cfg, app, inventory.Options{Concurrency: concurrency, NoWatch: true})
}

func newSyncd(cfg *rest.Config, app config.App, invOpts inventory.Options) (*Syncd, error) {
	concurrency := invOpts.Concurrency
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	invNS := app.Namespace + "-inventory"
	if err := ensureNamespace(context.Background(), dyn, invNS); err != nil {
		return nil, err
	}
	md, err := metadata.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	disc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil, err
	}
	dm := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(disc))
	s := &Syncd{App: app, mapper: dm, dyn: dyn}
	if CacheMappings {
		s.mapper = &cachingMapper{DeferredDiscoveryRESTMapper: dm, cache: map[string]*meta.RESTMapping{}}
	}
	invOpts.Namespace = invNS
	if s.inv, err = inventory.New(dyn, md, s.mapper, invOpts); err != nil {
		return nil, err
	}
	if s.applier, err = applier.New(dyn, s.mapper, applier.Options{Concurrency: concurrency, Metadata: md}); err != nil {
		return nil, err
	}
	return s, nil
}

// Stop stops the watches.
func (s *Syncd) Stop() {
	s.drift.stop()
	s.inv.Stop()
}

// Sync plans copies of objs and reconciles them (apply, then prune).
func (s *Syncd) Sync(ctx context.Context, objs []*unstructured.Unstructured) (*applier.ChangeSet, *inventory.Report, error) {
	cp := make([]*unstructured.Unstructured, len(objs))
	for i, o := range objs {
		cp[i] = o.DeepCopy()
	}
	return s.SyncOwned(ctx, cp)
}

// SyncOwned is Sync for objects the caller hands over (the planner
// defaults them in place), as the daemon hands over a fresh render.
func (s *Syncd) SyncOwned(ctx context.Context, objs []*unstructured.Unstructured) (*applier.ChangeSet, *inventory.Report, error) {
	pa, err := plannerApp(s.App)
	if err != nil {
		return nil, nil, err
	}
	p, err := planner.New(pa, planner.Options{Mapper: s.mapper, Revision: "bench"})
	if err != nil {
		return nil, nil, err
	}
	ms := make([]planner.Manifest, len(objs))
	for i, o := range objs {
		ms[i] = planner.Manifest{File: "bench.yaml", Index: i + 1, Object: o}
	}
	objs = nil
	plan, err := p.Plan(ctx, ms)
	if err != nil {
		return nil, nil, err
	}
	s.drift.pause()
	run, err := s.inv.Begin(ctx, inventoryApp(s.App), plan, false)
	if err != nil {
		s.drift.resume()
		return nil, nil, err
	}
	cs, err := s.applier.Apply(ctx, plan, run.Hooks(applier.ApplyOptions{RecordManagers: true, SkipValidation: !s.App.Validates(), LocalValidation: !s.App.DryRunAll}))
	rep, ferr := run.Finish(ctx, cs, err)
	if err == nil {
		err = ferr
	}
	if err == nil {
		err = s.drift.follow(plan, cs)
	} else {
		s.drift.resume()
	}
	if err == nil && !cs.OK() {
		for _, c := range cs.Changes {
			if c.Err != nil {
				return cs, rep, fmt.Errorf("apply: %w", c.Err)
			}
		}
		return cs, rep, fmt.Errorf("apply not OK")
	}
	return cs, rep, err
}

// ensureNamespace creates the namespace name unless it exists.
func ensureNamespace(ctx context.Context, dyn dynamic.Interface, name string) error {
	ns := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": name}}}
	_, err := dyn.Resource(schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}).Create(ctx, ns, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("inventory namespace %s: %w", name, err)
	}
	return nil
}

// plannerApp and inventoryApp map the bench's app to the stages' options
// as reconcile.Compile does (its plannerApp and inventoryApp), which is
// the one place config becomes them and is not exported. The bench does
// not import reconcile: that adds 105 packages to syncdrun's (all of
// go-git and go-containerregistry, the source and render stages, with
// their init functions) and requirements bench/go.mod does not have, and
// bench/cmd/rss, whose peak RSS BenchmarkMemory reports, links syncdrun.
//
// inventoryApp leaves ConflictPolicy (reconcile's digest of the app's
// conflicts section) empty: it only labels the yields a sync records, and
// the bench applies without a conflict policy (ApplyOptions.Policy nil),
// which never yields.
func plannerApp(app config.App) (planner.App, error) {
	out := planner.App{Name: app.Name, Namespace: app.Namespace, Manager: planner.FieldManager(app.DefaultManager())}
	for i, s := range app.Split {
		sp, err := planner.ParseSplit(s.Manager, s.Kinds, s.Paths)
		if err != nil {
			return planner.App{}, fmt.Errorf("app %q: split[%d]: %w", app.Name, i, err)
		}
		out.Splits = append(out.Splits, sp)
	}
	return out, nil
}

func inventoryApp(app config.App) inventory.App {
	return inventory.App{
		Name:          app.Name,
		Tenant:        identity.Tenant{App: app.Name, Namespace: app.Namespace, ServiceAccount: app.ServiceAccountName},
		Managers:      app.Managers(),
		Prune:         app.PruneEnabled(),
		PruneBudget:   app.PruneBudgetPercent(),
		AllowEmpty:    app.AllowEmpty,
		DeleteAdopted: app.DeleteAdopted(),
		InstallsSyncd: app.InstallsSyncd,
	}
}
